//! The kernel pipeline for real: Debian's linux-source-6.1 built with the
//! benchmark config, a real seed patch applied (002, `fs: use __fput_sync
//! in close(2)`), both kernels booted under QEMU TCG with icount, a
//! workload run inside each; every failure class (a series that does not
//! apply, a patch that breaks the build, a kernel that panics, a guest that
//! hangs, a guest that writes no results) ending the job with its reason
//! and nothing left behind; and `runner agent`'s executor running a
//! comparison claimed from a real server to its verdict.
//!
//! All tests share one cache (`$PATCHPERF_TEST_CACHE`, else
//! `/var/cache/patchperf-test`, shared by every checkout on the machine,
//! else `target/patchperf-test-cache`), so the suite pays for at most one
//! cold kernel build; everything else is incremental on top of it (the patched kernels
//! recompile the files their patch touches, the panic, hang and agent tests
//! reuse the built kernels). They run one at a time (a mutex, an flock
//! across processes; `kernel_support`). Where QEMU or the source package is
//! missing they say so and skip (`./patchperf test` installs both).

mod kernel_support;

use std::time::Duration;

use patchperf_common::digest::sha256_hex;
use patchperf_common::mbox;
use patchperf_common::protocol::{BaseSource, FailureReason, FinishRequest, JobSpec, JobState};
use patchperf_common::run::{MeasurementMode, Side};
use patchperf_runner::kernel::pipeline::prepare;
use patchperf_server::domain::tokens::TokenKind;
use patchperf_testkit::chromium::Chromium;
use patchperf_testkit::{TestServer, token};

use kernel_support::{
    Recorder, assert_no_leftovers, comparison, exclusive, job, pipeline, post_for_id, run,
    run_agent_until_idle, skip_without_tools,
};

const SEED_002: &str =
    include_str!("../../examples/patches/002-fs-use-__fput_sync-in-close-2.patch");
const SEED_004: &str = include_str!(
    "../../examples/patches/004-fs-file.c-remove-sanity_check-and-add-likely-unlikely-in-alloc_fd.patch"
);
const SEED_004_ON_6_12: &str = include_str!(
    "../../examples/patches-6.12/004-fs-file.c-remove-sanity_check-and-add-likely-unlikely-in-alloc_fd.patch"
);

#[test]
fn base_and_patched_kernels_boot_and_report_their_identities() {
    skip_without_tools!();
    let _exclusive = exclusive();
    let job = job(SEED_002, "open1", 3, &[Side::Patched, Side::Base]);
    let (mut rec, outcome) = run(&pipeline(), &job);
    outcome.unwrap();
    assert_eq!(rec.results.len(), 2);
    // The two tcg-icount guests ran side by side, started in the planned
    // order; each result is its own boot's, whichever ended first.
    let booting: Vec<&str> = rec
        .states
        .iter()
        .filter(|(s, _)| *s == JobState::Booting)
        .map(|(_, m)| m.as_str())
        .collect();
    assert_eq!(
        booting,
        [
            "boot 1: patched kernel (tcg-icount, 2 guests at once)",
            "boot 2: base kernel (tcg-icount, 2 guests at once)"
        ]
    );
    rec.results.sort_by_key(|(slot, _)| slot.seq);
    let (patched_slot, patched) = &rec.results[0];
    let (base_slot, base) = &rec.results[1];
    assert_eq!((patched_slot.seq, patched_slot.side), (0, Side::Patched));
    assert_eq!((base_slot.seq, base_slot.side), (1, Side::Base));
    let (bk, pk) = (
        base.kernel.as_ref().unwrap(),
        patched.kernel.as_ref().unwrap(),
    );
    assert_eq!(bk.patches_sha256, None);
    assert_eq!(
        pk.patches_sha256.as_deref(),
        Some(job.patches_sha256.as_str())
    );
    assert!(
        bk.source.starts_with("linux-source-6.1 sha256:"),
        "{}",
        bk.source
    );
    assert_eq!(bk.source, pk.source);
    assert_eq!(bk.compiler, pk.compiler);
    // `uname -r` of Debian's 6.1 source; `uname -v` carries each kernel's
    // own build version, proving which image each side really booted.
    assert!(bk.release.starts_with("6.1."), "{}", bk.release);
    assert_eq!(bk.release, pk.release);
    assert_ne!(bk.version, pk.version);
    for r in [base, patched] {
        assert_eq!(r.workload, "open1");
        assert_eq!(r.measurement, MeasurementMode::TcgIcount);
        assert_eq!(r.seconds, 3);
        assert!(r.metric("will-it-scale.per_process_ops").unwrap() > 0.0);
        assert!(r.metric("kernel.build_seconds").unwrap() > 0.0);
        assert!(r.metric("kernel.boot_seconds").unwrap() > 0.0);
        assert!(r.metric("kernel.image_bytes").unwrap() > 500_000.0);
    }
    let states: Vec<JobState> = rec.states.iter().map(|(s, _)| *s).collect();
    for s in [
        JobState::Fetching,
        JobState::Building,
        JobState::Booting,
        JobState::Running,
        JobState::Uploading,
    ] {
        assert!(states.contains(&s), "no {s:?} in {states:?}");
    }
    // A second job with the same base and series builds nothing.
    let p = pipeline();
    let lock = p.cache.lock().unwrap();
    let mut again = Recorder::default();
    let kernels = prepare::kernels(&lock, &job, &mut again).unwrap();
    assert!(!built_anything(&again), "{:?}", again.states);
    assert_eq!(kernels.patched.patches_sha256, pk.patches_sha256);
    drop(lock);
    assert_no_leftovers();
}

