//! One message as it arrives from a list (a public-inbox blob, a POSTed
//! `message/rfc822`, one message of an mbox): read once, within bounds,
//! into what threading, series assembly and the reply need. Nothing here
//! trusts the message: sizes are capped, every value that may reach a
//! header is one clean bounded line ([`super::clean`]).

use super::body::{self, InBody, Trailer};
use super::header::Fields;
use super::{Error, Mailbox, mime};
use crate::mbox::{Subject, has_diff};

/// Largest message read, in bytes. Kernel patch mail is a few kB to a few
/// hundred; vger refuses far smaller messages than this.
pub const MAX_MESSAGE_BYTES: usize = 8 << 20;

/// The edition of [`Message::read`] whose result a server stores with each
/// message (so a thread is read at the door once, never parsed again).
/// Raise it whenever `read` comes to read the same bytes differently (a
/// fixed decoder, a new field): messages stored by an older edition are
/// then read again from their raw form, once, and stored anew.
pub const READ_EDITION: i16 = 1;

/// A message read from the wire; its serialized form is what a server
/// stores, tagged with [`READ_EDITION`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Message {
    /// The header fields (thread links, subject, mailboxes, date, list,
    /// automation marks).
    pub fields: Fields,
    /// The text the message is about, as b4 picks it: its first text part,
    /// or a later text part that holds a diff (a patch attached to a
    /// note), decoded to UTF-8 with `\n` line ends.
    pub body: String,
    /// Whether [`Message::body`] carries a diff `git am` would apply.
    pub has_diff: bool,
    /// The `From:`/`Subject:`/`Date:` lines at the start of the body.
    pub in_body: InBody,
    /// Trailers of the body (tags of a patch, or a review's tags).
    pub trailers: Vec<Trailer>,
    /// `base-commit:` of the body.
    pub base_commit: Option<String>,
    /// `change-id:` of the body (b4).
    pub change_id: Option<String>,
}

impl Message {
    /// Reads one raw message (headers, blank line, body; `\n` or `\r\n`
    /// line ends). Fails when it is larger than [`MAX_MESSAGE_BYTES`], its
    /// headers cannot be read, or its MIME tree is too large
    /// ([`mime::MAX_MIME_PARTS`], [`mime::MAX_MIME_DEPTH`]).
    pub fn read(raw: &[u8]) -> Result<Message, Error> {
        if raw.len() > MAX_MESSAGE_BYTES {
            return Err(Error::MailTooLarge {
                bytes: raw.len(),
                max: MAX_MESSAGE_BYTES,
            });
        }
        let (headers, _) = mailparse::parse_headers(raw)
            .map_err(|e| Error::MailStructure(format!("unreadable headers: {e}")))?;
        let fields = Fields::read(&headers);
        let parts = mime::text_parts(raw)?;
        let mut chosen: Option<&str> = None;
        for part in &parts {
            if chosen.is_none() || (has_diff(&part.text) && !chosen.is_some_and(has_diff)) {
                chosen = Some(&part.text);
            }
        }
        let body = chosen.unwrap_or_default().to_string();
        let (in_body, _) = body::in_body(&body);
        Ok(Message {
            has_diff: has_diff(&body),
            trailers: body::trailers(&body),
            base_commit: body::base_commit(&body),
            change_id: body::change_id(&body),
            in_body,
            body,
            fields,
        })
    }

    /// `Message-ID:`, the key a message is stored and threaded by.
    pub fn id(&self) -> Option<&str> {
        self.fields.message_id.as_deref()
    }

    /// The subject read into prefix (`[PATCH v3 2/5]`) and title.
    pub fn subject(&self) -> Subject {
        Subject::parse(&self.fields.subject)
    }

    /// Who posted the message: `X-Original-From:` when a relay sent it on
    /// their behalf, else `From:`. A relay says so in `From:`'s name (b4's
    /// web relay writes `Name via B4 Relay <devnull+…@kernel.org>`, lists
    /// rewriting `From:` for DMARC `Name via list`); without that,
    /// `X-Original-From:` is anyone's claim and is not believed.
    pub fn sender(&self) -> Option<&Mailbox> {
        let from = self.fields.from.as_ref();
        let relayed = from.is_some_and(|f| f.name.contains(" via "));
        match &self.fields.original_from {
            Some(original) if relayed => Some(original),
            _ => from,
        }
    }

    /// The patch's author as `git am` records it: the body's `From:` line
    /// when there is one, else the sender.
    pub fn author(&self) -> Option<&Mailbox> {
        self.in_body.from.as_ref().or(self.sender())
    }

    /// The message's parent: `In-Reply-To:`, else the last `References:`
    /// id.
    pub fn parent(&self) -> Option<&str> {
        self.fields
            .in_reply_to
            .as_deref()
            .or(self.fields.references.last().map(String::as_str))
            .filter(|p| Some(*p) != self.id())
    }

    /// The id of the thread it is in: its first `References:` id (the
    /// thread's root, whether or not it has arrived), else its
    /// `In-Reply-To:`, else its own. Messages of one thread share it.
    pub fn thread_root(&self) -> Option<&str> {
        self.fields
            .references
            .first()
            .or(self.fields.in_reply_to.as_ref())
            .map(String::as_str)
            .or(self.id())
    }

    /// Whether a machine sent it on its own (see
    /// [`Fields::is_automatic`]).
    pub fn is_automatic(&self) -> bool {
        self.fields.is_automatic()
    }
}
