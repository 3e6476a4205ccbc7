//! `b4 am` is the reference for series assembly (issue 25): the same
//! thread, as an mbox file, goes to `b4 am` and to `mail::assemble`, and
//! both must give the same patches (subject, author, diff) in the same
//! order, and name the same missing ones, for every version of the
//! series. Threads: the five seed messages (as they are, and the three
//! restored), and threads made as kernel developers make them with real
//! git (`format-patch`, `send-email`) and real b4 (`prep`, `send`). Skips,
//! saying why, only when b4 is not installed (`./patchperf test`
//! installs it).

mod b4;
mod git;

use std::collections::BTreeSet;

use b4::{Am, B4, patches_of};
use git::Repo;
use patchperf_common::mail::{self, Message, Series, assemble};

/// The b4 to compare with, or `None` after printing why there is none.
fn b4() -> Option<B4> {
    match B4::find() {
        Ok(b4) => {
            if !b4.isolated() {
                eprintln!(
                    "b4 runs with --offline-mode but not in a network namespace (unshare -n failed)"
                );
            }
            Some(b4)
        }
        Err(why) => {
            eprintln!("skipped: {why}");
            None
        }
    }
}

/// Writes `messages` as an mboxrd file (what public-inbox serves).
fn mbox_file(dir: &std::path::Path, messages: &[Vec<u8>]) -> std::path::PathBuf {
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
        if !out.ends_with(b"\n") {
            out.push(b'\n');
        }
        out.push(b'\n');
    }
    let file = dir.join("thread.mbox");
    std::fs::write(&file, out).unwrap();
    file
}

