//! The archive as a reader of lore sees it: git clones and fetches of the
//! epochs, the manifest, the mirroring page and the web views.

use std::path::Path;
use std::time::Instant;

use super::{Archive, Served, bounded, run};

/// A reply to `seed003.eml`, written as Python's `email` writes mail (a
/// charset given, `Name: value`), so ezpi stores it byte for byte.
const REPLY: &[u8] = b"From: A Reviewer <reviewer@example.org>
To: linux-fsdevel@vger.kernel.org
Subject: Re: [PATCH v5.15-v5.10 1/4] vfs: mostly undo glibc turning 'fstat()' into
\t'fstatat(AT_EMPTY_PATH)'
Date: Thu, 19 Sep 2024 09:00:00 +0000
Message-ID: <reply-1@example.org>
In-Reply-To: <20240918-statx-stable-linux-5-15-y-v1-1-5afb4401ddbe@gmail.com>
References: <20240918-statx-stable-linux-5-15-y-v1-1-5afb4401ddbe@gmail.com>
MIME-Version: 1.0
Content-Type: text/plain; charset=\"utf-8\"
Content-Transfer-Encoding: 7bit

Looks good to me.
";

/// `seed003.eml`'s Message-ID, as it is in web URLs.
const PATCH_ID: &str = "20240918-statx-stable-linux-5-15-y-v1-1-5afb4401ddbe@gmail.com";

fn fixture(name: &str) -> Vec<u8> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../common/tests/fixtures/mail");
    std::fs::read(dir.join(name)).unwrap()
}

fn git(dir: &Path, args: &[&str]) -> Vec<u8> {
    run(
        bounded("git").args(args).env("GIT_TERMINAL_PROMPT", "0"),
        dir,
        None,
    )
}

/// (commit, blob `m`) of each commit of a mirrored epoch, oldest first.
fn log(mirror: &Path) -> Vec<(String, Vec<u8>)> {
    let commits = git(mirror, &["rev-list", "--reverse", "refs/heads/master"]);
    String::from_utf8(commits)
        .unwrap()
        .lines()
        .map(|c| {
            let m = git(mirror, &["cat-file", "blob", &format!("{c}:m")]);
            (c.to_string(), m)
        })
        .collect()
}

/// `<url>/manifest.js.gz`, gunzipped and parsed.
fn manifest(served: &Served) -> serde_json::Map<String, serde_json::Value> {
    let (status, gz) = served.get("/manifest.js.gz");
    assert_eq!(status, 200);
    let json = run(bounded("gzip").arg("-dc"), Path::new("/"), Some(&gz));
    serde_json::from_slice(&json).unwrap()
}

/// The manifest's repositories, sorted (public-inbox writes them in any
/// order).
fn keys(manifest: &serde_json::Map<String, serde_json::Value>) -> Vec<&str> {
    let mut keys: Vec<&str> = manifest.keys().map(String::as_str).collect();
    keys.sort_unstable();
    keys
}

