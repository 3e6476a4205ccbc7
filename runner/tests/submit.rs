//! `patchperf-runner submit`, the CI client, run as the real binary against
//! a real server (in-process, on its own Postgres database): what it sends
//! is what the server stores, refusals reach the user with the server's
//! words, and `--wait` follows a comparison to its end.

use std::process::{Command, Output};

use patchperf_server::domain::tokens::TokenKind;
use patchperf_testkit::{TestServer, token};
use sqlx::PgPool;

const BIN: &str = env!("CARGO_BIN_EXE_patchperf-runner");

/// The seed 002 patch as ported to 6.1 (examples/patches/).
fn seed_002() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/patches/002-fs-use-__fput_sync-in-close-2.patch")
}

/// Runs the binary on a blocking thread (the server shares this runtime).
async fn runner(args: Vec<String>) -> Output {
    tokio::task::spawn_blocking(move || Command::new(BIN).args(&args).output().unwrap())
        .await
        .unwrap()
}

fn args(server: &str, token: &str, extra: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = ["submit", "--server", server, "--token", token]
        .iter()
        .map(|s| s.to_string())
        .collect();
    v.extend(extra.iter().map(|s| s.to_string()));
    v
}

#[sqlx::test(migrations = "../migrations")]
async fn submit_sends_the_series_workloads_and_parameters_as_given(pool: PgPool) {
    let server = TestServer::start(pool.clone(), "127.0.0.1:0".parse().unwrap()).await;
    let ci = token(&pool, TokenKind::Ci).await;
    let mbox = seed_002();
    let out = runner(args(
        &server.url(),
        &ci,
        &[
            "--mbox",
            mbox.to_str().unwrap(),
            "-w",
            "open1,dup1",
            "-t",
            "1,100%",
            "--runs",
            "4",
            "--seconds",
            "3",
            "--warmup",
            "1",
            "--perf",
            "stat",
        ],
    ))
    .await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let id: i64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("comparison ")?.strip_suffix(" submitted"))
        .expect("the id is printed")
        .parse()
        .unwrap();
    assert!(stdout.contains(&format!("/comparisons/{id}")), "{stdout}");

    // Blocking HTTP off the runtime thread that serves the app.
    let (url, auth) = (
        format!("{}/api/v1/comparisons/{id}", server.url()),
        format!("Bearer {ci}"),
    );
    let view: serde_json::Value = tokio::task::spawn_blocking(move || {
        ureq::get(&url)
            .header("authorization", &auth)
            .call()
            .unwrap()
            .body_mut()
            .read_json()
            .unwrap()
    })
    .await
    .unwrap();
    assert_eq!(view["workloads"], serde_json::json!(["open1", "dup1"]));
    assert_eq!(view["params"]["nr_task"], serde_json::json!([1, "100%"]));
    assert_eq!(view["params"]["seconds"], 3);
    assert_eq!(view["params"]["warmup_seconds"], 1);
    assert_eq!(view["params"]["perf_stat"], true);
    assert_eq!(view["params"]["perf_profile"], false);
    assert_eq!(view["runs_per_side"], 4);
    // Without --base: Debian's newest kernel source package.
    assert_eq!(view["base"]["name"], "linux-source-6.12");
    // 4 boots a side in blocks of two: 4 jobs.
    assert_eq!(view["jobs"].as_array().unwrap().len(), 4);
    let subject = view["patches"]["messages"][0]["subject"].as_str().unwrap();
    assert!(
        subject.contains("fs: use __fput_sync in close(2)"),
        "{subject}"
    );
    server.stop().await;
}

#[sqlx::test(migrations = "../migrations")]
async fn a_refused_submission_prints_the_servers_reason(pool: PgPool) {
    let server = TestServer::start(pool.clone(), "127.0.0.1:0".parse().unwrap()).await;
    let ci = token(&pool, TokenKind::Ci).await;
    let mbox = seed_002();

    // An unknown workload: the server names it.
    let out = runner(args(
        &server.url(),
        &ci,
        &["--mbox", mbox.to_str().unwrap(), "-w", "open9"],
    ))
    .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("unknown workload `open9`"), "{stderr}");

    // A runner token cannot submit.
    let runner_token = token(&pool, TokenKind::Runner).await;
    let out = runner(args(
        &server.url(),
        &runner_token,
        &["--mbox", mbox.to_str().unwrap(), "-w", "open1"],
    ))
    .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("403"), "{stderr}");

    // A bad task count never reaches the server.
    let out = runner(args(
        &server.url(),
        &ci,
        &["--mbox", mbox.to_str().unwrap(), "-w", "open1", "-t", "0"],
    ))
    .await;
    assert_eq!(out.status.code(), Some(2));

    let stored: i64 = sqlx::query_scalar("SELECT count(*) FROM comparisons")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(stored, 0, "nothing refused was stored");
    server.stop().await;
}

