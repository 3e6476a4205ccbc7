//! Change points as people handle them: listing them, and marking one
//! acknowledged (seen, being handled) or expected (meant; not a regression
//! to chase) with a note, by an admin, from the API or the dashboard's
//! form. Finding them is the tracked tree's (`domain::tree::change_points`).

use patchperf_common::api::ChangeState;

/// The change points this view lists and how a page filters them.
pub use crate::db::changes::{ChangeFilter, ChangeRow};
use crate::domain::Context;
use crate::domain::tokens::{Caller, TokenKind};
use crate::{Error, db};

/// Longest note, in characters.
pub const MAX_NOTE_CHARS: usize = 2000;

/// Change points `filter` asks for, newest first.
pub async fn list(ctx: &Context, filter: ChangeFilter) -> Result<Vec<ChangeRow>, Error> {
    Ok(db::changes::list(&ctx.db, filter).await?)
}

/// The open change points of each tree that has any: (tree id, count).
pub async fn open_counts(ctx: &Context) -> Result<Vec<(i64, i64)>, Error> {
    Ok(db::changes::open_counts(&ctx.db).await?)
}

/// Marks change point `id` as `state` (spelled as asked) with `note`, for
/// `by`, who must be an admin; the state it is in now.
pub async fn acknowledge(
    ctx: &Context,
    by: &Caller,
    id: i64,
    state: &str,
    note: &str,
) -> Result<ChangeState, Error> {
    if by.kind != TokenKind::Admin {
        return Err(Error::Forbidden(format!(
            "marking a change point requires a `admin` token; token `{}` is a `{}` token",
            by.name, by.kind
        )));
    }
    let marked = match ChangeState::parse(state) {
        Some(s @ (ChangeState::Acknowledged | ChangeState::Expected)) => s,
        _ => {
            return Err(Error::Invalid(format!(
                "state {state:?} must be acknowledged or expected"
            )));
        }
    };
    if note.chars().count() > MAX_NOTE_CHARS {
        return Err(Error::Invalid(format!(
            "note is longer than {MAX_NOTE_CHARS} characters"
        )));
    }
    let mut conn = ctx.db.acquire().await?;
    if !db::changes::acknowledge(&mut conn, id, marked, note, by.token_id).await? {
        return Err(Error::NotFound(format!("no change point {id}")));
    }
    tracing::info!(change = id, state = marked.as_str(), by = %by.name, "change point marked");
    Ok(marked)
}
