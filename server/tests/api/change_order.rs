//! Change points worst first (issue 41, item 6): the dashboard's open
//! changes and a tree's page list a regression before a change of a metric
//! with no better direction before an improvement, the larger first within
//! each, whichever was found first.

use patchperf_common::api::ChangeVerdict;
use patchperf_server::db;
use patchperf_server::db::changes::NewChange;
use patchperf_server::db::history::HistoryKey;
use sqlx::PgPool;

use crate::bisection_pages::page;
use crate::browser::Chromium;
use crate::tree_pages::{entries, every_entry, tree_with_history};
use crate::trees::Measured;

/// The tree of [`tree_with_history`] with three more change points, and
/// the ids of all four worst first.
async fn four_change_points(pool: PgPool) -> (Measured, Vec<i64>) {
    let m = tree_with_history(pool).await;
    let Measured {
        app,
        id,
        ids,
        machine,
        comparisons,
        ..
    } = &m;
    let (id, machine) = (*id, *machine);
    // The history's own change point: +50%, an improvement, found first.
    let improvement = entries(&page(app, "/").await);
    assert_eq!(improvement.len(), 1);
    // Three more in made-up histories, found in this order: the newest
    // first would be −5%, +8% changed, −20%.
    let mut conn = app.pool.acquire().await.unwrap();
    let mut made = Vec::new();
    for (metric, change, verdict) in [
        ("perf-stat.i.metric-a", -20.0, ChangeVerdict::Regression),
        ("perf-stat.i.metric-b", 8.0, ChangeVerdict::Changed),
        ("perf-stat.i.metric-c", -5.0, ChangeVerdict::Regression),
    ] {
        let key = HistoryKey {
            tree_id: id,
            workload: "open1".into(),
            mode: "process".into(),
            nr_task: 1,
            metric: metric.into(),
            machine_id: machine,
            measurement: "tcg-icount".into(),
        };
        let c = NewChange {
            key: &key,
            position: 3,
            from_position: 2,
            commit_sha: &ids[3],
            mean_before: 100.0,
            mean_after: 100.0 + change,
            change_percent: change,
            interval: Some((change - 1.0, change + 1.0)),
            p: 0.001,
            verdict,
            comparison_id: comparisons[2],
        };
        made.push(db::changes::insert(&mut conn, &c).await.unwrap().unwrap());
    }
    drop(conn);
    let (minus_20, changed, minus_5) = (made[0], made[1], made[2]);
    (m, vec![minus_20, minus_5, changed, improvement[0]])
}

#[sqlx::test(migrations = "../migrations")]
async fn the_dashboard_lists_open_changes_worst_first(pool: PgPool) {
    let (Measured { app, .. }, worst_first) = four_change_points(pool).await;
    assert_eq!(entries(&page(&app, "/").await), worst_first);
    if let Some(chromium) = Chromium::find() {
        let server = serve(&app).await;
        let dom = chromium.dump_dom(&format!("{}/", server.url())).await;
        assert_eq!(entries(&dom), worst_first, "{dom}");
        server.stop().await;
    }
}

#[sqlx::test(migrations = "../migrations")]
async fn a_tree_page_lists_its_change_points_worst_first(pool: PgPool) {
    let (Measured { app, id, .. }, worst_first) = four_change_points(pool).await;
    let tree = format!("/trees/{id}");
    assert_eq!(every_entry(&page(&app, &tree).await), worst_first);
    if let Some(chromium) = Chromium::find() {
        let server = serve(&app).await;
        let dom = chromium.dump_dom(&format!("{}{tree}", server.url())).await;
        assert_eq!(every_entry(&dom), worst_first, "{dom}");
        server.stop().await;
    }
}

/// `app` on a loopback port, for Chromium.
async fn serve(app: &crate::helpers::TestApp) -> patchperf_testkit::TestServer {
    patchperf_testkit::TestServer::serve(app.state.clone(), "127.0.0.1:0".parse().unwrap()).await
}
