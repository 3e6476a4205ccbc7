//! The app over a test database, driven in-process through the real router
//! (every layer between HTTP and Postgres is real), with one token of each
//! kind and the client calls tests make over and over: register, claim,
//! a job-scoped call (upload, finish), read a comparison.

use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{Method, Request, StatusCode, header};
use http_body_util::BodyExt;
use patchperf_common::protocol::{
    ATTEMPT_HEADER, BootSlot, ClaimRequest, JobSpec, MACHINE_HEADER, MachineInventory,
    RegisterRequest, RunUpload,
};
use patchperf_common::run::RunResult;
use patchperf_server::domain::tokens::TokenKind;
use patchperf_server::domain::tokens::create as create_token;
use patchperf_server::{AppState, Config};
use serde_json::Value;
use sqlx::PgPool;
use tower::ServiceExt;

/// Test configuration: short claim waits and polls so nothing sleeps long.
pub fn test_config() -> Config {
    Config {
        claim_wait_max: Duration::from_secs(2),
        claim_poll: Duration::from_millis(50),
        // The tests' git remotes and webhooks are on loopback; the one
        // test of the refusal turns this off.
        allow_private_destinations: true,
        ..Config::default()
    }
}

/// The app over a test database, with one token of each kind.
#[derive(Debug)]
pub struct TestApp {
    /// The state the app runs on.
    pub state: AppState,
    /// The application, driven without a socket.
    pub app: Router,
    /// Its database.
    pub pool: PgPool,
    /// A runner token.
    pub runner: String,
    /// A CI token.
    pub ci: String,
    /// An admin token.
    pub admin: String,
}

/// An answer: status, headers, body text, and the body as JSON (Null when
/// empty or not JSON).
#[derive(Debug)]
pub struct Answer {
    /// HTTP status.
    pub status: StatusCode,
    /// Its headers.
    pub headers: axum::http::HeaderMap,
    /// The body as JSON.
    pub json: Value,
    /// The body as text.
    pub body: String,
}

impl Answer {
    /// The `error` message of an error answer.
    pub fn error(&self) -> &str {
        self.json["error"]
            .as_str()
            .unwrap_or_else(|| panic!("no error in {:?}", self))
    }
}

impl TestApp {
    /// The app with [`test_config`].
    pub async fn new(pool: PgPool) -> Self {
        Self::with_config(pool, test_config()).await
    }

    /// The app with `config`.
    pub async fn with_config(pool: PgPool, config: Config) -> Self {
        Self::with_state(AppState::new(pool, config)).await
    }

    /// The app on `state`, with fresh tokens in its database.
    pub async fn with_state(state: AppState) -> Self {
        let pool = state.db.clone();
        let app = patchperf_server::app(state.clone());
        let mut tokens = Vec::new();
        for (kind, name) in [
            (TokenKind::Runner, "lab-runner"),
            (TokenKind::Ci, "kernel-ci"),
            (TokenKind::Admin, "operator"),
        ] {
            let mut conn = pool.acquire().await.unwrap();
            tokens.push(create_token(&mut conn, kind, name).await.unwrap().token);
        }
        let [runner, ci, admin] = tokens.try_into().unwrap();
        TestApp {
            state,
            app,
            pool,
            runner,
            ci,
            admin,
        }
    }

