//! Mail in. A list's messages come two ways: its public-inbox archive,
//! mirrored like a kernel tree (a v2 archive is one git repository per
//! epoch, `<archive>/git/0.git`, `1.git`, …; v1 is one repository at the
//! archive's URL), each commit adding one raw message as the blob `m`; or
//! raw mail handed to the API (one message or an mbox). Either way each
//! message is read at the door ([`super::messages::keep`]: bounded, MIME
//! decoded), stored raw and as read with the thread it belongs to, and its
//! thread marked for [`super::series`] to assemble again. A message that
//! cannot be read is refused with why and the others go on.

use patchperf_common::api::MessagesTaken;
use patchperf_common::mail::{MAX_MESSAGE_BYTES, split_mbox};

use super::manifest;
use super::messages::keep;
use crate::db::lists::{Epoch, ListRow};
use crate::domain::Context;
use crate::git::{Mirror, Object};
use crate::{Error, db};

/// Most messages read from one epoch in one round; the rest are read by
/// the next round, which starts at once (a list following an archive's
/// history reads it in such steps, its threads assembled and other lists
/// answered between them).
const MAX_PER_ROUND: usize = 10_000;

/// Most refusals listed in an answer.
const MAX_REFUSALS: usize = 20;

/// Messages stored on one connection before it is given back.
const INTAKE_BATCH: usize = 200;

/// Stores the raw mail `body` (one message, or an mbox) on list `list_id`.
pub async fn take(ctx: &Context, list_id: i64, body: &[u8]) -> Result<MessagesTaken, Error> {
    let raws = split_mbox(body).map_err(|e| Error::Invalid(format!("the mbox: {e}")))?;
    if raws.is_empty() {
        return Err(Error::Invalid("no message in the body".into()));
    }
    let mut taken = MessagesTaken {
        taken: 0,
        known: 0,
        refused: Vec::new(),
    };
    // A connection a batch, given back between batches: a large mbox
    // shares the pool with claims and pages instead of holding a
    // connection until its last message.
    for (b, batch) in raws.chunks(INTAKE_BATCH).enumerate() {
        let mut conn = ctx.db.acquire().await?;
        for (k, raw) in batch.iter().enumerate() {
            let i = b * INTAKE_BATCH + k;
            match keep(&mut conn, list_id, raw).await? {
                Ok(true) => taken.taken += 1,
                Ok(false) => taken.known += 1,
                Err(why) if taken.refused.len() < MAX_REFUSALS => {
                    taken.refused.push(format!("message {}: {why}", i + 1));
                }
                Err(_) => {}
            }
        }
    }
    if taken.taken > 0 {
        ctx.mail_arrived.notify_one();
    }
    Ok(taken)
}

/// What one read of an archive did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Read {
    /// Messages stored.
    pub stored: usize,
    /// Whether it stopped at a round's end with messages left: the list is
    /// catching up (on its history, or after an outage).
    pub more: bool,
}

/// Reads what is new in list `list`'s archive: each known epoch from the
/// commit read last, then any epoch after the newest. The failure is
/// noted on the list too.
pub async fn read_archive(ctx: &Context, list: &ListRow) -> Result<Read, Error> {
    read_archive_within(ctx, list, ctx.config.list_read_timeout).await
}

/// [`read_archive`] given up after `limit`, its git commands killed; what
/// was stored stays, and the next read goes on from there.
pub async fn read_archive_within(
    ctx: &Context,
    list: &ListRow,
    limit: std::time::Duration,
) -> Result<Read, Error> {
    let mut notes = Vec::new();
    let mut more = false;
    let read = read_epochs(ctx, list, &mut notes, &mut more);
    let result = match tokio::time::timeout(limit, read).await {
        Ok(result) => result,
        Err(_) => Err(Error::Unavailable {
            message: format!(
                "reading the archive took longer than {} s (a remote that answers too \
                 slowly); the next read goes on from where this one stopped",
                limit.as_secs()
            ),
            retry_after: Some(60),
        }),
    };
    // What went wrong, else what the read had to work around (a rewritten
    // epoch), is the list's word until its next read.
    let said = match &result {
        Err(e) => Some(e.to_string()),
        Ok(_) => (!notes.is_empty()).then(|| notes.join("; ")),
    };
    // A read that stopped at a round's end is not a poll: the list stays
    // due, and the next round, started at once, reads on.
    db::lists::polled(&ctx.db, list.id, said.as_deref(), !more).await?;
    if more {
        ctx.mail_arrived.notify_one();
    }
    result.map(|stored| Read { stored, more })
}

