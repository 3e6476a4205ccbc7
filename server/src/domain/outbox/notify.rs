//! Telling people of a change: a change point found at a commit of a
//! tracked tree is mailed to the commit's author, Cc the tree's list, with
//! the text report of the comparison that measured the commit (0-day's
//! layout, absolute links), and posted as JSON to the tree's webhook. This
//! only queues the messages in the outbox, in the caller's transaction;
//! [`super::deliver`] sends them.

use std::str::FromStr;

use lettre::Address;
use patchperf_common::mail_header::{self, NameAddr};
use serde_json::json;
use sqlx::PgConnection;

use crate::db::outbox::{self, Audience, Channel, NewMessage};
use crate::domain::Context;
use crate::domain::report;
use crate::{Error, db};

/// Queues the report of a change at `commit_sha` of tree `tree_id`, found
/// by comparison `comparison_id` (the step that measured that commit):
/// one mail per recipient (the commit's author, then the tree's `cc`;
/// malformed addresses are skipped) and one webhook call when the tree has
/// one. The subject names the comparison's most important real change
/// ("+98.2% improvement of will-it-scale.per_process_ops (fstatat-empty)"),
/// or `headline`, the change point's, when it has none.
///
/// Idempotent: a report queued before, for a recipient, is not queued
/// again. Returns how many messages were newly queued; none when the
/// server has no public URL to link to (mail needs absolute links).
///
/// The report is loaded (built and stored when it is not yet) through the
/// pool, outside `conn`: the caller's transaction must not hold the
/// comparison's row `FOR UPDATE` (storing the report takes its key share
/// lock).
pub async fn queue_report(
    ctx: &Context,
    conn: &mut PgConnection,
    tree_id: i64,
    comparison_id: i64,
    commit_sha: &str,
    headline: &str,
) -> Result<usize, Error> {
    if ctx.config.public_url.is_none() {
        tracing::warn!(
            comparison = comparison_id,
            "not reporting the change: the server has no --public-url to link to"
        );
        return Ok(0);
    }
    let audience = outbox::audience(&mut *conn, tree_id, commit_sha)
        .await?
        .ok_or_else(|| Error::NotFound(format!("tree {tree_id} tested no commit {commit_sha}")))?;
    let comparison = db::comparisons::find(&mut *conn, comparison_id)
        .await?
        .ok_or_else(|| Error::NotFound(format!("no comparison {comparison_id}")))?;
    let report_url = ctx.config.link(&format!("/comparisons/{comparison_id}"));
    let built = report::load_shared(ctx, &comparison).await?;
    let text = super::compose::report_text(&built, &report_url);

    // The subject names the comparison's most important verdict, as the
    // report's first line does; the change point's own words when that is
    // no real change (a history can see what one comparison cannot).
    let worst = super::compose::headline(&built).map(|h| h.words);
    let headline = one_line(worst.as_deref().unwrap_or(headline));
    let short: String = commit_sha.chars().take(10).collect();
    let subject = format!("[{}] {short}: {headline}", audience.tree);
    let key = format!("change:{comparison_id}");
    let body = mail_body(ctx, &audience, commit_sha, &headline, &report_url, &text);

    let author = NameAddr::parse(&audience.author);
    let mail = Mail {
        key: &key,
        subject: &subject,
        body: &body,
        to: author.as_ref(),
        cc: &audience.cc,
        thread: None,
    };
    let mut queued = queue_mail(conn, &mail).await?;
    if let Some(url) = audience.webhook_url.as_deref().filter(|u| is_web_url(u)) {
        let call = json!({
            "event": "change",
            "tree": { "id": tree_id, "name": audience.tree, "url": audience.url, "branch": audience.branch },
            "commit": { "sha": commit_sha, "subject": audience.subject, "author": audience.author },
            "comparison_id": comparison_id,
            "report_url": report_url,
            "text_url": ctx.config.link(&format!("/api/v1/comparisons/{comparison_id}/report.txt")),
            "headline": headline,
        });
        let new = NewMessage {
            key: &key,
            channel: Channel::Webhook,
            recipient: url,
            subject: &subject,
            body: &call.to_string(),
            mail_to: None,
            mail_cc: None,
            in_reply_to: None,
            references: None,
        };
        queued += usize::from(outbox::queue(conn, &new).await?);
    }
    Ok(queued)
}

