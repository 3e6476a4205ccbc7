//! The sender: takes due outbox rows (queued by [`super::notify`]) and
//! mails them through the configured SMTP relay or posts them to their
//! webhook, retrying failures with a doubling wait up to a bound.
//!
//! What is guaranteed: each row is taken in its own transaction with
//! `FOR UPDATE SKIP LOCKED`, sent while that transaction holds it, and
//! marked sent in the same transaction, so no two servers send a row at the
//! same time and a row marked sent is never sent again, across restarts.
//! Delivery is at least once: a server that dies (or loses its database)
//! after the relay or the webhook accepted a message but before the commit
//! sends it again once the row is free. Such a repeat carries the same
//! `Message-ID` (a mail) or `Idempotency-Key` (a webhook call), so the
//! receiving end can drop it. Without a relay, mail stays queued (the log
//! and `/healthz` say so) and webhooks still go out.

use std::str::FromStr;
use std::time::Duration;

use lettre::address::Envelope;
use lettre::message::header::{ContentTransferEncoding, ContentType};
use lettre::message::{Body, Mailbox};
use lettre::{Address, AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};

use crate::db::outbox::{self, Due};
use crate::domain::Context;
use crate::domain::notify::Author;
use crate::domain::workers::{Done, Worker};
use crate::{Config, Error};

/// Longest one SMTP conversation or webhook call may take.
const SEND_TIMEOUT: Duration = Duration::from_secs(30);

/// Longest wait between two attempts.
const MAX_RETRY: Duration = Duration::from_secs(3600);

/// The relay mail goes through, and who it is from.
#[derive(Debug, Clone)]
struct Relay {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
}

/// Sends due outbox rows.
#[derive(Debug, Clone)]
pub struct Sender {
    relay: Option<Relay>,
    http: reqwest::Client,
}