/// Reads the epochs that can still grow, and on into new ones; `more`
/// when an epoch has messages left for the next round (no later epoch is
/// read before those).
async fn read_epochs(
    ctx: &Context,
    list: &ListRow,
    notes: &mut Vec<String>,
    more: &mut bool,
) -> Result<usize, Error> {
    let Some(archive) = list.archive_url.as_deref() else {
        return Ok(0);
    };
    let archive = archive.trim_end_matches('/');
    let mut epochs = db::lists::epochs(&ctx.db, list.id).await?;
    if epochs.is_empty() {
        epochs = start(ctx, list, archive).await?;
    }
    let manifest = match manifest::read(ctx, archive).await {
        Ok(m) => m,
        Err(e) => {
            notes.push(format!("{e}; the epochs were asked of git"));
            None
        }
    };
    let mut stored = 0;
    loop {
        let newest = epochs.last().expect("at least the first epoch").epoch;
        for e in &mut epochs {
            // Older epochs are full: only the newest two can still grow
            // (a message may land in the old one while the new one starts).
            if e.epoch + 1 < newest {
                continue;
            }
            let now = manifest.as_ref().and_then(|m| m.fingerprint(e.epoch));
            if now.is_some() && now == e.fingerprint.as_deref() {
                continue; // unchanged since it was read to its head
            }
            stored += read_epoch(ctx, list.id, e, notes, more).await?;
            if *more {
                return Ok(stored);
            }
            if let Some(f) = now {
                db::lists::read_to_head(&ctx.db, list.id, e.epoch, f).await?;
                e.fingerprint = Some(f.to_string());
            }
        }
        let last = epochs.pop().expect("at least the first epoch");
        let listed = manifest
            .as_ref()
            .map(|m| m.fingerprint(last.epoch + 1).is_some());
        // A manifest that does not list the next epoch: there is none yet
        // (nothing is asked of git); without a manifest git is asked.
        if listed == Some(false) {
            return Ok(stored);
        }
        let Some(next) = next_epoch(ctx, archive, &last).await else {
            return Ok(stored);
        };
        db::lists::read_up_to(&ctx.db, list.id, next.epoch, &next.url, None).await?;
        epochs = vec![last, next];
    }
}

/// Where reading a newly followed archive starts: at its first message
/// when the list asked for its history, else after its newest (what is
/// posted from now on). Stored, so the next round goes on from there.
async fn start(ctx: &Context, list: &ListRow, archive: &str) -> Result<Vec<Epoch>, Error> {
    let first = first_epoch(ctx, archive).await?;
    if list.read_history {
        db::lists::read_up_to(&ctx.db, list.id, first.epoch, &first.url, None).await?;
        return Ok(vec![first]);
    }
    let mut newest = first;
    while let Some(next) = next_epoch(ctx, archive, &newest).await {
        newest = next;
    }
    let mirror = ctx.git.open(&newest.url, &[]).await?;
    let head = mirror.resolve("HEAD").await.ok();
    drop(mirror);
    db::lists::read_up_to(&ctx.db, list.id, newest.epoch, &newest.url, head.as_deref()).await?;
    newest.last_commit = head;
    Ok(vec![newest])
}

/// The epoch after `last` when the archive has one, its mirror cloned and
/// kept for reading: v1 is one repository, v2 starts a new epoch at about
/// 1 GB.
async fn next_epoch(ctx: &Context, archive: &str, last: &Epoch) -> Option<Epoch> {
    if last.url == archive {
        return None;
    }
    let url = format!("{archive}/git/{}.git", last.epoch + 1);
    let mut mirror = ctx.git.open(&url, &["HEAD"]).await.ok()?;
    mirror.keep();
    Some(Epoch {
        epoch: last.epoch + 1,
        url,
        last_commit: None,
        fingerprint: None,
    })
}

/// The archive's first epoch: `git/0.git` of a v2 archive, else the
/// archive itself (v1). Neither answering is the error of the v2 URL.
async fn first_epoch(ctx: &Context, archive: &str) -> Result<Epoch, Error> {
    let v2 = format!("{archive}/git/0.git");
    let url = match ctx.git.open(&v2, &["HEAD"]).await {
        Ok(mut mirror) => {
            mirror.keep();
            v2
        }
        Err(e) => match ctx.git.open(archive, &["HEAD"]).await {
            Ok(mut mirror) => {
                mirror.keep();
                archive.to_string()
            }
            Err(_) => return Err(e),
        },
    };
    Ok(Epoch {
        epoch: 0,
        url,
        last_commit: None,
        fingerprint: None,
    })
}

