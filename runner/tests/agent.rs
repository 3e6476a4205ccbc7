//! The agent loop against a real patchperf server (spawned in-process on a
//! loopback port, over a fresh Postgres database from `#[sqlx::test]`):
//! register, claim, fail honestly without a pipeline; results written
//! while the server is down reach it once it is back; and a job claimed
//! before a reboot (kexec) is finished by the agent started after it.
//! The spool against a real server and a small fake one: what the server
//! refuses for good moves to `rejected/` and what is behind it goes on; an
//! entry the server keeps failing on stops holding up the rest, while a
//! server failing on everything (or refusing the token) loses nothing.
//! NULs a console printed reach the server replaced, not refused.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, mpsc};

use patchperf_common::protocol::{
    BootSlot, FailureReason, FinishRequest, JobSpec, JobState, RunUpload,
};
use patchperf_common::run::{RunResult, Side};
use patchperf_runner::agent::client::{Client, Lease};
use patchperf_runner::agent::executor::{
    JobExecutor, JobReporter, PIPELINE_UNAVAILABLE, UnsupportedExecutor,
};
use patchperf_runner::agent::spool::{Delivery, Entry, Item, STUCK_AFTER, Spool};
use patchperf_runner::agent::worker::Step;
use patchperf_runner::kernel::pipeline::failure::JobFailure;
use patchperf_testkit::TestServer;
use serde_json::json;
use sqlx::PgPool;

use agent_support::{Lab, agent, run_result, submit};

#[path = "agent_support/mod.rs"]
mod agent_support;

#[sqlx::test(migrations = "../migrations")]
async fn without_a_pipeline_the_agent_fails_the_job_as_unsupported(pool: PgPool) {
    let Lab {
        server,
        url,
        runner,
        ci,
        spool,
    } = Lab::start(&pool).await;
    let spool_dir = spool.path().to_path_buf();

    let (comparison, step) = tokio::task::spawn_blocking(move || {
        let comparison = submit(&url, &ci);
        let mut agent = agent(&url, &runner, &spool_dir);
        let step = agent.step(&mut UnsupportedExecutor).unwrap();
        (comparison, step)
    })
    .await
    .unwrap();

    let Step::Ran { job_id, finish } = step else {
        panic!("no job ran: {step:?}");
    };
    assert_eq!(
        finish,
        FinishRequest::Failed {
            reason: FailureReason::Unsupported,
            detail: PIPELINE_UNAVAILABLE.into(),
            log_tail: String::new()
        }
    );
    let (state, reason, detail): (String, Option<String>, Option<String>) =
        sqlx::query_as("SELECT state, failure_reason, failure_detail FROM jobs WHERE id = $1")
            .bind(job_id)
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(state, "failed");
    assert_eq!(reason.as_deref(), Some("unsupported"));
    assert_eq!(detail.as_deref(), Some(PIPELINE_UNAVAILABLE));
    // An unsupported job would fail every time: the comparison is failed.
    let status: String = sqlx::query_scalar("SELECT status FROM comparisons WHERE id = $1")
        .bind(comparison)
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(status, "failed");
    let (name, nr_cpu): (String, i32) = sqlx::query_as("SELECT name, nr_cpu FROM machines")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(name, "lab-1");
    assert!(nr_cpu >= 1);
    assert!(
        spool
            .path()
            .read_dir()
            .unwrap()
            .all(|e| e.unwrap().path().is_dir())
    );
    server.stop().await;
}

/// An executor that takes the server down before uploading, as if the
/// network went away in the middle of a job.
struct OutageExecutor {
    stop_server: tokio::sync::mpsc::UnboundedSender<()>,
    stopped: mpsc::Receiver<()>,
}

fn run(workload: &str) -> RunResult {
    run_result(workload, 1234.0)
}

