//! The OpenAPI document stays honest: it describes every route, and every
//! route it describes exists.

use axum::http::{Method, StatusCode};
use sqlx::PgPool;

use crate::helpers::TestApp;

/// Every route the server has, as (method, path template). Adding a route
/// without adding it here and to the document fails this test's twin below.
const ROUTES: &[(&str, &str)] = &[
    ("get", "/healthz"),
    ("get", "/api/v1/openapi.json"),
    ("post", "/api/v1/runner/register"),
    ("post", "/api/v1/jobs/claim"),
    ("post", "/api/v1/jobs/{id}/heartbeat"),
    ("post", "/api/v1/jobs/{id}/state"),
    ("post", "/api/v1/jobs/{id}/runs"),
    ("post", "/api/v1/jobs/{id}/finish"),
    ("post", "/api/v1/comparisons"),
    ("get", "/api/v1/comparisons"),
    ("get", "/api/v1/comparisons/{id}"),
    ("get", "/api/v1/comparisons/{id}/report.txt"),
    ("post", "/api/v1/comparisons/{id}/cancel"),
    ("get", "/api/v1/machines"),
    ("get", "/api/v1/tokens"),
    ("post", "/api/v1/tokens"),
    ("post", "/api/v1/tokens/{id}/revoke"),
];

#[sqlx::test(migrations = "../migrations")]
async fn the_document_describes_exactly_the_routes(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let a = app.get("/api/v1/openapi.json").await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.json["openapi"], "3.1.0");
    let mut documented = Vec::new();
    for (path, item) in a.json["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            documented.push((method.clone(), path.clone()));
        }
    }
    documented.sort();
    let mut routes: Vec<(String, String)> = ROUTES
        .iter()
        .map(|(m, p)| (m.to_string(), p.to_string()))
        .collect();
    routes.sort();
    assert_eq!(documented, routes);

    // Every documented route is served: neither the 404 fallback nor 405.
    for (method, path) in &documented {
        let method: Method = method.to_uppercase().parse().unwrap();
        let a = app
            .send(method.clone(), &path.replace("{id}", "1"), None, &[], None)
            .await;
        assert_ne!(a.status, StatusCode::METHOD_NOT_ALLOWED, "{method} {path}");
        let fallback = a.status == StatusCode::NOT_FOUND
            && a.json["error"]
                .as_str()
                .is_some_and(|e| e.starts_with("no such endpoint"));
        assert!(!fallback, "{method} {path} is documented but not routed");
    }

    // Every schema referenced is defined.
    let text = a.json.to_string();
    for reference in text.split("\"#/components/schemas/").skip(1) {
        let name = reference.split('"').next().unwrap();
        assert!(
            a.json["components"]["schemas"].get(name).is_some(),
            "schema {name} is referenced but not defined"
        );
    }
}
