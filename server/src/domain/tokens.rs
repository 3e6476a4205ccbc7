//! API tokens as the domain sees them: what each kind may do, who a token
//! is, and making one (its text is shown once; only its sha256 is kept).
//! How a request presents one is the HTTP layer's (`http::auth`).

use std::fmt;

use patchperf_common::digest::sha256_hex;
use rand::RngCore;
use serde::{Deserialize, Serialize};
use sqlx::{PgConnection, PgExecutor};
use utoipa::ToSchema;

use crate::{Error, db};

/// What a token may do.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    serde::Serialize,
    serde::Deserialize,
    clap::ValueEnum,
    utoipa::ToSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum TokenKind {
    /// A lab machine's agent: the runner protocol.
    Runner,
    /// A CI system: submit, read and cancel comparisons.
    Ci,
    /// An operator: everything, including token management.
    Admin,
    /// Prometheus: reads `/metrics`, nothing else.
    Metrics,
}

impl TokenKind {
    /// `runner`, `ci`, `admin`, `metrics`, as stored.
    pub fn as_str(self) -> &'static str {
        match self {
            TokenKind::Runner => "runner",
            TokenKind::Ci => "ci",
            TokenKind::Admin => "admin",
            TokenKind::Metrics => "metrics",
        }
    }

    /// Parses [`TokenKind::as_str`]'s output.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "runner" => Some(TokenKind::Runner),
            "ci" => Some(TokenKind::Ci),
            "admin" => Some(TokenKind::Admin),
            "metrics" => Some(TokenKind::Metrics),
            _ => None,
        }
    }
}

impl fmt::Display for TokenKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A new random token: `ppf_<kind>_` and 64 hex digits (256 bits from the
/// operating system's CSPRNG via rand's thread RNG). The kind in the text is
/// for humans reading config files; the server trusts only the database.
pub fn generate(kind: TokenKind) -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    format!("ppf_{}_{}", kind.as_str(), hex(&bytes))
}

fn hex(bytes: &[u8]) -> String {
    use fmt::Write;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// The authenticated caller of a request.
#[derive(Debug, Clone)]
pub struct Caller {
    /// Row id of the token.
    pub token_id: i64,
    /// What the token may do.
    pub kind: TokenKind,
    /// The name given when the token was created.
    pub name: String,
}

impl Caller {
    /// Who `token` is: 401 when it is unknown or revoked. For a token that
    /// comes another way than the `Authorization` header (a page's form).
    pub async fn of_token(db: impl PgExecutor<'_>, token: &str) -> Result<Self, Error> {
        let row = db::tokens::find_by_hash(db, &sha256_hex(token.as_bytes()))
            .await?
            .ok_or_else(|| Error::Unauthorized("unknown token".into()))?;
        if row.revoked {
            return Err(Error::Unauthorized(format!(
                "token `{}` was revoked",
                row.name
            )));
        }
        let kind = TokenKind::parse(&row.kind)
            .ok_or_else(|| Error::Internal(format!("token {} has kind {:?}", row.id, row.kind)))?;
        Ok(Caller {
            token_id: row.id,
            kind,
            name: row.name,
        })
    }
}

/// `POST /api/v1/tokens` answer: the only time the token text is shown.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct TokenCreated {
    /// Row id, for revoking.
    pub id: i64,
    /// The kind.
    pub kind: TokenKind,
    /// The name.
    pub name: String,
    /// The token; store it now, it cannot be shown again.
    pub token: String,
}

/// Creates a token and stores its hash; shared with the CLI.
pub async fn create(
    conn: &mut PgConnection,
    kind: TokenKind,
    name: &str,
) -> Result<TokenCreated, Error> {
    let name = name.trim();
    if name.is_empty() || name.len() > 100 {
        return Err(Error::Invalid(
            "token name must be 1 to 100 characters".into(),
        ));
    }
    let token = generate(kind);
    let id = db::tokens::insert(conn, kind.as_str(), name, &sha256_hex(token.as_bytes())).await?;
    Ok(TokenCreated {
        id,
        kind,
        name: name.to_string(),
        token,
    })
}

/// Every token (its kind, name and dates; never its text), oldest first.
pub async fn list(ctx: &crate::domain::Context) -> Result<Vec<db::tokens::TokenListing>, Error> {
    Ok(db::tokens::list(&ctx.db).await?)
}

/// Revokes token `id`: its callers are refused from now on.
pub async fn revoke(ctx: &crate::domain::Context, id: i64) -> Result<(), Error> {
    let mut conn = ctx.db.acquire().await?;
    if !db::tokens::revoke(&mut conn, id).await? {
        return Err(Error::NotFound(format!("no token {id}")));
    }
    Ok(())
}
