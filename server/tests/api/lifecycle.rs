//! The rules of `lifecycle`, the one owner of job states, called directly:
//! what a cancel touches and what it leaves, which failures end the whole
//! comparison, and that every change leaves its event.

use patchperf_common::comparison::ComparisonStatus;
use patchperf_common::protocol::{FailureReason, JobState};
use patchperf_server::domain::jobs::lifecycle;
use patchperf_server::{Error, db};
use serde_json::json;
use sqlx::PgPool;

use crate::helpers::TestApp;

/// The state and failure reason of each job of a comparison, in order.
async fn jobs(pool: &PgPool, id: i64) -> Vec<(JobState, Option<FailureReason>)> {
    db::jobs::for_comparison(pool, id)
        .await
        .unwrap()
        .into_iter()
        .map(|j| (j.state, j.failure_reason))
        .collect()
}

async fn status(pool: &PgPool, id: i64) -> ComparisonStatus {
    db::comparisons::find(pool, id)
        .await
        .unwrap()
        .unwrap()
        .status
}

#[sqlx::test(migrations = "../migrations")]
async fn cancel_leaves_done_jobs_done_and_held_jobs_held(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let machine = app.register("m1").await;
    let id = app.submit(3, json!({})).await;
    let first = app.claim(machine).await.unwrap();
    app.upload_all(machine, &first).await;
    let done = app
        .job_call(machine, &first, "finish", json!({"outcome": "done"}))
        .await;
    assert!(done.status.is_success(), "{done:?}");
    let held = app.claim(machine).await.unwrap();

    let mut tx = app.pool.begin().await.unwrap();
    lifecycle::cancel(&mut tx, id, "ci-bot").await.unwrap();
    tx.commit().await.unwrap();

    assert_eq!(status(&app.pool, id).await, ComparisonStatus::Cancelled);
    assert_eq!(
        jobs(&app.pool, id).await,
        [
            (JobState::Done, None),
            (JobState::Claimed, None),
            (JobState::Failed, Some(FailureReason::Cancelled)),
        ]
    );
    let queued = db::jobs::for_comparison(&app.pool, id).await.unwrap()[2].id;
    let last = db::events::for_job(&app.pool, queued).await.unwrap();
    assert_eq!(last.len(), 1, "{last:?}");
    assert_eq!(last[0].state, JobState::Failed);
    assert_eq!(last[0].message, "comparison cancelled by `ci-bot`");
    // The held job learns of it by heartbeat; its lease is untouched.
    let hb = app.job_call(machine, &held, "heartbeat", json!({})).await;
    assert_eq!(hb.json["cancelled"], true, "{hb:?}");

    let mut tx = app.pool.begin().await.unwrap();
    let again = lifecycle::cancel(&mut tx, id, "ci-bot").await;
    assert!(
        matches!(&again, Err(Error::WrongState(m)) if m == &format!("comparison {id} is already cancelled")),
        "{again:?}"
    );
}

#[sqlx::test(migrations = "../migrations")]
async fn a_failure_every_job_would_repeat_fails_the_rest(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let machine = app.register("m1").await;
    for &reason in FailureReason::ALL {
        let id = app.submit(3, json!({})).await;
        let spec = app.claim(machine).await.unwrap();
        assert_eq!(spec.comparison_id, id);

        let mut tx = app.pool.begin().await.unwrap();
        let job = db::jobs::lock(&mut tx, spec.job_id).await.unwrap().unwrap();
        lifecycle::finish_failed(&mut tx, &job, reason, "it broke", "")
            .await
            .unwrap();
        tx.commit().await.unwrap();

        let got = jobs(&app.pool, id).await;
        if lifecycle::fails_the_comparison(reason) {
            assert_eq!(
                got,
                [(JobState::Failed, Some(reason)); 3],
                "{reason:?} fails the comparison"
            );
            assert_eq!(status(&app.pool, id).await, ComparisonStatus::Failed);
            let rest = db::jobs::for_comparison(&app.pool, id).await.unwrap();
            for j in &rest[1..] {
                let events = db::events::for_job(&app.pool, j.id).await.unwrap();
                assert_eq!(events.len(), 1, "{events:?}");
                assert_eq!(
                    events[0].message,
                    format!("not run: job 0 failed: {}: it broke", reason.as_str())
                );
            }
        } else {
            assert_eq!(
                got,
                [
                    (JobState::Failed, Some(reason)),
                    (JobState::Queued, None),
                    (JobState::Queued, None),
                ],
                "{reason:?} may be chance: the comparison goes on"
            );
            assert_eq!(status(&app.pool, id).await, ComparisonStatus::Running);
            // Leave the machine free for the next comparison.
            let mut tx = app.pool.begin().await.unwrap();
            lifecycle::cancel(&mut tx, id, "test").await.unwrap();
            tx.commit().await.unwrap();
        }
    }
}

