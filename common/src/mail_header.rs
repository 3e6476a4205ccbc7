//! Text from outside that ends up in a mail: a commit's author and subject
//! read from a repository, a tree's Cc list, and (for the mailing-list
//! bot) names and subjects read from mail. Everything that goes into a
//! header is made one clean line here (no CR, LF, NUL or other control
//! character: a bare CR in a name once became a `Bcc:` header), addresses
//! are checked to the shape an SMTP relay takes, and a mail's text gets
//! one kind of line ending (a bare CR must never reach SMTP `DATA`: `\r.\r\n`
//! is the SMTP-smuggling shape). Non-ASCII text stays as it is; the mail
//! builder writes it as RFC 2047 encoded words. A [`Mailbox`] read from
//! mail is here too, below both `mail` and `mbox` that read one.

/// Most characters of a name kept for a header (a longer one is cut, with
/// `…`).
pub const MAX_NAME_CHARS: usize = 128;

/// Most characters of a subject kept for a header.
pub const MAX_SUBJECT_CHARS: usize = 300;

/// Longest address (RFC 5321's path limit less the angle brackets).
pub const MAX_ADDRESS_LEN: usize = 254;

/// `name` as one clean line for a header's display name: control
/// characters, line and paragraph separators and bidirectional overrides
/// become spaces, runs of white space one space, `<`, `>` and `"` (which
/// would end the name early in `Name <address>`) are dropped, and the
/// result is cut to [`MAX_NAME_CHARS`].
pub fn display_name(name: &str) -> String {
    let kept: String = name
        .chars()
        .filter(|c| !matches!(c, '<' | '>' | '"'))
        .collect();
    one_line(&kept, MAX_NAME_CHARS)
}

/// `subject` as one clean line for a `Subject:` header (or a line of text
/// about a commit), cut to [`MAX_SUBJECT_CHARS`].
pub fn subject(subject: &str) -> String {
    one_line(subject, MAX_SUBJECT_CHARS)
}

/// `text` on one line of at most `max_chars` characters: whatever could
/// break a line or hide text becomes a space, white space is collapsed and
/// trimmed.
pub fn one_line(text: &str, max_chars: usize) -> String {
    let line = text
        .split(breaks_line)
        .flat_map(str::split_whitespace)
        .collect::<Vec<_>>()
        .join(" ");
    if line.chars().count() <= max_chars {
        return line;
    }
    let mut cut: String = line.chars().take(max_chars.saturating_sub(1)).collect();
    cut.truncate(cut.trim_end().len());
    cut.push('…');
    cut
}

/// Characters a header must not carry: controls (C0, DEL, C1: CR, LF, NUL,
/// NEL among them), Unicode's line and paragraph separators, and the
/// bidirectional overrides and isolates that reorder what a reader sees.
pub fn breaks_line(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// The text of a mail with one kind of line ending: `\r\n` and a bare `\r`
/// become `\n` (the sender writes every line with CRLF), NUL is dropped.
pub fn body(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' => {
                if chars.peek() == Some(&'\n') {
                    chars.next();
                }
                out.push('\n');
            }
            '\0' => {}
            c => out.push(c),
        }
    }
    out
}

/// Checks that `address` is one a report is mailed to: `local@domain`, all
/// ASCII, at most [`MAX_ADDRESS_LEN`] bytes; the local part a dot-atom
/// (letters, digits and ``!#$%&'*+/=?^_`{|}~-``, dots between them); the
/// domain a DNS name of at least two labels whose last has a letter. An
/// address literal (`root@[127.0.0.1]`), a quoted local part, a bare host
/// (`root@localhost`) and anything with space or control characters are
/// refused. On refusal, says why.
pub fn check_address(address: &str) -> Result<(), String> {
    if address.is_empty() {
        return Err("it is empty".into());
    }
    if address.len() > MAX_ADDRESS_LEN {
        return Err(format!("it is longer than {MAX_ADDRESS_LEN} bytes"));
    }
    if !address.is_ascii() {
        return Err("it is not ASCII".into());
    }
    let Some((local, domain)) = address.rsplit_once('@') else {
        return Err("it has no `@`".into());
    };
    let atext = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+/=?^_`{|}~-".contains(&b);
    if local.is_empty()
        || local.len() > 64
        || local
            .split('.')
            .any(|atom| atom.is_empty() || !atom.bytes().all(atext))
    {
        return Err(format!(
            "`{local}` is not a plain local part (letters, digits, dots between them and \
             !#$%&'*+/=?^_`{{|}}~-)"
        ));
    }
    let labels: Vec<&str> = domain.split('.').collect();
    let label_ok = |l: &&str| {
        (1..=63).contains(&l.len())
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
    };
    let top_ok = labels
        .last()
        .is_some_and(|t| t.bytes().any(|b| b.is_ascii_alphabetic()));
    if labels.len() < 2 || !labels.iter().all(label_ok) || !top_ok {
        return Err(format!(
            "`{domain}` is not a domain name (an address literal or a bare host name is not \
             mailed)"
        ));
    }
    Ok(())
}