/// Linux 6.12 as a base like 6.1: Debian's tarball fetched into the same
/// cache, configured from the same fragment fitted to its Kconfig (SLUB
/// with its per-CPU caches where tinyconfig would take SLUB_TINY), built,
/// booted, the 6.12 port of seed 004 measured on dup1 in the direction it
/// was posted for, and poll1 run on both kernels. (Seed 000's port touches
/// include/linux/file.h, whose rebuild costs minutes: measured once by
/// hand, see examples/patches-6.12/README.md.)
/// A developer's first command, without a job file: `runner job
/// --patches MBOX -w open1` builds (here: finds in the cache) both kernels,
/// boots them in ABBA order, writes the results directory and prints the
/// verdict as `compare` gives it; `--fail-on-regression` passes an
/// improvement (seed 002 makes close(2) cheaper: open1 goes up).
#[test]
fn a_job_without_a_job_file_measures_an_mbox_and_prints_the_verdict() {
    skip_without_tools!();
    let _exclusive = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let mbox = dir.path().join("002.mbox");
    std::fs::write(&mbox, SEED_002).unwrap();
    let out = dir.path().join("results");
    let run = std::process::Command::new(env!("CARGO_BIN_EXE_patchperf-runner"))
        .args(["job", "--patches"])
        .arg(&mbox)
        .args(["--base", "linux-source-6.1", "-w", "open1", "--runs", "3"])
        .args([
            "--measurement",
            "tcg-icount",
            "--seconds",
            "1",
            "--warmup",
            "1",
        ])
        .args(["--parallel", "2", "--seed", "7", "--fail-on-regression"])
        .arg("--cache")
        .arg(kernel_support::cache_dir())
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{stdout}{stderr}");
    for side in ["base", "patched"] {
        let runs = std::fs::read_dir(out.join(side)).unwrap().count();
        assert_eq!(runs, 3, "{side}: {stderr}");
    }
    assert!(
        stdout.contains("improvement of will-it-scale.per_process_ops"),
        "{stdout}"
    );
    assert!(stdout.contains("\ttest: open1\n"), "{stdout}");
}

