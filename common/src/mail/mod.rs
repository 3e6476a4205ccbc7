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
pub use message::{MAX_MESSAGE_BYTES, Message};
pub use series::{Series, assemble};
pub use split::{MAX_MBOX_MESSAGES, split_mbox};

use crate::Error;

/// A mailbox: display name and address.
#[derive(Debug, Clone, PartialEq, Eq)]
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
    /// ([`crate::mail_header::address_key`]).
    pub fn key(&self) -> String {
        crate::mail_header::address_key(&self.address)
    }

    /// The mailbox as the mail builder takes it.
    pub fn name_addr(&self) -> crate::mail_header::NameAddr {
        crate::mail_header::NameAddr::new(&self.name, &self.address)
    }
}

#[cfg(test)]
mod fuzz;
#[cfg(test)]
mod seeds;
