//! Bearer tokens: how they are made, stored (sha256 only) and checked.
//!
//! Handlers say who may call them by taking an extractor:
//! [`RunnerAuth`] for the runner protocol, [`CiAuth`] for submitting and
//! cancelling, [`AdminAuth`] for managing tokens. An admin token passes every
//! check. A missing, malformed, unknown or revoked token answers 401, a token
//! of the wrong kind 403, both before the handler runs, so nothing is written.
//! A public read that shows more to some callers takes [`Reader`].

use std::marker::PhantomData;

use axum::extract::FromRequestParts;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;

pub use crate::domain::tokens::{Caller, TokenKind};
use crate::{AppState, Error};

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
        Caller::of_token(&state.db, token).await
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

/// Marker: reading `/metrics` (Prometheus).
#[derive(Debug)]
pub enum MetricsRole {}
impl Role for MetricsRole {
    const KIND: TokenKind = TokenKind::Metrics;
    const PURPOSE: &'static str = "reading the metrics";
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
/// A metrics (or admin) caller.
pub type MetricsAuth = Authorized<MetricsRole>;

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