#[test]
fn a_6_12_tarball_builds_boots_and_measures_the_6_12_ports() {
    skip_without_tools!();
    if !std::path::Path::new("/usr/src/linux-source-6.12.tar.xz").is_file() {
        eprintln!(
            "SKIPPED: /usr/src/linux-source-6.12.tar.xz missing (apt-get install linux-source-6.12)"
        );
        return;
    }
    let _exclusive = exclusive();
    let mut job = job(SEED_004_ON_6_12, "dup1", 2, &[Side::Base, Side::Patched]);
    job.base = BaseSource::Tarball {
        name: "linux-source-6.12".into(),
    };
    job.workloads = vec!["dup1".into(), "poll1".into()];
    let (rec, outcome) = run(&pipeline(), &job);
    outcome.unwrap();
    let (bk, pk) = (rec.kernel(Side::Base), rec.kernel(Side::Patched));
    assert!(
        bk.source.starts_with("linux-source-6.12 sha256:"),
        "{}",
        bk.source
    );
    assert!(bk.release.starts_with("6.12."), "{}", bk.release);
    assert_eq!(pk.release, bk.release);
    assert_eq!(pk.patches, Some(1));
    // The configuration the fragment asked for, not tinyconfig's.
    let config = kernel_config(&bk.config_sha256);
    for line in [
        "CONFIG_SLUB=y",
        "# CONFIG_SLUB_TINY is not set",
        "CONFIG_CC_OPTIMIZE_FOR_PERFORMANCE=y",
        "CONFIG_9P_FS=y",
        "CONFIG_EVENTFD=y",
        "CONFIG_FILE_LOCKING=y",
    ] {
        assert!(config.lines().any(|l| l == line), "{line} not in .config");
    }
    let ops = |side: Side, workload: &str| {
        rec.results
            .iter()
            .find(|(slot, r)| slot.side == side && r.workload == workload)
            .and_then(|(_, r)| r.metric("will-it-scale.per_process_ops"))
            .unwrap_or_else(|| panic!("no {workload} result of the {} side", side.as_str()))
    };
    let (base, patched) = (ops(Side::Base, "dup1"), ops(Side::Patched, "dup1"));
    eprintln!("dup1: base {base:.0}, patched {patched:.0} ops/s");
    // Under tcg-icount one boot a side is exact to ~0.1%; the seed takes
    // instructions out of alloc_fd() (+4.7% when this test was written).
    assert!(patched > base * 1.01, "dup1: {base} → {patched}");
    // poll never allocates an fd: the patch leaves it alone.
    let (base, patched) = (ops(Side::Base, "poll1"), ops(Side::Patched, "poll1"));
    eprintln!("poll1: base {base:.0}, patched {patched:.0} ops/s");
    assert!(
        (patched / base - 1.0).abs() < 0.01,
        "poll1: {base} → {patched}"
    );
    assert_no_leftovers();
}

/// The `.config` of the cached kernel whose `.config` hashes to `sha256`.
fn kernel_config(sha256: &str) -> String {
    let kernels = kernel_support::cache_dir().join("kernels");
    std::fs::read_dir(&kernels)
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("config")).ok())
        .find(|text| sha256_hex(text.as_bytes()) == sha256)
        .unwrap_or_else(|| panic!("no kernel in {} has config {sha256}", kernels.display()))
}

