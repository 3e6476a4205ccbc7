//! An mbox split into its messages, as `POST /api/v1/lists/{id}/messages`
//! and the tests receive them: mboxrd (public-inbox, lore, `b4 mbox`) and
//! mboxo alike, `>From ` lines unescaped. Bounded: at most
//! [`MAX_MBOX_MESSAGES`] messages; each is then read with
//! [`super::Message::read`], which caps its size.

use super::Error;
use crate::mbox::is_separator;

/// Most messages one mbox may hold: a long LKML thread has a few hundred.
pub const MAX_MBOX_MESSAGES: usize = 10_000;

/// The raw messages of `mbox`. Messages start at separator lines (`From `,
/// a sender and a date, at the start or after a blank line: the rule of
/// [`crate::mbox::split`]); the blank line the mbox adds before each
/// separator is taken off, and a line of `>`s and `From ` loses one `>`
/// (mboxrd's escape; mboxo only escapes `From `, which this undoes too).
/// Text that does not start with a separator is one message, kept as it
/// is. Messages that are only white space are left out.
pub fn split_mbox(mbox: &[u8]) -> Result<Vec<Vec<u8>>, Error> {
    if !is_separator(first_line(mbox)) {
        let blank = mbox.iter().all(u8::is_ascii_whitespace);
        return Ok(if blank {
            Vec::new()
        } else {
            vec![mbox.to_vec()]
        });
    }
    let mut messages: Vec<Vec<u8>> = Vec::new();
    let mut current: Option<Vec<u8>> = None;
    let mut previous_blank = true;
    for line in mbox.split_inclusive(|&b| b == b'\n') {
        if previous_blank && is_separator(line) {
            if let Some(done) = current.take() {
                push(&mut messages, done)?;
            }
            current = Some(Vec::new());
            previous_blank = false;
            continue;
        }
        previous_blank = line.iter().all(u8::is_ascii_whitespace);
        if let Some(text) = current.as_mut() {
            let quotes = line.iter().take_while(|&&b| b == b'>').count();
            if quotes > 0 && line[quotes..].starts_with(b"From ") {
                text.extend_from_slice(&line[1..]);
            } else {
                text.extend_from_slice(line);
            }
        }
    }
    if let Some(done) = current {
        push(&mut messages, done)?;
    }
    Ok(messages)
}

fn first_line(text: &[u8]) -> &[u8] {
    text.split(|&b| b == b'\n').next().unwrap_or_default()
}

fn push(messages: &mut Vec<Vec<u8>>, mut text: Vec<u8>) -> Result<(), Error> {
    // The blank line that separates a message from the next separator.
    if text.ends_with(b"\n\n") {
        text.pop();
    } else if text.ends_with(b"\r\n\r\n") {
        text.truncate(text.len() - 2);
    }
    if text.iter().all(u8::is_ascii_whitespace) {
        return Ok(());
    }
    if messages.len() == MAX_MBOX_MESSAGES {
        return Err(Error::MailTooMany {
            max: MAX_MBOX_MESSAGES,
        });
    }
    messages.push(text);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_mboxrd_is_split_and_unescaped() {
        let mbox = b"From mboxrd@z Thu Jan  1 00:00:00 1970\nSubject: a\n\n>From the start\n\
                     >>From quoted\n> From a quote\n\nFrom mboxrd@z Thu Jan  1 00:00:00 1970\n\
                     Subject: b\n\nbody\n";
        let got = split_mbox(mbox).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(
            String::from_utf8_lossy(&got[0]),
            "Subject: a\n\nFrom the start\n>From quoted\n> From a quote\n"
        );
        assert_eq!(String::from_utf8_lossy(&got[1]), "Subject: b\n\nbody\n");
    }

    #[test]
    fn one_raw_message_is_kept_as_it_is() {
        let raw = b"Subject: x\n\n>From stays\n";
        assert_eq!(split_mbox(raw).unwrap(), vec![raw.to_vec()]);
        assert!(split_mbox(b" \n").unwrap().is_empty());
        // A prose line starting "From " is not a separator.
        let mbox = b"From git@z Thu Jan  1 00:00:00 1970\nSubject: x\n\nFrom here on it is slow.\n";
        assert_eq!(split_mbox(mbox).unwrap().len(), 1);
    }

    #[test]
    fn too_many_messages_are_refused() {
        let one = "From git@z Thu Jan  1 00:00:00 1970\nSubject: x\n\nb\n\n";
        let mbox = one.repeat(MAX_MBOX_MESSAGES + 1);
        assert!(split_mbox(mbox.as_bytes()).is_err());
        let mbox = one.repeat(3);
        assert_eq!(split_mbox(mbox.as_bytes()).unwrap().len(), 3);
    }
}
