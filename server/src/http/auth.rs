//! Bearer tokens: how they are made, stored (sha256 only) and checked.
//!
//! Handlers say who may call them by taking an extractor:
//! [`RunnerAuth`] for the runner protocol, [`CiAuth`] for submitting and
//! cancelling, [`AdminAuth`] for managing tokens. An admin token passes every
//! check. A missing, malformed, unknown or revoked token answers 401, a token
//! of the wrong kind 403, both before the handler runs, so nothing is written.
//! A public read that shows more to some callers takes [`Reader`].

use std::fmt;
use std::marker::PhantomData;

use axum::extract::FromRequestParts;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use patchperf_common::digest::sha256_hex;
use rand::RngCore;

use crate::{AppState, Error, db};

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
}

impl TokenKind {
    /// `runner`, `ci`, `admin`, as stored.
    pub fn as_str(self) -> &'static str {
        match self {
            TokenKind::Runner => "runner",
            TokenKind::Ci => "ci",
            TokenKind::Admin => "admin",
        }
    }

    /// Parses [`TokenKind::as_str`]'s output.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "runner" => Some(TokenKind::Runner),
            "ci" => Some(TokenKind::Ci),
            "admin" => Some(TokenKind::Admin),
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

impl FromRequestParts<AppState> for Caller {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Error> {
        let header = parts.headers.get(AUTHORIZATION).ok_or_else(|| {
            Error::Unauthorized(
                "missing `Authorization: Bearer <token>` header; create a token with \
                 `patchperf-server token create`"
                    .into(),
            )
        })?;
        let token = header.to_str().ok().and_then(bearer_token).ok_or_else(|| {
            Error::Unauthorized("malformed Authorization header: expected `Bearer <token>`".into())
        })?;
        Caller::of_token(state, token).await
    }
}

impl Caller {
    /// Who `token` is: 401 when it is unknown or revoked. For a token that
    /// comes another way than the `Authorization` header (a page's form).
    pub async fn of_token(state: &AppState, token: &str) -> Result<Self, Error> {
        let row = db::tokens::find_by_hash(&state.db, &sha256_hex(token.as_bytes()))
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

/// The token of an `Authorization` value `Bearer <token>`. The scheme is
/// case-insensitive (RFC 9110, section 11.1), so `bearer` and `BEARER` are
/// `Bearer` too; spaces separate it from the token.
fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim_start().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("Bearer") && !token.is_empty()).then_some(token)
}

/// Whoever reads a public route: the caller when a valid token came with
/// the request, else nobody (never a rejection: the route is public).
#[derive(Debug, Clone)]
pub struct Reader(pub Option<Caller>);

impl Reader {
    /// Whether the reader's token may submit (ci) or administer.
    pub fn is_ci_or_admin(&self) -> bool {
        self.0
            .as_ref()
            .is_some_and(|c| matches!(c.kind, TokenKind::Ci | TokenKind::Admin))
    }
}

impl FromRequestParts<AppState> for Reader {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Error> {
        if !parts.headers.contains_key(AUTHORIZATION) {
            return Ok(Reader(None));
        }
        Ok(Reader(Caller::from_request_parts(parts, state).await.ok()))
    }
}

/// A kind of caller an endpoint requires (admins always pass).
pub trait Role {
    /// The token kind required.
    const KIND: TokenKind;
    /// What the role is for, for the 403 message.
    const PURPOSE: &'static str;
}

/// Marker: the runner protocol.
#[derive(Debug)]
pub enum RunnerRole {}
impl Role for RunnerRole {
    const KIND: TokenKind = TokenKind::Runner;
    const PURPOSE: &'static str = "the runner protocol";
}

/// Marker: submitting and cancelling comparisons.
#[derive(Debug)]
pub enum CiRole {}
impl Role for CiRole {
    const KIND: TokenKind = TokenKind::Ci;
    const PURPOSE: &'static str = "submitting and cancelling comparisons";
}

/// Marker: managing tokens.
#[derive(Debug)]
pub enum AdminRole {}
impl Role for AdminRole {
    const KIND: TokenKind = TokenKind::Admin;
    const PURPOSE: &'static str = "administration";
}

/// A caller whose token is of kind `R::KIND` or admin.
#[derive(Debug)]
pub struct Authorized<R: Role> {
    /// Who is calling.
    pub caller: Caller,
    _role: PhantomData<R>,
}

/// A runner (or admin) caller.
pub type RunnerAuth = Authorized<RunnerRole>;
/// A CI (or admin) caller.
pub type CiAuth = Authorized<CiRole>;
/// An admin caller.
pub type AdminAuth = Authorized<AdminRole>;

impl<R: Role> FromRequestParts<AppState> for Authorized<R> {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Error> {
        Self::check(Caller::from_request_parts(parts, state).await?)
    }
}

impl<R: Role> Authorized<R> {
    /// `caller`, when its token is of kind `R::KIND` or admin; else 403.
    pub fn check(caller: Caller) -> Result<Self, Error> {
        if caller.kind != R::KIND && caller.kind != TokenKind::Admin {
            return Err(Error::Forbidden(format!(
                "{} requires a `{}` token; token `{}` is a `{}` token",
                R::PURPOSE,
                R::KIND,
                caller.name,
                caller.kind
            )));
        }
        Ok(Authorized {
            caller,
            _role: PhantomData,
        })
    }
}
