//! `patchperf-server backup FILE` and `restore FILE`, the real binary on a
//! real Postgres: a lab's database is backed up, dropped, created empty and
//! restored, and every page, JSON answer and text report of its
//! comparisons reads the same to the byte; the mirrored repositories are
//! cloned again; a restore into a database that is not empty is refused;
//! the private cluster under `--data-dir` is backed up and restored too.

use std::path::Path;
use std::process::{Command, Output};

use patchperf_server::MIGRATOR;
use patchperf_server::git::Mirrors;
use patchperf_testkit::TestApp;
use sqlx::{Connection, PgConnection, PgPool};

use crate::lab;

/// A database of its own on the test cluster (DATABASE_URL), dropped at
/// the end: the test drops and creates it again itself, which a
/// `#[sqlx::test]` database would not survive.
struct Scratch {
    admin: String,
    name: String,
}

impl Scratch {
    async fn new(tag: &str) -> Scratch {
        let admin = std::env::var("DATABASE_URL").expect("DATABASE_URL (./patchperf test)");
        let name = format!("pp_{tag}_{}", std::process::id());
        let s = Scratch { admin, name };
        s.sql(&format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", s.name))
            .await;
        s.sql(&format!("CREATE DATABASE {}", s.name)).await;
        s
    }

    async fn sql(&self, statement: &str) {
        let mut conn = PgConnection::connect(&self.admin).await.unwrap();
        sqlx::raw_sql(statement).execute(&mut conn).await.unwrap();
    }

    fn url(&self) -> String {
        let mut url = url::Url::parse(&self.admin).unwrap();
        url.set_path(&self.name);
        url.to_string()
    }

    async fn pool(&self) -> PgPool {
        PgPool::connect(&self.url()).await.unwrap()
    }

    /// Drops the database and creates it again, empty.
    async fn recreate(&self) {
        self.sql(&format!("DROP DATABASE {} WITH (FORCE)", self.name))
            .await;
        self.sql(&format!("CREATE DATABASE {}", self.name)).await;
    }

    async fn drop(self) {
        self.sql(&format!(
            "DROP DATABASE IF EXISTS {} WITH (FORCE)",
            self.name
        ))
        .await;
    }
}

/// `patchperf-server ARGS` with `DATABASE_URL` = `url` (none: the private
/// cluster of `--data-dir`), nothing else from this environment.
async fn server(args: &[&str], url: Option<String>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_patchperf-server"));
    cmd.args(args);
    for (name, _) in std::env::vars() {
        if name.starts_with("PATCHPERF_") || name == "DATABASE_URL" {
            cmd.env_remove(name);
        }
    }
    if let Some(url) = url {
        cmd.env("DATABASE_URL", url);
    }
    tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap()
}

fn ok(out: &Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{}: {err}", out.status);
    err
}

/// A repository with one commit and its server mirror under `git_dir`;
/// returns the URL the mirror is kept under.
async fn mirrored(root: &Path, git_dir: &Path) -> String {
    let repo = root.join("tree");
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args(args)
            .current_dir(&repo)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "A U Thor")
            .env("GIT_AUTHOR_EMAIL", "author@example.org")
            .env("GIT_COMMITTER_NAME", "A U Thor")
            .env("GIT_COMMITTER_EMAIL", "author@example.org")
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
    };
    std::fs::create_dir_all(&repo).unwrap();
    git(&["init", "--quiet", "--initial-branch=master"]);
    std::fs::write(repo.join("Makefile"), "all:\n").unwrap();
    git(&["add", "Makefile"]);
    git(&["commit", "--quiet", "-m", "Makefile"]);
    let mirrors = Mirrors::new(&mirror_config(git_dir));
    // A mirror opened for nothing is removed when dropped: this one stays.
    mirrors
        .open(&format!("file://{}", repo.display()), &[])
        .await
        .unwrap()
        .keep();
    // A local remote is kept under the spelling git is given: its path.
    repo.display().to_string()
}

async fn urls(git_dir: &Path) -> Vec<String> {
    Mirrors::new(&mirror_config(git_dir)).urls().await.unwrap()
}

/// Mirrors under `git_dir`, of local repositories.
fn mirror_config(git_dir: &Path) -> patchperf_server::Config {
    patchperf_server::Config {
        git_dir: git_dir.to_path_buf(),
        local_git: true,
        ..patchperf_server::Config::default()
    }
}

