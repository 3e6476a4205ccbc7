//! Fuzz targets for list mail (`bench/fuzz.sh` runs them long): the
//! message reader on the seed messages with lines and bytes changed, the
//! mbox splitter on mboxrd text it must give back message for message,
//! and series assembly on threads of random shape. Reading never panics;
//! what is read is clean; what is assembled keeps every rule it states.

use std::collections::HashSet;

use proptest::prelude::*;
use proptest::sample::{Index, select};

use super::seeds::{RESTORED, SEEDS, assert_clean};
use super::*;
use crate::mbox;

/// Lines that reach the corners of headers, MIME, encodings and bodies.
const TRICKY: &[&str] = &[
    "Content-Type: multipart/mixed; boundary=\"b\"",
    "Content-Type: text/x-patch; charset=iso-8859-1; name=\"0001-x.patch\"",
    "Content-Type: text/plain; charset=x-unknown",
    "Content-Transfer-Encoding: base64",
    "Content-Transfer-Encoding: quoted-printable",
    "Content-Disposition: attachment; filename=\"x.diff\"",
    "--b",
    "--b--",
    "From: =?UTF-8?q?J=C3=B6rg=0D=0ABcc:_x@y.org?= <jh@example.org>",
    "From: Mallory\r <m@x.org>, <>, \"unclosed <a@b.org>",
    "Subject: =?utf-8?b?W1BBVENIIHYyIDEvMl0geA==?=",
    "Subject: Re: [RFC PATCH net-next v99999999999 0/4294967295] x",
    "Subject: [PATCH 7/3] beyond",
    "Message-ID: <a@b> <c@d>",
    "In-Reply-To: <<>>",
    "References: <x@y>\t<x@y> bare@id <",
    "Auto-Submitted: auto-replied",
    "Precedence: junk",
    " folded continuation",
    "From 9b0919d12c74b3de6c23c52dc5b3d6ffd24fecee Mon Sep 17 00:00:00 2001",
    "From mboxrd@z Thu Jan  1 00:00:00 1970",
    ">From escaped",
    "base-commit: 0c3836482481200ead7b416ca80c68a29cfdaabd",
    "change-id: 20240723-openfast-ac49a7b6ade2",
    "Reviewed-by: Jan Kara <jack@suse.cz>",
    "diff --git a/fs/open.c b/fs/open.c",
    "--- a/fs/open.c",
    "+++ b/fs/open.c",
    "@@ -1 +1 @@",
    "---",
    "-- ",
    "=C3=B6=\r",
    "\u{0}\u{202e}\u{2028}",
    "",
];

/// A seed (as it is or restored) with one to eight edits: a line dropped,
/// doubled, replaced by or preceded with a tricky one, or a byte changed.
fn edited_seed() -> impl Strategy<Value = Vec<u8>> {
    let all: Vec<&'static [u8]> = SEEDS.iter().chain(&RESTORED).copied().collect();
    let edit = (any::<Index>(), 0u8..5, select(TRICKY), any::<u8>());
    (select(all), proptest::collection::vec(edit, 1..9)).prop_map(|(seed, edits)| {
        let mut lines: Vec<Vec<u8>> = seed.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
        for (at, kind, tricky, byte) in edits {
            let i = at.index(lines.len() + 1);
            match kind {
                0 if i < lines.len() => {
                    lines.remove(i);
                }
                1 if i < lines.len() => lines.insert(i, lines[i].clone()),
                2 if i < lines.len() => lines[i] = tricky.as_bytes().to_vec(),
                3 if i < lines.len() && !lines[i].is_empty() => {
                    let j = at.index(lines[i].len());
                    lines[i][j] = byte;
                }
                _ => lines.insert(i, tricky.as_bytes().to_vec()),
            }
        }
        lines.join(&b'\n')
    })
}

/// Writes `messages` as an mboxrd (what public-inbox serves): a separator
/// before each, `>` added to every `>*From ` line, a blank line after.
fn mboxrd(messages: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    for m in messages {
        out.extend_from_slice(b"From mboxrd@z Thu Jan  1 00:00:00 1970\n");
        for line in m.split_inclusive(|&b| b == b'\n') {
            let quotes = line.iter().take_while(|&&b| b == b'>').count();
            if line[quotes..].starts_with(b"From ") {
                out.push(b'>');
            }
            out.extend_from_slice(line);
        }
        out.push(b'\n');
    }
    out
}

