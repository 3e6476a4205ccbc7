//! A list's messages as read at the door. [`Message::read`] runs once per
//! message, when it arrives ([`keep`]); its reading is stored beside the raw
//! bytes, and every later step (assembling the thread, queuing a series,
//! answering it) works from that reading ([`thread`], [`posting`]). A
//! message stored by an older edition of the reader ([`READ_EDITION`]) is
//! read again from its raw bytes the first time its thread is needed, and
//! the new reading stored.

use patchperf_common::mail::series::MAX_THREAD_MESSAGES;
use patchperf_common::mail::{Message, READ_EDITION, Series, assemble};
use sqlx::PgConnection;

use crate::db::list_messages::{NewMessage, StoredMessage};
use crate::domain::Context;
use crate::{Error, db};

/// Most bytes of a thread read at once (as the messages came): a thread
/// of 2000 messages of the largest size taken would be 16 GiB; a real one
/// (a long LKML thread of a 20-patch series and its reviews) is a few MiB.
const MAX_THREAD_BYTES: i64 = 64 << 20;

/// Reads raw message `raw` and stores it with its reading on list
/// `list_id`: `Ok(Ok(new))`, or `Ok(Err(why))` when it is refused. Its
/// thread is its root's, or, when the root given is itself a stored reply,
/// that message's thread.
pub async fn keep(
    conn: &mut PgConnection,
    list_id: i64,
    raw: &[u8],
) -> Result<Result<bool, String>, Error> {
    let message = match Message::read(raw) {
        Ok(m) => m,
        Err(e) => return Ok(Err(e.to_string())),
    };
    let Some(id) = message.id() else {
        return Ok(Err("it has no Message-ID".into()));
    };
    let named = message.thread_root().unwrap_or(id);
    let root = db::list_messages::thread_of(&mut *conn, list_id, named)
        .await?
        .unwrap_or_else(|| named.to_string());
    let parsed = reading(&message)?;
    let new = NewMessage {
        message_id: id,
        thread_root: &root,
        raw,
        parsed: &parsed,
        read_edition: READ_EDITION,
    };
    Ok(Ok(db::list_messages::insert(conn, list_id, &new).await?))
}

fn reading(message: &Message) -> Result<serde_json::Value, Error> {
    serde_json::to_value(message)
        .map_err(|e| Error::Internal(format!("storing a message's reading: {e}")))
}

/// The messages of thread `root`, oldest first, at most
/// [`MAX_THREAD_MESSAGES`] and [`MAX_THREAD_BYTES`]. A message the reader
/// of today no longer takes is left out (it was taken at the door by an
/// older edition).
pub async fn thread(ctx: &Context, list_id: i64, root: &str) -> Result<Vec<Message>, Error> {
    let limit = i64::try_from(MAX_THREAD_MESSAGES).unwrap_or(i64::MAX);
    let stored = db::list_messages::thread(
        &ctx.db,
        list_id,
        root,
        READ_EDITION,
        limit,
        MAX_THREAD_BYTES,
    )
    .await?;
    let mut messages = Vec::with_capacity(stored.len());
    for s in stored {
        if let Some(m) = stored_reading(ctx, s).await? {
            messages.push(m);
        }
    }
    Ok(messages)
}

/// A stored message's reading: the stored one when it is of today's
/// edition, else its raw bytes read again (and that reading stored).
async fn stored_reading(ctx: &Context, s: StoredMessage) -> Result<Option<Message>, Error> {
    if let Some(json) = &s.parsed {
        match serde_json::from_str(json) {
            Ok(m) => return Ok(Some(m)),
            // Only a reading of another shape under the same edition (an
            // edition not raised) gets here; the raw bytes still read.
            Err(e) => tracing::warn!(id = s.id, error = %e, "a stored reading does not read"),
        }
    }
    let raw = match s.raw {
        Some(raw) => raw,
        None => db::list_messages::raw(&ctx.db, s.id).await?,
    };
    let Ok(message) = Message::read(&raw) else {
        return Ok(None);
    };
    db::list_messages::read_again(&ctx.db, s.id, &reading(&message)?, READ_EDITION).await?;
    Ok(Some(message))
}

/// The posting of thread `root` whose answer goes to `anchor` (its cover
/// letter, else its first patch), with the thread's messages its patch
/// references index; `None` when the thread no longer holds it.
pub async fn posting(
    ctx: &Context,
    list_id: i64,
    root: &str,
    anchor: &str,
) -> Result<Option<(Vec<Message>, Series)>, Error> {
    let messages = thread(ctx, list_id, root).await?;
    let found = assemble(&messages)
        .into_iter()
        .find(|s| s.reply_to.message_id == anchor);
    Ok(found.map(|s| (messages, s)))
}
