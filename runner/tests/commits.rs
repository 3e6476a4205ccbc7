//! Issue 14 for real: a git range measured commit by commit. The range is
//! testkit's seed history (Debian's linux-source-6.1 as one commit, then
//! seeds 002, 003 and 004 by `git am`), a runner clones it by `file://`
//! like any remote, and each commit is one step of a per-patch
//! comparison: the kernel of the commits before it against the kernel
//! with it.
//!
//! These tests share the kernel tests' cache and take turns with them
//! (`kernel_support`); the history itself is built once per machine
//! (`patchperf_testkit::git_fixture`).

mod kernel_support;

use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime};

use patchperf_common::digest::sha256_hex;
use patchperf_common::protocol::{BaseSource, FinishRequest, JobSpec, JobState};
use patchperf_common::run::Side;
use patchperf_runner::kernel::fetch::{source, tree_view};
use patchperf_runner::kernel::pipeline::Pipeline;
use patchperf_server::domain::tokens::TokenKind;
use patchperf_server::{AppState, Config};
use patchperf_testkit::git_fixture::{self, LinuxHistory};
use patchperf_testkit::{TestServer, token};

use kernel_support::{
    assert_no_leftovers, comparison, exclusive, get_json, history_or_skip, job, load, pipeline,
    post_for_id, run, run_agent_until_idle, run_agent_while, skip_without_tools,
};

/// The seed history, or `None` after saying why the test skips.
fn history() -> Option<LinuxHistory> {
    history_or_skip(git_fixture::seed_range())
}

/// Step `k` (1-based) of the range as a per-patch job on the history's
/// base commit: commits 1..k-1 on the base side, 1..k on the patched side.
fn step(history: &LinuxHistory, k: usize, workload: &str) -> JobSpec {
    let (before, with) = (history.series(k - 1), history.series(k));
    JobSpec {
        base: BaseSource::Git {
            url: history.url(),
            commit: history.base.sha.clone(),
        },
        base_patches_sha256: if before.is_empty() {
            String::new()
        } else {
            sha256_hex(before.as_bytes())
        },
        base_mbox: before,
        ..job(&with, workload, 1, &[Side::Base, Side::Patched])
    }
}

/// The pristine worktree of a git base, fetched into the pipeline's cache
/// as a job fetches it, and whether overlays on it can be mounted here.
fn pristine_worktree(p: &Pipeline, base: &BaseSource) -> (PathBuf, bool) {
    let lock = p.cache.lock().unwrap();
    let pristine = source::fetch(&lock, base).unwrap();
    let scratch = lock.scratch("probe").unwrap();
    let overlay = tree_view::overlay_works(&pristine.dir, scratch.path());
    if let Err(why) = &overlay {
        eprintln!("overlayfs not usable here ({why}): the patched trees are copies");
    }
    (pristine.dir, overlay.is_ok())
}

/// A git worktree's own HEAD and index (they live in the mirror's
/// `worktrees/`, outside the tree and outside any overlay on it), as path,
/// sha256 and mtime.
fn worktree_state(dir: &Path) -> Vec<(String, String, SystemTime)> {
    ["HEAD", "index"]
        .iter()
        .map(|name| {
            let out = std::process::Command::new("git")
                .arg("-C")
                .arg(dir)
                .args(["rev-parse", "--path-format=absolute", "--git-path", name])
                .output()
                .unwrap();
            assert!(out.status.success());
            let path = String::from_utf8(out.stdout).unwrap().trim().to_string();
            let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
            let sha = sha256_hex(&std::fs::read(&path).unwrap());
            (path, sha, modified)
        })
        .collect()
}

#[test]
fn the_first_two_commits_of_a_git_range_build_and_boot_as_per_patch_steps() {
    skip_without_tools!();
    let Some(history) = history() else { return };
    let _exclusive = exclusive();
    let p = pipeline();
    // The patched trees are overlays on the pristine worktree (where
    // overlayfs works): the series and the builds on it leave the
    // worktree's HEAD and index as they were.
    let (dir, overlays) = pristine_worktree(&p, &step(&history, 1, "fstatat-empty").base);
    let worktree = worktree_state(&dir);
    for k in 1..=2 {
        let job = step(&history, k, "fstatat-empty");
        let started = Instant::now();
        let (rec, outcome) = run(&p, &job);
        eprintln!(
            "step {k} ({}): {:.0} s, load {}",
            history.commits[k - 1].subject,
            started.elapsed().as_secs_f64(),
            load()
        );
        outcome.unwrap();
        // A tree is made for each side not in the cache yet: an overlay
        // where overlayfs works, else a copy.
        let said = |what: &str| rec.states.iter().any(|(_, m)| m.starts_with(what));
        assert_eq!(
            said("copying the source tree"),
            said("applying the") && !overlays,
            "{:?}",
            rec.states
        );
        assert_eq!(rec.results.len(), 2);
        let (bk, pk) = (rec.kernel(Side::Base), rec.kernel(Side::Patched));
        // Both kernels are built from the range's base commit, named by
        // its id; the patched one carries commits 1..k.
        assert_eq!(bk.source, history.base.sha);
        assert_eq!(pk.source, history.base.sha);
        assert_eq!(pk.patches, Some(k as u32));
        assert_eq!(pk.patches_sha256, Some(job.patches_sha256.clone()));
        assert_ne!(bk.version, pk.version);
        for (_, r) in &rec.results {
            assert!(r.metric("will-it-scale.per_process_ops").unwrap() > 0.0);
        }
        if k == 2 {
            // Step 2's base is step 1's patched kernel, from the cache.
            assert_eq!(bk.patches, Some(1));
            assert!(
                rec.states
                    .iter()
                    .any(|(s, m)| *s == JobState::Building && m == "base kernel found in the cache"),
                "{:?}",
                rec.states
            );
        }
    }
    assert_eq!(worktree_state(&dir), worktree);
    assert_no_leftovers();
}

