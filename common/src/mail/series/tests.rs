//! Series assembly on threads written as `git format-patch --cover-letter
//! -v2 | git send-email` and `b4 send` write them.

use super::*;

const DIFF: &str = "---\n fs/open.c | 2 +-\n 1 file changed, 1 insertion(+), 1 deletion(-)\n\n\
                    diff --git a/fs/open.c b/fs/open.c\nindex 1111111..2222222 100644\n\
                    --- a/fs/open.c\n+++ b/fs/open.c\n@@ -1 +1 @@\n-a\n+b\n-- \n2.39.5\n";

/// A message `id` answering the last of `refs` (all of them in
/// `References:`), from `from`, with `subject`; `diff` adds a patch.
fn mail(
    id: &str,
    refs: &[&str],
    from: &str,
    subject: &str,
    text: &str,
    diff: bool,
    minute: u32,
) -> Message {
    let mut raw = format!(
        "From: {from}\nTo: Christian Brauner <brauner@kernel.org>\n\
         Cc: linux-fsdevel@vger.kernel.org\nSubject: {subject}\n\
         Date: Mon, 25 Sep 2023 20:{minute:02}:00 +0000\nMessage-Id: <{id}>\n"
    );
    if let Some(parent) = refs.last() {
        let all: Vec<String> = refs.iter().map(|r| format!("<{r}>")).collect();
        raw.push_str(&format!(
            "In-Reply-To: <{parent}>\nReferences: {}\n",
            all.join(" ")
        ));
    }
    raw.push_str(&format!("\n{text}\n"));
    if diff {
        raw.push_str(DIFF);
    }
    Message::read(raw.as_bytes()).unwrap()
}

const AUTHOR: &str = "Jeff Layton <jlayton@kernel.org>";

/// A `--cover-letter` series of `n` patches, version `v` (`None`: no `vN`),
/// `skip` left out, all patches answering the cover letter.
fn series(tag: &str, v: Option<u32>, n: u32, skip: &[u32], minute: u32) -> Vec<Message> {
    let prefix = |k: u32| match v {
        Some(v) => format!("[PATCH v{v} {k}/{n}]"),
        None => format!("[PATCH {k}/{n}]"),
    };
    let cover_id = format!("{tag}-0@kernel.org");
    let mut out = vec![mail(
        &cover_id,
        &[],
        AUTHOR,
        &format!("{} fs: open faster", prefix(0)),
        "Two patches.\n\nJeff Layton (2):\n  a\n  b\n\n 1 file changed, 1 insertion(+), 1 deletion(-)\n\n\
         base-commit: 0c3836482481200ead7b416ca80c68a29cfdaabd",
        false,
        minute,
    )];
    for k in (1..=n).filter(|k| !skip.contains(k)) {
        out.push(mail(
            &format!("{tag}-{k}@kernel.org"),
            &[&cover_id],
            AUTHOR,
            &format!("{} fs: step {k}", prefix(k)),
            "Signed-off-by: Jeff Layton <jlayton@kernel.org>",
            true,
            minute + k,
        ));
    }
    out
}

#[test]
fn two_versions_with_cover_letters_are_two_complete_series_the_later_superseding() {
    let mut messages = series("v1", None, 2, &[], 0);
    messages.extend(series("v2", Some(2), 2, &[], 10));
    let found = assemble(&messages);
    assert_eq!(found.len(), 2, "{found:#?}");
    let (v1, v2) = (&found[0], &found[1]);
    assert_eq!((v1.version, v2.version), (1, 2));
    for s in [v1, v2] {
        assert!(s.is_complete(), "{s:#?}");
        assert_eq!(s.total, 2);
        assert_eq!(
            s.patches.iter().map(|p| p.number).collect::<Vec<_>>(),
            [1, 2]
        );
        assert_eq!(s.title, "fs: open faster");
        assert_eq!(
            s.base_commit.as_deref(),
            Some("0c3836482481200ead7b416ca80c68a29cfdaabd")
        );
        assert_eq!(s.key, "title:jlayton@kernel.org:fs: open faster");
    }
    assert!(v2.supersedes(v1) && !v1.supersedes(v2));
    assert_eq!(v2.cover.as_ref().unwrap().id, "v2-0@kernel.org");
    assert_eq!(v2.reply_to.message_id, "v2-0@kernel.org");
    assert_eq!(v2.reply_to.references, ["v2-0@kernel.org"]);
    assert_eq!(v2.reply_to.subject, "Re: [PATCH v2 0/2] fs: open faster");
    assert_eq!(v1.thread, "v1-0@kernel.org");
    let cc: Vec<&str> = v2.participants.iter().map(|m| m.address.as_str()).collect();
    assert_eq!(
        cc,
        [
            "jlayton@kernel.org",
            "brauner@kernel.org",
            "linux-fsdevel@vger.kernel.org"
        ]
    );
    // The mbox a comparison measures: patches 1 and 2 in order.
    let text = v2.mbox(&messages);
    let parsed = crate::mbox::parse(&text).unwrap();
    let subjects: Vec<&str> = parsed.patch_subjects().collect();
    assert_eq!(
        subjects,
        ["[PATCH v2 1/2] fs: step 1", "[PATCH v2 2/2] fs: step 2"]
    );
}