/// Stores the messages of epoch `e` added since its last commit read,
/// oldest first, at most [`MAX_PER_ROUND`] (`more` when it left some);
/// notes how far it read, in the database and in `e`.
async fn read_epoch(
    ctx: &Context,
    list_id: i64,
    e: &mut Epoch,
    notes: &mut Vec<String>,
    more: &mut bool,
) -> Result<usize, Error> {
    let mut mirror = ctx.git.open(&e.url, &["HEAD"]).await?;
    mirror.keep();
    let range = match &e.last_commit {
        Some(last) => match place_in(&mirror, last).await? {
            Place::Ahead => format!("{last}..HEAD"),
            // A purge rewrites an epoch from the purged message on: what
            // came after the fork is read again (known messages are
            // known by their Message-ID).
            Place::Rewritten(fork) => {
                notes.push(format!(
                    "epoch {} was rewritten (a purge?) after {}: read again from there",
                    e.epoch,
                    short(&fork)
                ));
                format!("{fork}..HEAD")
            }
            // The commit read last is gone (the history rewritten and the
            // mirror cloned again): go on from the epoch's head.
            Place::Lost => {
                let head = mirror.resolve("HEAD").await?;
                notes.push(format!(
                    "epoch {} was rewritten and the commit read last ({}) is gone: reading \
                     goes on from its head {}; messages posted in between were not read",
                    e.epoch,
                    short(last),
                    short(&head)
                ));
                db::lists::read_up_to(&ctx.db, list_id, e.epoch, &e.url, Some(&head)).await?;
                e.last_commit = Some(head);
                return Ok(0);
            }
        },
        None => "HEAD".to_string(),
    };
    let listed = mirror
        .git(
            &["rev-list", "--reverse", "--end-of-options", &range],
            64 << 20,
            "the archive's commits",
        )
        .await?;
    let commits: Vec<&str> = listed.lines().take(MAX_PER_ROUND).collect();
    *more = listed.lines().nth(MAX_PER_ROUND).is_some();
    if commits.is_empty() {
        if e.last_commit.is_none() {
            db::lists::read_up_to(&ctx.db, list_id, e.epoch, &e.url, None).await?;
        }
        return Ok(0);
    }
    // One git for all the round's messages, and one transaction a batch:
    // a first read of a lore list is a hundred thousand messages.
    let mut blobs = mirror.batch().await?;
    let mut stored = 0;
    for batch in commits.chunks(INTAKE_BATCH) {
        let mut tx = ctx.db.begin().await?;
        for commit in batch {
            let spec = format!("{commit}:m");
            match blobs
                .blob(&spec, MAX_MESSAGE_BYTES, "the archived message")
                .await?
            {
                Object::Blob(raw) => match keep(&mut tx, list_id, &raw).await? {
                    Ok(new) => stored += usize::from(new),
                    Err(why) => tracing::info!(%commit, %why, "an archived message is refused"),
                },
                // No `m`: the commit removes a message (public-inbox's
                // purge).
                Object::Missing => {}
                other => {
                    tracing::info!(%commit, found = ?other, "an archived message is unreadable")
                }
            }
        }
        let last = batch.last().copied();
        db::lists::read_up_to(&mut *tx, list_id, e.epoch, &e.url, last).await?;
        tx.commit().await?;
        e.last_commit = last.map(str::to_string);
    }
    blobs.close().await?;
    Ok(stored)
}

/// Where the commit read last stands in an epoch's history now.
enum Place {
    /// An ancestor of the head: read on from it.
    Ahead,
    /// Not an ancestor (the history was rewritten); the newest commit both
    /// histories share, where the rewrite began.
    Rewritten(String),
    /// Unknown to the mirror, or sharing nothing with the head.
    Lost,
}

async fn place_in(mirror: &Mirror, last: &str) -> Result<Place, Error> {
    let object = format!("{last}^{{commit}}");
    let known = mirror
        .git(
            &["cat-file", "-t", "--end-of-options", &object],
            64,
            "the commit read last",
        )
        .await
        .is_ok();
    if !known {
        return Ok(Place::Lost);
    }
    let fork = mirror
        .git(
            &["merge-base", "--end-of-options", last, "HEAD"],
            256,
            "where the epoch was rewritten",
        )
        .await
        .ok()
        .map(|out| out.trim().to_string())
        .filter(|f| !f.is_empty());
    Ok(match fork {
        Some(f) if f == last => Place::Ahead,
        Some(f) => Place::Rewritten(f),
        None => Place::Lost,
    })
}

fn short(commit: &str) -> &str {
    commit.get(..12).unwrap_or(commit)
}