#[sqlx::test(migrations = "../migrations")]
async fn wait_follows_the_comparison_until_it_ends(pool: PgPool) {
    let server = TestServer::start(pool.clone(), "127.0.0.1:0".parse().unwrap()).await;
    let ci = token(&pool, TokenKind::Ci).await;
    let mbox = seed_002();
    let waiting = tokio::spawn(runner(args(
        &server.url(),
        &ci,
        &[
            "--mbox",
            mbox.to_str().unwrap(),
            "-w",
            "open1",
            "--wait",
            "--poll",
            "1",
        ],
    )));
    // Once it is stored, cancel it the way CI or an admin would.
    let id = loop {
        let id: Option<i64> = sqlx::query_scalar("SELECT max(id) FROM comparisons")
            .fetch_one(&pool)
            .await
            .unwrap();
        if let Some(id) = id {
            break id;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    let url = format!("{}/api/v1/comparisons/{id}/cancel", server.url());
    let auth = format!("Bearer {ci}");
    tokio::task::spawn_blocking(move || {
        ureq::post(&url)
            .header("authorization", &auth)
            .send_empty()
            .unwrap()
    })
    .await
    .unwrap();

    let out = waiting.await.unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(stdout.contains("job 1 of 3 [boot 1 "), "{stdout}");
    assert!(stdout.contains("verdict: no results"), "{stdout}");
    assert!(
        stderr.contains(&format!("comparison {id} ended cancelled")),
        "{stderr}"
    );
    server.stop().await;
}

#[sqlx::test(migrations = "../migrations")]
async fn aa_submits_a_noise_floor_comparison_without_a_patch(pool: PgPool) {
    let server = TestServer::start(pool.clone(), "127.0.0.1:0".parse().unwrap()).await;
    let ci = token(&pool, TokenKind::Ci).await;
    let out = runner(args(&server.url(), &ci, &["--aa", "-w", "open1"])).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (kind, mbox): (String, String) = sqlx::query_as(
        "SELECT c.kind, s.mbox FROM comparisons c JOIN patch_series s ON s.id = c.series_id",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!((kind.as_str(), mbox.as_str()), ("aa", ""));

    // Without --aa an mbox is required.
    let out = runner(args(&server.url(), &ci, &["-w", "open1"])).await;
    assert_eq!(out.status.code(), Some(2));
    server.stop().await;
}

/// A repository of a base and two commits, each touching its own file.
/// A server that reads repositories on its own disk, with its mirrors.
async fn local_git_server(pool: &PgPool) -> (TestServer, tempfile::TempDir) {
    let mirrors = tempfile::tempdir().unwrap();
    let config = patchperf_server::Config {
        local_git: true,
        git_dir: mirrors.path().to_path_buf(),
        ..patchperf_server::Config::default()
    };
    let state = patchperf_server::AppState::new(pool.clone(), config);
    let server = TestServer::serve(state, "127.0.0.1:0".parse().unwrap()).await;
    (server, mirrors)
}

/// `git -C dir args` as `name <address>`; its output.
fn git_as(dir: &std::path::Path, (name, address): (&str, &str), args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", name)
        .env("GIT_AUTHOR_EMAIL", address)
        .env("GIT_COMMITTER_NAME", name)
        .env("GIT_COMMITTER_EMAIL", address)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

fn small_repo(dir: &std::path::Path) -> Vec<String> {
    let git = |args: &[&str]| git_as(dir, ("Kernel Hacker", "kh@example.org"), args);
    git(&["init", "-q", "-b", "master"]);
    let mut ids = Vec::new();
    for k in 0..3 {
        std::fs::write(dir.join(format!("f{k}.c")), format!("int f{k};\n")).unwrap();
        git(&["add", "."]);
        git(&["commit", "-q", "-m", &format!("fs: step {k}")]);
        ids.push(git(&["rev-parse", "HEAD"]));
    }
    ids
}

#[sqlx::test(migrations = "../migrations")]
async fn a_range_and_a_bisection_over_it_are_submitted_from_the_command_line(pool: PgPool) {
    let (server, _mirrors) = local_git_server(&pool).await;
    let ci = token(&pool, TokenKind::Ci).await;
    let repo = tempfile::tempdir().unwrap();
    let ids = small_repo(repo.path());
    let url = repo.path().to_str().unwrap();
    let range = format!("{}..master", &ids[0][..12]);

    let out = runner(args(
        &server.url(),
        &ci,
        &["--git", url, "--range", &range, "-w", "open1"],
    ))
    .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (git_range, steps): (String, i64) = sqlx::query_as(
        "SELECT git_range, (SELECT count(*) FROM comparisons s WHERE s.parent_id = c.id)
         FROM comparisons c WHERE parent_id IS NULL",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(git_range, format!("{}..{}", ids[0], ids[2]));
    assert_eq!(steps, 2);

    let out = runner(args(
        &server.url(),
        &ci,
        &["--bisect", "--git", url, "--range", &range, "-w", "open1"],
    ))
    .await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.starts_with("bisection 1 started\npage: http://"),
        "{stdout}"
    );
    // Its first probe, the bad end, is queued.
    let probe: (i32, String) =
        sqlx::query_as("SELECT probe, commit_sha FROM comparisons WHERE bisection_id = 1")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(probe, (2, ids[2].clone()));

    // One workload: the metric of one is followed.
    let out = runner(args(
        &server.url(),
        &ci,
        &[
            "--bisect",
            "--git",
            url,
            "--range",
            &range,
            "-w",
            "open1,dup1",
        ],
    ))
    .await;
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("one --workload"));
    server.stop().await;
}

#[sqlx::test(migrations = "../migrations")]
async fn track_adds_a_tree_that_follows_the_branch(pool: PgPool) {
    let (server, _mirrors) = local_git_server(&pool).await;
    let ci = token(&pool, TokenKind::Ci).await;
    let repo = tempfile::tempdir().unwrap();
    let ids = small_repo(repo.path());
    let url = repo.path().to_str().unwrap();
    let track = |extra: &[&str]| {
        let mut v: Vec<String> = ["track", "--server", &server.url(), "--token", &ci]
            .iter()
            .map(|s| s.to_string())
            .collect();
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    let out = runner(track(&[
        "--tree",
        "vfs.all",
        "--git",
        url,
        "--branch",
        "master",
        "-w",
        "dup1,fstatat-empty",
        "-t",
        "1",
        "--runs",
        "5",
        "--measurement",
        "tcg-icount",
        "--min-hours",
        "6",
        "--cc",
        "linux-fsdevel@vger.kernel.org,maintainer@example.org",
    ]))
    .await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        stdout,
        format!(
            "tree 1 (vfs.all) follows {url} master from {}\npage: {}/trees/1\n",
            ids[2],
            server.url()
        )
    );
    let (workloads, runs, backend, min_hours, cc): (Vec<String>, i32, String, i32, Vec<String>) =
        sqlx::query_as("SELECT workloads, runs_per_side, backend, min_hours, cc FROM trees")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(workloads, ["dup1", "fstatat-empty"]);
    assert_eq!((runs, backend.as_str(), min_hours), (5, "tcg-icount", 6));
    assert_eq!(
        cc,
        ["linux-fsdevel@vger.kernel.org", "maintainer@example.org"]
    );

    // The same name again (by the flag's old spelling, still an alias):
    // the server's refusal, word for word.
    let out = runner(track(&[
        "--name", "vfs.all", "--git", url, "--branch", "master", "-w", "dup1",
    ]))
    .await;
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("a tree named `vfs.all` is tracked already"),
        "{stderr}"
    );
}

/// `submit --wait` as a CI job runs it, against a server whose runner this
/// test plays with seed 002's recorded dup1 runs (−1.2%: a regression).
async fn submit_measured(
    app: &patchperf_testkit::app::TestApp,
    server: &TestServer,
    machine: i64,
    extra: &[&str],
) -> Output {
    let mbox = seed_002();
    let mut flags = vec![
        "--mbox",
        mbox.to_str().unwrap(),
        "-w",
        "dup1",
        "--seconds",
        "3",
        "--warmup",
        "1",
        "--perf",
        "stat,profile",
        "--measurement",
        "tcg-icount",
        "--wait",
        "--poll",
        "1",
    ];
    flags.extend_from_slice(extra);
    let waiting = tokio::spawn(runner(args(&server.url(), &app.ci, &flags)));
    let (base, patched) = patchperf_testkit::runs::recorded("002-dup1");
    while sqlx::query_scalar::<_, i64>("SELECT count(*) FROM jobs WHERE state = 'queued'")
        .fetch_one(&app.pool)
        .await
        .unwrap()
        == 0
    {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    app.run_jobs_with(machine, base, patched).await;
    waiting.await.unwrap()
}

#[sqlx::test(migrations = "../migrations")]
async fn each_exit_status_of_submit_says_what_ci_should_do(pool: PgPool) {
    use patchperf_runner::error::exit;
    let app = patchperf_testkit::app::TestApp::new(pool).await;
    let server = TestServer::serve(app.state.clone(), "127.0.0.1:0".parse().unwrap()).await;
    let machine = app.register("lab-1").await;
    let code = |out: &Output| {
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.code(), said)
    };

    // 3: a regression, and CI asked to fail on one; 0: the same without.
    let (status, said) =
        code(&submit_measured(&app, &server, machine, &["--fail-on-regression"]).await);
    assert_eq!(status, Some(exit::REGRESSION), "{said}");
    assert!(said.contains("verdict: regression"), "{said}");
    let (status, said) = code(&submit_measured(&app, &server, machine, &[]).await);
    assert_eq!(status, Some(0), "{said}");

    // 2: refused before anything is sent (too few boots), and by the
    // server (a token it does not know).
    let mbox = seed_002();
    let mbox = mbox.to_str().unwrap();
    let out = runner(args(
        &server.url(),
        &app.ci,
        &["--mbox", mbox, "-w", "dup1", "--runs", "2"],
    ))
    .await;
    assert_eq!(code(&out).0, Some(exit::REFUSED), "{}", code(&out).1);
    let out = runner(args(
        &server.url(),
        "ppf_ci_forged",
        &["--mbox", mbox, "-w", "dup1"],
    ))
    .await;
    assert_eq!(code(&out).0, Some(exit::REFUSED), "{}", code(&out).1);

    // 75: no server there; CI may try again later.
    let closed = format!("http://127.0.0.1:{}", patchperf_testkit::free_port());
    let out = runner(args(&closed, &app.ci, &["--mbox", mbox, "-w", "dup1"])).await;
    let (status, said) = code(&out);
    assert_eq!(status, Some(exit::TEMPFAIL), "{said}");
    assert!(said.contains("cannot reach the server"), "{said}");
    // 75 too: a git remote the server cannot reach (nothing listens
    // there); 2: one that is no git URL at all.
    let nobody = format!(
        "http://127.0.0.1:{}/linux.git",
        patchperf_testkit::free_port()
    );
    for (url, expected, words) in [
        (
            nobody.as_str(),
            exit::TEMPFAIL,
            "it cannot be reached from this server",
        ),
        ("not a url", exit::REFUSED, "not a url"),
    ] {
        let out = runner(args(
            &server.url(),
            &app.ci,
            &["--git", url, "--range", "v1..v2", "-w", "dup1"],
        ))
        .await;
        let (status, said) = code(&out);
        assert_eq!(status, Some(expected), "{url}: {said}");
        assert!(said.contains(words), "{url}: {said}");
    }

    // 4: no runner takes it within --timeout.
    let out = runner(args(
        &server.url(),
        &app.ci,
        &[
            "--mbox",
            mbox,
            "-w",
            "dup1",
            "--wait",
            "--poll",
            "1",
            "--timeout",
            "2s",
        ],
    ))
    .await;
    let (status, said) = code(&out);
    assert_eq!(status, Some(exit::GAVE_UP), "{said}");
    assert!(said.contains("had not ended after --timeout 2 s"), "{said}");
    server.stop().await;
}

/// On a machine with no calibration for the workload, the comparison waits
/// while the machine measures its noise: `--wait` says so, with the job of
/// the A/A comparison that runs and how long the machine's last build took,
/// instead of only "queued".
#[sqlx::test(migrations = "../migrations")]
async fn wait_names_the_calibration_and_the_build_it_waits_for(pool: PgPool) {
    use patchperf_common::metric::KERNEL_BUILD_SECONDS;
    use patchperf_common::run::MetricValue;
    use patchperf_testkit::app::{TestApp, test_config};
    use serde_json::json;

    let config = patchperf_server::Config {
        auto_calibrate: true,
        ..test_config()
    };
    let app = TestApp::with_config(pool, config).await;
    let server = TestServer::serve(app.state.clone(), "127.0.0.1:0".parse().unwrap()).await;
    let machine = app.register("lab-1").await;
    // Earlier work on lab-1, whose kernel took 455 s to build.
    app.post_comparison(json!({
        "base": { "kind": "tarball", "name": "linux-source-6.1" },
        "aa": true, "mbox": "", "workloads": ["open1"], "runs": 3,
        "params": { "nr_task": [1], "seconds": 5, "warmup_seconds": 1 },
    }))
    .await;
    let earlier = |ops: f64| {
        let mut run = patchperf_testkit::runs::run_result("open1", 1, vec![ops; 5], ops);
        run.metrics.push(MetricValue {
            name: KERNEL_BUILD_SECONDS.into(),
            value: 455.0,
        });
        run
    };
    let base = [100.0, 101.0, 99.0].map(earlier).to_vec();
    let patched = [100.5, 100.0, 99.5].map(earlier).to_vec();
    app.run_jobs_with(machine, base, patched).await;

    // A patch on dup1, which no A/A on lab-1 measured.
    let mbox = seed_002();
    let waiting = tokio::spawn(runner(args(
        &server.url(),
        &app.ci,
        &[
            "--mbox",
            mbox.to_str().unwrap(),
            "-w",
            "dup1",
            "--wait",
            "--poll",
            "1",
        ],
    )));
    let ab: i64 = loop {
        let id: Option<i64> =
            sqlx::query_scalar("SELECT max(id) FROM comparisons WHERE kind = 'ab'")
                .fetch_one(&app.pool)
                .await
                .unwrap();
        if let Some(id) = id {
            break id;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    // lab-1 claims: its calibration goes first, and builds.
    let job = app.claim(machine).await.expect("a job for lab-1");
    assert_ne!(job.comparison_id, ab, "the calibration is claimed first");
    let aa = job.comparison_id;
    let state =
        json!({ "state": "building", "message": "building the base kernel", "log_tail": "" });
    let a = app.job_call(machine, &job, "state", state).await;
    assert!(a.status.is_success(), "{a:?}");
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    let a = app
        .post(
            &format!("/api/v1/comparisons/{ab}/cancel"),
            &app.ci,
            json!({}),
        )
        .await;
    assert!(a.status.is_success(), "{a:?}");

    let out = waiting.await.unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!(
            "now: the machine measures its noise first: A/A comparison {aa}, job 1 of 3 \
             building the base kernel (the last build on lab-1 took 455 s)"
        )),
        "{stdout}"
    );
    server.stop().await;
}

/// A server that dies while `--wait` follows: the wait ends at `--timeout`
/// with the give-up status, saying the outage once, naming the comparison,
/// instead of a line a poll and ten minutes of retries.
#[sqlx::test(migrations = "../migrations")]
async fn a_server_gone_during_the_wait_ends_it_at_the_timeout(pool: PgPool) {
    use patchperf_runner::error::exit;
    let app = patchperf_testkit::app::TestApp::new(pool).await;
    let server = TestServer::serve(app.state.clone(), "127.0.0.1:0".parse().unwrap()).await;
    app.register("lab-1").await;
    let mbox = seed_002();
    let args = args(
        &server.url(),
        &app.ci,
        &[
            "--mbox",
            mbox.to_str().unwrap(),
            "-w",
            "dup1",
            "--wait",
            "--poll",
            "1",
            "--timeout",
            "8s",
        ],
    );
    let started = std::time::Instant::now();
    let waiting = tokio::task::spawn_blocking(move || Command::new(BIN).args(&args).output());
    // Submitted and followed for a moment, then the server is gone.
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    server.stop().await;
    let out = waiting.await.unwrap().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(exit::GAVE_UP), "{said}");
    assert!(said.contains("comparison 1 submitted"), "{said}");
    assert_eq!(
        said.matches("retrying").count(),
        1,
        "the outage is said once: {said}"
    );
    assert!(
        said.contains("comparison 1 had not ended (") && said.contains("--timeout 8 s"),
        "{said}"
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
}

/// A comparison submitted without `--wait` is asked after (`status`),
/// waited for (`wait`, with `submit --wait`'s output and exit status) and
/// cancelled (`cancel`) by its id.
#[sqlx::test(migrations = "../migrations")]
async fn status_wait_and_cancel_take_a_submitted_comparison_by_id(pool: PgPool) {
    use patchperf_runner::error::exit;
    let app = patchperf_testkit::app::TestApp::new(pool).await;
    let server = TestServer::serve(app.state.clone(), "127.0.0.1:0".parse().unwrap()).await;
    let machine = app.register("lab-1").await;
    let url = server.url();
    let by_id = |verb: &str, id: &str, extra: &[&str]| {
        let mut v: Vec<String> = [verb, id, "--server", &url, "--token", &app.ci]
            .iter()
            .map(|s| s.to_string())
            .collect();
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    let said = |out: &Output| {
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    };
    let mbox = seed_002();
    let flags = [
        "--mbox",
        mbox.to_str().unwrap(),
        "-w",
        "dup1",
        "--seconds",
        "3",
        "--warmup",
        "1",
        "--perf",
        "stat,profile",
        "--measurement",
        "tcg-icount",
    ];

    // One measured to its end while `wait` follows it.
    let out = runner(args(&url, &app.ci, &flags)).await;
    assert!(out.status.success(), "{}", said(&out));
    let id = said(&out).split_whitespace().nth(1).unwrap().to_string();
    let out = runner(by_id("status", &id, &[])).await;
    assert!(out.status.success(), "{}", said(&out));
    assert!(
        said(&out).contains(&format!("comparison {id}: queued")),
        "{}",
        said(&out)
    );
    let waiting = tokio::spawn(runner(by_id(
        "wait",
        &id,
        &["--poll", "1", "--fail-on-regression"],
    )));
    let (base, patched) = patchperf_testkit::runs::recorded("002-dup1");
    app.run_jobs_with(machine, base, patched).await;
    let out = waiting.await.unwrap();
    assert_eq!(out.status.code(), Some(exit::REGRESSION), "{}", said(&out));
    assert!(said(&out).contains("verdict: regression"), "{}", said(&out));
    let out = runner(by_id("status", &id, &["--json"])).await;
    let view: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(view["status"], "done", "{view:#}");

    // One cancelled before any machine took it; submitted with --json:
    // one document on standard output, the lines on standard error.
    let mut json_flags = flags.to_vec();
    json_flags.push("--json");
    let out = runner(args(&url, &app.ci, &json_flags)).await;
    assert!(out.status.success(), "{}", said(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (doc["exit"].as_str(), doc["exit_code"].as_i64()),
        (Some("done"), Some(0))
    );
    assert!(
        doc["report_url"].as_str().unwrap().starts_with("http://"),
        "{doc}"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("submitted"));
    let other = doc["id"].as_i64().unwrap().to_string();
    let out = runner(by_id("cancel", &other, &[])).await;
    assert!(out.status.success(), "{}", said(&out));
    assert!(
        said(&out).contains(&format!("comparison {other}: cancelled")),
        "{}",
        said(&out)
    );
    let out = runner(by_id("wait", &other, &["--poll", "1"])).await;
    assert_eq!(out.status.code(), Some(exit::FAILED), "{}", said(&out));
    assert!(said(&out).contains("ended cancelled"), "{}", said(&out));
    let out = runner(by_id("wait", &other, &["--poll", "1", "--json"])).await;
    assert_eq!(out.status.code(), Some(exit::FAILED), "{}", said(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["status"], "cancelled", "{doc}");
    assert_eq!(doc["exit"], "failed", "{doc}");
    assert!(
        doc["message"].as_str().unwrap().contains("ended cancelled"),
        "{doc}"
    );
    // Refused: cancelled already, and an id the server does not have.
    let out = runner(by_id("cancel", &other, &[])).await;
    assert_eq!(out.status.code(), Some(exit::REFUSED), "{}", said(&out));
    let out = runner(by_id("status", "999999", &[])).await;
    assert_eq!(out.status.code(), Some(exit::REFUSED), "{}", said(&out));
    server.stop().await;
}

/// Inside a clone, `submit --range origin/master..HEAD` (and `--commit`)
/// measures the developer's own commits: formatted here, sent with the
/// upstream's URL and the merge base, so the server reads only the
/// upstream. A merge, or a directory outside a clone, is refused.
#[sqlx::test(migrations = "../migrations")]
async fn a_branch_of_a_local_clone_is_submitted_with_its_upstream_base(pool: PgPool) {
    let (server, _mirrors) = local_git_server(&pool).await;
    let ci = token(&pool, TokenKind::Ci).await;
    let upstream = tempfile::tempdir().unwrap();
    let ids = small_repo(upstream.path());
    let clones = tempfile::tempdir().unwrap();
    let work = clones.path().join("linux");
    let git = |args: &[&str]| git_as(&work, ("Jörg Hacker", "jh@example.org"), args);
    let cloned = Command::new("git")
        .args(["clone", "-q"])
        .arg(upstream.path())
        .arg(&work)
        .output()
        .unwrap();
    assert!(cloned.status.success(), "{cloned:?}");
    git(&["checkout", "-q", "-b", "faster-open"]);
    for k in 0..2 {
        std::fs::write(work.join("f0.c"), format!("int f0;\nint mine{k};\n")).unwrap();
        git(&["commit", "-q", "-am", &format!("fs: my step {k}")]);
    }
    let head = git(&["rev-parse", "HEAD"]);
    let in_clone = |extra: &[&str]| {
        let mut cmd = Command::new(BIN);
        cmd.args(args(&server.url(), &ci, extra)).current_dir(&work);
        tokio::task::spawn_blocking(move || cmd.output().unwrap())
    };
    let said = |out: &Output| {
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    };
    let stored = |id: i64| {
        let pool = pool.clone();
        async move {
            sqlx::query_as::<_, (serde_json::Value, String)>(
                "SELECT c.base, s.mbox FROM comparisons c JOIN patch_series s ON s.id = c.series_id
                 WHERE c.id = $1",
            )
            .bind(id)
            .fetch_one(&pool)
            .await
            .unwrap()
        }
    };

    let out = in_clone(&["--range", "origin/master..HEAD", "-w", "open1"])
        .await
        .unwrap();
    assert!(out.status.success(), "{}", said(&out));
    assert!(
        said(&out).contains("2 commits of this clone"),
        "{}",
        said(&out)
    );
    let (base, mbox) = stored(1).await;
    assert_eq!(base["url"], upstream.path().to_str().unwrap(), "{base}");
    assert_eq!(base["commit"], ids[2].as_str(), "{base}");
    assert_eq!(mbox.matches("Subject: [PATCH").count(), 2, "{mbox}");
    assert!(mbox.contains("fs: my step 1"), "{mbox}");
    assert!(mbox.contains(&format!("base-commit: {}", ids[2])), "{mbox}");

    let out = in_clone(&["--commit", "HEAD", "-w", "open1"])
        .await
        .unwrap();
    assert!(out.status.success(), "{}", said(&out));
    let (base, mbox) = stored(2).await;
    assert_ne!(base["commit"], head.as_str());
    assert_eq!(mbox.matches("Subject: [PATCH").count(), 1, "{mbox}");
    assert!(
        mbox.contains("fs: my step 1") && !mbox.contains("my step 0"),
        "{mbox}"
    );

    // An mbox that names its base is built on it in the upstream named.
    let file = clones.path().join("series.mbox");
    std::fs::write(&file, &mbox).unwrap();
    let file = file.to_str().unwrap();
    let url = upstream.path().to_str().unwrap();
    let out = runner(args(
        &server.url(),
        &ci,
        &["--mbox", file, "--base-url", url, "-w", "open1"],
    ))
    .await;
    assert!(out.status.success(), "{}", said(&out));
    let (base, _) = stored(3).await;
    assert_eq!(
        base["commit"],
        mbox.split("base-commit: ").nth(1).unwrap()[..40].to_string()
    );
    let plain = seed_002();
    let out = runner(args(
        &server.url(),
        &ci,
        &[
            "--mbox",
            plain.to_str().unwrap(),
            "--base-url",
            url,
            "-w",
            "open1",
        ],
    ))
    .await;
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    assert!(
        said(&out).contains("no base-commit: line"),
        "{}",
        said(&out)
    );

    // A merge cannot travel as a patch series.
    git(&["checkout", "-q", "-b", "side", "origin/master"]);
    std::fs::write(work.join("f1.c"), "int f1;\nint side;\n").unwrap();
    git(&["commit", "-q", "-am", "fs: side"]);
    git(&["checkout", "-q", "faster-open"]);
    git(&["merge", "-q", "--no-edit", "side"]);
    let out = in_clone(&["--range", "origin/master..", "-w", "open1"])
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    assert!(said(&out).contains("holds a merge"), "{}", said(&out));
    // Outside a clone (a directory of its own: the test's own may be in
    // the project's clone).
    let nowhere = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(BIN);
    cmd.args(args(
        &server.url(),
        &ci,
        &["--range", "HEAD~1..", "-w", "open1"],
    ))
    .current_dir(nowhere.path());
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    assert!(
        said(&out).contains("is not inside a git clone"),
        "{}",
        said(&out)
    );
    server.stop().await;
}

/// SIGTERM on `submit --wait` (a CI job cancelled): the comparison goes on
/// and the wait says so, naming it, with status 130; with
/// `--cancel-on-signal` it is cancelled.
#[sqlx::test(migrations = "../migrations")]
async fn a_signal_ends_the_wait_saying_what_goes_on_or_cancelling_it(pool: PgPool) {
    use patchperf_runner::error::exit;
    let app = patchperf_testkit::app::TestApp::new(pool).await;
    let server = TestServer::serve(app.state.clone(), "127.0.0.1:0".parse().unwrap()).await;
    app.register("lab-1").await;
    let mbox = seed_002();
    for (cancel, id) in [(false, 1), (true, 2)] {
        let mut flags = vec![
            "--mbox",
            mbox.to_str().unwrap(),
            "-w",
            "dup1",
            "--wait",
            "--poll",
            "30",
        ];
        if cancel {
            flags.push("--cancel-on-signal");
        }
        let child = Command::new(BIN)
            .args(args(&server.url(), &app.ci, &flags))
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let pid = i32::try_from(child.id()).unwrap();
        // Submitted, and waiting for a machine.
        while sqlx::query_scalar::<_, i64>("SELECT count(*) FROM comparisons WHERE id = $1")
            .bind(id)
            .fetch_one(&app.pool)
            .await
            .unwrap()
            == 0
        {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        // SAFETY: kill(2) on our own child, still unreaped.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
        let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
            .await
            .unwrap();
        let said = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(exit::INTERRUPTED), "{said}");
        let status: String = sqlx::query_scalar("SELECT status FROM comparisons WHERE id = $1")
            .bind(id)
            .fetch_one(&app.pool)
            .await
            .unwrap();
        if cancel {
            assert!(
                said.contains(&format!("comparison {id} cancelled")),
                "{said}"
            );
            assert_eq!(status, "cancelled");
        } else {
            assert!(
                said.contains(&format!("comparison {id} goes on on the server")),
                "{said}"
            );
            assert_eq!(status, "queued");
        }
    }
    server.stop().await;
}

/// One variable for every token, `PATCHPERF_TOKEN`; the earlier
/// `PATCHPERF_CI_TOKEN` still counts and, being the more specific, wins
/// where both are set (a lab machine's `PATCHPERF_TOKEN` is its runner
/// token).
#[sqlx::test(migrations = "../migrations")]
async fn the_token_comes_from_one_variable_or_its_earlier_name(pool: PgPool) {
    use patchperf_runner::error::exit;
    let app = patchperf_testkit::app::TestApp::new(pool).await;
    let server = TestServer::serve(app.state.clone(), "127.0.0.1:0".parse().unwrap()).await;
    let mbox = seed_002();
    let submit = |vars: Vec<(&'static str, String)>| {
        let url = server.url();
        let mbox = mbox.clone();
        tokio::task::spawn_blocking(move || {
            Command::new(BIN)
                .args(["submit", "--server", &url, "-w", "dup1", "--mbox"])
                .arg(&mbox)
                .env_remove("PATCHPERF_TOKEN")
                .env_remove("PATCHPERF_CI_TOKEN")
                .envs(vars)
                .output()
                .unwrap()
        })
    };
    for (vars, expected) in [
        (vec![("PATCHPERF_TOKEN", app.ci.clone())], 0),
        (vec![("PATCHPERF_CI_TOKEN", app.ci.clone())], 0),
        (
            vec![
                ("PATCHPERF_TOKEN", app.runner.clone()),
                ("PATCHPERF_CI_TOKEN", app.ci.clone()),
            ],
            0,
        ),
        (vec![("PATCHPERF_TOKEN", app.runner.clone())], exit::REFUSED),
    ] {
        let names: Vec<&str> = vars.iter().map(|v| v.0).collect();
        let out = submit(vars).await.unwrap();
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.status.code(), Some(expected), "{names:?}: {said}");
        if expected == 0 {
            assert!(said.contains("submitted"), "{names:?}: {said}");
        }
    }
    server.stop().await;
}

/// A message of a series posted to `list`: `[PATCH n/2]`, or the cover
/// letter for 0, each patch a reply to the cover letter.
fn posted(n: u32) -> Vec<u8> {
    let (subject, thread, body) = if n == 0 {
        (
            "[PATCH 0/2] fs: two steps".to_string(),
            String::new(),
            "Two small steps.\n".to_string(),
        )
    } else {
        (
            format!("[PATCH {n}/2] fs: step {n}"),
            "In-Reply-To: <cover-2@example.org>\nReferences: <cover-2@example.org>\n".to_string(),
            format!(
                "Step {n}.\n\nSigned-off-by: Kernel Hacker <kh@example.org>\n---\n \
                 fs/f{n}.c | 2 +-\n 1 file changed, 1 insertion(+), 1 deletion(-)\n\n\
                 diff --git a/fs/f{n}.c b/fs/f{n}.c\n--- a/fs/f{n}.c\n+++ b/fs/f{n}.c\n\
                 @@ -1,1 +1,1 @@\n-old\n+new\n-- \n2.43.0\n"
            ),
        )
    };
    let id = if n == 0 {
        "cover-2@example.org".to_string()
    } else {
        format!("step-{n}@example.org")
    };
    format!(
        "From: Kernel Hacker <kh@example.org>\nTo: fsdevel@example.org\n\
         Subject: {subject}\nDate: Sun, 6 Dec 2026 10:0{n}:00 +0000\nMessage-ID: <{id}>\n\
         {thread}MIME-Version: 1.0\nContent-Type: text/plain; charset=utf-8\n\n{body}"
    )
    .into_bytes()
}

/// `submit --msgid` takes a posted series as `b4 am -o - MSGID` fetches
/// it, from the archive b4's `b4.midmask` names (a public-inbox served on
/// loopback here, as lore would be); without b4 it says how to do
/// without.
#[sqlx::test(migrations = "../migrations")]
async fn a_posted_series_is_submitted_by_its_message_id(pool: PgPool) {
    use patchperf_runner::error::exit;
    let b4 = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/b4-venv/bin/b4");
    if !b4.is_file() {
        eprintln!("skipped: b4 is not in target/b4-venv (./patchperf test installs it)");
        return;
    }
    let app = patchperf_testkit::app::TestApp::new(pool).await;
    let server = TestServer::serve(app.state.clone(), "127.0.0.1:0".parse().unwrap()).await;
    let dir = tempfile::tempdir().unwrap();
    let (url, served, _archive) = {
        let dir = dir.path().to_path_buf();
        tokio::task::spawn_blocking(move || {
            let archive = patchperf_testkit::public_inbox::Archive::create(
                &dir,
                "fsdevel",
                "fsdevel@example.org",
            );
            for n in 0..=2 {
                archive.add(&posted(n));
            }
            archive.index();
            let served = archive.serve();
            (served.url.clone(), served, archive)
        })
        .await
        .unwrap()
    };
    let home = tempfile::tempdir().unwrap();
    let submit = |b4: std::path::PathBuf, msgid: &str| {
        let (server_url, token, msgid) = (server.url(), app.ci.clone(), msgid.to_string());
        let (home, midmask) = (home.path().to_path_buf(), format!("{url}/%s"));
        tokio::task::spawn_blocking(move || {
            Command::new(BIN)
                .args(["submit", "--server", &server_url, "--token", &token])
                .args(["-w", "dup1", "--msgid", &msgid])
                .env("PATCHPERF_B4", b4)
                .env("HOME", &home)
                .env("XDG_CACHE_HOME", home.join("cache"))
                .env("XDG_CONFIG_HOME", home.join("config"))
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("GIT_CONFIG_COUNT", "2")
                .env("GIT_CONFIG_KEY_0", "b4.midmask")
                .env("GIT_CONFIG_VALUE_0", midmask)
                .env("GIT_CONFIG_KEY_1", "b4.attestation-policy")
                .env("GIT_CONFIG_VALUE_1", "off")
                .output()
                .unwrap()
        })
    };
    let said = |out: &Output| {
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    };

    let out = submit(b4.clone(), "<step-1@example.org>").await.unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    let id: i64 = said(&out)
        .split("comparison ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no comparison id: {}", said(&out)));
    let view = app.comparison(id).await;
    let subjects: Vec<&str> = view["patches"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["has_diff"] == true)
        .map(|m| m["subject"].as_str().unwrap())
        .collect();
    assert_eq!(
        subjects,
        ["[PATCH 1/2] fs: step 1", "[PATCH 2/2] fs: step 2"],
        "{view}"
    );

    let out = submit(b4.clone(), "nobody-posted-this@example.org")
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(exit::REFUSED), "{}", said(&out));
    assert!(said(&out).contains("found no series"), "{}", said(&out));
    let out = submit(dir.path().join("no-b4"), "step-1@example.org")
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(exit::REFUSED), "{}", said(&out));
    assert!(said(&out).contains("--msgid needs b4"), "{}", said(&out));
    drop(served);
    server.stop().await;
}
