//! Patch series in list mail, assembled as b4 does: messages threaded by
//! Message-ID, `In-Reply-To:` and `References:`; subjects read for version
//! and position (`[PATCH v3 2/5]`, `[PATCH net-next v2 1/4]`,
//! `[RFC PATCH 0/3]`); a cover letter is 0/N, a patch is a message with a
//! diff that is no reply, a lone `[PATCH]` is 1/1. One posting (a cover
//! letter and its patches, or patches 2..N under patch 1, chained or not)
//! is one series version; it is complete when 1..N are all there. Replies,
//! reviews and tags are not patches. The key of a series ([`Series::key`])
//! tells that vN+1 supersedes vN. A posting belongs to the sender of its
//! first message in the thread (the cover letter, else the patch the
//! others answer): a "patch" or cover letter another sender posts into it
//! is not taken, whatever its `Date:` says, and is named in
//! [`Series::ignored`].

mod thread;

use std::collections::{BTreeMap, HashSet};

use super::{Mailbox, Message, header::MAX_REFERENCES};
use crate::mbox::prefix::MAX_STEPS;
use thread::Threads;

/// Most messages of one thread read (the oldest first); a long LKML thread
/// has a few hundred.
pub const MAX_THREAD_MESSAGES: usize = 2_000;

/// Most patches a series may have to be measured: as many as a per-patch
/// comparison has steps.
pub const MAX_PATCHES: u32 = MAX_STEPS as u32;

/// Most participants kept for a reply's Cc.
pub const MAX_PARTICIPANTS: usize = 256;

/// One patch of a series.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchRef {
    /// Its number, 1..=N.
    pub number: u32,
    /// Its Message-ID.
    pub id: String,
    /// Its index in the messages [`assemble`] was given.
    pub index: usize,
}

/// A message that looked like part of a posting but came from another
/// sender than the posting's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ignored {
    /// 0 for a cover letter, else the patch number it claimed.
    pub number: u32,
    /// Its Message-ID.
    pub id: String,
    /// Its sender's address.
    pub sender: String,
}

/// Where the answer to a series goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplyTo {
    /// The Message-ID the answer's `In-Reply-To:` names: the cover letter,
    /// else patch 1 (the single patch).
    pub message_id: String,
    /// The answer's `References:`: the target's own, then the target.
    pub references: Vec<String>,
    /// `Re: ` and the target's subject, one clean line of at most
    /// [`super::clean::MAX_SUBJECT_CHARS`].
    pub subject: String,
}

/// One version of a patch series.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Series {
    /// The thread it was posted in: its root's Message-ID.
    pub thread: String,
    /// The version (`v3`: 3; none: 1).
    pub version: u32,
    /// How many patches it says it has (N of `k/N`).
    pub total: u32,
    /// The cover letter (0/N), when there is one.
    pub cover: Option<PatchRef>,
    /// The patches found, by number.
    pub patches: Vec<PatchRef>,
    /// Numbers of 1..=N not found (empty for a series of more than
    /// [`MAX_PATCHES`], which is never measured).
    pub missing: Vec<u32>,
    /// Whether it says it has more than [`MAX_PATCHES`] patches.
    pub oversized: bool,
    /// The subject of the cover letter, else of the first patch.
    pub subject: String,
    /// The subject's title (without `Re:` and prefixes).
    pub title: String,
    /// Whether the prefix says `RFC`.
    pub rfc: bool,
    /// The prefix's other words (`net-next`, `RESEND`), `PATCH` left out.
    pub tags: Vec<String>,
    /// Who posted it (the sender of the cover letter, else of the first
    /// patch).
    pub author: Option<Mailbox>,
    /// The earliest `Date:` of its messages.
    pub date: Option<i64>,
    /// `base-commit:` of the cover letter, else of patch 1.
    pub base_commit: Option<String>,
    /// `change-id:` of the cover letter, else of patch 1 (b4).
    pub change_id: Option<String>,
    /// What the versions of one series share: `change-id:<sender>:<id>`
    /// when b4 wrote one, else `title:<sender>:<title>` (lower case, white
    /// space collapsed). The sender is in both, so nobody else's posting
    /// can pass for (and supersede) someone's next version.
    pub key: String,
    /// Where an answer goes.
    pub reply_to: ReplyTo,
    /// Cover letters and patches posted into this posting by someone
    /// other than its sender, not taken.
    pub ignored: Vec<Ignored>,
    /// Senders, real authors, To and Cc of the cover letter and patches,
    /// without repeats (by address, any case); at most
    /// [`MAX_PARTICIPANTS`].
    pub participants: Vec<Mailbox>,
}

impl Series {
    /// Whether patches 1..=N are all there (and N is measurable).
    pub fn is_complete(&self) -> bool {
        self.missing.is_empty() && !self.oversized && !self.patches.is_empty()
    }

