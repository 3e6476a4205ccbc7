//! `GET /api/v1/machines`: the registered runner machines and their
//! inventory, so CI can pick one to pin a comparison to.

use axum::Router;
use axum::extract::State;
use axum::routing::get;
use serde::Serialize;

use crate::AppState;
use crate::db::{self, machines::MachineRow};
use crate::error::Result;
use crate::extract::Json;

/// Routes of this module.
pub fn router() -> Router<AppState> {
    Router::new().route("/api/v1/machines", get(list))
}

/// `GET /api/v1/machines` answer.
#[derive(Debug, Serialize)]
pub struct MachineList {
    /// By name.
    pub machines: Vec<MachineRow>,
}

async fn list(State(state): State<AppState>) -> Result<Json<MachineList>> {
    Ok(Json(MachineList {
        machines: db::machines::list(&state.db).await?,
    }))
}
