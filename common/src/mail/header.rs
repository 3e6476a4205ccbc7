//! The header fields of a list message, decoded (RFC 2047 encoded words,
//! folding, UTF-8 or Latin-1 bytes) and made clean: mailboxes of
//! `From:`, `To:`, `Cc:`; the thread links (`Message-ID:`,
//! `In-Reply-To:`, `References:`); `List-Id:`; and what marks a message
//! sent by a machine (`Auto-Submitted:`, `Precedence:`,
//! `X-Auto-Response-Suppress:`).

use mailparse::{MailAddr, MailHeader, MailHeaderMap};

use super::Mailbox;
use super::clean::{self, MAX_VALUE_CHARS};

/// Most mailboxes kept from one `To:` or `Cc:` (a tree-wide patch Cc's a
/// few hundred maintainers).
pub const MAX_RECIPIENTS: usize = 512;

/// Most `References:` ids kept: the first (the thread's root) and the
/// last ones (the nearest ancestors).
pub const MAX_REFERENCES: usize = 128;

/// The mailboxes of an address header (groups flattened), each with a
/// clean display name; entries whose address a relay would not take
/// ([`clean::is_address`]: a name whose `<…>` was lost, `root@localhost`,
/// an address literal) are left out. A header mailparse cannot read as an
/// address list is read for its `<address>` parts.
pub fn mailboxes(header: &MailHeader<'_>) -> Vec<Mailbox> {
    let found: Vec<(String, String)> = match mailparse::addrparse_header(header) {
        Ok(list) => list
            .iter()
            .flat_map(|addr| match addr {
                MailAddr::Single(s) => vec![s.clone()],
                MailAddr::Group(g) => g.addrs.clone(),
            })
            .map(|s| (s.display_name.unwrap_or_default(), s.addr))
            .collect(),
        Err(_) => loose(&header.get_value()),
    };
    found
        .into_iter()
        .filter_map(|(name, address)| {
            let address = address.trim().to_string();
            clean::is_address(&address).then(|| Mailbox {
                name: clean::display_name(&name),
                address,
            })
        })
        .take(MAX_RECIPIENTS)
        .collect()
}

/// An address list mailparse refuses (`Alexander Viro , x@y.org`, a name
/// whose address a web archive stripped), read entry by entry: the
/// `<address>` of an entry, else its last word with an `@`; a group's
/// `name:` and `;` are dropped.
fn loose(value: &str) -> Vec<(String, String)> {
    value
        .split([',', ';'])
        .filter_map(|entry| {
            let entry = match entry.split_once(':') {
                Some((_, after)) if !entry.contains('<') => after,
                _ => entry,
            };
            if let Some((name, rest)) = entry.split_once('<') {
                let (address, _) = rest.split_once('>')?;
                return Some((
                    name.trim().trim_matches('"').to_string(),
                    address.to_string(),
                ));
            }
            let word = entry
                .split_whitespace()
                .last()
                .filter(|w| w.contains('@'))?;
            Some((String::new(), word.to_string()))
        })
        .collect()
}

/// The header fields a list bot reads.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Fields {
    /// `Message-ID:` without angle brackets.
    pub message_id: Option<String>,
    /// The message this one answers: `In-Reply-To:`'s first id.
    pub in_reply_to: Option<String>,
    /// `References:`, oldest first, without repeats; at most
    /// [`MAX_REFERENCES`].
    pub references: Vec<String>,
    /// `Subject:`, one clean line.
    pub subject: String,
    /// `From:`'s mailbox.
    pub from: Option<Mailbox>,
    /// `X-Original-From:`: who really sent a message a relay (b4's web
    /// relay, a list rewriting `From:` for DMARC) sent on their behalf.
    pub original_from: Option<Mailbox>,
    /// `Reply-To:`'s mailboxes.
    pub reply_to: Vec<Mailbox>,
    /// `To:`'s mailboxes.
    pub to: Vec<Mailbox>,
    /// `Cc:`'s mailboxes.
    pub cc: Vec<Mailbox>,
    /// `Date:`, seconds since the epoch.
    pub date: Option<i64>,
    /// `List-Id:`'s id (`linux-fsdevel.vger.kernel.org`), or its whole
    /// value when it has no `<…>`.
    pub list_id: Option<String>,
    /// `X-Mailing-List:` (vger's), one clean line.
    pub mailing_list: Option<String>,
    /// `Auto-Submitted:` lower-cased (`auto-generated`, `auto-replied`).
    pub auto_submitted: Option<String>,
    /// `Precedence:` lower-cased (`bulk`, `junk`, `list`).
    pub precedence: Option<String>,
    /// `X-Auto-Response-Suppress:` (Exchange's mark on its automatic
    /// mail), one clean line.
    pub auto_response_suppress: Option<String>,
}

