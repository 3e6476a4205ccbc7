//! `GET /healthz`: 200 when the database answers, 503 otherwise; for load
//! balancers and for scripts waiting for a server to come up. It also says
//! how many reports wait for the background builder, so an operator (or a
//! benchmark) can see it keep up, and how many mails wait (for a relay when
//! none is configured, else for a retry), and how each background worker
//! is doing: its last round, its last error, and how many rounds failed or
//! panicked (a worker goes on after both); and what the git mirrors take
//! on disk against their bound.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use patchperf_common::protocol::{OLDEST_PROTOCOL_VERSION, PROTOCOL_VERSION};
use serde_json::{Value, json};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::AppState;

/// Routes of this module.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(healthz))
}

/// 200 once the database answers, with the builder's backlog
/// (`reports_to_build`: comparisons whose report is to be built again) and
/// the outbox's (`mail_queued`; `mail_relay`: whether one is configured),
/// each background worker's health (`workers`, by name; `worker_panics`
/// over all of them), the git mirrors' disk and commands (`git_mirrors`:
/// `mirrors`, `bytes`, `max_bytes`, `evicted`, `dropped`, `running`), and
/// the runner protocol versions it speaks (`oldest_protocol_version` to
/// `protocol_version`).
#[utoipa::path(
    get,
    path = "/healthz",
    responses(
        (status = 200, description = "Healthy: `{\"status\": \"ok\", \"reports_to_build\": N, \"mail_queued\": N, \"mail_relay\": bool, \"workers\": {name: {rounds, running, stuck, last_run_at, last_ok_at, errors, panics, last_error, …}}, \"worker_panics\": N, \"git_mirrors\": {mirrors, bytes, max_bytes, evicted, dropped, running}, \"protocol_version\": N, \"oldest_protocol_version\": N}`."),
        (status = 503, description = "Database unreachable."),
    )
)]
async fn healthz(State(state): State<AppState>) -> (StatusCode, Json<Value>) {
    match state.backlog().await {
        Ok(backlog) => (
            StatusCode::OK,
            Json(json!({
                "status": "ok",
                "reports_to_build": backlog.reports_to_build,
                "mail_queued": backlog.mail_queued,
                "mail_relay": state.config.smtp_url.is_some(),
                "workers": state.workers.snapshot(),
                "worker_panics": state.workers.panics(),
                "git_mirrors": state.git.usage().await,
                // What a runner checks before registering, and a script
                // before an upgrade.
                "protocol_version": PROTOCOL_VERSION,
                "oldest_protocol_version": OLDEST_PROTOCOL_VERSION,
            })),
        ),
        Err(e) => {
            tracing::error!(error = %e, "health check: database unreachable");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                Json(json!({"status": "database unreachable"})),
            )
        }
    }
}
