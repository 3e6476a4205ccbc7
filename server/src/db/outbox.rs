//! `outbox`: mails and webhook calls waiting to be sent, one row per
//! (what is reported, channel, recipient). See `domain::outbox::notify` for what is
//! queued and `domain::outbox::deliver` for how rows are sent.

use std::time::Duration;

use sqlx::{PgConnection, PgExecutor};

/// How a row reaches its recipient.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channel {
    /// A mail through the SMTP relay.
    Mail,
    /// A JSON `POST` to a URL.
    Webhook,
}

impl Channel {
    /// The name stored in `outbox.channel`.
    pub fn as_str(self) -> &'static str {
        match self {
            Channel::Mail => "mail",
            Channel::Webhook => "webhook",
        }
    }
}

/// A row to queue.
#[derive(Debug, Clone)]
pub struct NewMessage<'a> {
    /// What is reported (`change:<comparison id>`).
    pub key: &'a str,
    /// Mail or webhook.
    pub channel: Channel,
    /// The address or URL.
    pub recipient: &'a str,
    /// The subject (a webhook's too, for the operator).
    pub subject: &'a str,
    /// The mail's text or the webhook's JSON.
    pub body: &'a str,
    /// A mail's To header.
    pub mail_to: Option<&'a str>,
    /// A mail's Cc header.
    pub mail_cc: Option<&'a str>,
    /// A reply's `In-Reply-To:` id (without `<>`).
    pub in_reply_to: Option<&'a str>,
    /// A reply's `References:` ids, space separated (without `<>`).
    pub references: Option<&'a str>,
}

/// Queues a message unless this (key, channel, recipient) was queued
/// before, whatever became of it; whether it was new.
pub async fn queue(conn: &mut PgConnection, m: &NewMessage<'_>) -> Result<bool, sqlx::Error> {
    let id = sqlx::query_scalar!(
        "INSERT INTO outbox (key, channel, recipient, subject, body, mail_to, mail_cc,
                             in_reply_to, refs)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
         ON CONFLICT (key, channel, recipient) DO NOTHING
         RETURNING id",
        m.key,
        m.channel.as_str(),
        m.recipient,
        m.subject,
        m.body,
        m.mail_to,
        m.mail_cc,
        m.in_reply_to,
        m.references
    )
    .fetch_optional(conn)
    .await?;
    Ok(id.is_some())
}

/// A queued row, as the sender needs it.
#[derive(Debug, Clone)]
pub struct Due {
    /// Row id.
    pub id: i64,
    /// What is reported.
    pub key: String,
    /// `mail` or `webhook`.
    pub channel: String,
    /// The address or URL.
    pub recipient: String,
    /// The subject.
    pub subject: String,
    /// The text or JSON.
    pub body: String,
    /// A mail's To header.
    pub mail_to: Option<String>,
    /// A mail's Cc header.
    pub mail_cc: Option<String>,
    /// A reply's `In-Reply-To:` id.
    pub in_reply_to: Option<String>,
    /// A reply's `References:` ids, space separated.
    pub refs: Option<String>,
    /// Attempts before this one.
    pub attempts: i32,
}

/// Takes the first queued row after id `after` whose time has come, locked
/// for the rest of the transaction; rows other transactions hold are
/// skipped, so several servers send side by side. Mail is taken only with
/// `mail` (a relay is configured).
pub async fn take_due(
    conn: &mut PgConnection,
    mail: bool,
    after: i64,
) -> Result<Option<Due>, sqlx::Error> {
    sqlx::query_as!(
        Due,
        "SELECT id, key, channel, recipient, subject, body, mail_to, mail_cc, in_reply_to, refs,
                attempts
         FROM outbox
         WHERE state = 'queued' AND next_attempt_at <= now() AND (channel <> 'mail' OR $1)
           AND id > $2
         ORDER BY id
         LIMIT 1
         FOR UPDATE SKIP LOCKED",
        mail,
        after
    )
    .fetch_optional(conn)
    .await
}

