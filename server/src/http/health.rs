//! `GET /healthz`: 200 when the database answers, 503 otherwise; for load
//! balancers and for scripts waiting for a server to come up. It also says
//! how many reports wait for the background builder, so an operator (or a
//! benchmark) can see it keep up.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde_json::{Value, json};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::{AppState, db};

/// Routes of this module.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(healthz))
}

/// 200 once the database answers, with the builder's backlog
/// (`reports_to_build`: comparisons whose report is to be built again).
#[utoipa::path(
    get,
    path = "/healthz",
    responses(
        (status = 200, description = "Healthy: `{\"status\": \"ok\", \"reports_to_build\": N}`."),
        (status = 503, description = "Database unreachable."),
    )
)]
async fn healthz(State(state): State<AppState>) -> (StatusCode, Json<Value>) {
    match db::reports::stale_count(&state.db).await {
        Ok(n) => (
            StatusCode::OK,
            Json(json!({"status": "ok", "reports_to_build": n})),
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
