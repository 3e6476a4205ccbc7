//! The project's five seed messages read as list mail
//! (`common/tests/fixtures/mail/`, see its README): the seeds as they are,
//! and seeds 000, 001 and 003 restored to the mail they were.

use super::*;
use crate::mbox;

/// The seeds byte for byte, by number.
pub(crate) const SEEDS: [&[u8]; 5] = [
    include_bytes!("../../tests/fixtures/mail/seed000.txt"),
    include_bytes!("../../tests/fixtures/mail/seed001.txt"),
    include_bytes!("../../tests/fixtures/mail/seed002.txt"),
    include_bytes!("../../tests/fixtures/mail/seed003.txt"),
    include_bytes!("../../tests/fixtures/mail/seed004.txt"),
];

/// Seeds 000, 001 and 003 as mail again.
pub(crate) const RESTORED: [&[u8]; 3] = [
    include_bytes!("../../tests/fixtures/mail/seed000.eml"),
    include_bytes!("../../tests/fixtures/mail/seed001.eml"),
    include_bytes!("../../tests/fixtures/mail/seed003.eml"),
];

fn read(raw: &[u8]) -> Message {
    Message::read(raw).unwrap()
}

fn addresses(boxes: &[Mailbox]) -> Vec<&str> {
    boxes.iter().map(|m| m.address.as_str()).collect()
}

/// What may reach a reply's headers is one clean, bounded line.
pub(crate) fn assert_clean(m: &Message) {
    let f = &m.fields;
    let line = |s: &str, max: usize| {
        assert!(!s.chars().any(clean::breaks_line), "{s:?}");
        assert!(s.chars().count() <= max, "{s:?}");
    };
    line(&f.subject, clean::MAX_SUBJECT_CHARS);
    for id in f
        .message_id
        .iter()
        .chain(&f.in_reply_to)
        .chain(&f.references)
    {
        line(id, clean::MAX_MESSAGE_ID_LEN);
        assert!(!id.contains([' ', '<', '>']), "{id:?}");
    }
    let boxes = f
        .from
        .iter()
        .chain(&f.original_from)
        .chain(&f.reply_to)
        .chain(&f.to)
        .chain(&f.cc);
    for b in boxes.chain(&m.in_body.from) {
        line(&b.name, clean::MAX_NAME_CHARS);
        assert!(clean::is_address(&b.address), "{b:?}");
    }
    for t in &m.trailers {
        line(&t.value, clean::MAX_VALUE_CHARS);
    }
    for v in [
        &f.list_id,
        &f.precedence,
        &f.auto_submitted,
        &m.in_body.subject,
    ]
    .into_iter()
    .flatten()
    {
        line(v, clean::MAX_SUBJECT_CHARS);
    }
}

#[test]
fn every_seed_is_read_and_what_is_read_is_clean() {
    for raw in SEEDS.iter().chain(&RESTORED) {
        let m = read(raw);
        assert_clean(&m);
    }
}

/// The three seeds that lost their line breaks are one header line each:
/// no patch, no thread links, and so no series (b4 finds none either).
#[test]
fn seeds_without_line_breaks_are_no_patch() {
    for n in [0, 1, 3] {
        let m = read(SEEDS[n]);
        assert!(!m.has_diff, "seed {n}");
        assert_eq!(m.id(), None, "seed {n}");
        assert!(assemble(&[m]).is_empty(), "seed {n}");
    }
    // Seed 004 is a web page: its first line is no header either.
    let page = read(SEEDS[4]);
    assert_eq!((page.id(), page.fields.from.as_ref()), (None, None));
}

