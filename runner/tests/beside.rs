//! An agent holding several jobs at once (`agent --parallel N` on a
//! tcg-icount machine), against a real server over a fresh Postgres: with
//! two comparisons queued it claims a job of each and runs them side by
//! side, each on its own lease, never two of one comparison (the server
//! hands a comparison's jobs out in order), and the second only once the
//! first has its kernels; every job is finished and both comparisons end.
//! A job whose executor panics fails alone, and the agent goes on with the
//! jobs beside and after it. The executor here records what overlaps; what
//! may run beside what on the host is the kernel pipeline's rule, tested
//! with it (`kernel::pipeline::host`).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use patchperf_common::protocol::{FinishRequest, JobSpec, JobState, RunUpload};
use patchperf_common::run::Side;
use patchperf_runner::agent::beside::Turn;
use patchperf_runner::agent::executor::{JobExecutor, JobReporter};
use patchperf_runner::kernel::pipeline::failure::JobFailure;
use sqlx::PgPool;

use agent_support::{Lab, agent_holding, run_result, submit};

#[path = "agent_support/mod.rs"]
mod agent_support;

/// What ran when, shared by the executors the agent hands out.
#[derive(Debug, Default)]
struct Seen {
    /// The comparisons of the jobs running now.
    running: Vec<i64>,
    /// Every set of comparisons that ran at once, as it began.
    together: Vec<Vec<i64>>,
    /// Each job's start, the end of its preparation and its end.
    spans: Vec<(Instant, Instant, Instant)>,
}

#[derive(Debug, Clone, Default)]
struct Recording {
    seen: Arc<Mutex<Seen>>,
}

impl JobExecutor for Recording {
    fn execute(&mut self, job: &JobSpec, reporter: &mut dyn JobReporter) -> Result<(), JobFailure> {
        {
            let mut seen = self.seen.lock().unwrap();
            seen.running.push(job.comparison_id);
            let now = seen.running.clone();
            seen.together.push(now);
        }
        let started = Instant::now();
        // Its kernels prepared, as the pipeline would, then its boots:
        // long enough for the agent to claim the other comparison's job.
        std::thread::sleep(Duration::from_millis(200));
        let prepared = Instant::now();
        reporter.state(JobState::Booting, "boot 1: base kernel", "");
        std::thread::sleep(Duration::from_millis(700));
        for boot in &job.boots {
            let ops = match boot.side {
                Side::Base => 1000.0,
                Side::Patched => 1100.0,
            } + f64::from(boot.seq);
            reporter
                .upload(RunUpload {
                    boot: *boot,
                    result: run_result("open1", ops),
                })
                .unwrap();
        }
        let mut seen = self.seen.lock().unwrap();
        let at = seen.running.iter().position(|c| *c == job.comparison_id);
        seen.running.remove(at.unwrap());
        seen.spans.push((started, prepared, Instant::now()));
        Ok(())
    }

    fn beside(&self) -> Option<Box<dyn JobExecutor + Send>> {
        Some(Box::new(self.clone()))
    }
}

/// Runs an agent holding two jobs at once with `executor` until the
/// queue is empty; how each job ended, in the order they did.
fn until_idle(
    url: &str,
    runner: &str,
    spool: &std::path::Path,
    executor: &dyn JobExecutor,
) -> Vec<(i64, FinishRequest)> {
    let mut agent = agent_holding(url, runner, spool, 2);
    let mut finishes = Vec::new();
    agent
        .run_beside(executor, |turn| match turn {
            Turn::Ended { job_id, finish } => {
                finishes.push((job_id, finish.clone()));
                false
            }
            // The queue is empty once nothing runs and nothing came.
            Turn::Idle { in_hand } => in_hand == 0,
            Turn::ServerDown(why) => panic!("server down: {why}"),
            Turn::Held(state) => panic!("held: {state}"),
        })
        .unwrap();
    finishes
}

