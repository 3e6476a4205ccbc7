//! The HTTP client of the runner protocol: one blocking call per endpoint,
//! each answering the protocol's own types (plus plain GET/POST for the CI
//! API that `patchperf-runner submit` uses). Refusals (4xx) come back as
//! [`Error::Server`] with the server's message; anything that may pass on a
//! later try (no connection, timeout, 5xx) is [`Error::is_transient`].
//!
//! Blocking on purpose (ureq, no async runtime): the runner forks workload
//! processes, and a process with runtime threads must not fork.

use std::time::Duration;

use patchperf_common::machine_state::MachineState;
use patchperf_common::protocol::{
    ATTEMPT_HEADER, ClaimRequest, ErrorBody, FinishRequest, HeartbeatResponse, JobSpec,
    MACHINE_HEADER, MACHINE_STATE_HEADER, PROTOCOL_HEADER, PROTOCOL_VERSION, RegisterRequest,
    RegisterResponse, RunUpload, RunUploadResponse, StateUpdate,
};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::Error;

/// Time allowed for an ordinary call.
const CALL_TIMEOUT: Duration = Duration::from_secs(60);
/// Extra time a claim gets beyond the long-poll it asks for.
const CLAIM_SLACK: Duration = Duration::from_secs(30);

/// What a claim came back with.
#[derive(Debug, Clone, PartialEq)]
pub enum ClaimAnswer {
    /// A job, leased to this machine.
    Job(Box<JobSpec>),
    /// No job within the wait.
    Nothing,
    /// An admin holds the machine (drained, paused, retired): no job until
    /// resumed.
    Held(MachineState),
}

impl ClaimAnswer {
    /// The job, if one was claimed.
    pub fn job(self) -> Option<JobSpec> {
        match self {
            ClaimAnswer::Job(job) => Some(*job),
            ClaimAnswer::Nothing | ClaimAnswer::Held(_) => None,
        }
    }
}

/// Which job lease a job-scoped call acts under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Lease {
    /// The job.
    pub job_id: i64,
    /// The machine holding it.
    pub machine_id: i64,
    /// The attempt holding it.
    pub attempt: u32,
}