#[test]
fn seed_002_a_reply_with_the_patch_attached_is_read_but_is_no_patch() {
    let m = read(SEEDS[2]);
    let f = &m.fields;
    assert_eq!(f.subject, "Re: [PATCH] fs: use __fput_sync in close(2)");
    assert_eq!(
        m.id(),
        Some("20230808-divers-verehren-02abcc37fe60@brauner")
    );
    assert_eq!(
        m.parent(),
        Some("CAGudoHE=jJ+MKduj9-95Nk8_F=fkv2P+akftvFw1fVr46jm8ng@mail.gmail.com")
    );
    assert_eq!(f.references.len(), 6);
    assert_eq!(
        f.references[0],
        "20230806230627.1394689-1-mjguzik@gmail.com"
    );
    assert_eq!(
        m.sender().unwrap().header(),
        "Christian Brauner <brauner@kernel.org>"
    );
    assert_eq!(
        addresses(&f.to),
        ["mjguzik@gmail.com", "torvalds@linux-foundation.org"]
    );
    assert_eq!(
        addresses(&f.cc),
        [
            "ebiederm@xmission.com",
            "viro@zeniv.linux.org.uk",
            "linux-fsdevel@vger.kernel.org",
            "linux-kernel@vger.kernel.org",
            "oleg@redhat.com",
            "willy@infradead.org"
        ]
    );
    assert_eq!(f.cc[0].name, "Eric W. Biederman");
    assert_eq!(f.date, Some(1_691_516_158));
    // The body is the attached patch (it has the diff), read past its
    // `From <sha>` line: its author is Linus, not the sender.
    assert!(m.has_diff);
    assert!(
        m.body
            .starts_with("From 9b0919d12c74b3de6c23c52dc5b3d6ffd24fecee")
    );
    assert_eq!(
        m.author().unwrap().header(),
        "Linus Torvalds <torvalds@linux-foundation.org>"
    );
    assert_eq!(
        m.in_body.subject.as_deref(),
        Some("[PATCH] fs: use __fput_sync in close(2)")
    );
    let signed: Vec<&str> = m.trailers.iter().map(|t| t.value.as_str()).collect();
    assert_eq!(
        signed,
        [
            "Linus Torvalds <torvalds@linux-foundation.org>",
            "Christian Brauner <brauner@kernel.org>"
        ]
    );
    // `Precedence: bulk` without the list's `List-Id:` (this copy kept few
    // headers) is how an auto-responder's mail looks: never answered.
    assert_eq!(f.precedence.as_deref(), Some("bulk"));
    assert!(m.is_automatic());
    // A reply is not a patch, whatever it carries (b4 agrees).
    assert!(assemble(&[m]).is_empty());
}

#[test]
fn seed_001_quoted_printable_is_decoded() {
    let m = read(RESTORED[1]);
    assert_eq!(
        m.fields.subject,
        "Re: [PATCH v2] fs: try an opportunistic lookup for O_CREAT opens too"
    );
    assert!(m.subject().reply);
    assert!(
        m.body
            .contains("On Tue, Aug 6, 2024 at 4:32\u{202f}PM Jeff Layton"),
        "{}",
        m.body
    );
    assert!(m.body.contains("\"/tmp/willitscale.XXXXXX\""));
    assert!(
        m.body
            .contains("> \u{a0}\u{a0}\u{a0}\u{a0}\u{a0}\u{a0}\u{a0} int i;")
    );
    assert!(!m.body.contains("=C2=A0") && !m.body.contains("=3D"));
    assert!(m.body.ends_with("-- \nJeff Layton <jlayton@kernel.org>\n"));
    assert!(!m.has_diff);
    // Its own text has no tags; the quoted Signed-off-by is the patch's.
    assert!(m.trailers.is_empty(), "{:?}", m.trailers);
    assert_eq!(m.fields.in_reply_to, None);
    assert_eq!(
        m.parent(),
        Some("20240806-openfast-v2-1-42da45981811@kernel.org")
    );
    assert_eq!(m.fields.cc.len(), 7);
    assert_eq!(
        m.fields.list_id.as_deref(),
        Some("linux-kernel.vger.kernel.org")
    );
    assert!(!m.is_automatic());
    assert!(assemble(&[m]).is_empty());
}