impl JobExecutor for OutageExecutor {
    fn execute(&mut self, job: &JobSpec, reporter: &mut dyn JobReporter) -> Result<(), JobFailure> {
        reporter.state(JobState::Running, "running open1", "");
        self.stop_server.send(()).unwrap();
        self.stopped.recv().unwrap();
        for boot in &job.boots {
            reporter
                .upload(RunUpload {
                    boot: *boot,
                    result: run("open1"),
                })
                .expect("an unreachable server spools, it does not fail");
        }
        Ok(())
    }
}

#[sqlx::test(migrations = "../migrations")]
async fn results_spooled_while_the_server_is_down_are_delivered_when_it_is_back(pool: PgPool) {
    let Lab {
        server,
        url,
        runner,
        ci,
        spool,
    } = Lab::start(&pool).await;
    let addr = server.addr();
    let spool_dir = spool.path().to_path_buf();

    let (stop_tx, mut stop_rx) = tokio::sync::mpsc::unbounded_channel();
    let (stopped_tx, stopped_rx) = mpsc::channel();
    let worker = tokio::task::spawn_blocking(move || {
        submit(&url, &ci);
        let mut agent = agent(&url, &runner, &spool_dir);
        let mut executor = OutageExecutor {
            stop_server: stop_tx,
            stopped: stopped_rx,
        };
        let step = agent.step(&mut executor).unwrap();
        (agent, step)
    });
    // The executor asks for the outage mid-job.
    stop_rx.recv().await.unwrap();
    server.stop().await;
    stopped_tx.send(()).unwrap();
    let (agent, step) = worker.await.unwrap();

    let Step::Ran { job_id, finish } = step else {
        panic!("no job ran: {step:?}");
    };
    assert_eq!(
        finish,
        FinishRequest::Done {
            log_tail: String::new()
        }
    );
    // Two runs and the finish wait on disk; nothing reached the database.
    assert_eq!(agent.spool().pending().unwrap().len(), 3);
    let runs: i64 = sqlx::query_scalar("SELECT count(*) FROM runs")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(runs, 0);

    // The server comes back on the same address; the next turn delivers.
    let server = TestServer::start(pool.clone(), addr).await;
    let agent = tokio::task::spawn_blocking(move || {
        agent.deliver_spool();
        agent
    })
    .await
    .unwrap();
    assert!(agent.spool().pending().unwrap().is_empty());
    let runs: i64 = sqlx::query_scalar("SELECT count(*) FROM runs WHERE job_id = $1")
        .bind(job_id)
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(runs, 2);
    let state: String = sqlx::query_scalar("SELECT state FROM jobs WHERE id = $1")
        .bind(job_id)
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(state, "done");
    server.stop().await;
}

/// Uploads one open1 run per boot: a job that went well.
struct UploadingExecutor;

impl JobExecutor for UploadingExecutor {
    fn execute(&mut self, job: &JobSpec, reporter: &mut dyn JobReporter) -> Result<(), JobFailure> {
        for boot in &job.boots {
            reporter
                .upload(RunUpload {
                    boot: *boot,
                    result: run("open1"),
                })
                .unwrap();
        }
        Ok(())
    }
}

#[sqlx::test(migrations = "../migrations")]
async fn an_agent_started_after_a_reboot_resumes_the_job_claimed_before_it(pool: PgPool) {
    let Lab {
        server,
        url,
        runner,
        ci,
        spool,
    } = Lab::start(&pool).await;
    let spool_dir = spool.path().to_path_buf();

    let (claimed, step) = tokio::task::spawn_blocking(move || {
        submit(&url, &ci);
        // Before the reboot: the agent registers and claims; then the
        // machine kexecs away (the job state stays on disk).
        let mut before = agent(&url, &runner, &spool_dir);
        let machine_id = before.register().unwrap();
        let client = Client::new(&url, &runner);
        let job = client
            .claim(&patchperf_common::protocol::ClaimRequest {
                machine_id,
                wait_seconds: 1,
            })
            .unwrap()
            .job()
            .expect("a job to claim");
        drop(before);
        // After the reboot: a new agent process goes on with that job.
        let mut after = agent(&url, &runner, &spool_dir);
        let step = after.resume(&job, &mut UploadingExecutor).unwrap();
        (job, step)
    })
    .await
    .unwrap();

    assert_eq!(
        step,
        Step::Ran {
            job_id: claimed.job_id,
            finish: FinishRequest::Done {
                log_tail: String::new()
            }
        }
    );
    let (state, attempt): (String, i32) =
        sqlx::query_as("SELECT state, attempt FROM jobs WHERE id = $1")
            .bind(claimed.job_id)
            .fetch_one(&pool)
            .await
            .unwrap();
    // Finished on the lease it was claimed with, not claimed again.
    assert_eq!((state.as_str(), attempt), ("done", 1));
    let runs: i64 = sqlx::query_scalar("SELECT count(*) FROM runs WHERE job_id = $1")
        .bind(claimed.job_id)
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(runs, 2);
    server.stop().await;
}