/// A client of one patchperf server with one runner token. Cheap to clone;
/// clones share connections.
#[derive(Clone)]
pub struct Client {
    base: String,
    token: String,
    http: ureq::Agent,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the token.
        f.debug_struct("Client")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A client of the server at `base` (`http://host:port`).
    pub fn new(base: &str, token: &str) -> Client {
        let http = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(CALL_TIMEOUT))
            .build()
            .into();
        Client {
            base: base.trim_end_matches('/').to_string(),
            token: token.to_string(),
            http,
        }
    }

    /// The server's base URL.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// `POST /api/v1/runner/register`.
    pub fn register(&self, req: &RegisterRequest) -> Result<RegisterResponse, Error> {
        self.post("/api/v1/runner/register", None, req, CALL_TIMEOUT)?
            .ok_or_else(|| unexpected_empty("register"))
    }

    /// `POST /api/v1/jobs/claim`: a job, nothing within the wait, or the
    /// state an admin holds the machine in (the `204`'s
    /// `patchperf-machine-state` header; a state this runner does not know
    /// is nothing, as it was to runners before the header).
    pub fn claim(&self, req: &ClaimRequest) -> Result<ClaimAnswer, Error> {
        let timeout = Duration::from_secs(req.wait_seconds.into()) + CLAIM_SLACK;
        let mut held = None;
        let job = self.post_seeing("/api/v1/jobs/claim", None, req, timeout, |headers| {
            held = headers
                .get(MACHINE_STATE_HEADER)
                .and_then(|v| v.to_str().ok())
                .and_then(MachineState::parse)
                .filter(|s| !s.claims());
        })?;
        Ok(match (job, held) {
            (Some(job), _) => ClaimAnswer::Job(Box::new(job)),
            (None, Some(state)) => ClaimAnswer::Held(state),
            (None, None) => ClaimAnswer::Nothing,
        })
    }

    /// `POST /api/v1/jobs/{id}/heartbeat`.
    pub fn heartbeat(&self, lease: Lease) -> Result<HeartbeatResponse, Error> {
        let path = format!("/api/v1/jobs/{}/heartbeat", lease.job_id);
        self.post(&path, Some(lease), &serde_json::json!({}), CALL_TIMEOUT)?
            .ok_or_else(|| unexpected_empty("heartbeat"))
    }

    /// `POST /api/v1/jobs/{id}/state`.
    pub fn state(&self, lease: Lease, update: &StateUpdate) -> Result<(), Error> {
        let path = format!("/api/v1/jobs/{}/state", lease.job_id);
        self.post::<_, serde_json::Value>(&path, Some(lease), update, CALL_TIMEOUT)
            .map(|_| ())
    }

    /// `POST /api/v1/jobs/{id}/runs`.
    pub fn upload(&self, lease: Lease, upload: &RunUpload) -> Result<RunUploadResponse, Error> {
        let path = format!("/api/v1/jobs/{}/runs", lease.job_id);
        self.post(&path, Some(lease), upload, CALL_TIMEOUT)?
            .ok_or_else(|| unexpected_empty("run upload"))
    }

    /// `POST /api/v1/jobs/{id}/finish`.
    pub fn finish(&self, lease: Lease, req: &FinishRequest) -> Result<(), Error> {
        let path = format!("/api/v1/jobs/{}/finish", lease.job_id);
        self.post::<_, serde_json::Value>(&path, Some(lease), req, CALL_TIMEOUT)
            .map(|_| ())
    }

    /// `GET` of a JSON document (the CI API's comparison view, say).
    pub fn get_json<T: DeserializeOwned>(&self, path: &str) -> Result<T, Error> {
        let text = self.get_text(path)?;
        serde_json::from_str(&text).map_err(|e| Error::Server {
            status: 200,
            message: format!("GET {path}: unreadable answer ({e})"),
        })
    }

    /// `req` with what every call carries: the token, and the protocol
    /// this runner speaks, so that a server replaced since registration
    /// still checks it.
    fn authorized<B>(&self, req: ureq::RequestBuilder<B>) -> ureq::RequestBuilder<B> {
        req.header("authorization", &format!("Bearer {}", self.token))
            .header(PROTOCOL_HEADER, &PROTOCOL_VERSION.to_string())
    }

    /// `GET` of a text document (the report's `report.txt`).
    pub fn get_text(&self, path: &str) -> Result<String, Error> {
        let url = format!("{}{path}", self.base);
        let resp = self
            .authorized(self.http.get(&url))
            .call()
            .map_err(|e| Error::Unreachable(format!("GET {url}: {e}")))?;
        answer_text(resp, &format!("GET {url}"))
    }

    /// `DELETE` (an admin's removal of a list).
    pub fn delete(&self, path: &str) -> Result<(), Error> {
        let url = format!("{}{path}", self.base);
        let resp = self
            .authorized(self.http.delete(&url))
            .call()
            .map_err(|e| Error::Unreachable(format!("DELETE {url}: {e}")))?;
        answer_text(resp, &format!("DELETE {url}")).map(|_| ())
    }

    /// `POST` of `body` as `content_type` (mail handed in to a list); the
    /// JSON answer.
    pub fn post_bytes<T: DeserializeOwned>(
        &self,
        path: &str,
        content_type: &str,
        body: &[u8],
    ) -> Result<T, Error> {
        let url = format!("{}{path}", self.base);
        let resp = self
            .authorized(self.http.post(&url))
            .header("content-type", content_type)
            .send(body)
            .map_err(|e| Error::Unreachable(format!("POST {url}: {e}")))?;
        let text = answer_text(resp, &format!("POST {url}"))?;
        serde_json::from_str(&text).map_err(|e| Error::Server {
            status: 200,
            message: format!("POST {url}: unreadable answer ({e}): {text}"),
        })
    }

    /// `POST` of any JSON body outside the runner protocol (the CI API's
    /// submission); `Ok(None)` for `204 No Content`.
    pub fn post_json<B: Serialize, T: DeserializeOwned>(
        &self,
        path: &str,
        body: &B,
    ) -> Result<Option<T>, Error> {
        self.post(path, None, body, CALL_TIMEOUT)
    }

    /// POSTs `body` as JSON; `Ok(None)` for `204 No Content`.
    fn post<B: Serialize, T: DeserializeOwned>(
        &self,
        path: &str,
        lease: Option<Lease>,
        body: &B,
        timeout: Duration,
    ) -> Result<Option<T>, Error> {
        self.post_seeing(path, lease, body, timeout, |_| {})
    }

    /// [`Client::post`], showing the answer's headers to `headers` first.
    fn post_seeing<B: Serialize, T: DeserializeOwned>(
        &self,
        path: &str,
        lease: Option<Lease>,
        body: &B,
        timeout: Duration,
        headers: impl FnOnce(&ureq::http::HeaderMap),
    ) -> Result<Option<T>, Error> {
        let url = format!("{}{path}", self.base);
        let mut req = self.authorized(self.http.post(&url));
        if let Some(lease) = lease {
            req = req
                .header(MACHINE_HEADER, &lease.machine_id.to_string())
                .header(ATTEMPT_HEADER, &lease.attempt.to_string());
        }
        let resp = req
            .config()
            .timeout_global(Some(timeout))
            .build()
            .send_json(body)
            .map_err(|e| Error::Unreachable(format!("POST {url}: {e}")))?;
        headers(resp.headers());
        let status = resp.status().as_u16();
        if status == 204 {
            return Ok(None);
        }
        let text = answer_text(resp, &format!("POST {url}"))?;
        serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| Error::Server {
                status,
                message: format!("POST {url}: unreadable answer ({e}): {text}"),
            })
    }
}

/// The body of an answer to `what` (`GET http://…`); a status outside
/// 2xx is the server's error, in its own words when it gave them.
fn answer_text(mut resp: ureq::http::Response<ureq::Body>, what: &str) -> Result<String, Error> {
    let status = resp.status().as_u16();
    let text = resp
        .body_mut()
        .read_to_string()
        .map_err(|e| Error::Unreachable(format!("{what}: reading the answer: {e}")))?;
    if !(200..300).contains(&status) {
        let message = serde_json::from_str::<ErrorBody>(&text)
            .map(|b| b.error)
            .unwrap_or(text);
        return Err(Error::Server { status, message });
    }
    Ok(text)
}

/// The error of a call answered `204` where a body was due.
pub(crate) fn unexpected_empty(what: &str) -> Error {
    Error::Server {
        status: 204,
        message: format!("{what}: the server answered without a body"),
    }
}
