//! `serve --private`: every read needs a token of any kind; `/healthz` and
//! the pages' static files and icon stay open, and pages answer 401 as a
//! page.

use axum::http::{Method, StatusCode};
use patchperf_server::Config;
use serde_json::json;
use sqlx::PgPool;

use crate::helpers::{TestApp, test_config};

async fn private_app(pool: PgPool) -> TestApp {
    let config = Config {
        private_reads: true,
        ..test_config()
    };
    TestApp::with_config(pool, config).await
}

#[sqlx::test(migrations = "../migrations")]
async fn with_private_reads_a_comparison_needs_a_token_of_any_kind(pool: PgPool) {
    let app = private_app(pool).await;
    let id = app.submit(3, json!({})).await;
    let reads = [
        format!("/api/v1/comparisons/{id}"),
        format!("/api/v1/comparisons/{id}/report.txt"),
        "/api/v1/comparisons".to_string(),
        "/api/v1/machines".to_string(),
        "/api/v1/openapi.json".to_string(),
    ];
    for path in &reads {
        let a = app.get(path).await;
        assert_eq!(a.status, StatusCode::UNAUTHORIZED, "{path}: {a:?}");
        assert!(a.error().contains("Authorization"), "{path}: {}", a.error());
        let a = app
            .send(Method::GET, path, Some("ppf_ci_not-a-token"), &[], None)
            .await;
        assert_eq!(a.status, StatusCode::UNAUTHORIZED, "{path}: {a:?}");
        for token in [&app.ci, &app.runner, &app.admin] {
            let a = app.send(Method::GET, path, Some(token), &[], None).await;
            assert_eq!(a.status, StatusCode::OK, "{path}: {a:?}");
        }
    }
    assert_eq!(app.get("/healthz").await.status, StatusCode::OK);
}

#[sqlx::test(migrations = "../migrations")]
async fn with_private_reads_pages_answer_401_as_a_page(pool: PgPool) {
    let app = private_app(pool).await;
    let id = app.submit(3, json!({})).await;
    for path in [
        "/".to_string(),
        format!("/comparisons/{id}"),
        "/machines".to_string(),
    ] {
        let a = app.get(&path).await;
        assert_eq!(a.status, StatusCode::UNAUTHORIZED, "{path}: {a:?}");
        assert!(a.body.contains("<html"), "{path}: {}", a.body);
        let a = app.send(Method::GET, &path, Some(&app.ci), &[], None).await;
        assert_eq!(a.status, StatusCode::OK, "{path}: {a:?}");
    }
    assert_eq!(app.get("/static/style.css").await.status, StatusCode::OK);
    // The icon a browser asks for by itself, and the one the pages name.
    for icon in ["/favicon.ico", "/static/favicon.svg"] {
        let a = app.get(icon).await;
        assert_eq!(a.status, StatusCode::OK, "{icon}");
        assert!(a.body.starts_with("<svg"), "{icon}: {}", a.body);
    }
}

#[sqlx::test(migrations = "../migrations")]
async fn without_the_option_reads_stay_public(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let id = app.submit(3, json!({})).await;
    assert_eq!(
        app.get(&format!("/api/v1/comparisons/{id}")).await.status,
        StatusCode::OK
    );
    assert_eq!(
        app.get(&format!("/comparisons/{id}")).await.status,
        StatusCode::OK
    );
}
