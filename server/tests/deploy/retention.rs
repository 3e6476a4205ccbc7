//! The retention policy (`domain::retention`, `patchperf-server prune`):
//! per-second series, perf-profile values and samples of comparisons
//! finished long enough ago go; their reports, verdicts and text stay as
//! they were, and are never built again from what is left. Comparisons
//! still running, finished too recently, or whose report waits for the
//! builder keep everything.

use std::time::Duration;

use patchperf_server::db::retention::Removed;
use patchperf_server::domain::retention::{self, Pruned};
use sqlx::PgPool;

use crate::lab;

async fn count(pool: &PgPool, sql: &str, id: i64) -> i64 {
    sqlx::query_scalar(sql)
        .bind(id)
        .fetch_one(pool)
        .await
        .unwrap()
}

async fn bulk(pool: &PgPool, id: i64) -> (i64, i64, i64) {
    (
        count(
            pool,
            "SELECT count(*) FROM run_series s JOIN runs r ON r.id = s.run_id WHERE r.comparison_id = $1",
            id,
        )
        .await,
        count(
            pool,
            "SELECT count(*) FROM metric_values WHERE comparison_id = $1 AND name LIKE 'perf-profile.%'",
            id,
        )
        .await,
        count(
            pool,
            "SELECT count(*) FROM runs WHERE comparison_id = $1 AND jsonb_array_length(result->'samples') > 0",
            id,
        )
        .await,
    )
}

/// Makes the comparisons look finished `days` ago.
async fn age(pool: &PgPool, days: i32) {
    sqlx::query("UPDATE comparisons SET finished_at = now() - make_interval(days => $1)")
        .bind(days)
        .execute(pool)
        .await
        .unwrap();
}

#[sqlx::test(migrations = "../migrations")]
async fn pruning_keeps_what_readers_read_and_frees_the_series_and_profiles(pool: PgPool) {
    let (app, ids) = lab::fill(pool.clone()).await;
    // Each comparison: 6 runs, each one series, 3 profile values, samples.
    for &id in &ids {
        assert_eq!(bulk(&pool, id).await, (6, 18, 6));
    }
    // Finished 10 days ago: not older than 30 days, nothing goes.
    age(&pool, 10).await;
    let before = lab::answers(&app, &ids).await;
    let month = Duration::from_secs(30 * 86_400);
    assert_eq!(
        retention::prune(&pool, month).await.unwrap(),
        Pruned::default()
    );

    // One of them waits for the builder (a change came): it keeps all.
    let mut conn = pool.acquire().await.unwrap();
    patchperf_server::db::reports::mark_stale(&mut conn, ids[1])
        .await
        .unwrap();
    drop(conn);
    let week = Duration::from_secs(7 * 86_400);
    let pruned = retention::prune(&pool, week).await.unwrap();
    assert_eq!(
        pruned,
        Pruned {
            comparisons: 1,
            removed: Removed {
                series: 6,
                profile_values: 18,
                runs_sampled: 6
            }
        }
    );
    assert_eq!(bulk(&pool, ids[0]).await, (0, 0, 0));
    assert_eq!(bulk(&pool, ids[1]).await, (6, 18, 6));
    // Once built, it goes on the next pass; a pass after that finds nothing.
    lab::build_reports(&app).await;
    assert_eq!(retention::prune(&pool, week).await.unwrap().comparisons, 1);
    assert_eq!(bulk(&pool, ids[1]).await, (0, 0, 0));
    assert_eq!(
        retention::prune(&pool, week).await.unwrap(),
        Pruned::default()
    );

    // The JSON, the text report and the metrics and profile pages read as
    // before; the report page says what went (its per-second plot is gone).
    // Read through a server started since: one that rendered the page
    // before keeps it in memory as it was, plot and all, until the
    // comparison changes.
    let fresh = patchperf_testkit::TestApp::new(pool.clone()).await;
    let after = lab::answers(&fresh, &ids).await;
    for ((path, _, b1), (_, status, b2)) in before.iter().zip(&after) {
        assert_eq!(*status, 200, "{path}");
        if path.starts_with("/comparisons/") && path.matches('/').count() == 2 {
            assert!(b2.contains("were pruned on"), "{path}");
            assert!(b1.contains("/series.svg"), "{path}");
            assert!(!b2.contains("/series.svg"), "{path}");
        } else if path != "/" && path != "/machines/rack-7" {
            assert!(b1 == b2, "{path} differs after pruning");
        }
    }

    // A change of what the reports are built from (the machine measured
    // its noise floor) builds nothing again from what is left: the stored
    // reports stay, profile and all.
    let aa = lab::run_aa(&app).await;
    // A fresh server, which has nothing in memory.
    let again = patchperf_testkit::TestApp::new(pool.clone()).await;
    lab::build_reports(&again).await;
    let aa_json = again.get(&format!("/api/v1/comparisons/{aa}")).await;
    assert_eq!(aa_json.json["status"], "done", "{}", aa_json.body);
    let rebuilt = lab::answers(&again, &ids).await;
    for ((path, _, b1), (_, _, b2)) in after.iter().zip(&rebuilt) {
        if path.starts_with("/api/") || path.ends_with("/profile") {
            assert!(
                b1 == b2,
                "{path} differs after its machine's noise floor changed"
            );
        }
    }
    let json = &rebuilt
        .iter()
        .find(|(p, ..)| p == &format!("/api/v1/comparisons/{}", ids[0]))
        .unwrap()
        .2;
    assert!(json.contains("perf-profile.children.cycles-pp.do_dup2"));
}