/// Whether [`check_address`] accepts `address`.
pub fn is_address(address: &str) -> bool {
    check_address(address).is_ok()
}

/// What two addresses are compared by: the same key, one recipient. The
/// domain is case-insensitive (DNS); so is the local part here, although
/// RFC 5321 lets a host tell `LIST@` from `list@`: we found no mail host
/// kernel people use that does, while two copies of every report to one
/// list is what treating them apart costs. Only dot-atom local parts are
/// mailed ([`check_address`]), so nothing quoted is folded.
pub fn address_key(address: &str) -> String {
    address.to_ascii_lowercase()
}

/// A name-addr as git prints an author (`Name <address>`) and as a header
/// carries it, or a bare address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameAddr {
    /// The display name, when there is one.
    pub name: Option<String>,
    /// The address (not checked: see [`check_address`]).
    pub address: String,
}

impl NameAddr {
    /// Reads `Name <address>` (the name may be quoted) or a bare address;
    /// `None` when there is no address in it. The name is made a clean
    /// line ([`display_name`]).
    pub fn parse(s: &str) -> Option<NameAddr> {
        let s = s.trim();
        let Some(open) = s.rfind('<') else {
            return (!s.is_empty()).then(|| NameAddr {
                name: None,
                address: s.to_string(),
            });
        };
        let address = s[open + 1..].strip_suffix('>')?.trim();
        if address.is_empty() {
            return None;
        }
        Some(NameAddr::new(&s[..open], address))
    }

    /// A name-addr of `name` (made a clean line; none when nothing is
    /// left) and `address` as given.
    pub fn new(name: &str, address: &str) -> NameAddr {
        let name = display_name(name.trim().trim_matches('"'));
        NameAddr {
            name: (!name.is_empty()).then_some(name),
            address: address.to_string(),
        }
    }

    /// An author as read from a repository: the name made a clean line,
    /// the address kept when [`check_address`] takes it, and otherwise
    /// kept only as far as it can be shown (no white space, controls or
    /// angle brackets; never mailed, since it still fails the check).
    pub fn from_repository(name: &str, address: &str) -> NameAddr {
        let address = address.trim();
        let address = if is_address(address) {
            address.to_string()
        } else {
            address
                .chars()
                .filter(|&c| !(c.is_whitespace() || breaks_line(c) || matches!(c, '<' | '>')))
                .take(MAX_ADDRESS_LEN)
                .collect()
        };
        NameAddr::new(name, &address)
    }

    /// `Name <address>` (or the bare address), as stored and read back by
    /// [`NameAddr::parse`].
    pub fn header(&self) -> String {
        match &self.name {
            Some(name) => format!("{name} <{}>", self.address),
            None => self.address.clone(),
        }
    }
}

/// A mailbox: display name and address.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Mailbox {
    /// The display name (`Jörg Hacker`), one clean line; empty when the
    /// header has none.
    pub name: String,
    /// The address (`jh@example.org`).
    pub address: String,
}

impl Mailbox {
    /// `Name <address>`, or the bare address when there is no name.
    pub fn header(&self) -> String {
        if self.name.is_empty() {
            self.address.clone()
        } else {
            format!("{} <{}>", self.name, self.address)
        }
    }

    /// What two mailboxes are compared by: one recipient, one key
    /// ([`address_key`]).
    pub fn key(&self) -> String {
        address_key(&self.address)
    }