/// A message of a random thread: its id, its parent among the others (or
/// none), a subject from the shapes lists use, with or without a diff.
fn thread() -> impl Strategy<Value = Vec<Message>> {
    let subjects = select(vec![
        "[PATCH] x",
        "[PATCH 0/3] x",
        "[PATCH 1/3] x",
        "[PATCH 2/3] x",
        "[PATCH 3/3] x",
        "[PATCH v2 0/2] x",
        "[PATCH v2 1/2] x",
        "[PATCH v2 2/2] x",
        "[RFC PATCH net-next 1/1] y",
        "[PATCH 4/3] z",
        "[PATCH 1/201] big",
        "Re: [PATCH 1/3] x",
        "[PATCH 0/0] none",
        "x",
    ]);
    let message = (
        subjects,
        any::<bool>(),
        any::<Option<Index>>(),
        any::<Option<Index>>(),
        0u32..60,
        any::<bool>(),
    );
    proptest::collection::vec(message, 1..24).prop_map(|specs| {
        let n = specs.len();
        specs
            .iter()
            .enumerate()
            .map(|(i, (subject, diff, parent, root, minute, duplicate_id))| {
                let id = if *duplicate_id && i > 0 {
                    format!("m{}@x", i - 1)
                } else {
                    format!("m{i}@x")
                };
                let mut raw = format!(
                    "From: P{i} <p{}@x.org>\nCc: l@x.org\nSubject: {subject}\nMessage-ID: <{id}>\n\
                     Date: Mon, 25 Sep 2023 20:{minute:02}:00 +0000\n",
                    i % 3
                );
                if let Some(p) = parent {
                    let r = root.map_or(0, |r| r.index(n));
                    raw.push_str(&format!(
                        "In-Reply-To: <m{}@x>\nReferences: <m{r}@x> <m{}@x>\n",
                        p.index(n),
                        p.index(n)
                    ));
                }
                raw.push_str("\nbody\n");
                if *diff {
                    raw.push_str(
                        "---\ndiff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n",
                    );
                }
                Message::read(raw.as_bytes()).unwrap()
            })
            .collect()
    })
}

proptest! {
    /// Edited seeds: reading never panics; what is read is clean, its
    /// `has_diff` is the series parser's, its patch is one that the series
    /// parser reads back as one patch, and alone it makes one series at
    /// most.
    #[test]
    fn fuzz_message_reader(raw in edited_seed(), noise in proptest::collection::vec(any::<u8>(), 0..256)) {
        let _ = Message::read(&noise);
        if let Ok(m) = Message::read(&raw) {
            assert_clean(&m);
            prop_assert_eq!(m.has_diff, mbox::has_diff(&m.body));
            if let Some(text) = patch::am_message(&m) {
                let mbox_text = format!("{}{text}", mbox::SEPARATOR);
                let parsed = mbox::parse(&mbox_text);
                prop_assert!(parsed.is_ok(), "{:?}\n{}", parsed, mbox_text);
                let parsed = parsed.unwrap();
                prop_assert_eq!(parsed.messages.len(), 1, "{}", mbox_text);
                prop_assert!(parsed.messages[0].has_diff);
            }
            // Alone, a message is one series at most, and its patch is it.
            let found = assemble(std::slice::from_ref(&m));
            prop_assert!(found.len() <= 1);
            for s in &found {
                prop_assert!(s.patches.iter().all(|p| p.index == 0) && m.has_diff);
            }
        }
    }

    /// Any messages written as an mboxrd split back into themselves.
    #[test]
    fn fuzz_mbox_split_round_trips(
        seeds in proptest::collection::vec(edited_seed(), 1..5),
        extra in proptest::collection::vec("(>{0,2}From [a-z ]{0,8}|[ -~]{0,20})\n", 1..6),
    ) {
        let mut messages: Vec<Vec<u8>> = seeds
            .into_iter()
            .map(|mut m| {
                if !m.ends_with(b"\n") { m.push(b'\n'); }
                m
            })
            .filter(|m| !m.iter().all(u8::is_ascii_whitespace))
            .collect();
        messages.push(format!("Subject: x\n\n{}", extra.concat()).into_bytes());
        prop_assert_eq!(split_mbox(&mboxrd(&messages)).unwrap(), messages);
    }

    /// Random threads: every patch is in one series at most, numbers stay
    /// in 1..=N, patches and missing numbers make up 1..=N, only messages
    /// with a diff that answer nothing are patches, a complete series'
    /// mbox has its N patches, and answers go to one of its messages.
    #[test]
    fn fuzz_series_assembly(messages in thread()) {
        let found = assemble(&messages);
        let mut used = HashSet::new();
        for s in &found {
            for p in &s.patches {
                prop_assert!(used.insert(p.index), "{p:?} in two series");
                let m = &messages[p.index];
                prop_assert!(m.has_diff && !m.subject().reply);
                prop_assert!((1..=s.total).contains(&p.number));
            }
            let numbers: Vec<u32> = s.patches.iter().map(|p| p.number).collect();
            prop_assert!(numbers.windows(2).all(|w| w[0] < w[1]));
            if !s.oversized {
                let mut all: Vec<u32> = numbers.iter().chain(&s.missing).copied().collect();
                all.sort_unstable();
                prop_assert_eq!(all, (1..=s.total).collect::<Vec<_>>());
            }
            if s.is_complete() {
                let text = s.mbox(&messages);
                prop_assert_eq!(mbox::prefix::count(&text), s.total as usize);
            }
            let own: Vec<&str> = s.cover.iter().chain(&s.patches).map(|p| p.id.as_str()).collect();
            prop_assert!(own.contains(&s.reply_to.message_id.as_str()));
            prop_assert_eq!(s.reply_to.references.last(), Some(&s.reply_to.message_id));
            let keys: HashSet<String> = s.participants.iter().map(Mailbox::key).collect();
            prop_assert_eq!(keys.len(), s.participants.len());
        }
    }
}