/// What issue 14 expects of each step of the seed range, as (step,
/// workload, verdict): seed 003 makes `fstatat(fd, "", AT_EMPTY_PATH)`
/// skip the path lookup and touches nothing else; 002 closes files
/// without task_work (open1 faster, dup1 slower); 004 shortens
/// `alloc_fd()` (dup1 faster).
const EXPECTED: &[(usize, &str, &str)] = &[
    (1, "open1", "improvement"),
    (1, "dup1", "regression"),
    (1, "fstatat-empty", "no-change"),
    (2, "open1", "no-change"),
    (2, "dup1", "no-change"),
    (2, "fstatat-empty", "improvement"),
    (3, "dup1", "improvement"),
    (3, "fstatat-empty", "no-change"),
];

/// The workloads the range is measured on.
const WORKLOADS: [&str; 3] = ["open1", "dup1", "fstatat-empty"];

/// The server of these tests, reading ranges of local repositories, with
/// a runner token and a CI token.
struct Lab {
    server: TestServer,
    runner: String,
    ci: String,
    _mirrors: tempfile::TempDir,
}

impl Lab {
    async fn start(pool: sqlx::PgPool) -> Lab {
        let mirrors = tempfile::tempdir().unwrap();
        let config = Config {
            local_git: true,
            git_dir: mirrors.path().to_path_buf(),
            ..Config::default()
        };
        let server = TestServer::serve(
            AppState::new(pool.clone(), config),
            "127.0.0.1:0".parse().unwrap(),
        )
        .await;
        Lab {
            server,
            runner: token(&pool, TokenKind::Runner).await,
            ci: token(&pool, TokenKind::Ci).await,
            _mirrors: mirrors,
        }
    }
}

/// Each workload's headline metric in the report of comparison `id`:
/// change, interval, the two sides' means and why the verdict is what it
/// is, one line each.
fn headline_numbers(server: &str, ci: &str, id: i64) -> Vec<String> {
    let view = comparison(server, ci, id);
    let mut lines = Vec::new();
    for report in view["verdict"]["reports"].as_array().into_iter().flatten() {
        let workload = report["header"]["workload"].as_str().unwrap_or("?");
        let Some(m) = report["metrics"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|m| m["name"] == "will-it-scale.per_process_ops")
        else {
            continue;
        };
        lines.push(format!(
            "{workload:<14} change {:+.4}% interval {} base {} patched {} ({}: {})",
            m["change"].as_f64().unwrap_or(f64::NAN),
            m["interval"],
            m["base"]["mean"],
            m["patched"]["mean"],
            m["verdict"],
            m["reason"].as_str().unwrap_or("")
        ));
    }
    lines
}