impl Fields {
    /// Reads the fields from parsed headers.
    pub fn read(headers: &[MailHeader<'_>]) -> Fields {
        let first = |name: &str| headers.get_first_header(name);
        let value = |name: &str| first(name).map(|h| h.get_value());
        let line = |name: &str| {
            value(name)
                .map(|v| clean::one_line(&v, MAX_VALUE_CHARS))
                .filter(|v| !v.is_empty())
        };
        let lower = |name: &str| line(name).map(|v| v.to_ascii_lowercase());
        let boxes = |name: &str| {
            headers
                .get_all_headers(name)
                .iter()
                .flat_map(|h| mailboxes(h))
                .take(MAX_RECIPIENTS)
                .collect::<Vec<_>>()
        };
        // Message ids are ASCII and never encoded words: read them raw, so
        // a decoder cannot turn `=?…?=` into brackets.
        let raw_ids = |name: &str| {
            headers
                .get_all_headers(name)
                .iter()
                .flat_map(|h| clean::message_ids(&String::from_utf8_lossy(h.get_value_raw())))
                .collect::<Vec<_>>()
        };
        let list_id = value("List-Id").and_then(|v| {
            clean::message_ids(&v)
                .into_iter()
                .next()
                .or_else(|| Some(clean::one_line(&v, MAX_VALUE_CHARS)).filter(|v| !v.is_empty()))
        });
        Fields {
            message_id: raw_ids("Message-ID").into_iter().next(),
            in_reply_to: raw_ids("In-Reply-To").into_iter().next(),
            references: bounded(dedup(raw_ids("References"))),
            subject: value("Subject")
                .map(|s| clean::one_line(&s, clean::MAX_SUBJECT_CHARS))
                .unwrap_or_default(),
            from: boxes("From").into_iter().next(),
            original_from: boxes("X-Original-From").into_iter().next(),
            reply_to: boxes("Reply-To"),
            to: boxes("To"),
            cc: boxes("Cc"),
            date: value("Date").and_then(|d| mailparse::dateparse(d.trim()).ok()),
            list_id,
            mailing_list: line("X-Mailing-List"),
            auto_submitted: lower("Auto-Submitted"),
            precedence: lower("Precedence"),
            auto_response_suppress: line("X-Auto-Response-Suppress"),
        }
    }

    /// Whether a machine sent the message on its own, so nothing may answer
    /// it: `Auto-Submitted:` other than `no` (RFC 3834), an
    /// `X-Auto-Response-Suppress:` other than `None`, `Precedence: junk`,
    /// or `Precedence: bulk` or `list` on a message that no list carried
    /// (every vger message has `Precedence: bulk` with its `List-Id:`, so
    /// there it says nothing about the sender).
    pub fn is_automatic(&self) -> bool {
        let listed = self.list_id.is_some() || self.mailing_list.is_some();
        self.auto_submitted.as_deref().is_some_and(|v| v != "no")
            || self
                .auto_response_suppress
                .as_deref()
                .is_some_and(|v| !v.eq_ignore_ascii_case("none"))
            || match self.precedence.as_deref() {
                Some("junk") => true,
                Some("bulk" | "list") => !listed,
                _ => false,
            }
    }
}

fn dedup(ids: Vec<String>) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    ids.into_iter()
        .filter(|id| seen.insert(id.clone()))
        .collect()
}

