//! Whose series a list neither measures nor answers: a robot's
//! (`Auto-Submitted`, `Precedence: bulk`) and patchperf's own. Asked when a
//! series is queued and again when it would be answered.

use patchperf_common::mail::{Message, Series};
use patchperf_common::mail_header::{self, NameAddr};

/// Why a series is neither measured nor answered: it is our own mail
/// (sent from `from`, the server's `--mail-from`), or a robot's.
pub fn not_ours_to_answer(
    messages: &[Message],
    s: &Series,
    from: Option<&str>,
) -> Option<&'static str> {
    let anchor = messages
        .iter()
        .find(|m| m.id() == Some(s.reply_to.message_id.as_str()))?;
    if anchor.is_automatic() {
        return Some("it was sent by a robot (Auto-Submitted or bulk)");
    }
    let ours = from
        .and_then(NameAddr::parse)
        .map(|a| mail_header::address_key(&a.address));
    let sender = anchor
        .sender()
        .map(|m| mail_header::address_key(&m.address));
    if ours.is_some() && ours == sender {
        return Some("it is our own mail");
    }
    None
}
