//! The patch of a list message as the mbox message `git am` applies: the
//! real author (the body's `From:` line, else the sender), the author
//! date, the title with a `[PATCH vN k/N]` prefix (as `b4 am` writes it),
//! the Message-ID, and the decoded body (commit message, `---`, diff)
//! without the in-body lines `git am` would have taken. A series of them
//! is the mbox text a comparison measures (`crate::mbox::parse`,
//! `crate::mbox::prefixes`).

use super::{Mailbox, Message, body};
use crate::mbox::{SEPARATOR, is_separator};

/// The `[PATCH …]` subject `b4 am` gives the patch: `PATCH`, `RFC` when
/// the prefix has it, `vN` when the prefix names a version, `k/N` when it
/// names a position, then the title (the body's `Subject:` line's, when
/// it has one).
pub fn am_subject(message: &Message) -> String {
    let prefix = message.subject();
    let title = message
        .in_body
        .subject
        .as_deref()
        .map(|s| crate::mbox::Subject::parse(s).title)
        .unwrap_or(prefix.title.clone());
    let mut words = vec!["PATCH".to_string()];
    if prefix.tags.iter().any(|t| t.eq_ignore_ascii_case("rfc")) {
        words.push("RFC".into());
    }
    if let Some(v) = prefix.version {
        words.push(format!("v{v}"));
    }
    if let Some((k, n)) = prefix.position {
        words.push(format!("{k}/{n}"));
    }
    format!("[{}] {title}", words.join(" "))
}

/// `message` as one mbox message `git am` applies (without the separator
/// line), or `None` when it carries no diff or names no author.
pub fn am_message(message: &Message) -> Option<String> {
    let author = message.author().filter(|_| message.has_diff)?;
    let mut out = format!("From: {}\n", mailbox_header(author));
    let date = message.in_body.date.or(message.fields.date);
    if let Some(date) = date.and_then(|d| chrono::DateTime::from_timestamp(d, 0)) {
        out.push_str(&format!("Date: {}\n", date.to_rfc2822()));
    }
    out.push_str(&format!(
        "Subject: {}\n",
        encode_words(&am_subject(message))
    ));
    if let Some(id) = message.id() {
        out.push_str(&format!("Message-ID: <{id}>\n"));
    }
    let (_, text) = body::in_body(&message.body);
    if !text.is_ascii() {
        out.push_str(
            "MIME-Version: 1.0\nContent-Type: text/plain; charset=UTF-8\n\
             Content-Transfer-Encoding: 8bit\n",
        );
    }
    out.push('\n');
    let mut previous_blank = true;
    for line in text.trim_start_matches('\n').split_inclusive('\n') {
        // A line that would start a new message of the mbox is quoted, as
        // an mboxrd writer does; it can only be in the commit message.
        if previous_blank && is_separator(line.as_bytes()) {
            out.push('>');
        }
        previous_blank = line.trim().is_empty();
        out.push_str(line);
    }
    if !out.ends_with('\n') {
        out.push('\n');
    }
    Some(out)
}

/// The mbox of `patches` in the order given: each [`am_message`] after a
/// [`SEPARATOR`], messages without a diff left out.
pub fn series_mbox<'a>(patches: impl IntoIterator<Item = &'a Message>) -> String {
    let mut mbox = String::new();
    for message in patches {
        if let Some(text) = am_message(message) {
            if !mbox.is_empty() {
                mbox.push('\n');
            }
            mbox.push_str(SEPARATOR);
            mbox.push_str(&text);
        }
    }
    mbox
}

/// `Name <address>` with the name quoted or encoded as a header needs it.
fn mailbox_header(m: &Mailbox) -> String {
    if m.name.is_empty() {
        return m.address.clone();
    }
    let plain = m
        .name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || " !#$%&'*+-/=?^_`{|}~".contains(c));
    if plain {
        format!("{} <{}>", m.name, m.address)
    } else if m.name.is_ascii() {
        format!("\"{}\" <{}>", m.name.replace('\\', "\\\\"), m.address)
    } else {
        format!("{} <{}>", encode_words(&m.name), m.address)
    }
}

