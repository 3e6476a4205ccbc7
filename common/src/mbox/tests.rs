use proptest::prelude::*;

use super::*;

const TWO_PATCH_SERIES: &str = "\
From 1111111111111111111111111111111111111111 Mon Sep 17 00:00:00 2001
From: =?UTF-8?q?J=C3=B6rg=20Hacker?= <jh@example.org>
Date: Mon, 1 Jan 2024 00:00:00 +0000
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

/// What `git format-patch` writes for `chmod +x` and nothing else.
const MODE_ONLY_PATCH: &str = "\
From 3333333333333333333333333333333333333333 Mon Sep 17 00:00:00 2001
From: A Developer <dev@example.org>
Subject: [PATCH] scripts: make check.sh executable

---
 scripts/check.sh | 0
 1 file changed, 0 insertions(+), 0 deletions(-)
 mode change 100644 => 100755 scripts/check.sh

diff --git a/scripts/check.sh b/scripts/check.sh
old mode 100644
new mode 100755
-- 
2.39.5
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
fn authors_are_read_as_name_and_address_and_dates_as_epoch_seconds() {
    let series = parse(TWO_PATCH_SERIES).unwrap();
    let first = &series.messages[0];
    assert_eq!(
        first.mailbox,
        Some(Mailbox {
            name: "Jörg Hacker".into(),
            address: "jh@example.org".into()
        })
    );
    assert_eq!(first.date, Some(1_704_067_200));
    assert_eq!(series.messages[1].date, None);
    let subject = first.parsed_subject();
    assert_eq!(subject.position, Some((1, 2)));
    assert_eq!(subject.title, "fs: make open faster");
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
fn a_mode_only_patch_is_a_patch() {
    let series = parse(MODE_ONLY_PATCH).unwrap();
    assert_eq!(
        series.patch_subjects().collect::<Vec<_>>(),
        ["[PATCH] scripts: make check.sh executable"]
    );
}

#[test]
fn text_without_a_diff_is_refused() {
    let err = parse("From: A <a@x>\nSubject: hello\n\njust words\n").unwrap_err();
    assert!(err.to_string().contains("mbox contains no patch"), "{err}");
    assert_eq!(parse("  \n").unwrap_err().to_string(), "mbox is empty");
}

#[test]
fn a_bare_diff_without_mail_headers_is_refused_with_advice() {
    let err = parse("diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n").unwrap_err();
    assert!(err.to_string().contains("git format-patch"), "{err}");
}

/// Mbox-like text: lines drawn mostly from the shapes a series has, so the
/// generator reaches separators, headers and diffs, not only noise.
fn mbox_text() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        Just("From 1111 Mon Sep 17 00:00:00 2001".to_string()),
        Just("From: A <a@example.org>".to_string()),
        Just("Subject: [PATCH v2 1/2] x".to_string()),
        Just("Message-ID: <1@x>".to_string()),
        Just(String::new()),
        Just("diff --git a/x b/x".to_string()),
        Just("--- a/x".to_string()),
        Just("+++ b/x".to_string()),
        Just("@@ -1 +1 @@".to_string()),
        ".{0,40}",
    ];
    proptest::collection::vec(line, 0..40).prop_map(|lines| lines.join("\n"))
}