    /// Whether this version replaces `older`: the same series (key), a
    /// later version.
    pub fn supersedes(&self, older: &Series) -> bool {
        self.key == older.key && self.version > older.version
    }

    /// The patches as the mbox `git am` applies and a comparison measures
    /// ([`super::patch::series_mbox`]); `messages` is what [`assemble`]
    /// was given.
    pub fn mbox(&self, messages: &[Message]) -> String {
        super::patch::series_mbox(self.patches.iter().map(|p| &messages[p.index]))
    }
}

/// Where a posting starts.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Anchor {
    /// At this message of the set.
    Message(usize),
    /// At a message the set lacks (a cover letter not arrived): its id,
    /// with the version and N of the patches answering it.
    Absent(String, u32, u32),
}

/// What a message is to series assembly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// 0/N of version v.
    Cover { version: u32, total: u32 },
    /// k/N of version v.
    Patch {
        version: u32,
        number: u32,
        total: u32,
    },
}

impl Role {
    fn of(m: &Message) -> Option<Role> {
        let s = m.subject();
        // A patch without an author is no patch `git am` takes.
        if s.reply || m.author().is_none() {
            return None;
        }
        let version = s.version.unwrap_or(1).max(1);
        match s.position {
            Some((0, total)) if total > 0 => Some(Role::Cover { version, total }),
            _ if !m.has_diff => None,
            Some((0, _)) => None,
            Some((number, total)) => Some(Role::Patch {
                version,
                number,
                // `[PATCH 6/5]` grows the series, as b4 reads it.
                total: total.max(number),
            }),
            None => Some(Role::Patch {
                version,
                number: 1,
                total: 1,
            }),
        }
    }

    /// Whether `other`, an ancestor, can be of the same posting: the same
    /// version and N, and not a patch of the same number (a `[PATCH]`
    /// answering a `[PATCH]` is a posting of its own).
    fn same_posting(self, other: Role) -> bool {
        let same_number = matches!(
            (self, other),
            (Role::Patch { number: a, .. }, Role::Patch { number: b, .. }) if a == b
        );
        self.version_and_total() == other.version_and_total() && !same_number
    }

    fn version_and_total(self) -> (u32, u32) {
        match self {
            Role::Cover { version, total } | Role::Patch { version, total, .. } => (version, total),
        }
    }
}

/// The series versions in `messages` (the messages of one list, one thread
/// or many), oldest first. At most [`MAX_THREAD_MESSAGES`] messages are
/// read (the oldest by `Date:`); messages without a Message-ID, and later
/// copies of one id, are not.
pub fn assemble(messages: &[Message]) -> Vec<Series> {
    let mut order: Vec<usize> = (0..messages.len()).collect();
    order.sort_by_key(|&i| (messages[i].fields.date.unwrap_or(i64::MAX), i));
    order.truncate(MAX_THREAD_MESSAGES);
    let read: HashSet<usize> = order.iter().copied().collect();
    let threads = Threads::new(messages);
    let roles: Vec<Option<Role>> = (0..messages.len())
        .map(|i| {
            (read.contains(&i) && threads.is_indexed(i))
                .then(|| Role::of(&messages[i]))
                .flatten()
        })
        .collect();
    // Each cover letter and patch goes to where its posting starts: the
    // first message of it in the set, or, for patches of a series whose
    // cover letter the set lacks, that cover letter's id.
    let mut postings: BTreeMap<Anchor, Vec<usize>> = BTreeMap::new();
    for &i in &order {
        let Some(role) = roles[i] else { continue };
        let start = threads.posting_start(i, |p| roles[p].is_some_and(|r| role.same_posting(r)));
        let absent_parent = messages[start]
            .parent()
            .filter(|p| threads.get(p).is_none());
        let anchor = match (roles[start], absent_parent) {
            (Some(Role::Patch { version, total, .. }), Some(parent)) if total > 1 => {
                Anchor::Absent(parent.to_string(), version, total)
            }
            _ => Anchor::Message(start),
        };
        postings.entry(anchor).or_default().push(i);
    }
    let mut series: Vec<Series> = postings
        .into_iter()
        .filter_map(|(anchor, members)| {
            // The posting is its first message's sender's: the message the
            // others answer, found by the thread, not by `Date:`, which any
            // sender writes. Without it in the set, the earliest member's.
            let first = match anchor {
                Anchor::Message(start) => start,
                Anchor::Absent(..) => members[0],
            };
            let owner = messages[first].sender().map(Mailbox::key);
            build(messages, &threads, &roles, &members, owner.as_deref())
        })
        .collect();
    series.sort_by(|a, b| (a.date, &a.thread, a.version).cmp(&(b.date, &b.thread, b.version)));
    series
}

