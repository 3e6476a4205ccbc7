//! What the text of a message says beyond its headers: the `From:`,
//! `Subject:` and `Date:` lines at its start that `git am` takes over the
//! mail's own (a patch sent on someone else's behalf names its real author
//! there, as `git send-email` and b4's web relay write it), the trailers
//! (`Reviewed-by:`, `Acked-by:`, `Fixes:` …) and the `base-commit:` and
//! `change-id:` lines that `git format-patch --base` and b4 write.

use super::Mailbox;
use super::clean::{self, MAX_VALUE_CHARS};

/// Most trailers kept from one message; a kernel patch carries a dozen.
pub const MAX_TRAILERS: usize = 64;

/// The `From:`, `Subject:` and `Date:` lines at the start of a body, as
/// `git mailinfo` reads them.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct InBody {
    /// The real author, when the body names one.
    pub from: Option<Mailbox>,
    /// The subject that replaces the mail's, decoded, one clean line.
    pub subject: Option<String>,
    /// The author date, seconds since the epoch.
    pub date: Option<i64>,
}

/// A trailer line: `Reviewed-by: Jan Kara <jack@suse.cz>`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Trailer {
    /// The name as written (`Reviewed-by`).
    pub name: String,
    /// The value, one clean line.
    pub value: String,
}

impl Trailer {
    /// Whether the trailer is named `name`, in any case.
    pub fn is(&self, name: &str) -> bool {
        self.name.eq_ignore_ascii_case(name)
    }
}

/// Splits `body` into its in-body header lines and the rest, as `git
/// mailinfo` does: blank lines at the start are skipped, a
/// `git format-patch` separator line (`From <sha> Mon Sep 17 00:00:00
/// 2001`, found when a whole patch mail is attached) is skipped, then
/// `From:`, `Subject:` and `Date:` lines (folded lines continuing them)
/// are read up to the first other line.
pub fn in_body(body: &str) -> (InBody, &str) {
    let mut found = InBody::default();
    let mut rest = body;
    let mut block = String::new();
    let mut started = false;
    loop {
        let (line, after) = match rest.split_once('\n') {
            Some((line, after)) => (line, after),
            None => (rest, ""),
        };
        let bare = line.trim_end_matches('\r');
        if rest.is_empty() {
            break;
        }
        if !started && bare.trim().is_empty() {
            rest = after;
            continue;
        }
        if !started && is_format_patch_separator(bare) {
            started = true;
            rest = after;
            continue;
        }
        let continuation = bare.starts_with([' ', '\t']) && !block.is_empty();
        if !(continuation || header_name(bare).is_some()) {
            break;
        }
        started = true;
        block.push_str(bare);
        block.push('\n');
        rest = after;
    }
    for line in unfold(&block) {
        let Ok((header, _)) = mailparse::parse_header(line.as_bytes()) else {
            continue;
        };
        let value = header.get_value();
        match header_name(&line) {
            Some("from") => found.from = super::header::mailboxes(&header).into_iter().next(),
            Some("subject") => {
                found.subject = Some(clean::one_line(&value, clean::MAX_SUBJECT_CHARS))
            }
            Some("date") => found.date = mailparse::dateparse(value.trim()).ok(),
            _ => {}
        }
    }
    (found, rest)
}

/// Which of `From:`, `Subject:` or `Date:` starts `line` (lower-cased).
fn header_name(line: &str) -> Option<&'static str> {
    let (name, _) = line.split_once(':')?;
    ["from", "subject", "date"]
        .into_iter()
        .find(|n| name.eq_ignore_ascii_case(n))
}

/// The lines of a header block with their folded continuations joined.
fn unfold(block: &str) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for line in block.lines() {
        match lines.last_mut() {
            Some(last) if line.starts_with([' ', '\t']) => {
                last.push(' ');
                last.push_str(line.trim());
            }
            _ => lines.push(line.to_string()),
        }
    }
    lines
}

/// `From 9b0919d12c74b3de6c23c52dc5b3d6ffd24fecee Mon Sep 17 00:00:00
/// 2001`: the line `git format-patch` starts each patch with.
pub fn is_format_patch_separator(line: &str) -> bool {
    line.strip_prefix("From ")
        .and_then(|rest| rest.split_once(' '))
        .is_some_and(|(sha, date)| {
            sha.len() == 40
                && sha.bytes().all(|b| b.is_ascii_hexdigit())
                && date == "Mon Sep 17 00:00:00 2001"
        })
}

/// The text a patch's trailers and a reply's tags are read from: `body`
/// before its signature (`-- ` line) and before the diff (`---` line or
/// `diff --git`), without quoted (`>`) lines.
fn own_lines(body: &str) -> impl Iterator<Item = &str> {
    body.lines()
        .map(|l| l.trim_end_matches('\r'))
        .take_while(|l| *l != "-- " && *l != "---" && !l.starts_with("diff --git "))
        .filter(|l| !l.starts_with('>'))
}

/// The trailers of `body`: lines `Name: value` in the message's own text
/// ([`own_lines`]) whose name ends in `-by` (`Signed-off-by`,
/// `Reviewed-by`, `Acked-by`, `Tested-by`, `Reported-by`, …) or is one of
/// `Fixes`, `Link`, `Closes`, `Cc`; at most [`MAX_TRAILERS`].
pub fn trailers(body: &str) -> Vec<Trailer> {
    own_lines(body)
        .filter_map(|line| {
            let (name, value) = line.split_once(':')?;
            let value = value.trim();
            let known = name.len() <= 64
                && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && name.starts_with(|c: char| c.is_ascii_alphabetic())
                && (name.to_ascii_lowercase().ends_with("-by")
                    || ["fixes", "link", "closes", "cc"]
                        .iter()
                        .any(|n| name.eq_ignore_ascii_case(n)));
            (known && !value.is_empty()).then(|| Trailer {
                name: name.to_string(),
                value: clean::one_line(value, MAX_VALUE_CHARS),
            })
        })
        .take(MAX_TRAILERS)
        .collect()
}