impl Sender {
    /// A sender for `config`'s relay (none: mail is not taken); an unusable
    /// relay URL or From address is an error.
    pub fn new(config: &Config) -> Result<Sender, Error> {
        let relay = match (&config.smtp_url, &config.mail_from) {
            (None, _) => None,
            (Some(_), None) => {
                return Err(Error::Setup(
                    "--smtp-url needs --mail-from (e.g. \"patchperf <perf@example.org>\")".into(),
                ));
            }
            (Some(url), Some(from)) => {
                let transport = AsyncSmtpTransport::<Tokio1Executor>::from_url(url)
                    .map_err(|e| Error::Setup(format!("--smtp-url {url:?}: {e}")))?
                    .timeout(Some(SEND_TIMEOUT))
                    .build();
                let from = Mailbox::from_str(from).map_err(|e| {
                    Error::Setup(format!(
                        "--mail-from {from:?}: {e} (write \"Name <address>\")"
                    ))
                })?;
                Some(Relay { transport, from })
            }
        };
        let http = reqwest::Client::builder()
            .timeout(SEND_TIMEOUT)
            .user_agent(concat!("patchperf/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| Error::Setup(format!("webhook client: {e}")))?;
        Ok(Sender { relay, http })
    }

    /// Whether mail can go out.
    pub fn mails(&self) -> bool {
        self.relay.is_some()
    }

    /// One pass over the due rows (each taken at most once, in id order):
    /// how many were sent.
    pub async fn send_due(&self, ctx: &Context) -> Result<usize, Error> {
        let mut after = 0;
        let mut sent = 0;
        loop {
            let mut tx = ctx.db.begin().await?;
            let Some(row) = outbox::take_due(&mut tx, self.mails(), after).await? else {
                return Ok(sent);
            };
            after = row.id;
            match self.send(&row).await {
                Ok(()) => {
                    outbox::sent(&mut tx, row.id).await?;
                    sent += 1;
                }
                Err(failure) => {
                    let retry_in = retry_in(&ctx.config, row.attempts, failure.permanent);
                    tracing::warn!(
                        id = row.id, channel = %row.channel, recipient = %row.recipient,
                        error = %failure.message, retry_in = ?retry_in,
                        "sending a report failed"
                    );
                    outbox::attempt_failed(&mut tx, row.id, &failure.message, retry_in).await?;
                }
            }
            tx.commit().await?;
        }
    }

    async fn send(&self, row: &Due) -> Result<(), Failure> {
        match row.channel.as_str() {
            "mail" => self.mail(row).await,
            _ => self.post(row).await,
        }
    }

    async fn mail(&self, row: &Due) -> Result<(), Failure> {
        let relay = self
            .relay
            .as_ref()
            .ok_or_else(|| Failure::permanent("no SMTP relay".into()))?;
        let rcpt = Address::from_str(&row.recipient)
            .map_err(|e| Failure::permanent(format!("recipient {:?}: {e}", row.recipient)))?;
        let message = compose(relay, row).map_err(Failure::permanent)?;
        let envelope = Envelope::new(Some(relay.from.email.clone()), vec![rcpt])
            .map_err(|e| Failure::permanent(e.to_string()))?;
        relay
            .transport
            .send_raw(&envelope, &message.formatted())
            .await
            .map_err(|e| Failure {
                permanent: e.is_permanent(),
                message: e.to_string(),
            })?;
        Ok(())
    }

    async fn post(&self, row: &Due) -> Result<(), Failure> {
        let answer = self
            .http
            .post(&row.recipient)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header("Idempotency-Key", idempotency_key(row))
            .body(row.body.clone())
            .send()
            .await
            .map_err(|e| Failure::retry(format!("{e}")))?;
        let status = answer.status();
        if status.is_success() {
            return Ok(());
        }
        let message = format!("{} answered {status}", row.recipient);
        // A client error other than a timeout or too many requests will
        // answer the same next time.
        let again = matches!(status.as_u16(), 408 | 429) || !status.is_client_error();
        Err(Failure {
            permanent: !again,
            message,
        })
    }
}

/// Why a send failed, and whether trying again could help.
#[derive(Debug)]
struct Failure {
    permanent: bool,
    message: String,
}

impl Failure {
    fn permanent(message: String) -> Failure {
        Failure {
            permanent: true,
            message,
        }
    }

    fn retry(message: String) -> Failure {
        Failure {
            permanent: false,
            message,
        }
    }
}

/// The mail of a row: the same for each recipient of a report, including
/// its `Message-ID`.
fn compose(relay: &Relay, row: &Due) -> Result<Message, String> {
    let mut m = Message::builder()
        .from(relay.from.clone())
        .subject(row.subject.clone())
        .message_id(Some(format!(
            "<patchperf.{}@{}>",
            row.key.replace(':', "."),
            relay.from.email.domain()
        )))
        .header(ContentType::TEXT_PLAIN);
    for to in row.mail_to.iter().filter_map(|h| Author::parse(h)) {
        m = m.to(mailbox(&to)?);
    }
    for cc in row.mail_cc.iter().flat_map(|h| h.split(", ")) {
        m = m.cc(mailbox(&Author::parse(cc).ok_or(format!("cc {cc:?}"))?)?);
    }
    m.body(body(&row.body)).map_err(|e| e.to_string())
}

/// The text as it is, 8bit, as kernel people read mail: lettre would
/// quote-print the report's lines over 76 characters. Text that 8bit
/// cannot carry (a NUL, a line over 998 bytes) is left to lettre.
fn body(text: &str) -> Body {
    let fits = !text.contains('\0') && text.lines().all(|l| l.len() <= 998);
    if !fits {
        return Body::new(text.to_string());
    }
    let mut crlf = String::with_capacity(text.len() + text.len() / 40);
    for line in text.lines() {
        crlf.push_str(line);
        crlf.push_str("\r\n");
    }
    Body::dangerous_pre_encoded(crlf.into_bytes(), ContentTransferEncoding::EightBit)
}

fn mailbox(a: &Author) -> Result<Mailbox, String> {
    let email = Address::from_str(&a.address).map_err(|e| format!("{:?}: {e}", a.address))?;
    Ok(Mailbox::new(a.name.clone(), email))
}

/// The same for every attempt at one row.
fn idempotency_key(row: &Due) -> String {
    format!("patchperf-{}-{}", row.key.replace(':', "-"), row.id)
}

/// How long to wait before the next attempt, after `attempts` earlier
/// ones and this failure; `None`: give up.
fn retry_in(config: &Config, attempts: i32, permanent: bool) -> Option<Duration> {
    let attempts = u32::try_from(attempts).unwrap_or(0);
    if permanent || attempts + 1 >= config.outbox_max_attempts {
        return None;
    }
    let wait = config
        .outbox_retry
        .saturating_mul(2u32.saturating_pow(attempts.min(20)));
    Some(wait.min(MAX_RETRY))
}

/// Starts this server's `mail-sender` worker, which looks for due rows
/// every `Config::outbox_poll`; an unusable relay setting is an error.
pub fn spawn_sender(ctx: &Context) -> Result<tokio::task::JoinHandle<()>, Error> {
    let sender = std::sync::Arc::new(Sender::new(&ctx.config)?);
    match &ctx.config.smtp_url {
        Some(_) => tracing::info!("reports are mailed through the configured SMTP relay"),
        None => tracing::warn!("no --smtp-url: mailed reports stay queued until one is configured"),
    }
    Ok(
        Worker::every("mail-sender", ctx.config.outbox_poll).spawn(ctx, move |ctx| {
            let sender = std::sync::Arc::clone(&sender);
            async move {
                let n = sender.send_due(&ctx).await?;
                if n > 0 {
                    tracing::info!(sent = n, "sent reports");
                }
                Ok(Done::Handled(n))
            }
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_wait_twice_as_long_each_time_up_to_a_bound() {
        let config = Config {
            outbox_retry: Duration::from_secs(60),
            outbox_max_attempts: 12,
            ..Config::default()
        };
        assert_eq!(retry_in(&config, 0, false), Some(Duration::from_secs(60)));
        assert_eq!(retry_in(&config, 2, false), Some(Duration::from_secs(240)));
        assert_eq!(retry_in(&config, 10, false), Some(MAX_RETRY));
        assert_eq!(retry_in(&config, 11, false), None, "the last attempt");
        assert_eq!(retry_in(&config, 0, true), None, "permanent");
    }

    #[test]
    fn text_goes_as_it_is_with_crlf_lines() {
        let long = format!("{}\n", "=".repeat(89));
        let b = body(&format!("±5%\n{long}"));
        assert_eq!(b.encoding(), ContentTransferEncoding::EightBit);
        assert_eq!(
            b.into_vec(),
            format!("±5%\r\n{}\r\n", "=".repeat(89)).into_bytes()
        );
        let b = body(&"x".repeat(1000));
        assert_ne!(b.encoding(), ContentTransferEncoding::EightBit);
    }
}