#[sqlx::test(migrations = "../migrations")]
async fn a_git_range_is_measured_commit_by_commit_and_each_seed_moves_its_workload(
    pool: sqlx::PgPool,
) {
    skip_without_tools!();
    let Some(history) = history() else { return };
    let lab = Lab::start(pool).await;
    let (url, runner, ci) = (lab.server.url(), lab.runner.clone(), lab.ci.clone());
    let h = history.clone();
    let (id, finishes, view, numbers) = tokio::task::spawn_blocking(move || {
        let _exclusive = exclusive();
        let started = Instant::now();
        let body = serde_json::json!({
            "base": { "kind": "git", "url": h.url(), "commit": h.base.sha },
            "range": h.range(),
            "mbox": "",
            "workloads": WORKLOADS,
            "params": { "nr_task": [1], "seconds": 1, "warmup_seconds": 1 },
            "runs": 3,
            "backend": "tcg-icount",
        });
        let id = post_for_id(&url, &ci, "/api/v1/comparisons", &body);
        eprintln!(
            "range submitted (the server cloned and read it) in {:.0} s, load {}",
            started.elapsed().as_secs_f64(),
            load()
        );
        let started = Instant::now();
        let finishes = run_agent_until_idle(&url, &runner, "commits-test");
        eprintln!(
            "{} jobs run in {:.0} s, load {}",
            finishes.len(),
            started.elapsed().as_secs_f64(),
            load()
        );
        assert_no_leftovers();
        let view = comparison(&url, &ci, id);
        let numbers: Vec<Vec<String>> = view["steps"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|s| headline_numbers(&url, &ci, s["comparison_id"].as_i64().unwrap()))
            .collect();
        (id, finishes, view, numbers)
    })
    .await
    .unwrap();

    for f in &finishes {
        assert!(matches!(f, FinishRequest::Done { .. }), "{f:?}");
    }
    assert_eq!(view["id"], id);
    assert_eq!(view["status"], "done", "{view:#}");
    assert_eq!(view["git_range"], history.range());
    let steps = view["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 3, "{view:#}");
    // Every headline of every step, printed before anything is judged so
    // a failing run still shows all the numbers.
    let mut seen = Vec::new();
    for (k, (s, commit)) in steps.iter().zip(&history.commits).enumerate() {
        assert_eq!(s["step"], k + 1);
        assert_eq!(s["commit"], commit.sha.as_str(), "{s:#}");
        assert_eq!(s["status"], "done", "{s:#}");
        eprintln!(
            "step {} {} {}: {}",
            k + 1,
            &commit.sha[..12],
            commit.subject,
            s["overall"]
        );
        for line in &numbers[k] {
            eprintln!("    {line}");
        }
        for h in s["headlines"].as_array().unwrap() {
            let (workload, verdict) = (
                h["workload"].as_str().unwrap(),
                h["verdict"].as_str().unwrap(),
            );
            seen.push((k + 1, workload.to_string(), verdict.to_string()));
        }
    }
    let wrong: Vec<String> = EXPECTED
        .iter()
        .filter(|(step, workload, verdict)| {
            !seen
                .iter()
                .any(|(s, w, v)| s == step && w == workload && v == verdict)
        })
        .map(|(step, workload, verdict)| {
            let got = seen
                .iter()
                .find(|(s, w, _)| s == step && w == workload)
                .map_or("nothing", |(_, _, v)| v.as_str());
            format!("step {step} {workload}: expected {verdict}, got {got}")
        })
        .collect();
    assert!(wrong.is_empty(), "{wrong:#?}");
    lab.server.stop().await;
}

/// The probes a bisection may take over the 3 commits: the ends (commit
/// 3), then at most ⌈log2 3⌉ = 2 commits.
const MAX_PROBES: usize = 3;

#[sqlx::test(migrations = "../migrations")]
async fn bisecting_the_seed_range_on_fstatat_empty_finds_seed_003(pool: sqlx::PgPool) {
    skip_without_tools!();
    let Some(history) = history() else { return };
    let lab = Lab::start(pool).await;
    let (url, runner, ci) = (lab.server.url(), lab.runner.clone(), lab.ci.clone());
    let h = history.clone();
    let (finishes, view) = tokio::task::spawn_blocking(move || {
        let _exclusive = exclusive();
        let started = Instant::now();
        let body = serde_json::json!({
            "base": { "kind": "git", "url": h.url(), "commit": h.base.sha },
            "bad": h.head().sha,
            "workload": "fstatat-empty",
            "metric": "will-it-scale.per_process_ops",
            "params": { "nr_task": [1], "seconds": 1, "warmup_seconds": 1 },
            "runs": 3,
            "backend": "tcg-icount",
        });
        let id = post_for_id(&url, &ci, "/api/v1/bisections", &body);
        let path = format!("/api/v1/bisections/{id}");
        let finishes = run_agent_while(&url, &runner, "commits-test", || {
            get_json(&url, &ci, &path)["status"] == "running"
        });
        eprintln!(
            "bisection: {} jobs run in {:.0} s, load {}",
            finishes.len(),
            started.elapsed().as_secs_f64(),
            load()
        );
        assert_no_leftovers();
        (finishes, get_json(&url, &ci, &path))
    })
    .await
    .unwrap();

    for f in &finishes {
        assert!(matches!(f, FinishRequest::Done { .. }), "{f:?}");
    }
    let probes = view["probes"].as_array().unwrap();
    for p in probes {
        eprintln!(
            "probe at {} {}: {:+.4}% [{}, {}] {} → {}",
            p["position"],
            p["commit"]["subject"],
            p["change"].as_f64().unwrap_or(f64::NAN),
            p["low"],
            p["high"],
            p["verdict"],
            p["judgement"]
        );
    }
    eprintln!("{}", view["outcome"]["summary"].as_str().unwrap_or(""));
    assert_eq!(view["status"], "done", "{view:#}");
    let outcome = &view["outcome"];
    assert_eq!(outcome["kind"], "found", "{outcome:#}");
    assert_eq!(outcome["first_bad"], 2, "{outcome:#}");
    let seed_003 = &history.commits[1];
    let summary = outcome["summary"].as_str().unwrap();
    assert!(
        summary.contains(&seed_003.sha[..10]) && summary.contains(&seed_003.subject),
        "{summary}"
    );
    for p in probes {
        let k = p["position"].as_u64().unwrap() as usize;
        assert_eq!(p["commit"]["commit"], history.commits[k - 1].sha.as_str());
    }
    assert!(probes.len() <= MAX_PROBES, "{} probes", probes.len());
    lab.server.stop().await;
}
