//! The OpenAPI document stays honest: it is the one the router builds while
//! routing (so every JSON route is in it), every route it describes is
//! served with exactly the methods it names, and real answers validate
//! against the schemas it gives them.

use axum::http::{Method, StatusCode};
use patchperf_common::api::{MAX_RUNS, MIN_RUNS};
use patchperf_common::workload::WORKLOADS;
use serde_json::{Value, json};
use sqlx::PgPool;

use crate::helpers::{TestApp, comparison_request, inventory};

/// Every (method, path template) the document describes.
fn operations(document: &Value) -> Vec<(String, String)> {
    let mut operations = Vec::new();
    for (path, item) in document["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            operations.push((method.clone(), path.clone()));
        }
    }
    operations.sort();
    operations
}

/// Whether `answer` came from the server's fallback for unrouted paths.
fn is_fallback(a: &crate::helpers::Answer) -> bool {
    a.status == StatusCode::NOT_FOUND
        && a.json["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("no such endpoint"))
}

#[sqlx::test(migrations = "../migrations")]
async fn the_document_describes_exactly_the_routes(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let a = app.get("/api/v1/openapi.json").await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.json["openapi"], "3.1.0");

    // The served document is the one the JSON router collected while its
    // routes were registered: a route cannot be added without it.
    let built: Value = serde_json::to_value(patchperf_server::http::api().into_openapi()).unwrap();
    assert_eq!(a.json, built);
    let documented = operations(&a.json);
    assert!(documented.len() >= 17, "{documented:?}");

    for (method, path) in &documented {
        let uri = path.replace("{id}", "1");
        // Every documented operation is served: neither 405 nor the
        // fallback.
        let method: Method = method.to_uppercase().parse().unwrap();
        let a = app.send(method.clone(), &uri, None, &[], None).await;
        assert_ne!(a.status, StatusCode::METHOD_NOT_ALLOWED, "{method} {path}");
        assert!(
            !is_fallback(&a),
            "{method} {path} is documented but not routed"
        );
        // And no method the document leaves out is served on that path.
        for other in [
            Method::GET,
            Method::POST,
            Method::PUT,
            Method::DELETE,
            Method::PATCH,
        ] {
            let named = documented
                .iter()
                .any(|(m, p)| p == path && m.eq_ignore_ascii_case(other.as_str()));
            if !named {
                let a = app.send(other.clone(), &uri, None, &[], None).await;
                assert_eq!(
                    a.status,
                    StatusCode::METHOD_NOT_ALLOWED,
                    "{other} {path} is served but not documented"
                );
            }
        }
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

    // Limits written into the schemas as literals agree with the rules
    // the submission is checked by.
    let request = &a.json["components"]["schemas"]["ComparisonCreateRequest"]["properties"];
    for field in ["runs", "max_runs"] {
        assert_eq!(request[field]["minimum"], json!(MIN_RUNS), "{field}");
        assert_eq!(request[field]["maximum"], json!(MAX_RUNS), "{field}");
    }
    let names: Vec<&str> = WORKLOADS.iter().map(|w| w.name).collect();
    assert_eq!(request["workloads"]["items"]["enum"], json!(names));
    // A request with a flattened `Setup` is described as the one flat
    // object it is sent as: its own words, every field, no other.
    for name in ["ComparisonCreateRequest", "TreeCreateRequest"] {
        let schema = &a.json["components"]["schemas"][name];
        assert_eq!(schema["additionalProperties"], json!(false), "{name}");
        assert!(schema.get("allOf").is_none(), "{name}");
        assert!(
            schema["description"]
                .as_str()
                .is_some_and(|d| d.contains("body, as sent")),
            "{name}: {schema}"
        );
        let required = schema["required"].as_array().unwrap();
        for field in ["params", "runs"] {
            assert!(required.contains(&json!(field)), "{name} {field}");
        }
    }

    // Every authenticated operation names the bearer scheme and the kind of
    // token it needs.
    assert_eq!(
        a.json["components"]["securitySchemes"]["bearer"],
        json!({ "type": "http", "scheme": "bearer" })
    );
    for (method, path) in &documented {
        let op = &a.json["paths"][path][method];
        if let Some(security) = op.get("security") {
            assert_eq!(security, &json!([{ "bearer": [] }]), "{method} {path}");
            let description = op["description"].as_str().unwrap_or_default();
            assert!(
                description.contains("runner token")
                    || description.contains("ci token")
                    || description.contains("admin token"),
                "{method} {path} does not say which token it needs: {description:?}"
            );
        }
    }
    for (method, path) in [
        ("post", "/api/v1/comparisons"),
        ("post", "/api/v1/jobs/claim"),
        ("post", "/api/v1/jobs/{id}/finish"),
        ("get", "/api/v1/tokens"),
    ] {
        assert!(
            a.json["paths"][path][method].get("security").is_some(),
            "{method} {path} must be described as authenticated"
        );
    }
}

/// Checks `instance` against the schema the document gives the `status`
/// answer of `method path`, with its `$ref`s resolved in the document's
/// components.
fn assert_valid(document: &Value, method: &str, path: &str, status: u16, instance: &Value) {
    let mut schema = document["paths"][path][method]["responses"][status.to_string()]["content"]
        ["application/json"]["schema"]
        .clone();
    assert!(
        schema.is_object(),
        "no schema for {status} of {method} {path}"
    );
    schema["components"] = document["components"].clone();
    let validator = jsonschema::validator_for(&schema)
        .unwrap_or_else(|e| panic!("schema of {method} {path} does not compile: {e}"));
    let errors: Vec<String> = validator
        .iter_errors(instance)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{status} of {method} {path} does not match its schema: {errors:#?}\n{instance:#}"
    );
}

#[sqlx::test(migrations = "../migrations")]
async fn real_answers_match_their_schemas(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let document = app.get("/api/v1/openapi.json").await.json;

    let register = json!({ "name": "lab1", "inventory": inventory("lab1") });
    let a = app
        .post("/api/v1/runner/register", &app.runner, register)
        .await;
    assert_eq!(a.status, StatusCode::OK);
    assert_valid(&document, "post", "/api/v1/runner/register", 200, &a.json);
    let machine_id = a.json["machine_id"].as_i64().unwrap();

    let a = app
        .post(
            "/api/v1/comparisons",
            &app.ci,
            comparison_request(3, json!({})),
        )
        .await;
    assert_eq!(a.status, StatusCode::CREATED, "{a:?}");
    assert_valid(&document, "post", "/api/v1/comparisons", 201, &a.json);
    let id = a.json["id"].as_i64().unwrap();

    let claim = json!({ "machine_id": machine_id, "wait_seconds": 0 });
    let a = app.post("/api/v1/jobs/claim", &app.runner, claim).await;
    assert_eq!(a.status, StatusCode::OK);
    assert_valid(&document, "post", "/api/v1/jobs/claim", 200, &a.json);
    let job = serde_json::from_value(a.json).unwrap();
    app.upload_all(machine_id, &job).await;

    // A comparison with runs, a running job and a verdict.
    let view = app.comparison(id).await;
    assert_valid(&document, "get", "/api/v1/comparisons/{id}", 200, &view);
    assert!(!view["jobs"].as_array().unwrap().is_empty());

    let a = app.get("/api/v1/comparisons").await;
    assert_valid(&document, "get", "/api/v1/comparisons", 200, &a.json);
    let a = app.get("/api/v1/machines").await;
    assert_valid(&document, "get", "/api/v1/machines", 200, &a.json);

    let a = app
        .post(
            &format!("/api/v1/comparisons/{id}/cancel"),
            &app.ci,
            json!({}),
        )
        .await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    assert_valid(
        &document,
        "post",
        "/api/v1/comparisons/{id}/cancel",
        200,
        &a.json,
    );

    // Errors answer with the ErrorBody their operations name.
    let a = app.get("/api/v1/comparisons/999999").await;
    assert_eq!(a.status, StatusCode::NOT_FOUND);
    assert_valid(&document, "get", "/api/v1/comparisons/{id}", 404, &a.json);
}
