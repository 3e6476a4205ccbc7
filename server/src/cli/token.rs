//! Arguments of `patchperf-server token create|list|revoke`.

use clap::{Args, Subcommand};

use super::DatabaseArgs;
use crate::domain::tokens::TokenKind;

/// Arguments of `token`.
#[derive(Debug, Args)]
pub struct TokenArgs {
    /// Database location.
    #[command(flatten)]
    pub db: DatabaseArgs,
    /// What to do with tokens.
    #[command(subcommand)]
    pub action: TokenAction,
}

/// `token` subcommands.
#[derive(Debug, Subcommand)]
pub enum TokenAction {
    /// Create a token and print it (only its hash is stored: this is the
    /// only time it is shown).
    Create {
        /// runner (lab machines), ci (submitting), admin (everything),
        /// metrics (Prometheus: reads /metrics only).
        #[arg(long, value_enum)]
        kind: TokenKind,
        /// Who or what will use it: a label for `token list` (formerly
        /// `--name`, which still works).
        #[arg(long = "label", alias = "name", value_name = "LABEL")]
        name: String,
    },
    /// List tokens (never their text).
    List,
    /// Revoke a token by id.
    Revoke {
        /// Token id from `token list`.
        id: i64,
    },
}