/// A mail to queue: one outbox row per recipient, all with the same
/// headers.
#[derive(Debug, Clone)]
pub struct Mail<'a> {
    /// What is reported: one mail per key and recipient, ever.
    pub key: &'a str,
    /// Its subject.
    pub subject: &'a str,
    /// Its text.
    pub body: &'a str,
    /// The one it is to (skipped when malformed).
    pub to: Option<&'a NameAddr>,
    /// Copied to (malformed addresses and repeats skipped).
    pub cc: &'a [String],
    /// The message answered and the thread's ids (`In-Reply-To:`,
    /// `References:`), for a reply in a list thread.
    pub thread: Option<(&'a str, &'a str)>,
}

/// Queues `mail` in the caller's transaction, one row per recipient: the
/// `to` first, then each of `cc` not already a recipient (compared as
/// `address_key` does: `LIST@` and `list@` are one). Idempotent per key and
/// recipient; how many rows were new.
pub async fn queue_mail(conn: &mut PgConnection, mail: &Mail<'_>) -> Result<usize, Error> {
    let to = mail.to.filter(|a| deliverable(&a.address));
    if let (Some(a), None) = (mail.to, to) {
        tracing::warn!(address = %a.address, key = mail.key, "not mailing a malformed address");
    }
    let mut keys: Vec<String> = to
        .iter()
        .map(|a| mail_header::address_key(&a.address))
        .collect();
    let mut cc: Vec<&str> = Vec::new();
    for a in mail.cc {
        if !deliverable(a) {
            tracing::warn!(address = %a, key = mail.key, "not mailing a malformed cc address");
            continue;
        }
        let key = mail_header::address_key(a);
        if !keys.contains(&key) {
            keys.push(key);
            cc.push(a);
        }
    }
    let mail_to = to.map(NameAddr::header);
    let mail_cc = (!cc.is_empty()).then(|| cc.join(", "));
    let recipients = to
        .iter()
        .map(|a| a.address.as_str())
        .chain(cc.iter().copied());
    let mut queued = 0;
    for recipient in recipients {
        let new = NewMessage {
            key: mail.key,
            channel: Channel::Mail,
            recipient,
            subject: mail.subject,
            body: mail.body,
            mail_to: mail_to.as_deref(),
            mail_cc: mail_cc.as_deref(),
            in_reply_to: mail.thread.map(|t| t.0),
            references: mail.thread.map(|t| t.1),
        };
        queued += usize::from(outbox::queue(conn, &new).await?);
    }
    Ok(queued)
}

/// The Message-ID (without `<>`) the mail of `key` goes out with from
/// `from` (`name <address>` or an address).
pub fn message_id(key: &str, from: &str) -> String {
    let address = NameAddr::parse(from).map_or_else(|| from.to_string(), |a| a.address);
    let domain = address.rsplit_once('@').map_or("localhost", |(_, d)| d);
    format!("patchperf.{}@{domain}", key.replace(':', "."))
}

/// The mail: a few lines of our own saying what was found, then the text
/// report.
fn mail_body(
    ctx: &Context,
    a: &Audience,
    sha: &str,
    headline: &str,
    report_url: &str,
    text: &str,
) -> String {
    let home = ctx.config.link("/");
    format!(
        "Hello,\n\n\
         patchperf follows {branch} of {url} (tree \"{tree}\") and measured a\n\
         change in performance at this commit:\n\n\
         \x20   {sha} (\"{subject}\")\n\n\
         \x20   {headline}\n\n\
         You get this mail as the commit's author or on the tree's Cc list.\n\
         The comparison below measured the commit against its parent, boots\n\
         of both kernels interleaved; its page, with every run, is\n\
         {report_url}\n\n\
         {text}\n\
         -- \n\
         patchperf, {home}\n",
        branch = a.branch,
        url = a.url,
        tree = a.tree,
        subject = mail_header::subject(&a.subject),
    )
}

/// Whether mail to `address` can go out: the shape tree cc lists are
/// checked against (`mail_header::check_address`), and one lettre takes.
fn deliverable(address: &str) -> bool {
    mail_header::is_address(address) && Address::from_str(address).is_ok()
}

fn is_web_url(url: &str) -> bool {
    reqwest::Url::parse(url).is_ok_and(|u| matches!(u.scheme(), "http" | "https"))
}

/// The headline on one line, as a subject must be.
fn one_line(s: &str) -> String {
    mail_header::subject(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_addresses_are_not_mailed() {
        assert!(deliverable("kh@example.org"));
        for bad in [
            "kh",
            "kh@localhost",
            "a b@example.org",
            "<kh@example.org>",
            "@example.org",
            "root@[127.0.0.1]",
        ] {
            assert!(!deliverable(bad), "{bad}");
        }
        assert_eq!(one_line("+5% of\n  x"), "+5% of x");
    }
}