/// One series of `members` (cover letter and patches of one posting,
/// oldest first), of those `owner` (a sender's address key) sent; none
/// when `owner` sent none of them.
fn build(
    messages: &[Message],
    threads: &Threads<'_>,
    roles: &[Option<Role>],
    members: &[usize],
    owner: Option<&str>,
) -> Option<Series> {
    let mut ignored = Vec::new();
    let members: Vec<usize> = members
        .iter()
        .copied()
        .filter(|&i| {
            let sender = messages[i].sender().map(Mailbox::key);
            let own = owner.is_none() || sender.as_deref() == owner;
            if !own {
                ignored.push(Ignored {
                    number: match roles[i] {
                        Some(Role::Patch { number, .. }) => number,
                        _ => 0,
                    },
                    id: messages[i].id().unwrap_or_default().to_string(),
                    sender: sender.unwrap_or_default(),
                });
            }
            own
        })
        .collect();
    let members = &members[..];
    let start = *members.first()?;
    let at = |i: usize, number: u32| PatchRef {
        number,
        id: messages[i].id().unwrap_or_default().to_string(),
        index: i,
    };
    let (version, mut total) = roles[start].map_or((1, 1), Role::version_and_total);
    let mut cover = None;
    let mut by_number: BTreeMap<u32, PatchRef> = BTreeMap::new();
    // Members come oldest first: of two copies of one number the first
    // posted counts.
    for &i in members {
        match roles[i] {
            Some(Role::Cover { .. }) => {
                cover.get_or_insert_with(|| at(i, 0));
            }
            Some(Role::Patch {
                number, total: t, ..
            }) => {
                total = total.max(t);
                by_number.entry(number).or_insert_with(|| at(i, number));
            }
            None => {}
        }
    }
    let oversized = total > MAX_PATCHES;
    let missing = if oversized {
        Vec::new()
    } else {
        (1..=total).filter(|n| !by_number.contains_key(n)).collect()
    };
    let patches: Vec<PatchRef> = by_number.into_values().collect();
    let lead = cover
        .as_ref()
        .or(patches.first())
        .map_or(start, |p| p.index);
    let first_patch = patches
        .iter()
        .find(|p| p.number == 1)
        .map(|p| &messages[p.index]);
    let from_lead_or_first =
        |f: fn(&Message) -> Option<String>| f(&messages[lead]).or_else(|| first_patch.and_then(f));
    let subject = messages[lead].fields.subject.clone();
    let parsed = messages[lead].subject();
    let author = messages[lead].sender().cloned();
    let title = parsed.title.clone();
    let change_id = from_lead_or_first(|m| m.change_id.clone());
    let sender = author.as_ref().map(Mailbox::key).unwrap_or_default();
    let key = match &change_id {
        Some(id) => format!("change-id:{sender}:{id}"),
        None => format!(
            "title:{sender}:{}",
            title
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .to_lowercase()
        ),
    };
    let own: Vec<usize> = cover.iter().chain(&patches).map(|p| p.index).collect();
    Some(Series {
        thread: threads.root(start).unwrap_or_default(),
        version,
        total,
        date: own.iter().filter_map(|&i| messages[i].fields.date).min(),
        base_commit: from_lead_or_first(|m| m.base_commit.clone()),
        change_id,
        key,
        reply_to: reply_to(&messages[lead]),
        participants: participants(own.iter().map(|&i| &messages[i])),
        ignored,
        rfc: parsed.tags.iter().any(|t| t.eq_ignore_ascii_case("rfc")),
        tags: parsed
            .tags
            .into_iter()
            .filter(|t| !t.eq_ignore_ascii_case("patch") && !t.eq_ignore_ascii_case("rfc"))
            .collect(),
        cover,
        patches,
        missing,
        oversized,
        subject,
        title,
        author,
    })
}

fn reply_to(target: &Message) -> ReplyTo {
    let id = target.id().unwrap_or_default().to_string();
    let mut references = target.fields.references.clone();
    if references.last() != Some(&id) {
        references.push(id.clone());
    }
    if references.len() > MAX_REFERENCES {
        references.drain(1..references.len() - (MAX_REFERENCES - 1));
    }
    ReplyTo {
        message_id: id,
        references,
        subject: super::clean::one_line(
            &format!("Re: {}", target.fields.subject),
            super::clean::MAX_SUBJECT_CHARS,
        ),
    }
}

fn participants<'a>(messages: impl Iterator<Item = &'a Message> + Clone) -> Vec<Mailbox> {
    let mut seen = HashSet::new();
    let senders = messages
        .clone()
        .flat_map(|m| m.sender().into_iter().chain(m.in_body.from.as_ref()));
    let to = messages.clone().flat_map(|m| &m.fields.to);
    let cc = messages.flat_map(|m| &m.fields.cc);
    senders
        .chain(to)
        .chain(cc)
        .filter(|m| seen.insert(m.key()))
        .take(MAX_PARTICIPANTS)
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests;