/// Feeds `messages` to b4 and to our assembly, version by version, and
/// asserts they agree; returns our series and the messages as read.
fn compare(b4: &B4, name: &str, messages: &[Vec<u8>]) -> (Vec<Series>, Vec<Message>) {
    let dir = tempfile::tempdir().unwrap();
    let file = mbox_file(dir.path(), messages);
    // What a list receives is read from the mbox, as the server will.
    let raw = mail::split_mbox(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(raw.len(), messages.len(), "{name}: split");
    let read: Vec<Message> = raw.iter().map(|m| Message::read(m).unwrap()).collect();
    let ours = assemble(&read);
    let versions: BTreeSet<u32> = ours.iter().map(|s| s.version).collect();
    for &v in &versions {
        let of_v: Vec<&Series> = ours.iter().filter(|s| s.version == v).collect();
        assert_eq!(
            of_v.len(),
            1,
            "{name}: b4 reads one series of v{v} from a thread: {of_v:#?}"
        );
        let mine = Am {
            patches: patches_of(of_v[0].mbox(&read).as_bytes()),
            missing: of_v[0].missing.clone(),
        };
        let theirs = b4.am(&file, Some(v));
        assert!(!theirs.patches.is_empty(), "{name} v{v}: b4 found nothing");
        assert_eq!(
            mine, theirs,
            "{name} v{v}: ours (left) and b4's (right) differ"
        );
    }
    // Without `-v`, b4 takes the latest version; none when we found none.
    let latest = b4.am(&file, None);
    match versions.last() {
        Some(&v) => {
            let s = ours.iter().find(|s| s.version == v).unwrap();
            assert_eq!(
                patches_of(s.mbox(&read).as_bytes()),
                latest.patches,
                "{name}: latest"
            );
        }
        None => assert!(latest.patches.is_empty(), "{name}: b4 found {latest:#?}"),
    }
    let shape: Vec<String> = ours
        .iter()
        .map(|s| {
            format!(
                "v{} {}/{} missing {:?}",
                s.version,
                s.patches.len(),
                s.total,
                s.missing
            )
        })
        .collect();
    eprintln!(
        "{name}: b4 and patchperf agree: {}",
        if shape.is_empty() {
            "no patch".into()
        } else {
            shape.join("; ")
        }
    );
    (ours, read)
}

const SEEDS: [&[u8]; 8] = [
    include_bytes!("../fixtures/mail/seed000.txt"),
    include_bytes!("../fixtures/mail/seed001.txt"),
    include_bytes!("../fixtures/mail/seed002.txt"),
    include_bytes!("../fixtures/mail/seed003.txt"),
    include_bytes!("../fixtures/mail/seed004.txt"),
    include_bytes!("../fixtures/mail/seed000.eml"),
    include_bytes!("../fixtures/mail/seed001.eml"),
    include_bytes!("../fixtures/mail/seed003.eml"),
];

#[test]
fn the_seed_messages() {
    let Some(b4) = b4() else { return };
    let names = [
        "000",
        "001",
        "002",
        "003",
        "004",
        "000 restored",
        "001 restored",
        "003 restored",
    ];
    for (name, seed) in names.iter().zip(SEEDS) {
        let (ours, _) = compare(&b4, &format!("seed {name}"), &[seed.to_vec()]);
        let expected = match *name {
            "000 restored" => 1,
            "003 restored" => 1,
            _ => 0,
        };
        assert_eq!(ours.len(), expected, "seed {name}");
    }
}

const AUTHOR: &str = "Jeff Layton <jlayton@kernel.org>";

/// Two commits on `base` (their text depends on `round`).
fn two_commits(repo: &Repo, round: &str) {
    repo.write(
        "fs/open.c",
        &format!("int open(void)\n{{\n\treturn 0; /* {round} */\n}}\n"),
    );
    repo.commit(
        AUTHOR,
        &format!("fs: open faster\n\nThe {round} way.\n\nSigned-off-by: {AUTHOR}\n"),
    );
    repo.write("fs/namei.c", &format!("int namei(void) /* {round} */;\n"));
    repo.commit(
        AUTHOR,
        &format!("fs: look up names\n\nAlso {round}.\n\nSigned-off-by: {AUTHOR}\n"),
    );
}

#[test]
fn two_versions_of_a_two_patch_series_with_cover_letters() {
    let Some(b4) = b4() else { return };
    let mut repo = Repo::new();
    two_commits(&repo, "first");
    let v1 = repo.format_patch(
        &[
            "format-patch",
            "--cover-letter",
            "--thread",
            "--base=base",
            "-2",
        ],
        Some(("fs: open files faster", "Two patches.")),
    );
    let mut thread = repo.send(&v1, &[]);
    // format-patch's Message-IDs hold the second they were made: v2 is
    // posted later, as in life, so that its ids are its own.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    repo.git(&["reset", "-q", "--hard", "base"]);
    two_commits(&repo, "second");
    let v2 = repo.format_patch(
        &[
            "format-patch",
            "--cover-letter",
            "--thread",
            "--base=base",
            "-v2",
            "-2",
        ],
        Some(("fs: open files faster", "Two patches, again.")),
    );
    thread.extend(repo.send(&v2, &[]));
    let (ours, read) = compare(&b4, "v1 and v2 with cover letters", &thread);
    assert_eq!(ours.len(), 2);
    assert!(ours.iter().all(Series::is_complete));
    assert!(ours[1].supersedes(&ours[0]));
    assert_eq!(ours[1].reply_to.message_id, Repo::id(&thread[3]));
    assert_eq!(
        ours[1].base_commit.as_deref(),
        Some(repo.git(&["rev-parse", "base"]).trim())
    );
    // `git am` of v2's mbox on the base gives v2's tree.
    let (applied, head) = repo.am_tree(&ours[1].mbox(&read));
    assert_eq!(applied, head);
}

#[test]
fn a_series_whose_second_patch_never_arrived() {
    let Some(b4) = b4() else { return };
    let mut repo = Repo::new();
    two_commits(&repo, "first");
    repo.write("fs/stat.c", "int stat(void);\n");
    repo.commit(
        AUTHOR,
        "fs: stat\n\nSigned-off-by: Jeff Layton <jlayton@kernel.org>\n",
    );
    let files = repo.format_patch(
        &["format-patch", "--cover-letter", "--thread", "-3"],
        Some(("fs: three", "Three.")),
    );
    let mut thread = repo.send(&files, &[]);
    thread.remove(2);
    let (ours, _) = compare(&b4, "3 patches, 2/3 missing", &thread);
    assert_eq!(ours[0].missing, [2]);
}

#[test]
fn a_reply_with_review_tags_is_no_patch() {
    let Some(b4) = b4() else { return };
    let mut repo = Repo::new();
    two_commits(&repo, "first");
    let files = repo.format_patch(
        &["format-patch", "--cover-letter", "--thread", "-2"],
        Some(("fs: open files faster", "Two.")),
    );
    let mut thread = repo.send(&files, &[]);
    let (cover, first) = (Repo::id(&thread[0]), Repo::id(&thread[1]));
    let reply = |id: &str, text: &str| {
        format!(
            "From: Jan Kara <jack@suse.cz>\nTo: {AUTHOR}\nCc: linux-fsdevel@vger.kernel.org\n\
             Subject: Re: [PATCH 1/2] fs: open faster\nDate: Tue, 26 Sep 2023 10:00:00 +0200\n\
             Message-ID: <{id}>\nIn-Reply-To: <{first}>\nReferences: <{cover}> <{first}>\n\n\
             On Mon 25-09-23, Jeff Layton wrote:\n> The first way.\n\n{text}\n"
        )
        .into_bytes()
    };
    thread.push(reply(
        "review@suse.cz",
        "Looks good.\n\nReviewed-by: Jan Kara <jack@suse.cz>",
    ));
    // A review that proposes a diff is a reply, not a patch, for both.
    thread.push(reply(
        "counter@suse.cz",
        "Rather:\n\ndiff --git a/fs/open.c b/fs/open.c\n--- a/fs/open.c\n+++ b/fs/open.c\n@@ -1 +1 @@\n-a\n+b",
    ));
    let (ours, read) = compare(&b4, "a reply with review tags", &thread);
    assert_eq!((ours.len(), ours[0].patches.len()), (1, 2));
    assert_eq!(read[3].trailers[0].value, "Jan Kara <jack@suse.cz>");
}

#[test]
fn a_single_patch_sent_on_behalf_of_its_author_in_quoted_printable() {
    let Some(b4) = b4() else { return };
    let mut repo = Repo::new();
    repo.write("fs/open.c", "int open(void) { return 1; } /* Jörg */\n");
    repo.commit(
        "Jörg Hacker <jh@example.org>",
        "fs: öpen\n\nSäys why.\n\nSigned-off-by: Jörg Hacker <jh@example.org>\n",
    );
    let files = repo.format_patch(&["format-patch", "--thread", "-1"], None);
    let thread = repo.send(
        &files,
        &[
            "--from=Miao Wang <shankerwangmiao@gmail.com>",
            "--transfer-encoding=quoted-printable",
        ],
    );
    assert!(
        String::from_utf8_lossy(&thread[0]).contains("From: J=C3=B6rg Hacker <jh@example.org>")
    );
    let (ours, read) = compare(
        &b4,
        "a single patch sent on behalf, quoted-printable",
        &thread,
    );
    assert_eq!(
        read[0].author().unwrap().header(),
        "Jörg Hacker <jh@example.org>"
    );
    assert_eq!(
        ours[0].author.as_ref().unwrap().address,
        "shankerwangmiao@gmail.com"
    );
    let (applied, head) = repo.am_tree(&ours[0].mbox(&read));
    assert_eq!(applied, head);
}

#[test]
fn a_patch_in_base64_and_patches_as_attachments() {
    let Some(b4) = b4() else { return };
    let mut repo = Repo::new();
    two_commits(&repo, "first");
    let one = repo.format_patch(&["format-patch", "--thread", "-1"], None);
    let thread = repo.send(&one, &["--transfer-encoding=base64"]);
    assert!(String::from_utf8_lossy(&thread[0]).contains("Content-Transfer-Encoding: base64"));
    compare(&b4, "a patch in base64", &thread);
    let attached = repo.format_patch(
        &[
            "format-patch",
            "--attach",
            "--cover-letter",
            "--thread",
            "-2",
        ],
        Some(("fs: attached", "As attachments.")),
    );
    let thread = repo.send(&attached, &[]);
    assert!(String::from_utf8_lossy(&thread[1]).contains("Content-Type: text/x-patch"));
    let (ours, read) = compare(&b4, "patches as format-patch --attach attachments", &thread);
    let (applied, head) = repo.am_tree(&ours[0].mbox(&read));
    assert_eq!(applied, head);
}

#[test]
fn two_versions_as_b4_send_writes_them() {
    let Some(b4) = b4() else { return };
    let home = tempfile::tempdir().unwrap();
    let src = home.path().join("src");
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .current_dir(&src)
            .env("HOME", home.path())
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let editor = home.path().join("cover.sh");
    std::fs::write(
        &editor,
        "#!/bin/sh\nprintf 'fs: open files faster\\n\\nWhy it is faster.\\n' > \"$1\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&editor, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let b4_run = |args: &[&str]| {
        let out = b4
            .command(&src, home.path())
            .env("EDITOR", &editor)
            .env("GIT_EDITOR", &editor)
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "b4 {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    std::fs::create_dir_all(&src).unwrap();
    git(&["init", "-q", "-b", "main"]);
    git(&["config", "user.name", "Jeff Layton"]);
    git(&["config", "user.email", "jlayton@kernel.org"]);
    std::fs::write(src.join("open.c"), "int open(void);\n").unwrap();
    git(&["add", "-A"]);
    git(&["commit", "-qm", "base"]);
    b4_run(&["prep", "-n", "openfast", "-f", "main"]);
    b4_run(&["prep", "--edit-cover"]);
    let commit = |text: &str, file: &str| {
        std::fs::write(src.join(file), text).unwrap();
        git(&["add", "-A"]);
        git(&[
            "commit",
            "-qm",
            &format!("fs: change {file}\n\nSigned-off-by: {AUTHOR}"),
        ]);
    };
    commit("int open(void) { return 0; }\n", "open.c");
    commit("int namei(void);\n", "namei.c");
    let send = |dir: &str| -> Vec<Vec<u8>> {
        let out = home.path().join(dir);
        b4_run(&["send", "--no-sign", "-o", out.to_str().unwrap()]);
        let mut files: Vec<_> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        files.iter().map(|f| std::fs::read(f).unwrap()).collect()
    };
    let mut thread = send("v1");
    // What `b4 send` does after sending (`--manual-reroll` would ask lore
    // for the thread).
    b4_run(&["prep", "--force-revision", "2"]);
    git(&[
        "commit",
        "--amend",
        "-qm",
        &format!("fs: change namei.c again\n\nSigned-off-by: {AUTHOR}"),
    ]);
    thread.extend(send("v2"));
    let (ours, _) = compare(&b4, "v1 and v2 as b4 send writes them", &thread);
    assert_eq!(ours.len(), 2);
    assert!(ours[0].key.starts_with("change-id:"), "{}", ours[0].key);
    assert!(ours[1].supersedes(&ours[0]));
    assert_eq!(ours[1].title, "fs: open files faster");
}
