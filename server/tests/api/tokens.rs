//! Who may call what: token kinds, and rejection before anything is written.

use axum::body::Body;
use axum::http::{Method, StatusCode};
use patchperf_common::digest::sha256_hex;
use serde_json::json;
use sqlx::PgPool;

use crate::helpers::{TestApp, comparison_request, inventory};

#[sqlx::test(migrations = "../migrations")]
async fn submitting_without_a_token_is_401_and_stores_nothing(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let body = Body::from(comparison_request(3, json!({})).to_string());
    let a = app
        .send(Method::POST, "/api/v1/comparisons", None, &[], Some(body))
        .await;
    assert_eq!(a.status, StatusCode::UNAUTHORIZED);
    assert!(a.error().contains("Authorization: Bearer"), "{}", a.error());
    assert_eq!(app.count("comparisons").await, 0);
    assert_eq!(app.count("patch_series").await, 0);
}

#[sqlx::test(migrations = "../migrations")]
async fn malformed_unknown_and_revoked_tokens_are_401(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let body = || Some(Body::from(comparison_request(3, json!({})).to_string()));

    let basic = [("authorization", "Basic dXNlcjpwYXNz".to_string())];
    let a = app
        .send(Method::POST, "/api/v1/comparisons", None, &basic, body())
        .await;
    assert_eq!(a.status, StatusCode::UNAUTHORIZED);
    assert!(a.error().contains("malformed"), "{}", a.error());

    let a = app
        .send(
            Method::POST,
            "/api/v1/comparisons",
            Some("ppf_ci_not-a-real-token"),
            &[],
            body(),
        )
        .await;
    assert_eq!(a.status, StatusCode::UNAUTHORIZED);
    assert_eq!(a.error(), "unknown token");

    app.revoke(app.token_id("kernel-ci").await).await;
    let a = app
        .post(
            "/api/v1/comparisons",
            &app.ci,
            comparison_request(3, json!({})),
        )
        .await;
    assert_eq!(a.status, StatusCode::UNAUTHORIZED);
    assert_eq!(a.error(), "token `kernel-ci` was revoked");
    assert_eq!(app.count("comparisons").await, 0);
}

#[sqlx::test(migrations = "../migrations")]
async fn a_runner_token_cannot_submit_and_a_ci_token_cannot_act_as_a_runner(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let a = app
        .post(
            "/api/v1/comparisons",
            &app.runner,
            comparison_request(3, json!({})),
        )
        .await;
    assert_eq!(a.status, StatusCode::FORBIDDEN);
    assert_eq!(
        a.error(),
        "submitting and cancelling comparisons requires a `ci` token; token `lab-runner` is a `runner` token"
    );
    assert_eq!(app.count("comparisons").await, 0);

    let register = json!({ "name": "m1", "inventory": inventory("m1") });
    let a = app.post("/api/v1/runner/register", &app.ci, register).await;
    assert_eq!(a.status, StatusCode::FORBIDDEN);
    assert!(
        a.error().contains("requires a `runner` token"),
        "{}",
        a.error()
    );
    assert_eq!(app.count("machines").await, 0);

    let a = app
        .post(
            "/api/v1/jobs/claim",
            &app.ci,
            json!({"machine_id": 1, "wait_seconds": 0}),
        )
        .await;
    assert_eq!(a.status, StatusCode::FORBIDDEN);

    let a = app
        .send(Method::GET, "/api/v1/tokens", Some(&app.ci), &[], None)
        .await;
    assert_eq!(a.status, StatusCode::FORBIDDEN);
    assert!(
        a.error().contains("requires a `admin` token"),
        "{}",
        a.error()
    );
}

#[sqlx::test(migrations = "../migrations")]
async fn an_admin_token_may_do_everything(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let admin = app.admin.clone();
    let a = app
        .post(
            "/api/v1/comparisons",
            &admin,
            comparison_request(3, json!({})),
        )
        .await;
    assert_eq!(a.status, StatusCode::CREATED, "{a:?}");
    let machine = app.register_with("m1", &admin).await;
    let a = app
        .post(
            "/api/v1/jobs/claim",
            &admin,
            json!({"machine_id": machine, "wait_seconds": 0}),
        )
        .await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    let a = app
        .send(Method::GET, "/api/v1/tokens", Some(&admin), &[], None)
        .await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.json["tokens"].as_array().unwrap().len(), 3);
}

#[sqlx::test(migrations = "../migrations")]
async fn only_the_sha256_of_a_token_is_stored(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let a = app
        .post(
            "/api/v1/tokens",
            &app.admin,
            json!({"kind": "runner", "name": "rack-7"}),
        )
        .await;
    assert_eq!(a.status, StatusCode::CREATED, "{a:?}");
    let token = a.json["token"].as_str().unwrap().to_string();
    assert!(token.starts_with("ppf_runner_") && token.len() == "ppf_runner_".len() + 64);
    let stored: String = sqlx::query_scalar("SELECT sha256 FROM tokens WHERE name = 'rack-7'")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(stored, sha256_hex(token.as_bytes()));
    let leaked: i64 =
        sqlx::query_scalar("SELECT count(*) FROM tokens WHERE sha256 = $1 OR name = $1")
            .bind(&token)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(leaked, 0);
    // And the new token works for its kind.
    let m = app.register_with("rack-7", &token).await;
    assert!(m > 0);
}

#[sqlx::test(migrations = "../migrations")]
async fn the_bearer_scheme_is_case_insensitive(pool: PgPool) {
    let app = TestApp::new(pool).await;
    // RFC 9110 §11.1: the scheme is case-insensitive; any spaces may follow it.
    for scheme in ["bearer", "BEARER", "bEaReR"] {
        let header = [("authorization", format!("{scheme}  {}", app.admin))];
        let a = app
            .send(Method::GET, "/api/v1/tokens", None, &header, None)
            .await;
        assert_eq!(a.status, StatusCode::OK, "{scheme}: {a:?}");
    }
    let glued = [("authorization", format!("Bearer{}", app.admin))];
    let a = app
        .send(Method::GET, "/api/v1/tokens", None, &glued, None)
        .await;
    assert_eq!(a.status, StatusCode::UNAUTHORIZED);
    assert!(a.error().contains("malformed"), "{}", a.error());
}
