//! The server's mirrors of the repositories ranges and trees name, with
//! real git: every spelling of a repository is one mirror, a mirror cloned
//! for a request that is refused is removed, and mirrors over their bound
//! go least recently used first, each shown in `/healthz`.

use std::path::Path;

use axum::http::StatusCode;
use patchperf_common::digest::sha256_hex;
use patchperf_server::Config;
use sqlx::PgPool;

use crate::git_limits::{config, range_request};
use crate::git_repo::{git, linear};
use crate::helpers::TestApp;

/// The mirror directories under `dir`.
pub fn mirrors_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".git"))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// The mirror directory name of the repository at `path`.
fn mirror_of(path: &Path) -> String {
    let key = format!("file://{}", path.display());
    format!("{}.git", &sha256_hex(key.as_bytes())[..24])
}

#[sqlx::test(migrations = "../migrations")]
async fn every_spelling_of_a_repository_is_one_mirror(pool: PgPool) {
    let outer = tempfile::tempdir().unwrap();
    let p = outer.path().join("big");
    std::fs::create_dir(&p).unwrap();
    git(&p, &["init", "-q", "-b", "master"]);
    let base = crate::git_repo::commit_file(&p, "fs/open.c", "int open;\n", "base");
    crate::git_repo::commit_file(&p, "fs/step1.c", "int step1;\n", "fs: step 1");
    let mirrors = tempfile::tempdir().unwrap();
    let app = TestApp::with_config(pool, config(mirrors.path())).await;
    let o = outer.path().display();
    for url in [
        format!("{o}/big"),
        format!("{o}/big/"),
        format!("{o}//big"),
        format!("{o}/./big"),
        format!("{o}/big/.git"),
        format!("{o}/other/../big"),
        format!("file://{o}/big"),
    ] {
        let a = app.try_submit(range_request(&url, &base, "master")).await;
        assert_eq!(a.status, StatusCode::CREATED, "{url}: {a:?}");
    }
    assert_eq!(mirrors_in(mirrors.path()), [mirror_of(&p)]);
    let health = app.get("/healthz").await.json;
    assert_eq!(health["git_mirrors"]["mirrors"], 1, "{health}");
}

#[sqlx::test(migrations = "../migrations")]
async fn a_mirror_cloned_for_a_refused_request_is_removed(pool: PgPool) {
    let (repo, ids) = linear(1);
    let mirrors = tempfile::tempdir().unwrap();
    let app = TestApp::with_config(pool, config(mirrors.path())).await;
    let url = repo.path().to_str().unwrap();
    // The branch's head itself: no commits, refused.
    let a = app.try_submit(range_request(url, &ids[1], "master")).await;
    assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{a:?}");
    assert!(a.error().contains("it has no commits"), "{a:?}");
    assert!(
        mirrors_in(mirrors.path()).is_empty(),
        "{:?}",
        mirrors_in(mirrors.path())
    );
    let health = app.get("/healthz").await.json;
    assert_eq!(health["git_mirrors"]["dropped"], 1, "{health}");
    assert_eq!(health["git_mirrors"]["mirrors"], 0, "{health}");
    // Accepted: kept; refused later: still kept, others use it.
    let a = app.try_submit(range_request(url, &ids[0], "master")).await;
    assert_eq!(a.status, StatusCode::CREATED, "{a:?}");
    let a = app.try_submit(range_request(url, &ids[1], "master")).await;
    assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{a:?}");
    assert_eq!(mirrors_in(mirrors.path()), [mirror_of(repo.path())]);
}

#[sqlx::test(migrations = "../migrations")]
async fn mirrors_over_their_bound_go_least_recently_used_first(pool: PgPool) {
    let repos: Vec<_> = (0..3).map(|_| linear(1)).collect();
    // One mirror's size, as git makes it here.
    let probe = tempfile::tempdir().unwrap();
    let target = probe.path().join("m.git");
    git(
        probe.path(),
        &[
            "clone",
            "-q",
            "--mirror",
            repos[0].0.path().to_str().unwrap(),
            target.to_str().unwrap(),
        ],
    );
    fn size(p: &Path) -> u64 {
        std::fs::read_dir(p)
            .unwrap()
            .flatten()
            .map(|e| {
                let t = e.file_type().unwrap();
                if t.is_dir() {
                    size(&e.path())
                } else if t.is_file() {
                    e.metadata().unwrap().len()
                } else {
                    0
                }
            })
            .sum()
    }
    let one = size(&target);
    let mirrors = tempfile::tempdir().unwrap();
    let config = Config {
        git_cache_max_bytes: one * 5 / 2,
        ..config(mirrors.path())
    };
    let app = TestApp::with_config(pool, config).await;
    let open = |k: usize| {
        let (dir, ids) = &repos[k];
        range_request(dir.path().to_str().unwrap(), &ids[0], "master")
    };
    let names: Vec<String> = repos.iter().map(|(d, _)| mirror_of(d.path())).collect();
    let sorted = |mut v: Vec<String>| {
        v.sort();
        v
    };
    for k in [0, 1, 2] {
        assert_eq!(app.try_submit(open(k)).await.status, StatusCode::CREATED);
    }
    // Three do not fit: the least recently used, the first, went.
    assert_eq!(
        mirrors_in(mirrors.path()),
        sorted(vec![names[1].clone(), names[2].clone()])
    );
    // The second is used again, then the first comes back: the third is
    // now the least recently used.
    assert_eq!(app.try_submit(open(1)).await.status, StatusCode::CREATED);
    assert_eq!(app.try_submit(open(0)).await.status, StatusCode::CREATED);
    assert_eq!(
        mirrors_in(mirrors.path()),
        sorted(vec![names[0].clone(), names[1].clone()])
    );
    let health = app.get("/healthz").await.json;
    let m = &health["git_mirrors"];
    assert_eq!(
        (m["mirrors"].as_u64(), m["evicted"].as_u64()),
        (Some(2), Some(2)),
        "{health}"
    );
    assert!(
        m["bytes"].as_u64().unwrap() <= m["max_bytes"].as_u64().unwrap(),
        "{health}"
    );
}