proptest! {
    #[test]
    fn arbitrary_text_never_panics(text in ".*", bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = parse(&text);
        let lossy = String::from_utf8_lossy(&bytes);
        let _ = parse(&lossy);
        for (i, message) in split(&lossy).into_iter().enumerate() {
            let _ = Message::read(message, i);
        }
        let _ = Subject::parse(&text);
    }

    #[test]
    fn the_per_patch_cost_is_what_the_prefixes_write(text in mbox_text()) {
        // `too_large` counts without writing; a series it lets through
        // writes no more than it counted, and as many steps.
        let prefixes = super::prefixes(&text);
        let written: usize = prefixes.iter().map(String::len).sum();
        match super::prefix::too_large(&text) {
            None => {
                prop_assert!(prefixes.len() <= super::prefix::MAX_STEPS);
                prop_assert!(written <= super::prefix::MAX_STEPS_BYTES);
            }
            Some(why) => prop_assert!(!why.is_empty()),
        }
    }

    #[test]
    fn split_messages_are_pieces_of_the_mbox_in_order(text in mbox_text()) {
        let messages = split(&text);
        let mut from = 0;
        for message in &messages {
            // Each message is a slice of the input, after the previous one.
            let start = message.as_ptr() as usize - text.as_ptr() as usize;
            prop_assert!(start >= from);
            prop_assert_eq!(&text[start..start + message.len()], *message);
            prop_assert!(!message.trim().is_empty());
            from = start + message.len();
        }
    }

    #[test]
    fn joined_series_split_back_into_their_messages(
        bodies in proptest::collection::vec("[a-z ]{1,30}", 1..6),
    ) {
        let messages: Vec<String> = bodies
            .iter()
            .enumerate()
            .map(|(i, b)| format!("From: A <a@x>\nSubject: [PATCH {}/{}] {b}\n\n{b}\n", i + 1, bodies.len()))
            .collect();
        let mbox: String = messages
            .iter()
            .map(|m| format!("From 1111 Mon Sep 17 00:00:00 2001\n{m}\n"))
            .collect();
        let split = split(&mbox);
        prop_assert_eq!(split.len(), messages.len());
        for (got, want) in split.iter().zip(&messages) {
            prop_assert_eq!(got.trim_end(), want.trim_end());
        }
    }

    #[test]
    fn a_series_parse_accepts_has_a_patch_and_the_text_s_sha256(text in mbox_text()) {
        if let Ok(series) = parse(&text) {
            prop_assert!(series.messages.iter().any(|m| m.has_diff));
            prop_assert_eq!(series.messages.len(), split(&text).len());
            prop_assert_eq!(series.sha256, sha256_hex(text.as_bytes()));
        }
    }
}

/// Lines that reach the header decoder's and the subject reader's corners.
const TRICKY_LINES: &[&str] = &[
    "From 1111111111111111111111111111111111111111 Mon Sep 17 00:00:00 2001",
    "From: =?UTF-8?B?SsO2cmc=?= <jh@example.org>",
    "From: =?utf-8?q?=FF=FE?= <a@x>, B <b@x>",
    "From: <>",
    "Subject: =?UTF-8?q?=5BPATCH=20v2=203/7=5D?= mm: x",
    "Subject: [PATCH v99999999999 4294967296/0] y",
    "Subject: Re: [RFC][PATCH 0/2] [",
    " folded continuation",
    "\tfolded with a tab",
    "Date: Mon, 32 Foo 99999 25:61:61 +9999",
    "Date: Thu, 1 Jan 1970 00:00:00 -1200",
    "Message-ID: <<>>",
    "Content-Transfer-Encoding: base64",
    "diff --git a/x b/x",
    "--- a/x",
    "+++ b/x",
    "@@ -1 +1 @@",
    "-- ",
    "\u{0}",
    ":",
    "",
];

/// A real series with one to six line edits: a line dropped, doubled, or
/// replaced by or preceded with a tricky one.
fn edited_series() -> impl Strategy<Value = String> {
    let base = prop_oneof![Just(TWO_PATCH_SERIES), Just(MODE_ONLY_PATCH)];
    let edit = (
        any::<proptest::sample::Index>(),
        0u8..4,
        proptest::sample::select(TRICKY_LINES),
    );
    (base, proptest::collection::vec(edit, 1..7)).prop_map(|(base, edits)| {
        let mut lines: Vec<&str> = base.lines().collect();
        for (at, kind, tricky) in edits {
            let i = at.index(lines.len() + 1);
            match kind {
                0 if i < lines.len() => {
                    lines.remove(i);
                }
                1 if i < lines.len() => lines.insert(i, lines[i]),
                2 if i < lines.len() => lines[i] = tricky,
                _ => lines.insert(i, tricky),
            }
        }
        lines.join("\n")
    })
}