/// Marks a row sent.
pub async fn sent(conn: &mut PgConnection, id: i64) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE outbox SET state = 'sent', attempts = attempts + 1, last_error = NULL,
                sent_at = now()
         WHERE id = $1",
        id
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Records a failed attempt: tried again after `retry_in`, or failed for
/// good when `retry_in` is `None`.
pub async fn attempt_failed(
    conn: &mut PgConnection,
    id: i64,
    error: &str,
    retry_in: Option<Duration>,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE outbox SET attempts = attempts + 1, last_error = $2,
                state = CASE WHEN $3::float8 IS NULL THEN 'failed' ELSE 'queued' END,
                next_attempt_at = now() + make_interval(secs => COALESCE($3, 0))
         WHERE id = $1",
        id,
        error,
        retry_in.map(|d| d.as_secs_f64())
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// A row as tests and operators look at it.
#[derive(Debug, Clone)]
pub struct OutboxRow {
    /// Row id.
    pub id: i64,
    /// What is reported.
    pub key: String,
    /// `mail` or `webhook`.
    pub channel: String,
    /// The address or URL.
    pub recipient: String,
    /// `queued`, `sent` or `failed`.
    pub state: String,
    /// Attempts so far.
    pub attempts: i32,
    /// The last attempt's error.
    pub last_error: Option<String>,
}

/// Every row about `key`, in the order they were queued.
pub async fn of_key(db: impl PgExecutor<'_>, key: &str) -> Result<Vec<OutboxRow>, sqlx::Error> {
    sqlx::query_as!(
        OutboxRow,
        "SELECT id, key, channel, recipient, state, attempts, last_error
         FROM outbox WHERE key = $1 ORDER BY id",
        key
    )
    .fetch_all(db)
    .await
}

/// How many mails wait for a relay or a retry.
pub async fn queued_mail(db: impl PgExecutor<'_>) -> Result<i64, sqlx::Error> {
    let n = sqlx::query_scalar!(
        r#"SELECT count(*) AS "n!" FROM outbox WHERE state = 'queued' AND channel = 'mail'"#
    )
    .fetch_one(db)
    .await?;
    Ok(n)
}

/// What a report about one commit of a tree needs to know of both.
#[derive(Debug, Clone)]
pub struct Audience {
    /// The tree's name.
    pub tree: String,
    /// Its repository.
    pub url: String,
    /// Its branch.
    pub branch: String,
    /// Who else hears of its reports.
    pub cc: Vec<String>,
    /// Where their JSON goes.
    pub webhook_url: Option<String>,
    /// The commit's subject.
    pub subject: String,
    /// Its author, `Name <address>`.
    pub author: String,
}

/// Who hears of a report about commit `sha` of tree `tree_id`: `None` when
/// the tree did not test that commit.
pub async fn audience(
    db: impl PgExecutor<'_>,
    tree_id: i64,
    sha: &str,
) -> Result<Option<Audience>, sqlx::Error> {
    sqlx::query_as!(
        Audience,
        "SELECT t.name AS tree, t.url, t.branch, t.cc, t.webhook_url, c.subject, c.author
         FROM trees t JOIN tree_commits c ON c.tree_id = t.id
         WHERE t.id = $1 AND c.commit_sha = $2",
        tree_id,
        sha
    )
    .fetch_optional(db)
    .await
}

/// How many messages are in each (channel, state): `mail` or `webhook`,
/// and `queued`, `sent` or `failed`.
pub async fn count_by_state(
    db: impl PgExecutor<'_>,
) -> Result<Vec<(String, String, i64)>, sqlx::Error> {
    let rows = sqlx::query!(
        r#"SELECT channel AS "channel!", state AS "state!", count(*) AS "n!"
           FROM outbox GROUP BY channel, state"#
    )
    .fetch_all(db)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| (r.channel, r.state, r.n))
        .collect())
}