#[sqlx::test(migrations = "../migrations")]
async fn prune_from_the_command_line_says_what_it_removed(pool: PgPool) {
    let (_app, _ids) = lab::fill(pool.clone()).await;
    age(&pool, 100).await;
    let url = patchperf_testkit::database_url(&pool);
    let prune = |args: &'static [&'static str]| {
        let url = url.clone();
        tokio::task::spawn_blocking(move || {
            std::process::Command::new(env!("CARGO_BIN_EXE_patchperf-server"))
                .arg("prune")
                .args(args)
                .env("DATABASE_URL", url)
                .env_remove("PATCHPERF_CONFIG")
                .output()
                .unwrap()
        })
    };
    // 0 days would take everything finished: refused, as a usage error.
    let out = prune(&["--older-than-days", "0"]).await.unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    // A dry run says what a pass would remove, and removes nothing.
    for _ in 0..2 {
        let out = prune(&["--older-than-days", "90", "--dry-run"])
            .await
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            "would prune 2 comparisons finished more than 90 days ago: 12 per-second series, \
             36 perf-profile values, samples of 12 runs"
        );
    }
    let out = prune(&["--older-than-days", "90"]).await.unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        said.trim(),
        "pruned 2 comparisons finished more than 90 days ago: 12 per-second series, \
         36 perf-profile values, samples of 12 runs"
    );
}

#[sqlx::test(migrations = "../migrations")]
async fn serve_with_a_retention_prunes_by_itself(pool: PgPool) {
    let (_app, ids) = lab::fill(pool.clone()).await;
    age(&pool, 100).await;
    // Without a retention, no worker: nothing goes.
    let plain = patchperf_server::domain::Context::new(pool.clone(), Default::default());
    assert!(retention::spawn_pruner(&plain).is_none());
    let ctx = patchperf_server::domain::Context::new(
        pool.clone(),
        patchperf_server::Config {
            prune_after: Some(Duration::from_secs(90 * 86_400)),
            ..Default::default()
        },
    );
    let worker = retention::spawn_pruner(&ctx).expect("a pruner with a retention");
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let mut all = true;
        for &id in &ids {
            all &= retention::pruned(&pool, id).await.unwrap();
        }
        if all {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "not pruned within 60 s"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    for &id in &ids {
        assert_eq!(bulk(&pool, id).await, (0, 0, 0), "comparison {id}");
    }
    ctx.begin_shutdown();
    worker.abort();
}