#[sqlx::test(migrations = "../migrations")]
async fn two_comparisons_queued_run_side_by_side_each_job_on_its_own_lease(pool: PgPool) {
    let Lab {
        server,
        url,
        runner,
        ci,
        spool,
    } = Lab::start(&pool).await;
    let spool_dir = spool.path().to_path_buf();

    let (ids, seen, finishes) = tokio::task::spawn_blocking(move || {
        let ids = [submit(&url, &ci), submit(&url, &ci)];
        let executor = Recording::default();
        let finishes = until_idle(&url, &runner, &spool_dir, &executor);
        let seen = Arc::try_unwrap(executor.seen)
            .unwrap()
            .into_inner()
            .unwrap();
        (ids, seen, finishes)
    })
    .await
    .unwrap();

    // Three jobs a comparison (one per ABBA block), all done.
    assert_eq!(finishes.len(), 6, "{finishes:?}");
    assert!(
        finishes
            .iter()
            .all(|(_, f)| matches!(f, FinishRequest::Done { .. })),
        "{finishes:?}"
    );
    assert!(seen.running.is_empty());
    // Both comparisons ran at once, and never two jobs of one.
    assert!(
        seen.together.iter().any(|t| t.len() == 2),
        "{:?}",
        seen.together
    );
    // A job is claimed beside another only once that one's kernels are
    // ready: never two preparations held at once.
    let mut spans = seen.spans.clone();
    spans.sort();
    for (i, a) in spans.iter().enumerate() {
        for b in &spans[i + 1..] {
            let overlap = b.0 < a.2;
            assert!(
                !overlap || b.0 >= a.1,
                "claimed while one prepared: {a:?} {b:?}"
            );
        }
    }
    for t in &seen.together {
        assert!(t.len() <= 2, "at most two jobs held: {t:?}");
        assert!(
            t.len() < 2 || t[0] != t[1],
            "two jobs of one comparison: {t:?}"
        );
    }
    // Each job was held on its own lease by the one machine, and each
    // comparison ended with its runs.
    let claims: Vec<(i64, i64)> = sqlx::query_as(
        "SELECT job_id, count(*) FROM job_events WHERE state = 'claimed' GROUP BY job_id",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    assert_eq!(claims.len(), 6, "{claims:?}");
    assert!(claims.iter().all(|(_, n)| *n == 1), "{claims:?}");
    for id in ids {
        let (status, runs): (String, i64) = sqlx::query_as(
            "SELECT c.status, (SELECT count(*) FROM runs r JOIN jobs j ON j.id = r.job_id
                               WHERE j.comparison_id = c.id)
             FROM comparisons c WHERE c.id = $1",
        )
        .bind(id)
        .fetch_one(&pool)
        .await
        .unwrap();
        assert_eq!((status.as_str(), runs), ("done", 6), "comparison {id}");
    }
    server.stop().await;
}

/// Fails with a panic on every job of comparison `panics`, as a bug
/// meeting an input it never met would; runs the rest as [`Recording`]
/// does.
#[derive(Debug, Clone)]
struct PanicsOnComparison {
    panics: i64,
    done: Recording,
}

impl JobExecutor for PanicsOnComparison {
    fn execute(&mut self, job: &JobSpec, reporter: &mut dyn JobReporter) -> Result<(), JobFailure> {
        if job.comparison_id == self.panics {
            panic!("a parser met what it never met");
        }
        self.done.execute(job, reporter)
    }

    fn beside(&self) -> Option<Box<dyn JobExecutor + Send>> {
        Some(Box::new(self.clone()))
    }
}

#[sqlx::test(migrations = "../migrations")]
async fn a_job_that_panics_fails_alone_and_the_jobs_beside_it_go_on(pool: PgPool) {
    let Lab {
        server,
        url,
        runner,
        ci,
        spool,
    } = Lab::start(&pool).await;
    let spool_dir = spool.path().to_path_buf();

    let (bad, good, finishes) = tokio::task::spawn_blocking(move || {
        let (bad, good) = (submit(&url, &ci), submit(&url, &ci));
        let executor = PanicsOnComparison {
            panics: bad,
            done: Recording::default(),
        };
        let finishes = until_idle(&url, &runner, &spool_dir, &executor);
        (bad, good, finishes)
    })
    .await
    .unwrap();

    let failed: Vec<_> = finishes
        .iter()
        .filter_map(|(_, f)| match f {
            FinishRequest::Failed { detail, .. } => Some(detail.as_str()),
            FinishRequest::Done { .. } => None,
        })
        .collect();
    assert!(!failed.is_empty(), "{finishes:?}");
    assert!(
        failed
            .iter()
            .all(|d| *d == "the runner panicked: a parser met what it never met"),
        "{failed:?}"
    );
    let status = |id: i64| {
        let pool = pool.clone();
        async move {
            sqlx::query_scalar::<_, String>("SELECT status FROM comparisons WHERE id = $1")
                .bind(id)
                .fetch_one(&pool)
                .await
                .unwrap()
        }
    };
    assert_eq!(status(good).await, "done");
    assert_ne!(status(bad).await, "done");
    server.stop().await;
}