/// The value of the first unquoted line `name: value` anywhere in `body`
/// (`base-commit:` and `change-id:` follow the diff or end a cover
/// letter), when `valid` takes it.
fn marker(body: &str, name: &str, valid: impl Fn(&str) -> bool) -> Option<String> {
    body.lines().find_map(|line| {
        let (n, value) = line.split_once(':')?;
        let value = value.trim();
        (n.eq_ignore_ascii_case(name) && valid(value)).then(|| value.to_string())
    })
}

/// `base-commit: <sha>` (`git format-patch --base`, b4): the commit the
/// series applies to, 7 to 64 hex digits, lower-cased.
pub fn base_commit(body: &str) -> Option<String> {
    marker(body, "base-commit", |v| {
        (7..=64).contains(&v.len()) && v.bytes().all(|b| b.is_ascii_hexdigit())
    })
    .map(|v| v.to_ascii_lowercase())
}

/// `change-id: 20240723-openfast-ac49a7b6ade2` (b4): what stays the same
/// across the versions of one series.
pub fn change_id(body: &str) -> Option<String> {
    marker(body, "change-id", |v| {
        (1..=100).contains(&v.len()) && v.bytes().all(|b| b.is_ascii_graphic())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_body_lines_name_the_real_author_and_are_taken_off() {
        let body = "\nFrom: Linus Torvalds <torvalds@linux-foundation.org>\n\
                    Subject: [PATCH] vfs: mostly undo glibc turning 'fstat()' into\n \
                    'fstatat(AT_EMPTY_PATH)'\n\
                    Date: Wed, 18 Sep 2024 22:03:57 +0800\n\n\
                    commit 9013c51 upstream.\n";
        let (found, rest) = in_body(body);
        let from = found.from.unwrap();
        assert_eq!(
            (from.name.as_str(), from.address.as_str()),
            ("Linus Torvalds", "torvalds@linux-foundation.org")
        );
        assert_eq!(
            found.subject.as_deref(),
            Some("[PATCH] vfs: mostly undo glibc turning 'fstat()' into 'fstatat(AT_EMPTY_PATH)'")
        );
        assert_eq!(found.date, Some(1_726_668_237));
        assert_eq!(rest, "\ncommit 9013c51 upstream.\n");
    }

    #[test]
    fn an_attached_format_patch_mail_is_read_past_its_separator() {
        let body = "From 9b0919d12c74b3de6c23c52dc5b3d6ffd24fecee Mon Sep 17 00:00:00 2001\n\
                    From: =?UTF-8?q?J=C3=B6rg?= <j@example.org>\nDate: Tue, 8 Aug 2023 19:26:35 +0200\n\
                    Subject: [PATCH] fs: use __fput_sync in close(2)\n\nclose(2) is special\n";
        let (found, rest) = in_body(body);
        assert_eq!(found.from.unwrap().name, "Jörg");
        assert_eq!(
            found.subject.as_deref(),
            Some("[PATCH] fs: use __fput_sync in close(2)")
        );
        assert_eq!(rest, "\nclose(2) is special\n");
    }

    #[test]
    fn a_body_without_in_body_lines_is_left_whole() {
        let body = "From the report on the list: open is slow.\n";
        assert_eq!(in_body(body), (InBody::default(), body));
        assert_eq!(in_body(""), (InBody::default(), ""));
    }

    #[test]
    fn trailers_are_the_tags_outside_quotes_and_above_the_diff() {
        let reply = "> Signed-off-by: Yu Ma <yu.ma@intel.com>\n\nLooks right.\n\n\
                     Reviewed-by: Jan Kara <jack@suse.cz>\nAcked-by: Christian Brauner <brauner@kernel.org>\n\
                     Note: not a trailer\n-- \nTested-by: in the signature <x@y.org>\n";
        let got: Vec<String> = trailers(reply)
            .iter()
            .map(|t| format!("{}={}", t.name, t.value))
            .collect();
        assert_eq!(
            got,
            [
                "Reviewed-by=Jan Kara <jack@suse.cz>",
                "Acked-by=Christian Brauner <brauner@kernel.org>"
            ]
        );
        let patch = "Fixes: 021a160abf62 (\"fs: use __fput_sync in close(2)\")\n\
                     Signed-off-by: A <a@x.org>\n---\n fs/x.c | 1 +\n\
                     Reviewed-by: below the cut <b@x.org>\n";
        let names: Vec<String> = trailers(patch).into_iter().map(|t| t.name).collect();
        assert_eq!(names, ["Fixes", "Signed-off-by"]);
    }

    #[test]
    fn base_commit_and_change_id_are_read_as_b4_writes_them() {
        let cover = "Jeff\n---\nbase-commit: 0C3836482481200ead7b416ca80c68a29cfdaabd\n\
                     change-id: 20240723-openfast-ac49a7b6ade2\n\nBest regards,\n-- \nJeff\n";
        assert_eq!(
            base_commit(cover).as_deref(),
            Some("0c3836482481200ead7b416ca80c68a29cfdaabd")
        );
        assert_eq!(
            change_id(cover).as_deref(),
            Some("20240723-openfast-ac49a7b6ade2")
        );
        assert_eq!(base_commit("base-commit: not-a-sha\n"), None);
        assert_eq!(change_id("no markers\n"), None);
    }
}