#[test]
fn seed_003_a_b4_relay_patch_names_its_sender_and_its_author() {
    let m = read(RESTORED[2]);
    assert_eq!(
        m.fields.from.as_ref().unwrap().address,
        "devnull+shankerwangmiao.gmail.com@kernel.org"
    );
    assert_eq!(
        m.sender().unwrap().header(),
        "Miao Wang <shankerwangmiao@gmail.com>"
    );
    assert_eq!(
        m.author().unwrap().header(),
        "Linus Torvalds <torvalds@linux-foundation.org>"
    );
    let s = m.subject();
    assert_eq!((s.version, s.position), (None, Some((1, 4))));
    assert_eq!(s.tags, ["PATCH", "v5.15-v5.10"]);
    assert!(m.has_diff);
    let names: Vec<&str> = m.trailers.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "Link",
            "Reported-by",
            "Signed-off-by",
            "Cc",
            "Signed-off-by",
            "Tested-by"
        ]
    );
    // Patch 1 of 4 without its cover letter or the others: incomplete.
    let series = assemble(std::slice::from_ref(&m));
    assert_eq!(series.len(), 1);
    let s = &series[0];
    assert_eq!(
        (s.version, s.total, s.missing.clone()),
        (1, 4, vec![2, 3, 4])
    );
    assert!(!s.is_complete());
    assert_eq!(s.tags, ["v5.15-v5.10"]);
    assert_eq!(
        s.thread,
        "20240918-statx-stable-linux-5-15-y-v1-0-5afb4401ddbe@gmail.com"
    );
    assert_eq!(
        s.author.as_ref().unwrap().address,
        "shankerwangmiao@gmail.com"
    );
    // With no cover letter here, the answer goes to patch 1 in its thread.
    assert_eq!(
        s.reply_to.message_id,
        "20240918-statx-stable-linux-5-15-y-v1-1-5afb4401ddbe@gmail.com"
    );
    assert_eq!(
        s.reply_to.references,
        [
            "20240918-statx-stable-linux-5-15-y-v1-0-5afb4401ddbe@gmail.com",
            "20240918-statx-stable-linux-5-15-y-v1-1-5afb4401ddbe@gmail.com"
        ]
    );
    let cc = addresses(&s.participants);
    assert_eq!(
        cc[..2],
        ["shankerwangmiao@gmail.com", "torvalds@linux-foundation.org"]
    );
    assert!(
        cc.contains(&"gregkh@linuxfoundation.org") && cc.contains(&"linux-fsdevel@vger.kernel.org")
    );
}

#[test]
fn seed_000_a_single_patch_is_a_complete_series_that_git_am_takes() {
    let m = read(RESTORED[0]);
    let series = assemble(std::slice::from_ref(&m));
    assert_eq!(series.len(), 1);
    let s = &series[0];
    assert!(s.is_complete());
    assert_eq!((s.version, s.total, s.patches.len()), (1, 1, 1));
    assert_eq!(
        s.reply_to.subject,
        "Re: [PATCH] vfs: shave work on failed file open"
    );
    assert_eq!(
        s.reply_to.message_id,
        "20230925205545.4135472-1-mjguzik@gmail.com"
    );
    assert_eq!(
        s.key,
        "title:mjguzik@gmail.com:vfs: shave work on failed file open"
    );
    let text = s.mbox(std::slice::from_ref(&m));
    let parsed = mbox::parse(&text).unwrap();
    assert_eq!(parsed.messages.len(), 1);
    assert_eq!(
        parsed.messages[0].author,
        "Mateusz Guzik <mjguzik@gmail.com>"
    );
    assert_eq!(
        parsed.messages[0].subject,
        "[PATCH] vfs: shave work on failed file open"
    );
    // The diff is whole: it counts what the patch's own summary says.
    assert_eq!(
        mbox::diffstat(&text).to_string(),
        "3 files changed, 41 insertions(+), 1 deletion(-)"
    );
}

/// Mail on the wire ends its lines with CRLF; read from an archive, with
/// LF. Both read the same.
#[test]
fn crlf_line_ends_read_the_same() {
    for raw in SEEDS.iter().chain(&RESTORED) {
        let text = String::from_utf8_lossy(raw).replace('\n', "\r\n");
        let (lf, crlf) = (read(raw), read(text.as_bytes()));
        assert_eq!(lf.fields, crlf.fields);
        assert_eq!(
            lf.body.replace("\r\n", "\n"),
            crlf.body.replace("\r\n", "\n")
        );
        assert_eq!(
            (lf.has_diff, &lf.trailers, &lf.in_body),
            (crlf.has_diff, &crlf.trailers, &crlf.in_body)
        );
    }
}