#[test]
fn a_missing_patch_is_named_and_the_series_is_incomplete() {
    let messages = series("s", None, 3, &[2], 0);
    let found = assemble(&messages);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].missing, [2]);
    assert!(!found[0].is_complete());
    // Without the cover letter, the patches answering it are still one
    // series, still missing 2.
    let found = assemble(&messages[1..]);
    assert_eq!((found.len(), found[0].missing.clone()), (1, vec![2]));
    assert_eq!(found[0].thread, "s-0@kernel.org");
    assert_eq!(found[0].reply_to.message_id, "s-1@kernel.org");
}

#[test]
fn replies_reviews_and_tags_are_not_patches() {
    let mut messages = series("s", None, 2, &[], 0);
    messages.push(mail(
        "review@suse.cz",
        &["s-0@kernel.org", "s-1@kernel.org"],
        "Jan Kara <jack@suse.cz>",
        "Re: [PATCH 1/2] fs: step 1",
        "> quoted\n\nReviewed-by: Jan Kara <jack@suse.cz>",
        false,
        30,
    ));
    // A reviewer's counter-proposal with a diff is a reply too.
    messages.push(mail(
        "counter@suse.cz",
        &["s-0@kernel.org", "s-2@kernel.org"],
        "Jan Kara <jack@suse.cz>",
        "Re: [PATCH 2/2] fs: step 2",
        "How about this instead?",
        true,
        31,
    ));
    assert_eq!(messages[3].trailers[0].value, "Jan Kara <jack@suse.cz>");
    let found = assemble(&messages);
    assert_eq!(found.len(), 1);
    assert!(found[0].is_complete());
    assert_eq!(
        found[0]
            .patches
            .iter()
            .map(|p| p.id.as_str())
            .collect::<Vec<_>>(),
        ["s-1@kernel.org", "s-2@kernel.org"]
    );
    assert!(
        !found[0]
            .participants
            .iter()
            .any(|m| m.address == "jack@suse.cz")
    );
}

#[test]
fn a_single_patch_is_a_series_of_one_answered_in_its_own_thread() {
    let m = mail(
        "one@x.org",
        &[],
        "Mateusz Guzik <mjguzik@gmail.com>",
        "[PATCH] vfs: shave work",
        "Why.",
        true,
        0,
    );
    let found = assemble(std::slice::from_ref(&m));
    assert_eq!(found.len(), 1);
    let s = &found[0];
    assert!(s.is_complete());
    assert_eq!((s.total, s.cover.is_none()), (1, true));
    assert_eq!(s.reply_to.message_id, "one@x.org");
    assert_eq!(s.reply_to.subject, "Re: [PATCH] vfs: shave work");
    // A message with a patch subject but no diff is no patch.
    let empty = mail(
        "two@x.org",
        &[],
        "A <a@x.org>",
        "[PATCH] forgot the diff",
        "Oops.",
        false,
        0,
    );
    assert!(assemble(&[empty]).is_empty());
}

#[test]
fn prefixes_are_read_for_version_tags_and_rfc() {
    let cover = mail(
        "c@x.org",
        &[],
        AUTHOR,
        "[RFC PATCH net-next v3 0/1] net: x",
        "Why.",
        false,
        0,
    );
    let patch = mail(
        "p@x.org",
        &["c@x.org"],
        AUTHOR,
        "[RFC PATCH net-next v3 1/1] net: x",
        "",
        true,
        1,
    );
    let found = assemble(&[cover, patch]);
    assert_eq!(found.len(), 1);
    let s = &found[0];
    assert_eq!((s.version, s.total, s.rfc), (3, 1, true));
    assert_eq!(s.tags, ["net-next"]);
    assert_eq!(s.cover.as_ref().map(|c| c.id.as_str()), Some("c@x.org"));
}

#[test]
fn a_change_id_ties_versions_whose_titles_differ() {
    let b4 = |id: &str, v: u32, title: &str| {
        mail(
            id,
            &[],
            AUTHOR,
            &format!("[PATCH v{v}] {title}"),
            "Why.\n---\nchange-id: 20240723-openfast-ac49a7b6ade2",
            true,
            v,
        )
    };
    let found = assemble(&[
        b4("a@k.org", 1, "fs: fast open"),
        b4("b@k.org", 2, "fs: faster open"),
    ]);
    assert_eq!(found.len(), 2);
    assert_eq!(
        found[0].key,
        "change-id:jlayton@kernel.org:20240723-openfast-ac49a7b6ade2"
    );
    assert!(found[1].supersedes(&found[0]));
}