#[test]
fn a_series_measured_per_patch_builds_each_kernel_once() {
    skip_without_tools!();
    let _exclusive = exclusive();
    // Seeds 002 and 004 as a 2-patch series, step by step: step 1 boots
    // the base against patch 1, step 2 patch 1 against patches 1..2.
    let series = format!("{SEED_002}\n{SEED_004}");
    let prefixes = mbox::prefixes(&series);
    assert_eq!(prefixes.len(), 2);
    let step = |base_mbox: &str, mbox: &str| JobSpec {
        base_mbox: base_mbox.to_string(),
        base_patches_sha256: if base_mbox.is_empty() {
            String::new()
        } else {
            sha256_hex(base_mbox.as_bytes())
        },
        ..job(mbox, "dup1", 1, &[Side::Base, Side::Patched])
    };
    let (_, outcome) = run(&pipeline(), &step("", &prefixes[0]));
    outcome.unwrap();
    let step2 = step(&prefixes[0], &prefixes[1]);
    let (rec, outcome) = run(&pipeline(), &step2);
    outcome.unwrap();
    // Step 2's base is step 1's patched kernel, from the cache; only the
    // patched side (patches 1..2) is built.
    assert!(
        rec.states
            .iter()
            .any(|(_, m)| m == "base kernel found in the cache"),
        "{:?}",
        rec.states
    );
    let built: Vec<&str> = rec
        .states
        .iter()
        .filter(|(s, m)| *s == JobState::Building && m.starts_with("building the"))
        .map(|(_, m)| m.as_str())
        .collect();
    assert!(
        built
            .iter()
            .all(|m| m.starts_with("building the patched kernel (2 patches")),
        "{built:?}"
    );
    let (bk, pk) = (rec.kernel(Side::Base), rec.kernel(Side::Patched));
    assert_eq!(bk.patches_sha256, Some(step2.base_patches_sha256.clone()));
    assert_eq!(bk.patches, Some(1));
    assert_eq!(pk.patches_sha256, Some(step2.patches_sha256.clone()));
    assert_eq!(pk.patches, Some(2));
    assert_ne!(bk.version, pk.version);
    assert_no_leftovers();
}

#[test]
fn a_series_that_does_not_apply_fails_with_the_rejected_hunk() {
    skip_without_tools!();
    let _exclusive = exclusive();
    // Seed 002 with a context line that 6.1's fs/open.c does not have.
    let broken = SEED_002.replacen(
        " SYSCALL_DEFINE1(close, unsigned int, fd)",
        " SYSCALL_DEFINE1(close, unsigned long, fd)",
        1,
    );
    assert_ne!(broken, SEED_002, "the seed patch changed; adjust this test");
    let (rec, outcome) = run(&pipeline(), &job(&broken, "open1", 1, &[Side::Base]));
    let failure = outcome.unwrap_err();
    assert_eq!(
        failure.reason,
        FailureReason::PatchDoesNotApply,
        "{failure:?}"
    );
    assert!(
        failure.detail.contains("fs: use __fput_sync in close(2)"),
        "{}",
        failure.detail
    );
    assert!(
        failure.detail.contains("unsigned long, fd"),
        "no hunk in {}",
        failure.detail
    );
    // It failed before any build.
    assert!(
        !rec.states.iter().any(|(s, _)| *s == JobState::Building),
        "{:?}",
        rec.states
    );
    assert_no_leftovers();
}

#[test]
fn a_patch_that_breaks_the_build_fails_with_the_compiler_error() {
    skip_without_tools!();
    let _exclusive = exclusive();
    // Seed 002 plus a line no compiler accepts, in the same file: only
    // fs/open.c and fs/file_table.c are recompiled on top of the base.
    let broken = SEED_002.replacen(
        "+\tfile = close_fd_get_file(fd);",
        "+\tfile = close_fd_get_file(fd) patchperf_breaks_this;",
        1,
    );
    assert_ne!(broken, SEED_002, "the seed patch changed; adjust this test");
    let (_, outcome) = run(&pipeline(), &job(&broken, "open1", 1, &[Side::Base]));
    let failure = outcome.unwrap_err();
    assert_eq!(failure.reason, FailureReason::BuildFailed, "{failure:?}");
    assert!(failure.detail.contains("fs/open.c"), "{}", failure.detail);
    assert!(failure.detail.contains("error"), "{}", failure.detail);
    assert!(
        failure.log_tail.contains("patchperf_breaks_this"),
        "{}",
        failure.log_tail
    );
    assert_no_leftovers();
}

/// Whether the job built a kernel rather than finding both in the cache.
fn built_anything(rec: &Recorder) -> bool {
    rec.states
        .iter()
        .any(|(s, m)| *s == JobState::Building && m.starts_with("building the"))
}

