//! `GET /healthz`: 200 when the database answers, 503 otherwise; for load
//! balancers and for scripts waiting for a server to come up.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde_json::{Value, json};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::AppState;

/// Routes of this module.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(healthz))
}

/// 200 once the database answers.
#[utoipa::path(
    get,
    path = "/healthz",
    responses(
        (status = 200, description = "Healthy."),
        (status = 503, description = "Database unreachable."),
    )
)]
async fn healthz(State(state): State<AppState>) -> (StatusCode, Json<Value>) {
    match sqlx::query_scalar!("SELECT 1 AS \"one!\"")
        .fetch_one(&state.db)
        .await
    {
        Ok(_) => (StatusCode::OK, Json(json!({"status": "ok"}))),
        Err(e) => {
            tracing::error!(error = %e, "health check: database unreachable");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                Json(json!({"status": "database unreachable"})),
            )
        }
    }
}
