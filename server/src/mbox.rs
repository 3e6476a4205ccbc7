//! Reading a patch series submitted as mbox text (`git format-patch
//! --stdout`, or a thread saved from lore): split it into messages, take the
//! headers a report needs, and refuse text that carries no patch at all.

use crate::auth::sha256_hex;

/// One message of the series.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// Decoded, unfolded `Subject:`.
    pub subject: String,
    /// `Message-ID:` without the angle brackets.
    pub message_id: Option<String>,
    /// Decoded `From:`.
    pub author: String,
    /// Whether the body has a diff (cover letters do not).
    pub has_diff: bool,
}

/// A parsed series.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Series {
    /// sha256 of the whole mbox text: the patched kernel's identity.
    pub sha256: String,
    /// Messages in mbox order.
    pub messages: Vec<Message>,
}

impl Series {
    /// The empty series of an A/A comparison: no message, the sha256 of no
    /// text.
    pub fn empty() -> Series {
        Series {
            sha256: sha256_hex(b""),
            messages: Vec::new(),
        }
    }

    /// Subjects of the messages that carry a patch, in order.
    pub fn patch_subjects(&self) -> impl Iterator<Item = &str> {
        self.messages
            .iter()
            .filter(|m| m.has_diff)
            .map(|m| m.subject.as_str())
    }
}

/// Parses mbox text. The error says what is wrong in words for the
/// submitter.
pub fn parse(mbox: &str) -> Result<Series, String> {
    if mbox.trim().is_empty() {
        return Err("mbox is empty".into());
    }
    let mut messages = Vec::new();
    for (index, text) in split_messages(mbox).into_iter().enumerate() {
        let (headers, body_offset) = mailparse::parse_headers(text.as_bytes())
            .map_err(|e| format!(
                "message {} of the mbox: bad headers ({e}); produce the series with `git format-patch`",
                index + 1
            ))?;
        let header = |name: &str| {
            mailparse::MailHeaderMap::get_first_value(headers.as_slice(), name)
                .map(|v| v.trim().to_string())
        };
        let body = &text[body_offset.min(text.len())..];
        let has_diff = has_diff(body);
        let subject = header("Subject");
        let author = header("From");
        // A diff read as headers means the text has no mail headers at all.
        let headerless_diff = !has_diff && self::has_diff(text);
        if headerless_diff || (has_diff && (subject.is_none() || author.is_none())) {
            return Err(format!(
                "message {} of the mbox has a diff but no Subject or From header; \
                 produce the series with `git format-patch`",
                index + 1
            ));
        }
        messages.push(Message {
            subject: subject.unwrap_or_default(),
            message_id: header("Message-ID")
                .map(|id| id.trim_start_matches('<').trim_end_matches('>').to_string()),
            author: author.unwrap_or_default(),
            has_diff,
        });
    }
    if !messages.iter().any(|m| m.has_diff) {
        return Err("mbox contains no patch (no message with a diff in it)".into());
    }
    Ok(Series {
        sha256: sha256_hex(mbox.as_bytes()),
        messages,
    })
}

/// Splits at mbox `From ` separator lines; text without one is a single
/// message.
fn split_messages(mbox: &str) -> Vec<&str> {
    let mut starts = Vec::new();
    let mut offset = 0;
    let mut previous_blank = true;
    for line in mbox.split_inclusive('\n') {
        if previous_blank && line.starts_with("From ") {
            starts.push(offset);
        }
        previous_blank = line.trim_end().is_empty();
        offset += line.len();
    }
    if starts.first() != Some(&0) {
        starts.insert(0, 0);
    }
    let mut messages = Vec::new();
    for (i, &start) in starts.iter().enumerate() {
        let end = starts.get(i + 1).copied().unwrap_or(mbox.len());
        let text = &mbox[start..end];
        // The separator line is not a header.
        let text = match text.strip_prefix("From ") {
            Some(rest) => rest.split_once('\n').map_or("", |(_, after)| after),
            None => text,
        };
        if !text.trim().is_empty() {
            messages.push(text);
        }
    }
    messages
}

/// A git diff header, or a unified diff's `---`/`+++`/`@@` triple.
fn has_diff(body: &str) -> bool {
    let lines: Vec<&str> = body.lines().collect();
    lines.iter().any(|l| l.starts_with("diff --git "))
        || lines.windows(3).any(|w| {
            w[0].starts_with("--- ") && w[1].starts_with("+++ ") && w[2].starts_with("@@ ")
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO_PATCH_SERIES: &str = "\
From 1111111111111111111111111111111111111111 Mon Sep 17 00:00:00 2001
From: =?UTF-8?q?J=C3=B6rg=20Hacker?= <jh@example.org>
Subject: [PATCH 1/2] fs: make
 open faster
Message-ID: <20240101.1@example.org>

Folded subject, encoded author.
---
diff --git a/fs/open.c b/fs/open.c
--- a/fs/open.c
+++ b/fs/open.c
@@ -1 +1 @@
-a
+b

From 2222222222222222222222222222222222222222 Mon Sep 17 00:00:00 2001
From: A <a@example.org>
Subject: [PATCH 2/2] fs: plain unified diff

--- a/fs/stat.c
+++ b/fs/stat.c
@@ -1 +1 @@
-a
+b
";

    #[test]
    fn reads_subject_author_and_message_id_of_each_patch() {
        let series = parse(TWO_PATCH_SERIES).unwrap();
        assert_eq!(series.messages.len(), 2);
        let first = &series.messages[0];
        assert_eq!(first.subject, "[PATCH 1/2] fs: make open faster");
        assert_eq!(first.author, "Jörg Hacker <jh@example.org>");
        assert_eq!(first.message_id.as_deref(), Some("20240101.1@example.org"));
        assert!(first.has_diff);
        assert_eq!(
            series.messages[1].subject,
            "[PATCH 2/2] fs: plain unified diff"
        );
        assert_eq!(series.messages[1].message_id, None);
        assert!(series.messages[1].has_diff);
        assert_eq!(series.sha256, sha256_hex(TWO_PATCH_SERIES.as_bytes()));
    }

    #[test]
    fn a_cover_letter_is_kept_but_is_not_a_patch() {
        let mbox = format!(
            "From 0 Mon Sep 17 00:00:00 2001\nFrom: A <a@x>\nSubject: [PATCH 0/2] cover\n\nwords\n\n{TWO_PATCH_SERIES}"
        );
        let series = parse(&mbox).unwrap();
        assert_eq!(series.messages.len(), 3);
        assert!(!series.messages[0].has_diff);
        assert_eq!(
            series.patch_subjects().collect::<Vec<_>>(),
            [
                "[PATCH 1/2] fs: make open faster",
                "[PATCH 2/2] fs: plain unified diff"
            ]
        );
    }

    #[test]
    fn text_without_a_diff_is_refused() {
        let err = parse("From: A <a@x>\nSubject: hello\n\njust words\n").unwrap_err();
        assert!(err.contains("mbox contains no patch"), "{err}");
        assert_eq!(parse("  \n").unwrap_err(), "mbox is empty");
    }

    #[test]
    fn a_bare_diff_without_mail_headers_is_refused_with_advice() {
        let err = parse("diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n").unwrap_err();
        assert!(err.contains("git format-patch"), "{err}");
    }
}
