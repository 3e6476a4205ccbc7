//! The agent loop against a real patchperf server (spawned in-process on a
//! loopback port, over a fresh Postgres database from `#[sqlx::test]`):
//! register, claim, fail honestly without a pipeline; results written
//! while the server is down reach it once it is back; and a job claimed
//! before a reboot (kexec) is finished by the agent started after it.

use std::sync::mpsc;
use std::time::Duration;

use patchperf_common::protocol::{FailureReason, FinishRequest, JobSpec, JobState, RunUpload};
use patchperf_common::run::{MeasurementMode, MetricValue, RunResult, TaskMode};
use patchperf_runner::agent::backoff::Backoff;
use patchperf_runner::agent::client::Client;
use patchperf_runner::agent::executor::{
    JobExecutor, JobReporter, PIPELINE_UNAVAILABLE, UnsupportedExecutor,
};
use patchperf_runner::agent::inventory;
use patchperf_runner::agent::worker::{Agent, AgentOptions, Step};
use patchperf_runner::kernel::pipeline::failure::JobFailure;
use patchperf_server::http::auth::TokenKind;
use patchperf_testkit::mbox::one_patch;
use patchperf_testkit::{TestServer, token};
use serde_json::json;
use sqlx::PgPool;

/// Submits a comparison of 3 boots a side of open1 with one task.
fn submit(server: &str, ci: &str) -> i64 {
    let body = json!({
        "base": { "kind": "tarball", "name": "linux-source-6.1" },
        "mbox": one_patch("[PATCH] fs: tweak open"),
        "workloads": ["open1"],
        "params": { "nr_task": [1], "seconds": 2, "warmup_seconds": 1 },
        "runs": 3,
    });
    let mut resp = ureq::post(&format!("{server}/api/v1/comparisons"))
        .header("authorization", &format!("Bearer {ci}"))
        .send_json(&body)
        .unwrap();
    let created: serde_json::Value = resp.body_mut().read_json().unwrap();
    created["id"].as_i64().unwrap()
}

fn agent(server: &str, token: &str, spool: &std::path::Path) -> Agent {
    let options = AgentOptions {
        name: "lab-1".into(),
        spool_dir: spool.to_path_buf(),
        wait_seconds: 1,
        backoff: Backoff {
            tries: 2,
            first: Duration::from_millis(10),
            max: Duration::from_millis(10),
        },
        idle_retry: Duration::from_millis(10),
    };
    Agent::new(Client::new(server, token), options, inventory::collect()).unwrap()
}

#[sqlx::test(migrations = "../migrations")]
async fn without_a_pipeline_the_agent_fails_the_job_as_unsupported(pool: PgPool) {
    let server = TestServer::start(pool.clone(), "127.0.0.1:0".parse().unwrap()).await;
    let (runner, ci) = (
        token(&pool, TokenKind::Runner).await,
        token(&pool, TokenKind::Ci).await,
    );
    let url = server.url();
    let spool = tempfile::tempdir().unwrap();
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
    RunResult {
        workload: workload.into(),
        mode: TaskMode::Process,
        nr_task: 1,
        warmup_seconds: 1,
        seconds: 2,
        measurement: MeasurementMode::TcgIcount,
        kernel: None,
        samples: vec![],
        metrics: vec![MetricValue {
            name: "will-it-scale.per_process_ops".into(),
            value: 1234.0,
        }],
        series: vec![],
        unsupported: vec![],
        profile_event: None,
        warnings: vec![],
    }
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
    let server = TestServer::start(pool.clone(), "127.0.0.1:0".parse().unwrap()).await;
    let addr = server.addr();
    let (runner, ci) = (
        token(&pool, TokenKind::Runner).await,
        token(&pool, TokenKind::Ci).await,
    );
    let url = server.url();
    let spool = tempfile::tempdir().unwrap();
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
    let server = TestServer::start(pool.clone(), "127.0.0.1:0".parse().unwrap()).await;
    let (runner, ci) = (
        token(&pool, TokenKind::Runner).await,
        token(&pool, TokenKind::Ci).await,
    );
    let url = server.url();
    let spool = tempfile::tempdir().unwrap();
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