    /// Sends a request with an optional bearer token, extra headers and a
    /// body: JSON unless the headers name another Content-Type.
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        headers: &[(&str, String)],
        body: Option<Body>,
    ) -> Answer {
        let mut req = Request::builder().method(method).uri(path);
        if let Some(token) = token {
            req = req.header(header::AUTHORIZATION, format!("Bearer {token}"));
        }
        for (name, value) in headers {
            req = req.header(*name, value);
        }
        let typed = headers
            .iter()
            .any(|(name, _)| name.eq_ignore_ascii_case("content-type"));
        let req = match body {
            Some(body) if typed => req.body(body),
            Some(body) => req
                .header(header::CONTENT_TYPE, "application/json")
                .body(body),
            None => req.body(Body::empty()),
        }
        .unwrap();
        let resp = self.app.clone().oneshot(req).await.unwrap();
        let status = resp.status();
        let headers = resp.headers().clone();
        let bytes = resp.into_body().collect().await.unwrap().to_bytes();
        let json = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        let body = String::from_utf8_lossy(&bytes).into_owned();
        Answer {
            status,
            headers,
            json,
            body,
        }
    }

    /// POSTs JSON with `token`.
    pub async fn post(&self, path: &str, token: &str, body: Value) -> Answer {
        self.send(
            Method::POST,
            path,
            Some(token),
            &[],
            Some(Body::from(body.to_string())),
        )
        .await
    }

    /// GETs without a token (pages and the read API are public).
    pub async fn get(&self, path: &str) -> Answer {
        self.send(Method::GET, path, None, &[], None).await
    }

    /// Registers machine `name` with `inventory` under `token`; returns its
    /// id.
    pub async fn register_machine(
        &self,
        name: &str,
        token: &str,
        inventory: MachineInventory,
    ) -> i64 {
        let req = RegisterRequest {
            name: name.to_string(),
            inventory,
            protocol_version: patchperf_common::protocol::PROTOCOL_VERSION,
        };
        let a = self
            .post(
                "/api/v1/runner/register",
                token,
                serde_json::to_value(req).unwrap(),
            )
            .await;
        assert_eq!(a.status, StatusCode::OK, "{a:?}");
        a.json["machine_id"].as_i64().unwrap()
    }

    /// Registers machine `name` (the kit's test inventory under that name)
    /// under the runner token; returns its id.
    pub async fn register(&self, name: &str) -> i64 {
        let token = self.runner.clone();
        self.register_machine(name, &token, crate::machine::inventory(name))
            .await
    }

    /// POSTs a comparison submission under the CI token; returns the new
    /// comparison's id.
    pub async fn post_comparison(&self, body: Value) -> i64 {
        let a = self.post("/api/v1/comparisons", &self.ci, body).await;
        assert_eq!(a.status, StatusCode::CREATED, "{a:?}");
        a.json["id"].as_i64().unwrap()
    }

    /// Claims without waiting.
    pub async fn claim(&self, machine_id: i64) -> Option<JobSpec> {
        self.claim_waiting(machine_id, 0).await
    }

    /// Claims, waiting up to `wait_seconds` for a job.
    pub async fn claim_waiting(&self, machine_id: i64, wait_seconds: u32) -> Option<JobSpec> {
        let req = ClaimRequest {
            machine_id,
            wait_seconds,
        };
        let a = self
            .post(
                "/api/v1/jobs/claim",
                &self.runner,
                serde_json::to_value(req).unwrap(),
            )
            .await;
        match a.status {
            StatusCode::OK => Some(serde_json::from_value(a.json).unwrap()),
            StatusCode::NO_CONTENT => None,
            other => panic!("claim answered {other}: {:?}", a.json),
        }
    }

    /// A job-scoped call (`heartbeat`, `state`, `runs`, `finish`) as the
    /// holder of `job`'s lease on `machine_id`.
    pub async fn job_call(
        &self,
        machine_id: i64,
        job: &JobSpec,
        action: &str,
        body: Value,
    ) -> Answer {
        self.job_call_as(
            &self.runner.clone(),
            machine_id,
            job.job_id,
            job.attempt,
            action,
            body,
        )
        .await
    }

    /// A job-scoped call with any token, job and attempt.
    pub async fn job_call_as(
        &self,
        token: &str,
        machine_id: i64,
        job_id: i64,
        attempt: u32,
        action: &str,
        body: Value,
    ) -> Answer {
        let headers = [
            (MACHINE_HEADER, machine_id.to_string()),
            (ATTEMPT_HEADER, attempt.to_string()),
        ];
        self.send(
            Method::POST,
            &format!("/api/v1/jobs/{job_id}/{action}"),
            Some(token),
            &headers,
            Some(Body::from(body.to_string())),
        )
        .await
    }

    /// Uploads `result` as a run of `boot`; it must be stored.
    pub async fn upload(&self, machine_id: i64, job: &JobSpec, boot: BootSlot, result: RunResult) {
        let upload = serde_json::to_value(RunUpload { boot, result }).unwrap();
        let a = self.job_call(machine_id, job, "runs", upload).await;
        assert!(a.status.is_success(), "upload: {a:?}");
    }

    /// Finishes `job` as done; it must be accepted.
    pub async fn finish_done(&self, machine_id: i64, job: &JobSpec) {
        let body = serde_json::json!({ "outcome": "done", "log_tail": "guest powered off" });
        let a = self.job_call(machine_id, job, "finish", body).await;
        assert!(a.status.is_success(), "finish: {a:?}");
    }

    /// Claims every job there is for `machine_id`, uploads for each boot
    /// the next of `base` or `patched` by its side, and finishes the job;
    /// returns how many jobs it ran. Every run must find a boot.
    pub async fn run_jobs_with(
        &self,
        machine_id: i64,
        mut base: Vec<RunResult>,
        mut patched: Vec<RunResult>,
    ) -> usize {
        use patchperf_common::run::Side;
        base.reverse();
        patched.reverse();
        let mut jobs = 0;
        while let Some(job) = self.claim(machine_id).await {
            for boot in &job.boots {
                let run = match boot.side {
                    Side::Base => base.pop(),
                    Side::Patched => patched.pop(),
                };
                let run = run.unwrap_or_else(|| panic!("no run left for boot {boot:?}"));
                self.upload(machine_id, &job, *boot, run).await;
            }
            self.finish_done(machine_id, &job).await;
            jobs += 1;
        }
        assert!(
            base.is_empty() && patched.is_empty(),
            "runs left over: {} base, {} patched",
            base.len(),
            patched.len()
        );
        jobs
    }

    /// Rows in a table.
    pub async fn count(&self, table: &str) -> i64 {
        sqlx::query_scalar(&format!("SELECT count(*) FROM {table}"))
            .fetch_one(&self.pool)
            .await
            .unwrap()
    }

    /// Makes every current lease run out now, as if the runner went silent.
    pub async fn expire_leases(&self) {
        sqlx::query("UPDATE jobs SET lease_expires_at = now() - interval '1 second' WHERE lease_expires_at IS NOT NULL")
            .execute(&self.pool)
            .await
            .unwrap();
    }

    /// The API's view of comparison `id`; it must exist.
    pub async fn comparison(&self, id: i64) -> Value {
        let a = self.get(&format!("/api/v1/comparisons/{id}")).await;
        assert_eq!(a.status, StatusCode::OK, "{a:?}");
        a.json
    }
}
