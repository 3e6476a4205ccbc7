//! Values read from mail made safe to write into another mail's headers:
//! one line (no CR, LF, NUL or other control character, no line or
//! paragraph separator, no bidirectional override), bounded in length.
//! Message-IDs keep only what RFC 5322 lets a `msg-id` hold.
//!
//! `one_line` has the contract of `mail_header::one_line` on the `harden`
//! branch (the sanitiser for repository data); when both are on main they
//! are one function.

/// Longest Message-ID kept, in bytes: RFC 5322's line limit. Real ones are
/// under 100 (`20240806-openfast-v2-1-42da45981811@kernel.org`); a longer
/// one is dropped, never cut, so it cannot collide with a real one.
pub const MAX_MESSAGE_ID_LEN: usize = 998;

/// Longest address kept (RFC 5321's path limit less the angle brackets).
pub const MAX_ADDRESS_LEN: usize = 254;

/// Most characters of a display name kept.
pub const MAX_NAME_CHARS: usize = 128;

/// Most characters of a subject kept.
pub const MAX_SUBJECT_CHARS: usize = 300;

/// Most characters of any other header value kept (`List-Id`, a trailer's
/// value, `Auto-Submitted`).
pub const MAX_VALUE_CHARS: usize = 300;

/// `text` on one line of at most `max_chars` characters: whatever could
/// break a line or hide text becomes a space, runs of white space one
/// space, trimmed; a longer line is cut and ends in `…`.
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

/// Characters no header may carry: controls (C0, DEL, C1: CR, LF, NUL and
/// NEL among them), Unicode's line and paragraph separators, and the
/// bidirectional overrides and isolates that reorder what a reader sees.
pub fn breaks_line(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// A display name as one clean line: [`one_line`], without the `<`, `>`
/// and `"` that would end it early in `Name <address>`.
pub fn display_name(name: &str) -> String {
    let kept: String = name
        .chars()
        .filter(|c| !matches!(c, '<' | '>' | '"'))
        .collect();
    one_line(kept.trim(), MAX_NAME_CHARS)
}

/// `id` (without its angle brackets) when it can be a Message-ID: printable
/// ASCII without white space or angle brackets, not empty, at most
/// [`MAX_MESSAGE_ID_LEN`] bytes.
pub fn message_id(id: &str) -> Option<String> {
    let id = id.trim();
    let ok = !id.is_empty()
        && id.len() <= MAX_MESSAGE_ID_LEN
        && id
            .bytes()
            .all(|b| b.is_ascii_graphic() && b != b'<' && b != b'>');
    ok.then(|| id.to_string())
}

/// Every `<id>` in a `References:` or `In-Reply-To:` value, in order; a
/// value without angle brackets is read as white-space separated ids (what
/// some mailers write). Ids that [`message_id`] refuses are left out.
pub fn message_ids(value: &str) -> Vec<String> {
    if !value.contains('<') {
        return value.split_whitespace().filter_map(message_id).collect();
    }
    let mut ids = Vec::new();
    let mut rest = value;
    while let Some(open) = rest.find('<') {
        let after = &rest[open + 1..];
        let Some(close) = after.find('>') else {
            break;
        };
        ids.extend(message_id(&after[..close]));
        rest = &after[close + 1..];
    }
    ids
}

/// Whether `address` can be written as a mailbox's address: `local@domain`
/// with both sides not empty, printable ASCII without white space, angle
/// brackets, commas or quotes, at most [`MAX_ADDRESS_LEN`] bytes. Whether
/// a relay takes it is the sender's check; this one keeps what is not an
/// address at all (a name whose `<…>` was lost) out of recipient lists.
pub fn is_address(address: &str) -> bool {
    let Some((local, domain)) = address.rsplit_once('@') else {
        return false;
    };
    !local.is_empty()
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && address.len() <= MAX_ADDRESS_LEN
        && !local.contains('@')
        && address
            .bytes()
            .all(|b| b.is_ascii_graphic() && !b"<>,\"()[];:\\".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_values_are_one_bounded_line() {
        assert_eq!(
            one_line("fs: smuggle\r.\r\nMAIL FROM:<x@y.z>\0 \u{2028}x", 100),
            "fs: smuggle . MAIL FROM:<x@y.z> x"
        );
        assert_eq!(one_line("a\u{202e}b\u{85}c", 10), "a b c");
        let cut = one_line(&"word ".repeat(100), 20);
        assert_eq!(cut.chars().count(), 20);
        assert!(cut.ends_with('…'));
        assert_eq!(display_name(" \"Ma, Yu\" <x>"), "Ma, Yu x");
    }

    #[test]
    fn message_ids_are_read_in_order_and_bad_ones_dropped() {
        assert_eq!(message_ids("<a@b> <c@d>\n\t<e@f>"), ["a@b", "c@d", "e@f"]);
        assert_eq!(message_ids("a@b c@d"), ["a@b", "c@d"]);
        assert_eq!(message_ids("<x y@z> <ok@z> <unclosed@z"), ["ok@z"]);
        // Gnus-style: an id with a comment after it.
        assert_eq!(
            message_ids(
                "<87o7jidqlg.fsf@email.froward.int.ebiederm.org> (Eric W. Biederman's message)"
            ),
            ["87o7jidqlg.fsf@email.froward.int.ebiederm.org"]
        );
        assert_eq!(message_id(&"a".repeat(MAX_MESSAGE_ID_LEN + 1)), None);
        assert_eq!(message_id("a\r\nBcc: x@y"), None);
    }

    #[test]
    fn only_addresses_count_as_addresses() {
        for good in [
            "viro@zeniv.linux.org.uk",
            "devnull+a.b.gmail.com@kernel.org",
        ] {
            assert!(is_address(good), "{good}");
        }
        for bad in [
            "Alexander Viro",
            "a@b",
            "@x.org",
            "a b@x.org",
            "a@x.org\r\n",
            "<a@x.org>",
            "a@.org",
        ] {
            assert!(!is_address(bad), "{bad:?}");
        }
    }
}
