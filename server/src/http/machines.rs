//! `GET /api/v1/machines`: the registered runner machines and their
//! inventory, so CI can pick one to pin a comparison to.

use axum::extract::State;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::AppState;
use crate::db::{self, machines::MachineRow};
use crate::error::Result;
use crate::http::extract::Json;

/// Routes of this module.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list))
}

/// `GET /api/v1/machines` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct MachineList {
    /// By name: id, name, inventory, when registered and last seen.
    #[schema(value_type = Vec<Object>)]
    pub machines: Vec<MachineRow>,
}

/// Registered machines and their inventory.
#[utoipa::path(
    get,
    path = "/api/v1/machines",
    responses((status = 200, description = "Machines by name.", body = MachineList))
)]
async fn list(State(state): State<AppState>) -> Result<Json<MachineList>> {
    Ok(Json(MachineList {
        machines: db::machines::list(&state.db).await?,
    }))
}
