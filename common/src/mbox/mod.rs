//! A patch series as mbox text (`git format-patch --stdout`, or a thread
//! saved from lore): split into messages, each read for what a report and
//! the runner need (subject, author, message-id, date, whether it carries a
//! diff). The server validates and stores a submission with [`parse`]; the
//! runner picks the messages to apply with [`Message::read`], so both agree
//! on which messages are patches.

pub mod diff;
pub mod prefix;
pub mod subject;

pub use diff::{DiffStat, diffstat, has_diff, paths};
pub use prefix::{SEPARATOR, prefixes};
pub use subject::Subject;

pub use crate::mail_header::Mailbox;

use crate::Error;
use crate::digest::sha256_hex;

/// One message of a series.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// Decoded, unfolded `Subject:`; empty when there is none.
    pub subject: String,
    /// `Message-ID:` without the angle brackets.
    pub message_id: Option<String>,
    /// Decoded `From:` as written (`Jörg Hacker <jh@example.org>`); empty
    /// when there is none.
    pub author: String,
    /// The `From:` read as one mailbox, when it is one.
    pub mailbox: Option<Mailbox>,
    /// `Date:` as seconds since the epoch, when present and readable.
    pub date: Option<i64>,
    /// Whether the body has a diff (cover letters and replies do not).
    pub has_diff: bool,
}

impl Message {
    /// Reads one message (headers, blank line, body). `index` counts from 0
    /// and only names the message in errors.
    pub fn read(text: &str, index: usize) -> Result<Message, Error> {
        let number = index + 1;
        let (headers, body_offset) =
            mailparse::parse_headers(text.as_bytes()).map_err(|e| Error::MboxHeaders {
                message: number,
                detail: e.to_string(),
            })?;
        let header =
            |name: &str| mailparse::MailHeaderMap::get_first_header(headers.as_slice(), name);
        let value = |name: &str| header(name).map(|h| h.get_value().trim().to_string());
        // The offset counts bytes of the raw text; past the end means no body.
        let body = text.get(body_offset..).unwrap_or("");
        let has_diff = has_diff(body);
        let subject = value("Subject");
        let author = value("From");
        // A diff read as headers means the text has no mail headers at all.
        let headerless_diff = !has_diff && self::has_diff(text);
        if headerless_diff || (has_diff && (subject.is_none() || author.is_none())) {
            return Err(Error::MboxDiffWithoutHeaders { message: number });
        }
        Ok(Message {
            subject: subject.unwrap_or_default(),
            message_id: value("Message-ID")
                .map(|id| id.trim_start_matches('<').trim_end_matches('>').to_string()),
            author: author.unwrap_or_default(),
            mailbox: header("From").and_then(mailbox),
            date: value("Date").and_then(|d| mailparse::dateparse(&d).ok()),
            has_diff,
        })
    }

    /// The subject read into prefix and title.
    pub fn parsed_subject(&self) -> Subject {
        Subject::parse(&self.subject)
    }
}

fn mailbox(header: &mailparse::MailHeader<'_>) -> Option<Mailbox> {
    match &mailparse::addrparse_header(header).ok()?[..] {
        [mailparse::MailAddr::Single(single)] => Some(Mailbox {
            name: single.display_name.clone().unwrap_or_default(),
            address: single.addr.clone(),
        }),
        _ => None,
    }
}

/// A parsed series.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Series {
    /// sha256 of the whole mbox text: the patched kernel's identity.
    pub sha256: String,
    /// Messages in mbox order.
    pub messages: Vec<Message>,
}

impl Series {
    /// The empty series of an A/A comparison: no message, the sha256 of no
    /// text.
    pub fn empty() -> Series {
        Series {
            sha256: sha256_hex(b""),
            messages: Vec::new(),
        }
    }

    /// Subjects of the messages that carry a patch, in order.
    pub fn patch_subjects(&self) -> impl Iterator<Item = &str> {
        self.messages
            .iter()
            .filter(|m| m.has_diff)
            .map(|m| m.subject.as_str())
    }
}

/// Reads a submitted series: every message must have readable headers, a
/// message with a diff must have a subject and an author, and at least one
/// message must carry a diff.
pub fn parse(mbox: &str) -> Result<Series, Error> {
    if mbox.trim().is_empty() {
        return Err(Error::MboxEmpty);
    }
    let messages = split(mbox)
        .into_iter()
        .enumerate()
        .map(|(index, text)| Message::read(text, index))
        .collect::<Result<Vec<_>, _>>()?;
    if !messages.iter().any(|m| m.has_diff) {
        return Err(Error::MboxWithoutPatch);
    }
    Ok(Series {
        sha256: sha256_hex(mbox.as_bytes()),
        messages,
    })
}

/// Splits at mbox `From ` separator lines (at the start or after a blank
/// line) and drops the separators; text without one is a single message.
/// Messages that are only whitespace are left out. The runner writes each
/// message it applies from this split, so both sides see the same patches.
pub fn split(mbox: &str) -> Vec<&str> {
    let mut starts = Vec::new();
    let mut offset = 0;
    let mut previous_blank = true;
    for line in mbox.split_inclusive('\n') {
        if previous_blank && is_separator(line.as_bytes()) {
            starts.push(offset);
        }
        previous_blank = line.trim_end().is_empty();
        offset += line.len();
    }
    if starts.first() != Some(&0) {
        starts.insert(0, 0);
    }
    let mut messages = Vec::new();
    for (i, &start) in starts.iter().enumerate() {
        let end = starts.get(i + 1).copied().unwrap_or(mbox.len());
        let text = &mbox[start..end];
        // The separator line is not a header.
        let text = match text.split_once('\n') {
            Some((first, after)) if is_separator(first.as_bytes()) => after,
            None if is_separator(text.as_bytes()) => "",
            _ => text,
        };
        if !text.trim().is_empty() {
            messages.push(text);
        }
    }
    messages
}

/// Whether `line` separates two messages: `From `, a sender and a date
/// ending in the time and the year (`From 1a2b… Mon Sep 17 00:00:00 2001`,
/// `From mboxrd@z Thu Jan  1 00:00:00 1970`), the shape `git mailsplit`
/// looks for, so that a paragraph of a commit message that starts with
/// "From " does not cut the message in two. Bytes, so that list mail in
/// any charset is split by the same rule ([`crate::mail::split_mbox`]).
pub(crate) fn is_separator(line: &[u8]) -> bool {
    let Some(rest) = line.strip_prefix(b"From ") else {
        return false;
    };
    let Some(colon) = rest.iter().rposition(|&b| b == b':') else {
        return false;
    };
    let digit = |i: Option<usize>| i.and_then(|i| rest.get(i)).is_some_and(u8::is_ascii_digit);
    let year = rest[colon + 1..]
        .get(2..)
        .and_then(|after| after.split(u8::is_ascii_whitespace).find(|w| !w.is_empty()))
        .and_then(|y| std::str::from_utf8(y).ok())
        .and_then(|y| y.parse::<u32>().ok());
    digit(colon.checked_sub(2))
        && digit(colon.checked_sub(1))
        && digit(Some(colon + 1))
        && digit(Some(colon + 2))
        && year.is_some_and(|y| y > 90)
}

#[cfg(test)]
mod tests;
