//! The state every handler receives: the domain's [`Context`] and nothing
//! the domain should see. Handlers read the context's parts through it
//! (`state.db`, `state.config`) and pass `&state` wherever a domain function
//! takes a `&Context`.

use std::ops::Deref;

use sqlx::PgPool;

use crate::Config;
use crate::domain::Context;

/// Cloned into every handler; cheap to clone.
#[derive(Debug, Clone)]
pub struct AppState {
    /// What the domain works with.
    pub ctx: Context,
}

impl AppState {
    /// State over an already migrated pool.
    pub fn new(db: PgPool, config: Config) -> Self {
        AppState {
            ctx: Context::new(db, config),
        }
    }
}

impl Deref for AppState {
    type Target = Context;

    fn deref(&self) -> &Context {
        &self.ctx
    }
}
