//! Mailing-list mail as a list bot reads it (issue 25): a message as it
//! arrives ([`Message::read`]: bounded, MIME and charsets decoded, headers
//! made clean), an mbox split into messages ([`split_mbox`]), the patch of
//! a message as `git am` takes it ([`patch`]), and the patch series of a
//! thread as b4 assembles them ([`series`]). Pure: the server stores,
//! mirrors and replies; this decides what the mail says.
//!
//! `crate::mbox` stays the home of a series as git applies it (the text a
//! comparison measures); what is built here ends there.

pub mod body;
pub mod clean;
pub mod header;
pub mod message;
pub mod mime;
pub mod patch;
pub mod series;
pub mod split;

pub use body::{InBody, Trailer};
pub use header::Fields;
pub use message::{MAX_MESSAGE_BYTES, Message, READ_EDITION};
pub use series::{Series, assemble};
pub use split::{MAX_MBOX_MESSAGES, split_mbox};

// Read here and by `mbox` alike, so it sits below both.
pub use crate::mail_header::Mailbox;

use crate::Error;

#[cfg(test)]
mod fuzz;
#[cfg(test)]
mod seeds;