proptest! {
    /// Edited real series reach the header decoding, folding and subject
    /// paths: reading never panics, and `parse` agrees with reading the
    /// messages one by one, as the runner does.
    #[test]
    fn fuzz_edited_series(text in edited_series()) {
        let messages: Vec<_> = split(&text)
            .into_iter()
            .enumerate()
            .map(|(i, m)| Message::read(m, i))
            .collect();
        for message in messages.iter().flatten() {
            let _ = message.parsed_subject();
        }
        // The files a series touches are named, never empty.
        prop_assert!(super::paths(&text).iter().all(|p| !p.is_empty()));
        match parse(&text) {
            Ok(series) => {
                let read: Vec<Message> = messages.into_iter().map(Result::unwrap).collect();
                prop_assert_eq!(series.messages, read);
            }
            Err(_) => prop_assert!(
                messages.iter().any(Result::is_err)
                    || !messages.iter().flatten().any(|m| m.has_diff)
            ),
        }
    }

    /// Empty lines after a series add no message and change none, as
    /// `split` documents (only the sha256 of the text changes). Lines of
    /// spaces are not in this: after a header with no body they read as a
    /// folded header, which mailparse rightly refuses.
    #[test]
    fn fuzz_trailing_empty_lines_change_no_message(
        text in edited_series(),
        tail in "\n{1,8}",
    ) {
        let padded = format!("{text}\n{tail}");
        match (parse(&text), parse(&padded)) {
            (Ok(a), Ok(b)) => prop_assert_eq!(a.messages, b.messages),
            (Err(_), Err(_)) => {}
            (a, b) => prop_assert!(false, "{a:?} became {b:?}"),
        }
    }
}

#[test]
fn plain_diffs_are_refused_saying_what_to_send() {
    for plain in [
        "diff --git a/fs/open.c b/fs/open.c\nindex 1234567..89abcde 100644\n\
         --- a/fs/open.c\n+++ b/fs/open.c\n@@ -1 +1 @@\n-a\n+b\n",
        "--- a/fs/open.c\t2024-01-01 00:00:00.000000000 +0000\n\
         +++ b/fs/open.c\t2024-01-01 00:00:00.000000000 +0000\n@@ -1 +1 @@\n-a\n+b\n",
        "diff -u a/fs/open.c b/fs/open.c\n--- a/fs/open.c\n+++ b/fs/open.c\n@@ -1 +1 @@\n-a\n+b\n",
        "Index: fs/open.c\n=====\n--- a/fs/open.c\n+++ b/fs/open.c\n@@ -1 +1 @@\n-a\n+b\n",
    ] {
        let e = parse(plain).unwrap_err();
        assert_eq!(e, Error::MboxDiffWithoutHeaders { message: 1 }, "{plain}");
        assert!(e.to_string().contains("git format-patch --stdout"), "{e}");
    }
}

#[test]
fn a_paragraph_starting_with_from_does_not_split_a_message() {
    let mbox = "\
From 1111111111111111111111111111111111111111 Mon Sep 17 00:00:00 2001
From: A <a@example.org>
Subject: [PATCH] fs: open

From the report on the list: open is slow.

From 6.1 on, every open pays for it.
---
diff --git a/fs/open.c b/fs/open.c
--- a/fs/open.c
+++ b/fs/open.c
@@ -1 +1 @@
-a
+b

From mboxrd@z Thu Jan  1 00:00:00 1970
From: B <b@example.org>
Subject: Re: [PATCH] fs: open

Looks good.
";
    let messages = split(mbox);
    assert_eq!(messages.len(), 2, "{messages:#?}");
    assert!(messages[0].starts_with("From: A"));
    assert!(messages[0].contains("From the report"));
    assert!(messages[1].starts_with("From: B"));
    let series = parse(mbox).unwrap();
    assert_eq!(
        series.patch_subjects().collect::<Vec<_>>(),
        ["[PATCH] fs: open"]
    );
}