#[test]
fn a_kernel_that_panics_at_boot_fails_with_the_panic_text() {
    skip_without_tools!();
    let _exclusive = exclusive();
    let mut p = pipeline();
    p.extra_cmdline = vec!["init=/nonexistent".into()];
    let (_, outcome) = run(&p, &job(SEED_002, "open1", 1, &[Side::Base]));
    let failure = outcome.unwrap_err();
    assert_eq!(failure.reason, FailureReason::KernelPanic, "{failure:?}");
    assert!(
        failure.detail.contains("Kernel panic - not syncing"),
        "{}",
        failure.detail
    );
    assert!(
        failure.detail.contains("/nonexistent"),
        "{}",
        failure.detail
    );
    assert_no_leftovers();
}

#[test]
fn a_guest_that_runs_past_the_run_limit_is_killed_as_a_timeout() {
    skip_without_tools!();
    let _exclusive = exclusive();
    let mut p = pipeline();
    p.run_limit = Some(Duration::from_secs(5));
    // A 120 s workload in a guest allowed 5 s: from the host it looks hung.
    let (_, outcome) = run(&p, &job(SEED_002, "open1", 120, &[Side::Base]));
    let failure = outcome.unwrap_err();
    assert_eq!(failure.reason, FailureReason::Timeout, "{failure:?}");
    assert!(failure.detail.contains("within 5 s"), "{}", failure.detail);
    assert!(
        failure.log_tail.contains("patchperf-guest: run 1/1 open1"),
        "{}",
        failure.log_tail
    );
    assert_no_leftovers();
}

#[test]
fn a_guest_whose_runs_all_fail_ends_the_job_as_no_results() {
    skip_without_tools!();
    let _exclusive = exclusive();
    // The guest boots, cannot run a workload it does not know, says so in
    // its report and powers off without a result.
    let (_, outcome) = run(
        &pipeline(),
        &job(SEED_002, "no-such-workload", 1, &[Side::Patched]),
    );
    let failure = outcome.unwrap_err();
    assert_eq!(failure.reason, FailureReason::NoResults, "{failure:?}");
    assert!(
        failure.detail.contains("the patched kernel (boot 1)"),
        "{}",
        failure.detail
    );
    assert!(
        failure.detail.contains("run 1 (no-such-workload)"),
        "{}",
        failure.detail
    );
    assert!(
        failure.log_tail.contains("patchperf-guest: done"),
        "{}",
        failure.log_tail
    );
    assert_no_leftovers();
}

/// What CI does: submit seed 002 on open1, 3 boots a side, and read the
/// comparison back.
fn submit(server: &str, ci: &str) -> i64 {
    let body = serde_json::json!({
        "base": { "kind": "tarball", "name": "linux-source-6.1" },
        "mbox": SEED_002,
        "workloads": ["open1"],
        "params": { "nr_task": [1], "seconds": 1, "warmup_seconds": 1 },
        "runs": 3,
        "backend": "tcg-icount",
    });
    post_for_id(server, ci, "/api/v1/comparisons", &body)
}