/// A claimed job of a fresh comparison, and its lease, on the real server.
fn claimed_lease(url: &str, runner: &str, ci: &str, spool: &std::path::Path) -> (JobSpec, Lease) {
    submit(url, ci);
    let mut agent = agent(url, runner, spool);
    let machine_id = agent.register().unwrap();
    let job = Client::new(url, runner)
        .claim(&patchperf_common::protocol::ClaimRequest {
            machine_id,
            wait_seconds: 1,
        })
        .unwrap()
        .job()
        .expect("a job to claim");
    let lease = Lease {
        job_id: job.job_id,
        machine_id,
        attempt: job.attempt,
    };
    (job, lease)
}

fn upload_entry(lease: Lease, boot: BootSlot, result: RunResult) -> Entry {
    Entry::new(lease, Item::Upload(Box::new(RunUpload { boot, result })))
}

/// The files in `spool`'s `rejected/`, sorted.
fn rejected(spool: &Spool) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(spool.dir().join("rejected"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[sqlx::test(migrations = "../migrations")]
async fn a_run_the_server_refuses_moves_to_rejected_and_the_next_is_delivered(pool: PgPool) {
    let Lab {
        server,
        url,
        runner,
        ci,
        spool: dir,
    } = Lab::start(&pool).await;
    let spool_dir = dir.path().to_path_buf();

    let (job, spool, first, second) = tokio::task::spawn_blocking(move || {
        let (job, lease) = claimed_lease(&url, &runner, &ci, &spool_dir);
        let spool = Spool::open(&spool_dir).unwrap();
        // A metric name with a NUL in it, as a console can print one.
        let mut bad = run("open1");
        bad.metrics[0].name = "will-it-scale.per_process_ops\0".into();
        let bad = spool.push(&upload_entry(lease, job.boots[0], bad)).unwrap();
        spool
            .push(&upload_entry(lease, job.boots[1], run("open1")))
            .unwrap();
        let first = spool.deliver(&Client::new(&url, &runner)).unwrap();
        let second = spool.deliver(&Client::new(&url, &runner)).unwrap();
        let bad = bad.file_name().unwrap().to_string_lossy().into_owned();
        (job, spool, (first, bad), second)
    })
    .await
    .unwrap();

    let (first, bad) = first;
    assert_eq!(
        first,
        Delivery {
            delivered: 1,
            rejected: 1,
            remaining: 0,
            passed_over: 0,
        }
    );
    assert_eq!(second, Delivery::default());
    assert!(spool.pending().unwrap().is_empty());
    assert_eq!(rejected(&spool), [bad.clone(), format!("{bad}.error")]);
    let reason =
        std::fs::read_to_string(spool.dir().join("rejected").join(format!("{bad}.error"))).unwrap();
    assert!(reason.contains("422") && reason.contains("NUL"), "{reason}");
    let seqs: Vec<i32> = sqlx::query_scalar("SELECT boot_seq FROM runs WHERE job_id = $1")
        .bind(job.job_id)
        .fetch_all(&pool)
        .await
        .unwrap();
    assert_eq!(seqs, [i32::try_from(job.boots[1].seq).unwrap()]);
    server.stop().await;
}

/// A fake server's run endpoint: answers each job with the status set for
/// it (201 takes the run), and records which jobs' runs it took, in order.
#[derive(Debug, Default)]
struct Fake {
    status: HashMap<i64, u16>,
    taken: Vec<i64>,
}

async fn fake_runs(
    axum::extract::State(fake): axum::extract::State<Arc<Mutex<Fake>>>,
    axum::extract::Path(job): axum::extract::Path<i64>,
) -> (axum::http::StatusCode, axum::Json<serde_json::Value>) {
    let mut fake = fake.lock().unwrap();
    let status = fake.status.get(&job).copied().unwrap_or(201);
    if status == 201 {
        fake.taken.push(job);
        let taken = json!({ "run_id": job, "stored": true });
        return (axum::http::StatusCode::CREATED, axum::Json(taken));
    }
    let status = axum::http::StatusCode::from_u16(status).unwrap();
    (
        status,
        axum::Json(json!({ "error": format!("job {job}: {status}") })),
    )
}

async fn fake_server(fake: Arc<Mutex<Fake>>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let app = axum::Router::new()
        .route("/api/v1/jobs/{id}/runs", axum::routing::post(fake_runs))
        .with_state(fake);
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

/// A spool holding one run of each of `jobs`, in that order.
fn spool_of(dir: &std::path::Path, jobs: &[i64]) -> Spool {
    let spool = Spool::open(dir).unwrap();
    for &job_id in jobs {
        let lease = Lease {
            job_id,
            machine_id: 1,
            attempt: 1,
        };
        let boot = BootSlot {
            seq: 0,
            side: Side::Base,
        };
        spool
            .push(&upload_entry(lease, boot, run("open1")))
            .unwrap();
    }
    spool
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_entry_the_server_keeps_failing_on_stops_blocking_the_ones_behind_it() {
    let fake = Arc::new(Mutex::new(Fake::default()));
    fake.lock().unwrap().status.insert(1, 500);
    let url = fake_server(fake.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let spool_dir = dir.path().to_path_buf();

    let (spool, passes) = tokio::task::spawn_blocking(move || {
        let spool = spool_of(&spool_dir, &[1, 2, 3]);
        let client = Client::new(&url, "t");
        let passes: Vec<Delivery> = (0..STUCK_AFTER + 1)
            .map(|_| spool.deliver(&client).unwrap())
            .collect();
        (spool, passes)
    })
    .await
    .unwrap();

    // At first a 5xx holds everything up, as a server that is down does.
    let waiting = Delivery {
        remaining: 3,
        ..Delivery::default()
    };
    for pass in &passes[..STUCK_AFTER as usize - 1] {
        assert_eq!(*pass, waiting);
    }
    // Then the server takes the runs behind it, and it moves aside.
    assert_eq!(
        passes[STUCK_AFTER as usize - 1],
        Delivery {
            delivered: 2,
            rejected: 1,
            remaining: 0,
            passed_over: 0,
        }
    );
    assert_eq!(passes[STUCK_AFTER as usize], Delivery::default());
    assert_eq!(fake.lock().unwrap().taken, [2, 3]);
    let names = rejected(&spool);
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(names[0].ends_with("-job1.json"), "{names:?}");
    let reason = std::fs::read_to_string(spool.dir().join("rejected").join(&names[1])).unwrap();
    assert!(reason.contains("500"), "{reason}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_failing_on_everything_or_refusing_the_token_loses_nothing_and_keeps_the_order() {
    let fake = Arc::new(Mutex::new(Fake::default()));
    let url = fake_server(fake.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let spool_dir = dir.path().to_path_buf();

    let set_all = |status: u16| {
        let mut f = fake.lock().unwrap();
        for job in [1, 2, 3] {
            f.status.insert(job, status);
        }
    };
    let deliver = |spool: Spool, passes: u32| {
        let url = url.clone();
        tokio::task::spawn_blocking(move || {
            let client = Client::new(&url, "t");
            let last = (0..passes)
                .map(|_| spool.deliver(&client).unwrap())
                .last()
                .unwrap();
            (spool, last)
        })
    };

    set_all(503);
    let spool = spool_of(&spool_dir, &[1, 2, 3]);
    let (spool, last) = deliver(spool, 3 * STUCK_AFTER).await.unwrap();
    assert_eq!(
        last,
        Delivery {
            remaining: 3,
            passed_over: 3,
            ..Delivery::default()
        }
    );
    set_all(401);
    let (spool, last) = deliver(spool, 2).await.unwrap();
    assert_eq!(
        last,
        Delivery {
            remaining: 3,
            ..Delivery::default()
        }
    );
    assert!(rejected(&spool).is_empty());
    assert!(fake.lock().unwrap().taken.is_empty());

    // The server is back: everything goes, in the order it was written.
    fake.lock().unwrap().status.clear();
    let (spool, last) = deliver(spool, 1).await.unwrap();
    assert_eq!(
        last,
        Delivery {
            delivered: 3,
            ..Delivery::default()
        }
    );
    assert_eq!(fake.lock().unwrap().taken, [1, 2, 3]);
    assert!(spool.pending().unwrap().is_empty());
    assert!(rejected(&spool).is_empty());
}

/// Fails the job the way a kernel whose console printed NULs does.
struct NulConsoleExecutor;

impl JobExecutor for NulConsoleExecutor {
    fn execute(&mut self, _: &JobSpec, reporter: &mut dyn JobReporter) -> Result<(), JobFailure> {
        reporter.state(JobState::Booting, "booting\0", "[    0.0] Linux\0\0");
        Err(JobFailure {
            reason: FailureReason::BootFailed,
            detail: "no login prompt after \0".into(),
            log_tail: "[    1.2] serial: \0\0\0".into(),
        })
    }
}

#[sqlx::test(migrations = "../migrations")]
async fn a_console_with_nuls_reaches_the_server_with_them_replaced(pool: PgPool) {
    let Lab {
        server,
        url,
        runner,
        ci,
        spool,
    } = Lab::start(&pool).await;
    let spool_dir = spool.path().to_path_buf();

    let (step, waiting) = tokio::task::spawn_blocking(move || {
        submit(&url, &ci);
        let mut agent = agent(&url, &runner, &spool_dir);
        let step = agent.step(&mut NulConsoleExecutor).unwrap();
        (step, agent.spool().pending().unwrap().len())
    })
    .await
    .unwrap();

    let Step::Ran { job_id, .. } = step else {
        panic!("no job ran: {step:?}");
    };
    assert_eq!(waiting, 0, "the finish waits in the spool");
    let (state, detail, log_tail): (String, String, String) =
        sqlx::query_as("SELECT state, failure_detail, log_tail FROM jobs WHERE id = $1")
            .bind(job_id)
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(state, "failed");
    assert_eq!(detail, "no login prompt after \u{FFFD}");
    assert_eq!(log_tail, "[    1.2] serial: \u{FFFD}\u{FFFD}\u{FFFD}");
    let (message, tail): (String, String) = sqlx::query_as(
        "SELECT message, log_tail FROM job_events WHERE job_id = $1 AND state = 'booting'",
    )
    .bind(job_id)
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(message, "booting\u{FFFD}");
    assert_eq!(tail, "[    0.0] Linux\u{FFFD}\u{FFFD}");
    server.stop().await;
}

/// `agent --once` against a server that is down ends as a temporary
/// failure (exit status 75: try again later), not as a success (issue 43:
/// it exited 0).
#[test]
fn one_try_at_a_server_that_is_down_is_a_temporary_failure() {
    let spool = tempfile::tempdir().unwrap();
    // Bound, then closed: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut agent = agent(
        &format!("http://127.0.0.1:{port}"),
        "ppf_runner_x",
        spool.path(),
    );
    let err = agent.run(&mut UploadingExecutor, true).unwrap_err();
    assert_eq!(err.exit_code(), 75, "{err}");
}