#[sqlx::test(migrations = "../migrations")]
async fn claim_and_progress_each_leave_an_event(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let machine = app.register("m1").await;
    app.submit(3, json!({})).await;
    let spec = app.claim(machine).await.unwrap();

    let mut tx = app.pool.begin().await.unwrap();
    let job = db::jobs::lock(&mut tx, spec.job_id).await.unwrap().unwrap();
    assert_eq!(job.state, JobState::Claimed);
    lifecycle::progress(&mut tx, &job, JobState::Building, "building base", "CC")
        .await
        .unwrap();
    tx.commit().await.unwrap();

    let events = db::events::for_job(&app.pool, spec.job_id).await.unwrap();
    let states: Vec<JobState> = events.iter().map(|e| e.state).collect();
    assert_eq!(states, [JobState::Claimed, JobState::Building]);
    assert_eq!(events[0].message, "claimed by m1");
    assert_eq!(events[1].machine_id, Some(machine));
}

#[sqlx::test(migrations = "../migrations")]
async fn runs_into_a_cancelled_comparison_are_refused(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let machine = app.register("m1").await;
    let id = app.submit(3, json!({})).await;
    let job = app.claim(machine).await.unwrap();
    let a = app.cancel(id).await;
    assert_eq!(a.status, axum::http::StatusCode::OK, "{a:?}");

    let upload = json!({ "boot": job.boots[0], "result": crate::helpers::run_result("open1", 1) });
    let a = app.job_call(machine, &job, "runs", upload).await;
    assert_eq!(a.status, axum::http::StatusCode::CONFLICT, "{a:?}");
    assert_eq!(
        a.error(),
        format!(
            "comparison {id} was cancelled; its runs are no longer wanted: finish job {} as \
             failed (cancelled)",
            job.job_id
        )
    );
    assert_eq!(app.count("runs").await, 0);
    assert_eq!(app.count("metric_values").await, 0);
}

#[sqlx::test(migrations = "../migrations")]
async fn a_huge_log_tail_is_stored_cut_to_its_end(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let machine = app.register("m1").await;
    app.submit(3, json!({})).await;
    let job = app.claim(machine).await.unwrap();
    // 1 MiB of two-byte characters and an odd-length end, so that keeping
    // the last 64 KiB by bytes alone would split a character.
    let log = format!("{}END OF LOG!", "ü".repeat(512 * 1024));
    let job_tail = || async {
        let tail: String = sqlx::query_scalar("SELECT log_tail FROM jobs WHERE id = $1")
            .bind(job.job_id)
            .fetch_one(&app.pool)
            .await
            .unwrap();
        tail
    };
    let event_tail = || async {
        let tail: String = sqlx::query_scalar(
            "SELECT log_tail FROM job_events WHERE job_id = $1 ORDER BY id DESC LIMIT 1",
        )
        .bind(job.job_id)
        .fetch_one(&app.pool)
        .await
        .unwrap();
        tail
    };
    let check = |tail: String| {
        assert!(tail.len() <= 64 * 1024 + 100, "{} bytes stored", tail.len());
        assert!(tail.len() >= 60 * 1024, "{} bytes stored", tail.len());
        assert!(tail.starts_with("[log cut:"), "{}", &tail[..40]);
        assert!(tail.ends_with("üüEND OF LOG!"));
    };

    let update = json!({"state": "building", "message": "make", "log_tail": log});
    let a = app.job_call(machine, &job, "state", update).await;
    assert_eq!(a.status, axum::http::StatusCode::NO_CONTENT, "{a:?}");
    check(job_tail().await);
    check(event_tail().await);

    let finish =
        json!({"outcome": "failed", "reason": "build-failed", "detail": "make", "log_tail": log});
    let a = app.job_call(machine, &job, "finish", finish).await;
    assert_eq!(a.status, axum::http::StatusCode::OK, "{a:?}");
    check(job_tail().await);
    check(event_tail().await);
}