#[sqlx::test(migrations = "../migrations")]
async fn the_agent_runs_a_claimed_comparison_to_its_verdict(pool: sqlx::PgPool) {
    skip_without_tools!();
    let server = TestServer::start(pool.clone(), "127.0.0.1:0".parse().unwrap()).await;
    let (runner, ci) = (
        token(&pool, TokenKind::Runner).await,
        token(&pool, TokenKind::Ci).await,
    );
    let url = server.url();

    // `runner agent` as its command runs it, one claimed job after another
    // until the queue is empty, on the blocking pool: the server keeps
    // answering on this runtime meanwhile.
    let (id, finishes, view) = tokio::task::spawn_blocking(move || {
        let _exclusive = exclusive();
        let id = submit(&url, &ci);
        let finishes = run_agent_until_idle(&url, &runner, "kernel-test");
        assert_no_leftovers();
        (id, finishes, comparison(&url, &ci, id))
    })
    .await
    .unwrap();

    // Three jobs (one per ABBA block), all done.
    assert_eq!(finishes.len(), 3, "{finishes:?}");
    for f in &finishes {
        assert!(matches!(f, FinishRequest::Done { .. }), "{f:?}");
    }
    assert_eq!(view["id"], id);
    assert_eq!(view["status"], "done", "{view:#}");
    assert_eq!(view["runs"]["base"], 3);
    assert_eq!(view["runs"]["patched"], 3);
    // Each stored run names the kernel it ran on: the patched ones carry
    // the series' sha256, the base ones none.
    let rows: Vec<(String, Option<String>)> = sqlx::query_as(
        "SELECT side, result->'kernel'->>'patches_sha256' FROM runs ORDER BY boot_seq",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    assert_eq!(rows.len(), 6);
    let series = sha256_hex(SEED_002.as_bytes());
    for (side, patches) in &rows {
        match side.as_str() {
            "base" => assert_eq!(patches, &None),
            _ => assert_eq!(patches.as_deref(), Some(series.as_str())),
        }
    }
    // The verdict is there, and open1's headline moved the way seed 002
    // moves it: closing a file without task_work is fewer instructions, so
    // under icount more open/close pairs fit in a second.
    let verdict = &view["verdict"];
    assert_ne!(verdict["overall"], "no results", "{verdict:#}");
    let report = &verdict["reports"][0];
    let ops = report["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "will-it-scale.per_process_ops")
        .unwrap_or_else(|| panic!("no per_process_ops in {report:#}"));
    let change = ops["change"].as_f64().unwrap();
    eprintln!(
        "seed 002 on open1: {change:+.2}% ({}, {})",
        verdict["overall"], ops["reason"]
    );
    assert!(change > 0.0, "{ops:#}");

    // What a person sees of it in a browser: Debian's headless Chromium on
    // the running server's pages, from the dashboard to a plot.
    let overall = verdict["overall"].as_str().unwrap();
    browse(&server.url(), id, overall).await;
    server.stop().await;
}

/// The `href`s of a document's links.
fn links(dom: &str) -> Vec<String> {
    dom.split("href=\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .map(|h| h.replace("&amp;", "&"))
        .collect()
}

async fn browse(server: &str, id: i64, overall: &str) {
    let Some(chromium) = Chromium::find() else {
        eprintln!("skipping the browser walk: /usr/bin/chromium is not installed");
        return;
    };
    let dashboard = chromium.dump_dom(&format!("{server}/")).await;
    // The dashboard lists the comparison with its verdict and patch.
    assert!(
        dashboard.contains("fs: use __fput_sync in close(2)"),
        "{dashboard}"
    );
    assert!(dashboard.contains(overall), "{dashboard}");
    let page = links(&dashboard)
        .into_iter()
        .find(|h| h == &format!("/comparisons/{id}"))
        .expect("the dashboard links to the comparison");

    // Its report page: the headline sentence, the open1 table row with its
    // verdict, the boot order and inline plots.
    let report = chromium.dump_dom(&format!("{server}{page}")).await;
    assert!(report.contains("patchperf noticed a"), "{report}");
    // Metric names carry line-break opportunities at their dots.
    let report = report.replace("<wbr>", "");
    let row_start = report
        .find("<td class=\"metric\">will-it-scale.per_process_ops")
        .expect("a table row for will-it-scale.per_process_ops");
    let row = &report[row_start..row_start + report[row_start..].find("</tr>").unwrap()];
    // The verdict, its reasons behind it for the keyboard too.
    assert!(row.contains(&format!(">{overall}</summary>")), "{row}");
    assert!(report.contains("Boot order"), "{report}");
    assert!(report.contains("<svg"), "{report}");

    // A plot followed from the page is an SVG of that metric's runs.
    let plot = links(&report)
        .into_iter()
        .find(|h| h.contains("/plots/runs.svg") && h.contains("per_process_ops"))
        .expect("the headline plot links to itself");
    let svg = chromium.dump_svg(&format!("{server}{plot}")).await;
    assert!(svg.contains("<svg"), "{svg}");
    assert!(svg.contains("will-it-scale.per_process_ops"), "{svg}");
}
