//! A list message is read once, at the door: its reading is stored with
//! it, and assembling its thread, queuing its series and answering it work
//! from that reading, never from the raw bytes again. A message stored by
//! an older reader (before the reading was stored, or by a reader edition
//! since raised) is read again from its raw bytes once, and its new
//! reading stored.

use axum::http::StatusCode;
use patchperf_common::mail::READ_EDITION;
use patchperf_server::domain::lists;
use serde_json::json;
use sqlx::PgPool;

use crate::lists::{by_subject, hand_in, list_lab, message, patch, series_of};

async fn edition_of(pool: &PgPool, id: &str) -> (i16, bool) {
    sqlx::query_as(
        "SELECT read_edition, parsed IS NOT NULL FROM list_messages WHERE message_id = $1",
    )
    .bind(id)
    .fetch_one(pool)
    .await
    .unwrap()
}

#[sqlx::test(migrations = "../migrations")]
async fn a_message_is_read_once_at_the_door_and_older_readings_are_read_again(pool: PgPool) {
    let lab = list_lab(pool.clone(), false, json!({})).await;
    let (app, list) = (&lab.app, lab.list);
    let once = message(
        "once@example.org",
        "[PATCH] fs: read once",
        None,
        &patch("fs/open.c", "int once;"),
    );
    let a = hand_in(app, list, "message/rfc822", &once).await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    assert_eq!(
        edition_of(&pool, "once@example.org").await,
        (READ_EDITION, true),
        "the reading is stored at the door"
    );
    // The raw bytes no longer read as this message (nor as any with a
    // Message-ID): a series still assembled from it was assembled from
    // the stored reading.
    sqlx::query("UPDATE list_messages SET raw = 'not a message' WHERE message_id = $1")
        .bind("once@example.org")
        .execute(&pool)
        .await
        .unwrap();

    // A message as a server before the stored reading kept it: raw only.
    let older = message(
        "older@example.org",
        "[PATCH] fs: stored before",
        None,
        &patch("fs/namei.c", "int older;"),
    );
    let a = hand_in(app, list, "message/rfc822", &older).await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    sqlx::query("UPDATE list_messages SET parsed = NULL, read_edition = 0 WHERE message_id = $1")
        .bind("older@example.org")
        .execute(&pool)
        .await
        .unwrap();

    lists::round(&app.state).await.unwrap();
    let all = series_of(app, list).await;
    for subject in ["[PATCH] fs: read once", "[PATCH] fs: stored before"] {
        let s = by_subject(&all, subject);
        assert_eq!(s["state"], "queued", "{s:#}");
        assert!(s["comparison_id"].is_i64(), "{s:#}");
    }
    assert_eq!(
        edition_of(&pool, "older@example.org").await,
        (READ_EDITION, true),
        "the older message was read again and its reading stored"
    );
}
