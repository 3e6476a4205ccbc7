//! What only the API tests share, over the common test kit: registering the
//! test machine, the open1 submission they vary, and their open1 runs.

use std::ops::Deref;

use patchperf_common::protocol::JobSpec;
use patchperf_common::run::RunResult;
use patchperf_server::{AppState, Config};
use serde_json::{Value, json};
use sqlx::PgPool;

pub use patchperf_testkit::machine::inventory;
pub use patchperf_testkit::mbox::TWO_PATCHES as MBOX;
pub use patchperf_testkit::{Answer, test_config};

/// The kit's app over a fresh database, with the API tests' steps.
#[derive(Debug)]
pub struct TestApp(patchperf_testkit::TestApp);

impl Deref for TestApp {
    type Target = patchperf_testkit::TestApp;

    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl TestApp {
    pub async fn new(pool: PgPool) -> Self {
        TestApp(patchperf_testkit::TestApp::new(pool).await)
    }

    pub async fn with_config(pool: PgPool, config: Config) -> Self {
        TestApp(patchperf_testkit::TestApp::with_config(pool, config).await)
    }

    pub async fn with_state(state: AppState) -> Self {
        TestApp(patchperf_testkit::TestApp::with_state(state).await)
    }

    pub async fn register_with(&self, name: &str, token: &str) -> i64 {
        self.register_machine(name, token, inventory(name)).await
    }

    /// Cancels comparison `id` with the CI token.
    pub async fn cancel(&self, id: i64) -> Answer {
        self.post(
            &format!("/api/v1/comparisons/{id}/cancel"),
            &self.ci,
            json!({}),
        )
        .await
    }

    /// A new token of `kind` named `name`, made by the admin through the
    /// API; returns its text.
    pub async fn create_token(&self, kind: &str, name: &str) -> String {
        let a = self
            .post(
                "/api/v1/tokens",
                &self.admin,
                json!({ "kind": kind, "name": name }),
            )
            .await;
        assert_eq!(a.status, axum::http::StatusCode::CREATED, "{a:?}");
        a.json["token"].as_str().unwrap().to_string()
    }

    /// The id of the token named `name`.
    pub async fn token_id(&self, name: &str) -> i64 {
        sqlx::query_scalar("SELECT id FROM tokens WHERE name = $1")
            .bind(name)
            .fetch_one(&self.pool)
            .await
            .unwrap()
    }

    /// Revokes token `id` with the admin token; it must be revoked.
    pub async fn revoke(&self, id: i64) {
        let a = self
            .post(
                &format!("/api/v1/tokens/{id}/revoke"),
                &self.admin,
                json!({}),
            )
            .await;
        assert_eq!(a.status, axum::http::StatusCode::NO_CONTENT, "{a:?}");
    }

    /// An admin's `action` (`drain`, `pause`, `resume`, `retire`) on
    /// machine `name`, with a note when `note` is not empty.
    pub async fn steer(&self, name: &str, action: &str, note: &str) -> Answer {
        let query = if note.is_empty() {
            String::new()
        } else {
            format!("?note={}", note.replace(' ', "+"))
        };
        self.post(
            &format!("/api/v1/machines/{name}/{action}{query}"),
            &self.admin,
            json!({}),
        )
        .await
    }

    /// A claim without waiting, as a runner of protocol `version` (`None`:
    /// one from before the header) sends it; the answer as it is.
    pub async fn claim_as(&self, machine_id: i64, version: Option<&str>) -> Answer {
        let headers: Vec<(&str, String)> = version
            .map(|v| (patchperf_common::protocol::PROTOCOL_HEADER, v.to_string()))
            .into_iter()
            .collect();
        let body = json!({ "machine_id": machine_id, "wait_seconds": 0 });
        self.send(
            axum::http::Method::POST,
            "/api/v1/jobs/claim",
            Some(&self.runner),
            &headers,
            Some(axum::body::Body::from(body.to_string())),
        )
        .await
    }

    /// Submits a comparison of `runs` a side of open1 with 1 and 2 tasks,
    /// with `extra` fields merged into the request; returns its id.
    pub async fn submit(&self, runs: u32, extra: Value) -> i64 {
        self.post_comparison(comparison_request(runs, extra)).await
    }

    /// Submits the comparison [`TestApp::submit`] would with `extra`
    /// merged in, 3 runs a side; returns the answer, whatever it is.
    pub async fn try_submit(&self, extra: Value) -> Answer {
        self.post(
            "/api/v1/comparisons",
            &self.ci,
            comparison_request(3, extra),
        )
        .await
    }

    /// Uploads a run of every workload and nr_task for every boot of the
    /// job, as a complete job would.
    pub async fn upload_all(&self, machine_id: i64, job: &JobSpec) {
        for boot in &job.boots {
            for workload in &job.workloads {
                for nr_task in [1, 2] {
                    self.upload(machine_id, job, *boot, run_result(workload, nr_task))
                        .await;
                }
            }
        }
    }
}

/// A valid submission with `extra` fields merged in (a `null` removes one).
pub fn comparison_request(runs: u32, extra: Value) -> Value {
    let mut req = json!({
        "base": { "kind": "tarball", "name": "linux-source-6.1" },
        "mbox": MBOX,
        "workloads": ["open1"],
        "params": { "mode": "process", "nr_task": [1, 2], "seconds": 5, "warmup_seconds": 1 },
        "runs": runs,
    });
    if let Value::Object(extra) = extra {
        for (k, v) in extra {
            if v.is_null() {
                req.as_object_mut().unwrap().remove(&k);
            } else {
                req[k] = v;
            }
        }
    }
    req
}

/// A plausible run of `workload` with `nr_task` tasks: two measured seconds.
pub fn run_result(workload: &str, nr_task: u32) -> RunResult {
    let tasks = f64::from(nr_task);
    patchperf_testkit::runs::run_result(
        workload,
        nr_task,
        vec![1000.0 * tasks, 1010.0 * tasks],
        1005.0,
    )
}
