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
use lettre::message::header::{
    ContentTransferEncoding, ContentType, Header, HeaderName, HeaderValue,
};
use lettre::message::{Body, Mailbox};
use lettre::{Address, AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};

use patchperf_common::mail::clean;
use patchperf_common::mail_header::{self, NameAddr};

use crate::db::outbox::{self, Due};
use crate::destination::{self, Destinations};
use crate::domain::context::workers::{Done, Worker};
use crate::domain::{Context, outbox::notify};
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
    destinations: Destinations,
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
        let destinations = Destinations::new(config.allow_private_destinations);
        let http = destination::client(destinations, SEND_TIMEOUT)
            .map_err(|e| Error::Setup(format!("webhook client: {e}")))?;
        Ok(Sender {
            relay,
            http,
            destinations,
        })
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
        // A row that cannot be composed never will be: failed with the
        // reason, and the sender goes on with the next.
        let message = compose(&relay.from, row)
            .map_err(|why| Failure::permanent(format!("the mail cannot be composed: {why}")))?;
        let envelope = Envelope::new(Some(relay.from.email.clone()), vec![rcpt])
            .map_err(|e| Failure::permanent(e.to_string()))?;
        relay
            .transport
            .send_raw(&envelope, &message)
            .await
            .map_err(|e| Failure {
                permanent: e.is_permanent(),
                message: e.to_string(),
            })?;
        Ok(())
    }

    async fn post(&self, row: &Due) -> Result<(), Failure> {
        self.check_destination(&row.recipient).await?;
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
        if status.is_redirection() {
            return Err(Failure::permanent(format!(
                "{} answered {status}; redirects are not followed",
                row.recipient
            )));
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

impl Sender {
    /// Refuses, for good, a webhook whose host is or resolves only to
    /// addresses the policy does not allow. The client's resolver checks
    /// again when it connects; an address literal, which no resolver sees,
    /// is checked only here (and no redirect leads elsewhere).
    async fn check_destination(&self, url: &str) -> Result<(), Failure> {
        let parsed = reqwest::Url::parse(url)
            .map_err(|e| Failure::permanent(format!("{url:?} is not a URL: {e}")))?;
        let host = parsed
            .host_str()
            .ok_or_else(|| Failure::permanent(format!("{url:?} has no host")))?;
        let port = parsed.port_or_known_default().unwrap_or(80);
        self.destinations
            .resolve(host, port)
            .await
            .map(drop)
            .map_err(|why| {
                tracing::warn!(url, reason = %why, "webhook destination refused");
                Failure::permanent(format!("the destination is refused: {why}"))
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

/// The mail of a row, as sent: the same for each recipient of a report,
/// including its `Message-ID`. Every header value is made a clean line
/// here again ([`mail_header`]), whatever was stored before names were
/// cleaned when read; a panic of the mail builder (it has panicked on a
/// bare CR in a name) becomes this row's error, not the sender's end.
fn compose(from: &Mailbox, row: &Due) -> Result<Vec<u8>, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        build(from, row).map(|m| m.formatted())
    }))
    .unwrap_or_else(|panic| {
        let why = panic
            .downcast_ref::<&str>()
            .map(|s| (*s).to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        Err(format!("the mail builder panicked: {why}"))
    })
}

fn build(from: &Mailbox, row: &Due) -> Result<Message, String> {
    let mut m = Message::builder()
        .from(from.clone())
        .subject(mail_header::subject(&row.subject))
        .message_id(Some(format!(
            "<{}>",
            notify::message_id(&row.key, from.email.as_ref())
        )))
        .header(ContentType::TEXT_PLAIN)
        .header(AutoSubmitted);
    // Ids as the door read them; checked again, since a header must never
    // carry more than ids.
    if let Some(id) = row.in_reply_to.as_deref() {
        m = m.in_reply_to(format!("<{}>", thread_id(id)?));
    }
    if let Some(ids) = row.refs.as_deref() {
        let ids = ids
            .split(' ')
            .filter(|i| !i.is_empty())
            .map(|i| thread_id(i).map(|i| format!("<{i}>")))
            .collect::<Result<Vec<_>, _>>()?;
        if !ids.is_empty() {
            m = m.references(ids.join(" "));
        }
    }
    if let Some(to) = &row.mail_to {
        let to = NameAddr::parse(to).ok_or_else(|| format!("to {to:?} names no address"))?;
        m = m.to(mailbox(&to)?);
    }
    for cc in row.mail_cc.iter().flat_map(|h| h.split(", ")) {
        let a = NameAddr::parse(cc).ok_or_else(|| format!("cc {cc:?} names no address"))?;
        m = m.cc(mailbox(&a)?);
    }
    m.body(body(&row.body)).map_err(|e| e.to_string())
}

/// `Auto-Submitted: auto-generated` (RFC 3834): every mail patchperf sends
/// is a robot's, so that vacation responders and other robots do not
/// answer it, and list software and filters can tell it apart.
#[derive(Debug, Clone, Copy)]
struct AutoSubmitted;

impl Header for AutoSubmitted {
    fn name() -> HeaderName {
        HeaderName::new_from_ascii_str("Auto-Submitted")
    }

    fn parse(s: &str) -> Result<Self, Box<dyn std::error::Error + Send + Sync>> {
        if s.trim().eq_ignore_ascii_case("auto-generated") {
            Ok(AutoSubmitted)
        } else {
            Err(format!("Auto-Submitted: {s:?} is not ours").into())
        }
    }

    fn display(&self) -> HeaderValue {
        HeaderValue::new(Self::name(), "auto-generated".to_string())
    }
}

/// `id` when it is a Message-ID as list mail is read
/// (`patchperf_common::mail::clean::message_id`).
fn thread_id(id: &str) -> Result<&str, String> {
    if clean::message_id(id).as_deref() == Some(id) {
        Ok(id)
    } else {
        Err(format!("{id:?} is not a Message-ID"))
    }
}

/// The text as it is, 8bit, as kernel people read mail (lettre would
/// quote-print the report's lines over 76 characters), every line ended
/// by CRLF and no bare CR anywhere ([`mail_header::body`]). Text that 8bit
/// cannot carry (a line over 998 bytes) is left to lettre.
fn body(text: &str) -> Body {
    let text = mail_header::body(text);
    let fits = text.lines().all(|l| l.len() <= 998);
    if !fits {
        return Body::new(text);
    }
    let mut crlf = String::with_capacity(text.len() + text.len() / 40);
    for line in text.lines() {
        crlf.push_str(line);
        crlf.push_str("\r\n");
    }
    Body::dangerous_pre_encoded(crlf.into_bytes(), ContentTransferEncoding::EightBit)
}

/// The header form of `a`: its name a clean line, its address one
/// [`mail_header::check_address`] and lettre both take.
fn mailbox(a: &NameAddr) -> Result<Mailbox, String> {
    mail_header::check_address(&a.address).map_err(|why| format!("{:?}: {why}", a.address))?;
    let email = Address::from_str(&a.address).map_err(|e| format!("{:?}: {e}", a.address))?;
    let name = a.name.as_deref().map(mail_header::display_name);
    Ok(Mailbox::new(name.filter(|n| !n.is_empty()), email))
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
    use proptest::prelude::*;

    use super::*;

    fn from() -> Mailbox {
        Mailbox::from_str("patchperf <perf@example.org>").unwrap()
    }

    fn row(to: Option<String>, cc: Option<String>, subject: &str, body: &str) -> Due {
        Due {
            id: 1,
            key: "change:1".into(),
            channel: "mail".into(),
            recipient: "kh@example.org".into(),
            subject: subject.into(),
            body: body.into(),
            mail_to: to,
            mail_cc: cc,
            in_reply_to: None,
            refs: None,
            attempts: 0,
        }
    }

    /// The header names of a mail as it goes to the relay, once it is
    /// checked that every line ends in CRLF, no CR or LF stands alone and
    /// no NUL is anywhere.
    fn wire_headers(mail: &[u8]) -> Result<Vec<String>, String> {
        for (i, &b) in mail.iter().enumerate() {
            let ok = match b {
                b'\r' => mail.get(i + 1) == Some(&b'\n'),
                b'\n' => i > 0 && mail[i - 1] == b'\r',
                0 => false,
                _ => true,
            };
            if !ok {
                return Err(format!("byte {b:#x} alone at {i}"));
            }
        }
        let text = String::from_utf8_lossy(mail);
        let (head, _) = text.split_once("\r\n\r\n").ok_or("no end of the headers")?;
        let mut names = Vec::new();
        for line in head.split("\r\n") {
            if line.len() > 998 {
                return Err(format!("a header line of {} bytes", line.len()));
            }
            if line.starts_with([' ', '\t']) {
                continue;
            }
            let (name, _) = line.split_once(':').ok_or(format!("no header: {line:?}"))?;
            names.push(name.to_ascii_lowercase());
        }
        Ok(names)
    }

    /// What `compose` may write: these headers, each once at most.
    const OURS: [&str; 12] = [
        "auto-submitted",
        "from",
        "in-reply-to",
        "references",
        "to",
        "cc",
        "subject",
        "message-id",
        "content-type",
        "content-transfer-encoding",
        "date",
        "mime-version",
    ];

    fn only_ours(names: &[String]) -> Result<(), String> {
        for n in names {
            if !OURS.contains(&n.as_str()) || names.iter().filter(|m| *m == n).count() > 1 {
                return Err(format!("headers {names:?}"));
            }
        }
        Ok(())
    }

    #[test]
    fn an_author_with_a_bare_cr_is_mailed_without_an_injected_header() {
        // The issue's reproducer, as a commit's author reads from git.
        let author =
            NameAddr::from_repository("Mallory\rBcc: evil@evil.example", "mallory@example.org");
        let to = Some(author.header());
        let mail = compose(&from(), &row(to, None, "[t] 0123456789: +1%", "x\n")).unwrap();
        let names = wire_headers(&mail).unwrap();
        only_ours(&names).unwrap();
        assert!(!names.contains(&"bcc".to_string()));
        let text = String::from_utf8(mail).unwrap();
        // One header: the name as an encoded word (base64 of "Mallory Bcc:
        // evil@evil.example"), the address after it.
        assert!(
            text.contains(
                "To: =?utf-8?b?TWFsbG9yeSBCY2M6IGV2aWxAZXZpbC5leGFtcGxl?= <mallory@example.org>\r\n"
            ),
            "{text}"
        );
        // A name stored before names were cleaned is cleaned when sent.
        let old = Some("Mallory\rBcc: evil@evil.example <mallory@example.org>".to_string());
        let mail = compose(&from(), &row(old, None, "s", "x")).unwrap();
        only_ours(&wire_headers(&mail).unwrap()).unwrap();
    }

    #[test]
    fn a_bare_cr_never_reaches_smtp_data() {
        let body = "    0123456789 (\"fs: smuggle\r.\r\nMAIL FROM:<x@y.z>\r\n\")\r.\r\nend";
        let to = Some("kh@example.org".to_string());
        let mail = compose(&from(), &row(to, None, "fs: smuggle\r.\r\n", body)).unwrap();
        wire_headers(&mail).unwrap();
        let text = String::from_utf8(mail).unwrap();
        assert!(text.ends_with("\r\n.\r\nend\r\n"), "{text}");
        assert!(!text.contains("\r.\r"), "{text}");
    }

    #[test]
    fn a_reply_carries_its_thread_and_refuses_ids_that_are_not() {
        let mut r = row(Some("kh@example.org".into()), None, "Re: [PATCH] x", "b");
        r.in_reply_to = Some("cover@example.org".into());
        r.refs = Some("root@example.org cover@example.org".into());
        let mail = String::from_utf8(compose(&from(), &r).unwrap()).unwrap();
        assert!(
            mail.contains("\r\nIn-Reply-To: <cover@example.org>\r\n"),
            "{mail}"
        );
        assert!(
            mail.contains("\r\nReferences: <root@example.org> <cover@example.org>\r\n"),
            "{mail}"
        );
        assert!(
            mail.contains("\r\nAuto-Submitted: auto-generated\r\n"),
            "{mail}"
        );
        for bad in ["a@b>\r\nBcc: x@y.org", "a b@c", "<a@b>", ""] {
            r.in_reply_to = Some(bad.into());
            assert!(compose(&from(), &r).is_err(), "{bad:?}");
        }
    }

    /// A mail sent again (the server killed while the relay held it, its
    /// row still due) and each recipient's copy carry one Message-ID, from
    /// the row's key, so archives and mail clients drop the repeat.
    #[test]
    fn a_repeat_and_every_copy_carry_one_message_id() {
        let id = |mail: Vec<u8>| {
            String::from_utf8(mail)
                .unwrap()
                .lines()
                .find(|l| l.starts_with("Message-ID: "))
                .unwrap()
                .to_string()
        };
        let to = Some("kh@example.org".to_string());
        let cc = Some("list@example.org".to_string());
        let first = id(compose(&from(), &row(to.clone(), cc.clone(), "s", "b")).unwrap());
        let again = id(compose(&from(), &row(to.clone(), cc.clone(), "s", "b")).unwrap());
        let mut copy = row(to, cc, "s", "b");
        copy.id = 2;
        copy.recipient = "list@example.org".into();
        copy.attempts = 3;
        assert_eq!(first, again);
        assert_eq!(first, id(compose(&from(), &copy).unwrap()));
        assert_eq!(first, "Message-ID: <patchperf.change.1@example.org>");
    }

    /// The longest ids the door takes still make header lines within
    /// 998 octets: `In-Reply-To` holds one, `References` one a line.
    #[test]
    fn the_longest_message_ids_fit_their_header_lines() {
        let long = |c: &str| format!("{}@example.org", c.repeat(clean::MAX_MESSAGE_ID_LEN - 12));
        let (root, cover) = (long("r"), long("c"));
        assert_eq!(clean::message_id(&root).as_deref(), Some(root.as_str()));
        let mut r = row(Some("kh@example.org".into()), None, "Re: [PATCH] x", "b");
        r.in_reply_to = Some(cover.clone());
        r.refs = Some(format!("{root} {cover}"));
        let mail = compose(&from(), &r).unwrap();
        let text = String::from_utf8(mail.clone()).unwrap();
        wire_headers(&mail).unwrap();
        assert!(
            text.contains(&format!("In-Reply-To: <{cover}>\r\n")),
            "{text}"
        );
        assert!(
            text.contains(&format!("References: <{root}>\r\n <{cover}>\r\n")),
            "{text}"
        );
        assert_eq!(clean::message_id(&format!("x{root}")), None);
    }

    #[test]
    fn a_row_that_cannot_be_composed_says_why() {
        for (to, cc) in [
            (Some("Someone <not an address>".to_string()), None),
            (None, Some("root@[127.0.0.1]".to_string())),
            (
                Some("kh@example.org".to_string()),
                Some("a@b.org, ".to_string()),
            ),
        ] {
            let why = compose(&from(), &row(to.clone(), cc.clone(), "s", "b")).unwrap_err();
            assert!(!why.is_empty(), "{to:?} {cc:?}");
        }
    }

    /// Text as a hostile repository or list writes it: mostly plain, with
    /// line breaks, NUL, quotes, brackets and any other character mixed in.
    fn hostile(max: usize) -> impl Strategy<Value = String> {
        let c = prop_oneof![
            4 => proptest::char::range('a', 'z'),
            1 => any::<char>(),
            1 => prop::sample::select(vec![
                '\r', '\n', '\0', '\t', '\u{85}', '\u{2028}', '<', '>', '"', '@', ',', ':', ' ', '.', '\\', '=', '?'
            ]),
        ];
        prop::collection::vec(c, 0..max).prop_map(|v| v.into_iter().collect())
    }

    /// An address: a plain one, or one with hostile text around or inside.
    fn address() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z]{1,8}(\\.[a-z]{1,4})?@[a-z]{1,8}\\.(org|example)",
            (hostile(6), "[a-z]{1,8}@[a-z]{1,8}\\.org", hostile(6))
                .prop_map(|(a, b, c)| format!("{a}{b}{c}")),
            hostile(24),
        ]
    }

    proptest! {
        /// Everything that reaches a mail from a repository (the author's
        /// name and address, the subject, the Cc list, text in the body):
        /// the mail is composed with only our headers, or the row is
        /// refused with a reason; never a panic, a stray CR or LF, or a NUL.
        #[test]
        fn fuzz_a_mail_from_a_repository_carries_only_our_headers(
            name in hostile(40),
            author in address(),
            subject in hostile(80),
            cc in prop::collection::vec(address(), 0..3),
            body in hostile(200),
            thread in prop::option::of((hostile(30), prop::collection::vec(hostile(30), 0..4))),
        ) {
            let to = Some(NameAddr::from_repository(&name, &author).header());
            let cc = (!cc.is_empty()).then(|| cc.join(", "));
            let mut row = row(to, cc, &subject, &body);
            // A list reply's thread: ids as a hostile list would have them.
            if let Some((parent, refs)) = thread {
                row.in_reply_to = Some(parent);
                row.refs = Some(refs.join(" "));
            }
            match compose(&from(), &row) {
                Ok(mail) => {
                    let names = wire_headers(&mail).map_err(TestCaseError::fail)?;
                    only_ours(&names).map_err(TestCaseError::fail)?;
                    prop_assert!(names.contains(&"to".to_string()));
                }
                Err(why) => prop_assert!(!why.is_empty()),
            }
        }
    }

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