/// The first and the last [`MAX_REFERENCES`]` - 1` ids: the thread's root
/// and the nearest ancestors are what threading needs.
fn bounded(mut ids: Vec<String>) -> Vec<String> {
    if ids.len() > MAX_REFERENCES {
        let tail = ids.split_off(ids.len() - (MAX_REFERENCES - 1));
        ids.truncate(1);
        ids.extend(tail);
    }
    ids
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(raw: &str) -> Fields {
        let (headers, _) = mailparse::parse_headers(raw.as_bytes()).unwrap();
        Fields::read(&headers)
    }

    #[test]
    fn mailboxes_keep_real_addresses_with_clean_names() {
        let f = fields(
            "From: =?UTF-8?q?J=C3=B6rg=0D=0ABcc:?= <jh@example.org>\n\
             To: Mateusz Guzik <mjguzik@gmail.com>,\n Linus Torvalds <torvalds@linux-foundation.org>\n\
             Cc: \"Eric W. Biederman\" <ebiederm@xmission.com>, viro@zeniv.linux.org.uk,\n\
             \tAlexander Viro , list: a@b.org, c@d.org;\n\n",
        );
        let from = f.from.unwrap();
        assert_eq!(
            (from.name.as_str(), from.address.as_str()),
            ("Jörg Bcc:", "jh@example.org")
        );
        assert_eq!(f.to.len(), 2);
        let cc: Vec<&str> = f.cc.iter().map(|m| m.address.as_str()).collect();
        assert_eq!(
            cc,
            [
                "ebiederm@xmission.com",
                "viro@zeniv.linux.org.uk",
                "a@b.org",
                "c@d.org"
            ]
        );
        assert_eq!(f.cc[0].name, "Eric W. Biederman");
        // Encoded words in another charset, and raw Latin-1 bytes.
        let (h, _) = mailparse::parse_headers(
            b"From: =?ISO-8859-1?Q?J=F6rg?= <j@x.org>\nTo: J\xf6rg <k@x.org>\n\n",
        )
        .unwrap();
        let f = Fields::read(&h);
        assert_eq!(f.from.unwrap().name, "Jörg");
        assert_eq!(f.to[0].name, "Jörg");
    }

    #[test]
    fn thread_links_are_read_raw_in_order() {
        let f = fields(
            "Message-ID: <20230808-divers-verehren-02abcc37fe60@brauner>\n\
             In-Reply-To: <b@x> (comment)\nReferences: <a@x>\n <b@x> <a@x>\n\n",
        );
        assert_eq!(
            f.message_id.as_deref(),
            Some("20230808-divers-verehren-02abcc37fe60@brauner")
        );
        assert_eq!(f.in_reply_to.as_deref(), Some("b@x"));
        assert_eq!(f.references, ["a@x", "b@x"]);
        let many: String = (0..300).map(|i| format!(" <{i}@x>")).collect();
        let f = fields(&format!("References:{many}\n\n"));
        assert_eq!(f.references.len(), MAX_REFERENCES);
        assert_eq!(f.references[0], "0@x");
        assert_eq!(f.references.last().unwrap(), "299@x");
    }

    #[test]
    fn machines_are_told_from_list_traffic() {
        let list = fields("Precedence: bulk\nList-Id: <linux-fsdevel.vger.kernel.org>\n\n");
        assert_eq!(
            list.list_id.as_deref(),
            Some("linux-fsdevel.vger.kernel.org")
        );
        assert!(!list.is_automatic());
        assert!(fields("Precedence: bulk\n\n").is_automatic());
        assert!(fields("Auto-Submitted: auto-replied\n\n").is_automatic());
        assert!(!fields("Auto-Submitted: no\n\n").is_automatic());
        assert!(fields("X-Auto-Response-Suppress: All\nList-Id: x\n\n").is_automatic());
        assert!(fields("Precedence: junk\nList-Id: x\n\n").is_automatic());
    }
}