    /// The mailbox as the mail builder takes it.
    pub fn name_addr(&self) -> NameAddr {
        NameAddr::new(&self.name, &self.address)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_with_a_bare_cr_stays_one_line() {
        let a = NameAddr::parse("Mallory\rBcc: evil@evil.example <mallory@example.org>").unwrap();
        assert_eq!(a.name.as_deref(), Some("Mallory Bcc: evil@evil.example"));
        assert_eq!(a.address, "mallory@example.org");
        assert_eq!(
            display_name("a\r\n\0b\u{85}c\u{2028}d\u{202e}e"),
            "a b c d e"
        );
        assert_eq!(display_name("  \"Ma, Yu\" "), "Ma, Yu");
        assert_eq!(display_name("x <y> z"), "x y z");
    }

    #[test]
    fn authors_are_read_as_git_prints_them() {
        let a = NameAddr::parse("Yu Ma <yu.ma@intel.com>").unwrap();
        assert_eq!(a.name.as_deref(), Some("Yu Ma"));
        assert_eq!(a.address, "yu.ma@intel.com");
        assert_eq!(a.header(), "Yu Ma <yu.ma@intel.com>");
        let a = NameAddr::parse("\"Ma, Yu\" <yu.ma@intel.com>").unwrap();
        assert_eq!(a.name.as_deref(), Some("Ma, Yu"));
        assert_eq!(NameAddr::parse(&a.header()), Some(a));
        let bare = NameAddr::parse("kh@example.org").unwrap();
        assert_eq!((bare.name, bare.address.as_str()), (None, "kh@example.org"));
        assert_eq!(NameAddr::parse("Someone <kh@example.org"), None);
        assert_eq!(NameAddr::parse("Someone <>"), None);
        assert_eq!(NameAddr::parse(" "), None);
    }

    #[test]
    fn an_unmailable_author_address_is_kept_only_as_far_as_it_can_be_shown() {
        let a = NameAddr::from_repository("M", "m@x.org\r\nBcc: e@e.org");
        assert_eq!(a.address, "m@x.orgBcc:e@e.org");
        assert!(!is_address(&a.address));
        assert_eq!(NameAddr::parse(&a.header()), Some(a));
        let a = NameAddr::from_repository("Kernel Hacker", " kh@example.org ");
        assert_eq!(a.header(), "Kernel Hacker <kh@example.org>");
    }

    #[test]
    fn long_names_and_subjects_are_cut() {
        let long = "word ".repeat(100);
        let s = subject(&long);
        assert_eq!(s.chars().count(), MAX_SUBJECT_CHARS);
        assert!(s.ends_with('…'));
        let n = display_name(&"x".repeat(1000));
        assert_eq!(n.chars().count(), MAX_NAME_CHARS);
        // Found by the fuzz target: a word filling the bound exactly, then
        // another, once came out one character over it.
        assert_eq!(one_line("abcd efg", 4), "abc…");
        assert_eq!(one_line("abcd", 4), "abcd");
        assert_eq!(
            subject("fs: smuggle\r.\r\nMAIL FROM:<x@y.z>"),
            "fs: smuggle . MAIL FROM:<x@y.z>"
        );
    }

    #[test]
    fn a_mail_text_has_one_line_ending() {
        assert_eq!(body("a\r.\r\nb\rc\nd\0"), "a\n.\nb\nc\nd");
        assert_eq!(body("\r\r\n"), "\n\n");
    }

    #[test]
    fn addresses_are_what_a_relay_takes() {
        for good in [
            "viro@zeniv.linux.org.uk",
            "linux-fsdevel@vger.kernel.org",
            "a.b+tag@x-y.example",
            "kh@example.org",
            "a@b.c",
        ] {
            assert_eq!(check_address(good), Ok(()), "{good}");
        }
        for bad in [
            "",
            "kh",
            "kh@localhost",
            "root@[127.0.0.1]",
            "root@127.0.0.1",
            "a b@example.org",
            "<kh@example.org>",
            "@example.org",
            "a@.org",
            "a@org.",
            "a@b",
            "a@b@c.d",
            ".a@b.org",
            "a..b@c.org",
            "\"a\"@b.org",
            "a@-b.org",
            "a@b.org\nBcc: x@y.z",
            "é@b.org",
        ] {
            assert!(check_address(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn addresses_differing_in_case_are_one_recipient() {
        assert_eq!(
            address_key("LIST@Vger.Kernel.org"),
            address_key("list@vger.kernel.org")
        );
    }
}
