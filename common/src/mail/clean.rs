//! Values read from list mail made safe to write into another mail's
//! headers. Text is made one clean bounded line by the crate's one
//! sanitiser, [`crate::mail_header`] (re-exported here); addresses are
//! checked by its [`is_address`]; Message-IDs, which it does not know,
//! keep only what RFC 5322 lets a `msg-id` hold.

pub use crate::mail_header::{
    MAX_ADDRESS_LEN, MAX_NAME_CHARS, MAX_SUBJECT_CHARS, breaks_line, display_name, is_address,
    one_line,
};

/// Longest Message-ID kept, in bytes: what still fits RFC 5322's 998
/// octets a line in the longest header line patchperf writes with one
/// id, `In-Reply-To: <id>` (15 octets around it; `References` folds one
/// id a line). Real ones are under 100
/// (`20240806-openfast-v2-1-42da45981811@kernel.org`); a longer one is
/// dropped, never cut, so it cannot collide with a real one, and a
/// message without a usable id is not read.
pub const MAX_MESSAGE_ID_LEN: usize = 998 - "In-Reply-To: <>".len();

/// Most characters of any other header value kept (`List-Id`, a trailer's
/// value, `Auto-Submitted`).
pub const MAX_VALUE_CHARS: usize = 300;

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