#[tokio::test]
async fn backup_drop_restore_reads_every_page_and_report_the_same() {
    let db = Scratch::new("backup").await;
    let pool = db.pool().await;
    MIGRATOR.run(&pool).await.unwrap();
    let (app, ids) = lab::fill(pool.clone()).await;
    let before = lab::answers(&app, &ids).await;
    drop(app);
    pool.close().await;

    let dir = tempfile::tempdir().unwrap();
    let git_dir = dir.path().join("git");
    let url = mirrored(dir.path(), &git_dir).await;
    let file = dir.path().join("lab.ppbackup");
    let git = git_dir.to_str().unwrap();
    let said = ok(&server(
        &["backup", "--git-dir", git, file.to_str().unwrap()],
        Some(db.url()),
    )
    .await);
    assert!(said.contains("1 mirrored repositories"), "{said}");
    // It holds the database, webhook credentials among it: the owner's
    // only.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "backup mode {mode:o}");

    db.recreate().await;
    // The mirrors are gone too, as on a new machine.
    let new_git = dir.path().join("git-restored");
    let said = ok(&server(
        &[
            "restore",
            "--local-git",
            "--git-dir",
            new_git.to_str().unwrap(),
            file.to_str().unwrap(),
        ],
        Some(db.url()),
    )
    .await);
    assert!(said.contains(&format!("cloned {url}")), "{said}");
    assert_eq!(urls(&new_git).await, [url]);

    let pool = db.pool().await;
    let app = TestApp::new(pool.clone()).await;
    let after = lab::answers(&app, &ids).await;
    lab::assert_same(&before, &after);
    // Nothing waits to be built again: the reports came back stored.
    assert_eq!(app.count("stale_reports").await, 0);
    drop(app);
    // Restored under a new public URL (the lab moved): the stored reports
    // link to the new host, none to where they were built.
    let moved = TestApp::with_config(
        pool.clone(),
        patchperf_server::Config {
            public_url: Some("https://perf.moved.example/".into()),
            ..patchperf_server::Config::default()
        },
    )
    .await;
    for id in &ids {
        let text = moved
            .get(&format!("/api/v1/comparisons/{id}/report.txt"))
            .await
            .body;
        let page = format!("report: https://perf.moved.example/comparisons/{id}\n");
        assert!(text.contains(&page), "{text}");
        assert!(!text.contains("report: /"), "{text}");
    }
    drop(moved);
    pool.close().await;

    // Into a database that is not empty: refused, nothing touched.
    let out = server(
        &["restore", "--no-clone", file.to_str().unwrap()],
        Some(db.url()),
    )
    .await;
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not empty"), "{err}");
    db.drop().await;
}

#[tokio::test]
async fn the_private_cluster_is_backed_up_and_restored_as_well() {
    let db = Scratch::new("private").await;
    let pool = db.pool().await;
    MIGRATOR.run(&pool).await.unwrap();
    let (app, ids) = lab::fill(pool.clone()).await;
    let before = lab::answers(&app, &ids).await;
    drop(app);
    pool.close().await;
    let dir = tempfile::tempdir().unwrap();
    // The cluster runs as the postgres user when we are root.
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let (first, second) = (dir.path().join("1.ppbackup"), dir.path().join("2.ppbackup"));
    let data = dir.path().join("data");
    let git = dir.path().join("git");
    let (data, git) = (data.to_str().unwrap(), git.to_str().unwrap());
    ok(&server(
        &["backup", "--git-dir", git, first.to_str().unwrap()],
        Some(db.url()),
    )
    .await);
    // Into the private cluster (created), and out of it again.
    ok(&server(
        &[
            "restore",
            "--data-dir",
            data,
            "--git-dir",
            git,
            first.to_str().unwrap(),
        ],
        None,
    )
    .await);
    ok(&server(
        &[
            "backup",
            "--data-dir",
            data,
            "--git-dir",
            git,
            second.to_str().unwrap(),
        ],
        None,
    )
    .await);
    db.recreate().await;
    ok(&server(
        &["restore", "--git-dir", git, second.to_str().unwrap()],
        Some(db.url()),
    )
    .await);
    let pool = db.pool().await;
    let app = TestApp::new(pool.clone()).await;
    lab::assert_same(&before, &lab::answers(&app, &ids).await);
    drop(app);
    pool.close().await;
    db.drop().await;
}
