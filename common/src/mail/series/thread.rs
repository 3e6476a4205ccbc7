//! The threads of a set of messages: each message's parent (by
//! `In-Reply-To:`, else the last `References:` id), the postings that
//! belong together, and each thread's root. Cycles and missing parents
//! (a reply to a message not in the set) are normal input and end a walk.

use std::collections::HashMap;

use super::super::Message;

/// Parent links between the messages of one set, by index.
#[derive(Debug)]
pub struct Threads<'a> {
    messages: &'a [Message],
    by_id: HashMap<&'a str, usize>,
}

impl<'a> Threads<'a> {
    /// Indexes `messages` by Message-ID; of two messages with one id the
    /// first counts (as b4 keeps the first it reads).
    pub fn new(messages: &'a [Message]) -> Threads<'a> {
        let mut by_id = HashMap::new();
        for (i, m) in messages.iter().enumerate() {
            if let Some(id) = m.id() {
                by_id.entry(id).or_insert(i);
            }
        }
        Threads { messages, by_id }
    }

    /// The index of the message with `id`, if the set has it.
    pub fn get(&self, id: &str) -> Option<usize> {
        self.by_id.get(id).copied()
    }

    /// Whether message `i` is the one its id names (not a later duplicate).
    pub fn is_indexed(&self, i: usize) -> bool {
        self.messages[i].id().and_then(|id| self.get(id)) == Some(i)
    }

    /// The index of message `i`'s parent, when the set has it.
    pub fn parent(&self, i: usize) -> Option<usize> {
        self.messages[i]
            .parent()
            .and_then(|p| self.get(p))
            .filter(|&p| p != i)
    }

    /// The topmost ancestor of `i` for which `same` holds along the whole
    /// way up (`i` itself when its parent is not `same`): where a posting
    /// (a cover letter and its patches, chained or not) starts.
    pub fn posting_start(&self, i: usize, same: impl Fn(usize) -> bool) -> usize {
        let mut at = i;
        // Each step goes to another message; more steps than messages is a
        // cycle.
        for _ in 0..self.messages.len() {
            match self.parent(at) {
                Some(p) if same(p) && p != i => at = p,
                _ => break,
            }
        }
        at
    }

    /// The id of the thread `i` is in ([`Message::thread_root`]).
    pub fn root(&self, i: usize) -> Option<String> {
        self.messages[i].thread_root().map(str::to_string)
    }
}