/// `text` as RFC 2047 encoded words (UTF-8, Q encoding, each at most 75
/// characters, folded) when it is not ASCII; as it is otherwise.
fn encode_words(text: &str) -> String {
    if text.is_ascii() {
        return text.to_string();
    }
    let mut words = Vec::new();
    let mut word = String::new();
    for c in text.chars() {
        let mut encoded = String::new();
        let mut buf = [0u8; 4];
        for &b in c.encode_utf8(&mut buf).as_bytes() {
            match b {
                b' ' => encoded.push('_'),
                b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'!' | b'*' | b'+' | b'-' | b'/' => {
                    encoded.push(char::from(b))
                }
                _ => encoded.push_str(&format!("={b:02X}")),
            }
        }
        // `=?UTF-8?q?` and `?=` take 12 of a word's 75 characters.
        if word.len() + encoded.len() > 63 {
            words.push(std::mem::take(&mut word));
        }
        word.push_str(&encoded);
    }
    words.push(word);
    words
        .iter()
        .map(|w| format!("=?UTF-8?q?{w}?="))
        .collect::<Vec<_>>()
        .join("\n ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mbox;

    const RELAYED: &str = "From: Miao Wang via B4 Relay <devnull+shankerwangmiao.gmail.com@kernel.org>\n\
        Date: Wed, 18 Sep 2024 22:10:37 +0800\n\
        Subject: [PATCH v5.15-v5.10 1/4] vfs: mostly undo glibc turning 'fstat()' into\n\
        \x20'fstatat(AT_EMPTY_PATH)'\n\
        Message-Id: <20240918-statx-stable-linux-5-15-y-v1-1-5afb4401ddbe@gmail.com>\n\
        X-Original-From: Miao Wang <shankerwangmiao@gmail.com>\n\
        Content-Type: text/plain; charset=\"utf-8\"\n\
        Content-Transfer-Encoding: quoted-printable\n\n\
        From: Linus Torvalds <torvalds@linux-foundation.org>\n\n\
        commit 9013c51 upstream.\n\n\
        From 1111111111111111111111111111111111111111 Mon Sep 17 00:00:00 2001\n\
        Signed-off-by: Miao Wang <shankerwangmiao@gmail.com>\n\
        ---\n\
        diff --git a/fs/stat.c b/fs/stat.c\n--- a/fs/stat.c\n+++ b/fs/stat.c\n\
        @@ -1 +1 @@\n-a\n+J=C3=B6rg\n";

    #[test]
    fn a_relayed_patch_is_applied_as_its_real_author_s() {
        let m = Message::read(RELAYED.as_bytes()).unwrap();
        assert_eq!(m.sender().unwrap().address, "shankerwangmiao@gmail.com");
        let text = am_message(&m).unwrap();
        assert!(
            text.starts_with("From: Linus Torvalds <torvalds@linux-foundation.org>\n"),
            "{text}"
        );
        assert!(text.contains("\nSubject: [PATCH 1/4] vfs: mostly undo glibc turning 'fstat()' into 'fstatat(AT_EMPTY_PATH)'\n"), "{text}");
        assert!(
            text.contains("Date: Wed, 18 Sep 2024 14:10:37 +0000\n"),
            "{text}"
        );
        assert!(
            text.contains("\n\ncommit 9013c51 upstream.\n\n>From 1111"),
            "{text}"
        );
        assert!(text.ends_with("+Jörg\n"), "{text}");
        // The existing series reader takes it as one patch by that author.
        let mbox_text = series_mbox([&m, &m]);
        let series = mbox::parse(&mbox_text).unwrap();
        assert_eq!(series.messages.len(), 2);
        let first = &series.messages[0];
        assert_eq!(
            first.author,
            "Linus Torvalds <torvalds@linux-foundation.org>"
        );
        assert_eq!(first.subject, am_subject(&m));
        assert_eq!(first.message_id.as_deref(), m.id());
        assert_eq!(mbox::prefixes(&mbox_text).len(), 2);
    }

    #[test]
    fn an_original_from_is_believed_only_from_a_relay() {
        let claim = RELAYED.replace(
            "From: Miao Wang via B4 Relay <devnull+shankerwangmiao.gmail.com@kernel.org>",
            "From: Mallory <m@example.org>",
        );
        let m = Message::read(claim.as_bytes()).unwrap();
        assert_eq!(m.sender().unwrap().address, "m@example.org");
    }

    #[test]
    fn names_and_subjects_are_quoted_or_encoded_and_read_back() {
        let m = Mailbox {
            name: "Ma, Yu".into(),
            address: "yu.ma@intel.com".into(),
        };
        assert_eq!(mailbox_header(&m), "\"Ma, Yu\" <yu.ma@intel.com>");
        let long = "Jörg ".repeat(30);
        let encoded = encode_words(&long);
        assert!(encoded.lines().all(|l| l.trim().len() <= 75), "{encoded}");
        let header = format!("Subject: {encoded}\n");
        let (parsed, _) = mailparse::parse_header(header.as_bytes()).unwrap();
        assert_eq!(parsed.get_value(), long);
        assert_eq!(encode_words("plain"), "plain");
    }

    /// Found by `fuzz_message_reader` (seed 004, a web page, with a diff
    /// and no `From:`): `git am` refuses a patch that names no author.
    #[test]
    fn a_patch_without_an_author_is_not_written() {
        let m = Message::read(b"Subject: [PATCH] x\n\n---\ndiff --git a/x b/x\n").unwrap();
        assert!(m.has_diff && m.author().is_none());
        assert_eq!(am_message(&m), None);
        assert!(crate::mail::assemble(std::slice::from_ref(&m)).is_empty());
    }

    #[test]
    fn a_message_without_a_diff_is_no_patch() {
        let m = Message::read(b"Subject: Re: [PATCH] x\n\nLooks good.\n").unwrap();
        assert_eq!(am_message(&m), None);
        assert_eq!(series_mbox([&m]), "");
    }
}