/// issue 40's takeover: another sender's "v2" with the victim's b4
/// change-id does not supersede the victim's series, and a "patch 1/2"
/// posted into the victim's thread with an earlier `Date:` is not taken
/// in place of the author's.
#[test]
fn nobody_else_takes_over_a_series() {
    let b4 = |id: &str, v: u32, from: &str| {
        mail(
            id,
            &[],
            from,
            &format!("[PATCH v{v}] fs: fast open"),
            "Why.\n---\nchange-id: 20240723-openfast-ac49a7b6ade2",
            true,
            v,
        )
    };
    let found = assemble(&[
        b4("a@k.org", 1, AUTHOR),
        b4("m@evil.example", 2, "Mallory <m@evil.example>"),
    ]);
    assert_eq!(found.len(), 2);
    assert!(!found[1].supersedes(&found[0]), "{found:#?}");

    let mut thread = series("own", None, 2, &[], 10);
    thread.push(mail(
        "forged-1@evil.example",
        &["own-0@kernel.org"],
        "Mallory <m@evil.example>",
        "[PATCH 1/2] fs: step 1",
        "Signed-off-by: Mallory <m@evil.example>",
        true,
        // Dated before the author's own 1/2.
        5,
    ));
    let found = assemble(&thread);
    assert_eq!(found.len(), 1, "{found:#?}");
    let s = &found[0];
    assert!(s.is_complete());
    assert_eq!(s.patches[0].id, "own-1@kernel.org");
    assert_eq!(
        s.ignored,
        [Ignored {
            number: 1,
            id: "forged-1@evil.example".into(),
            sender: "m@evil.example".into(),
        }]
    );
}

#[test]
fn chained_patches_and_a_v2_in_the_v1_thread_are_told_apart() {
    // `git send-email --chain-reply-to`: each patch answers the one before.
    let c = mail("c@k.org", &[], AUTHOR, "[PATCH 0/3] x", "", false, 0);
    let p1 = mail(
        "1@k.org",
        &["c@k.org"],
        AUTHOR,
        "[PATCH 1/3] a",
        "",
        true,
        1,
    );
    let p2 = mail(
        "2@k.org",
        &["c@k.org", "1@k.org"],
        AUTHOR,
        "[PATCH 2/3] b",
        "",
        true,
        2,
    );
    let p3 = mail(
        "3@k.org",
        &["c@k.org", "1@k.org", "2@k.org"],
        AUTHOR,
        "[PATCH 3/3] c",
        "",
        true,
        3,
    );
    // v2 sent `--in-reply-to` v1's cover letter.
    let v2c = mail(
        "v2c@k.org",
        &["c@k.org"],
        AUTHOR,
        "[PATCH v2 0/1] x",
        "",
        false,
        10,
    );
    let v2p = mail(
        "v2p@k.org",
        &["c@k.org", "v2c@k.org"],
        AUTHOR,
        "[PATCH v2 1/1] a",
        "",
        true,
        11,
    );
    // Someone's own `[PATCH]` in answer to patch 3: a posting of its own.
    let other = mail(
        "o@x.org",
        &["c@k.org", "3@k.org"],
        "B <b@x.org>",
        "[PATCH 3/3] c",
        "",
        true,
        20,
    );
    let found = assemble(&[p3, other, v2p, c, p1, v2c, p2]);
    let shape: Vec<(u32, u32, usize, Vec<u32>)> = found
        .iter()
        .map(|s| (s.version, s.total, s.patches.len(), s.missing.clone()))
        .collect();
    assert_eq!(
        shape,
        [(1, 3, 3, vec![]), (2, 1, 1, vec![]), (1, 3, 1, vec![1, 2])]
    );
    assert!(found.iter().all(|s| s.thread == "c@k.org"));
    assert_eq!(found[1].reply_to.references, ["c@k.org", "v2c@k.org"]);
}

#[test]
fn copies_cycles_and_oversized_series_are_handled() {
    // Two copies of one patch number: the first posted counts.
    let a = mail(
        "a@k.org",
        &["c@k.org"],
        AUTHOR,
        "[PATCH 1/2] first",
        "",
        true,
        1,
    );
    let b = mail(
        "b@k.org",
        &["c@k.org"],
        AUTHOR,
        "[PATCH 1/2] resent",
        "",
        true,
        2,
    );
    let c = mail("c@k.org", &[], AUTHOR, "[PATCH 0/2] x", "", false, 0);
    let found = assemble(&[b, a, c]);
    assert_eq!(found[0].patches[0].id, "a@k.org");
    assert_eq!(found[0].missing, [2]);
    // Messages answering each other never end a walk wrongly or hang.
    let x = mail(
        "x@k.org",
        &["y@k.org"],
        AUTHOR,
        "[PATCH 1/2] x",
        "",
        true,
        1,
    );
    let y = mail(
        "y@k.org",
        &["x@k.org"],
        AUTHOR,
        "[PATCH 2/2] y",
        "",
        true,
        2,
    );
    let found = assemble(&[x, y]);
    assert_eq!(found.iter().map(|s| s.patches.len()).sum::<usize>(), 2);
    // A series says it has more patches than are ever measured.
    let huge = mail("h@k.org", &[], AUTHOR, "[PATCH 1/5000] x", "", true, 0);
    let found = assemble(&[huge]);
    assert!(found[0].oversized && found[0].missing.is_empty() && !found[0].is_complete());
}
