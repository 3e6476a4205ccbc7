//! A list's pages as a person reads them in headless Chromium, after the
//! server's configuration changed under what they show.

use patchperf_server::domain::lists;
use patchperf_server::{AppState, Config};
use patchperf_testkit::{TestServer, free_port};
use serde_json::json;
use sqlx::PgPool;

use crate::bisection_pages::text;
use crate::bisections::Lab;
use crate::browser::Chromium;
use crate::git_repo::linear;
use crate::helpers::TestApp;
use crate::lists::{by_subject, config, follow, post, series, series_of};

/// A series measured while the server had no `--public-url` was not
/// answered, and its pages said why; once the server has one, they no
/// longer say that it has none.
#[sqlx::test(migrations = "../migrations")]
async fn a_series_not_answered_for_want_of_a_public_url_does_not_say_so_once_there_is_one(
    pool: PgPool,
) {
    let Some(chromium) = Chromium::find() else {
        eprintln!("skipping: /usr/bin/chromium is not installed (apt-get install chromium)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let linked = config(dir.path(), free_port());
    let unlinked = Config {
        public_url: None,
        ..linked.clone()
    };
    let app = TestApp::with_config(pool.clone(), unlinked).await;
    let (repo, ids) = linear(0);
    let machine = app.register("lab-1").await;
    let only_open1 = json!({"workload_map": [{"paths": ["fs/**"], "workloads": ["open1"]}]});
    let list = follow(&app, repo.path().to_str().unwrap(), only_open1).await;
    post(&app, list, &series("s", 1, &["fs/open.c"])).await;
    let lab = Lab {
        culprit: Some(1),
        broken: Vec::new(),
        ids,
    };
    lab.drain(&app, machine).await;
    lists::round(&app.state).await.unwrap();
    let all = series_of(&app, list).await;
    let v1 = by_subject(&all, "[PATCH 0/1] fs: faster s");
    assert_eq!(v1["state"], "measured", "{v1:#}");
    assert!(
        v1["reason"].as_str().unwrap().contains("no --public-url"),
        "{v1:#}"
    );
    let id = v1["id"].as_i64().unwrap();

    // The server restarted with the URL set.
    let server =
        TestServer::serve(AppState::new(pool, linked), "127.0.0.1:0".parse().unwrap()).await;
    for page in [format!("/lists/{list}"), format!("/series/{id}")] {
        let said = text(&chromium.dump_dom(&format!("{}{page}", server.url())).await);
        assert!(
            said.contains(
                "measured: not answered: it was measured while the server had no --public-url \
                 to link to"
            ),
            "{page}: {said}"
        );
        assert!(
            !said.contains("the server has no --public-url"),
            "{page}: {said}"
        );
    }
    server.stop().await;
}