#[test]
fn git_clones_and_fetches_the_epoch_as_from_lore() {
    let tmp = tempfile::tempdir().unwrap();
    let archive = Archive::create(tmp.path(), "linux-fsdevel", "linux-fsdevel@vger.kernel.org");
    let patch = fixture("seed003.eml");
    let started = Instant::now();
    let first = archive.add(&patch);
    let second = archive.add(REPLY);
    eprintln!("two adds: {:?}", started.elapsed());
    assert_eq!((first.epoch, &first.raw), (0, &patch));
    assert_eq!((second.epoch, second.raw.as_slice()), (0, REPLY));
    assert_eq!(archive.messages(), [first.clone(), second.clone()]);

    let started = Instant::now();
    let served = archive.serve();
    eprintln!("serve: {:?}", started.elapsed());
    let url = &served.url;
    assert_eq!(
        *url,
        format!("http://127.0.0.1:{}/linux-fsdevel", served.port)
    );

    let mirror = tmp.path().join("mirror.git");
    let epoch = format!("{url}/git/0.git");
    git(
        tmp.path(),
        &[
            "clone",
            "--quiet",
            "--mirror",
            &epoch,
            mirror.to_str().unwrap(),
        ],
    );
    assert_eq!(
        log(&mirror),
        [
            (first.commit.clone(), patch.clone()),
            (second.commit.clone(), REPLY.to_vec())
        ]
    );

    // Lore's ways to find the epochs: the manifest, keyed by path, and
    // the mirroring page; the config snippet names none.
    let before = manifest(&served);
    assert_eq!(keys(&before), ["/linux-fsdevel/git/0.git"]);
    let (status, page) = served.get("/_/text/mirror/");
    assert_eq!(status, 200);
    let page = String::from_utf8(page).unwrap();
    assert!(page.contains(&format!("href=\"{url}/0\"")), "{page}");
    let (status, config) = served.get("/_/text/config/raw");
    assert_eq!(status, 200);
    let config = String::from_utf8(config).unwrap();
    assert!(
        config.contains("[publicinbox \"linux-fsdevel\"]"),
        "{config}"
    );
    assert!(!config.contains("git/0"), "{config}");

    // A message added while served is fetched without re-indexing. This
    // one ezpi rewrites: its empty header value gains a space.
    let mail = fixture("seed000.eml");
    let started = Instant::now();
    let third = archive.add(&mail);
    eprintln!("one add: {:?}", started.elapsed());
    let rewritten = String::from_utf8(mail.clone()).unwrap().replacen(
        "X-Google-Smtp-Source:\n",
        "X-Google-Smtp-Source: \n",
        1,
    );
    assert_ne!(third.raw, mail);
    assert_eq!(third.raw, rewritten.as_bytes());
    git(&mirror, &["fetch", "--quiet"]);
    let fetched = log(&mirror);
    assert_eq!(fetched.len(), 3);
    assert_eq!(fetched[2], (third.commit.clone(), third.raw.clone()));
    let after = manifest(&served);
    assert_ne!(
        after["/linux-fsdevel/git/0.git"]["fingerprint"],
        before["/linux-fsdevel/git/0.git"]["fingerprint"]
    );
}

#[test]
fn new_epochs_show_in_the_manifest_and_web_views_need_the_index() {
    let tmp = tempfile::tempdir().unwrap();
    let archive = Archive::create(tmp.path(), "test", "test@example.org");
    archive.add(&fixture("seed003.eml"));
    let served = archive.serve();
    let raw = |id: &str| served.get(&format!("/{id}/raw"));

    assert_eq!(raw(PATCH_ID).0, 404, "not indexed yet");
    let started = Instant::now();
    archive.index();
    eprintln!("index: {:?}", started.elapsed());
    let (status, body) = raw(PATCH_ID);
    assert_eq!(status, 200);
    let body = String::from_utf8(body).unwrap();
    assert!(body.contains("Subject: [PATCH v5.15-v5.10 1/4]"), "{body}");

    // An epoch is listed once it has a commit.
    assert_eq!(archive.new_epoch(), 1);
    assert_eq!(keys(&manifest(&served)), ["/test/git/0.git"]);
    let reply = archive.add(REPLY);
    assert_eq!(reply.epoch, 1);
    assert_eq!(archive.epochs(), [0, 1]);
    assert_eq!(
        keys(&manifest(&served)),
        ["/test/git/0.git", "/test/git/1.git"]
    );
    let epoch = format!("{}/git/1.git", served.url);
    let refs = git(tmp.path(), &["ls-remote", &epoch, "refs/heads/master"]);
    let refs = String::from_utf8(refs).unwrap();
    assert!(refs.starts_with(&reply.commit), "{refs}");
    assert_eq!(archive.messages().len(), 2);

    // The web views show what was indexed last.
    assert_eq!(raw("reply-1@example.org").0, 404);
    archive.index();
    assert_eq!(raw("reply-1@example.org").0, 200);
}
