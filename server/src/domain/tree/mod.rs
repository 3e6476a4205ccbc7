//! Tracked trees: a branch patchperf measures by itself. Adding a tree
//! notes its head; each new head (seen by the watcher's poll, or at once
//! through the push hook) is measured against the last one tested as a
//! git range comparison, one step per commit (see [`crate::domain::comparison::submit`]), its
//! commits appended to the tree's tested line. Its kernels are built over
//! the tree's anchor with the commits since carried as patches
//! ([`carried`]), so a new head costs one incremental build. A tree that
//! names no workloads measures each head on the workload map's for the
//! files its commits change; a head whose commits change only files no
//! workload runs is not measured, and the tree says why (`push_note`)
//! until a later head is. What a final comparison adds to the tree's
//! histories is [`history`]'s; the change points found in them,
//! [`change_points`]', and marking one
//! acknowledged or expected, [`triage`]'s.

pub mod change_points;
pub mod history;
pub mod triage;

pub use self::change_points::BISECTIONS_PER_DAY;
pub use self::history::record_history;

use std::time::Duration;

use chrono::{DateTime, Utc};
use patchperf_common::api::{
    ComparisonCreateRequest, ComparisonSubmission, PushResponse, Setup, TreeSubmission, TreeView,
};
use patchperf_common::protocol::BaseSource;

use crate::db::trees::{NewTree, TreeRow};
use crate::domain::Context;
use crate::domain::comparison::{self, Carried, Origin};
use crate::domain::context::workers::{Done, Worker};
use crate::domain::{comparison::range, comparison::submit, machines};
use crate::{Error, db};

/// Most commits a tree's kernels carry over its anchor: each rides on
/// both sides of every later test (and is rebuilt where it touches what
/// the new head touches), so past these the anchor moves up, at the cost
/// of one full build (ccache-warm).
pub const MAX_CARRIED: usize = 32;

/// How often the watcher wakes.
const WAKE: Duration = Duration::from_secs(15);

/// How long a branch goes unlooked-at before the watcher asks its remote.
const POLL_EVERY: Duration = Duration::from_secs(300);

/// Adds the tree `req` describes, added by token `created_by`, at its
/// branch's head now; its id.
pub async fn create(ctx: &Context, created_by: i64, req: &TreeSubmission) -> Result<i64, Error> {
    let asked = &req.setup;
    let machine = match &asked.machine {
        Some(name) => Some(machines::named(&ctx.db, name, asked.backend).await?),
        None => None,
    };
    // A history keeps one run length: a length left to the mode is fixed
    // now, from the mode named or the named machine's best.
    let mode = machines::measures_in(machine.as_ref(), asked.backend.map(|b| b.as_str()));
    let setup = Setup {
        params: asked.params.resolve(mode).into(),
        ..asked.clone()
    };
    let machine_id = machine.map(|m| m.id);
    if let Some(pool) = &asked.pool {
        machines::check_pool(&ctx.db, pool, asked.backend).await?;
    }
    let head = range::head(ctx, &req.url, &req.branch).await?;
    let mut tx = ctx.db.begin().await?;
    let new = NewTree {
        name: &req.name,
        url: &req.url,
        branch: &req.branch,
        setup: &setup,
        machine_id,
        min_hours: i32::try_from(req.min_hours).unwrap_or(i32::MAX),
        cc: &req.cc,
        webhook_url: req.webhook_url.as_deref(),
        head: &head.sha,
        created_by,
    };
    let id = db::trees::insert(&mut tx, &new).await?.ok_or_else(|| {
        Error::WrongState(format!("a tree named `{}` is tracked already", req.name))
    })?;
    db::trees::append_commit(
        &mut tx,
        id,
        &head.sha,
        &head.subject,
        &head.author,
        committed_at(head.committed_at),
    )
    .await?;
    tx.commit().await?;
    Ok(id)
}

fn committed_at(seconds: Option<i64>) -> Option<DateTime<Utc>> {
    seconds.and_then(|s| DateTime::from_timestamp(s, 0))
}

/// Tree `id`, or a 404.
pub async fn find(ctx: &Context, id: i64) -> Result<TreeRow, Error> {
    let mut conn = ctx.db.acquire().await?;
    db::trees::find(&mut conn, id, false)
        .await?
        .ok_or_else(|| Error::NotFound(format!("no tree {id}")))
}

/// Every tracked tree, oldest first.
pub async fn list(ctx: &Context) -> Result<Vec<TreeRow>, Error> {
    let mut conn = ctx.db.acquire().await?;
    let mut trees = Vec::new();
    for id in db::trees::ids(&mut *conn).await? {
        // One removed meanwhile is not listed.
        trees.extend(db::trees::find(&mut conn, id, false).await?);
    }
    Ok(trees)
}

/// Looks at the tree's branch now: a head not tested yet is queued as a
/// range comparison against the last one tested, unless the tree's
/// schedule says it is too soon, or nothing in it is what a workload runs
/// (a tree without workloads: its commits are noted, carried by the next
/// head's kernels, and the head is not measured). Everything git is asked
/// (the head, the range, the carried commits) is asked before any row is
/// locked, and the comparison and the tree's new tested head are stored in
/// one transaction: a server killed halfway leaves the push to do again,
/// never done twice.
pub async fn poll(ctx: &Context, id: i64) -> Result<PushResponse, Error> {
    let tree = {
        let mut conn = ctx.db.acquire().await?;
        let tree = db::trees::find(&mut conn, id, false)
            .await?
            .ok_or_else(|| Error::NotFound(format!("no tree {id}")))?;
        // Noted first, so that a remote that fails is asked again only
        // after the poll interval, not at every wake of the watcher.
        db::trees::polled(&mut conn, id).await?;
        tree
    };
    let head = range::head(ctx, &tree.url, &tree.branch).await?;
    let answer = |comparison_id, status: String| PushResponse {
        tree_id: id,
        head: head.sha.clone(),
        comparison_id,
        status,
    };
    if head.sha == tree.tested_commit {
        return Ok(answer(None, "no new commit".into()));
    }
    if let Some(next) = next_allowed(&tree) {
        return Ok(answer(
            None,
            format!(
                "new head waits: at most one test every {} hours, the next from {next}",
                tree.min_hours
            ),
        ));
    }
    // A forced push left the last tested head off the branch: as 0-day
    // does, the new head is measured against the merge base, and the
    // kernels are built over it (nothing is carried).
    let fork = range::fork_point(ctx, &tree.url, &tree.tested_commit, &head.sha).await?;
    let from = fork
        .as_ref()
        .map_or(tree.tested_commit.as_str(), |f| f.sha.as_str());
    let mut skipped: Option<String> = None;
    let req = ComparisonSubmission::try_from(request(&tree, from, &head.sha))
        .map_err(|e| Error::Internal(format!("tree {id}'s stored settings: {e}")))?;
    let carried = match fork {
        Some(_) => None,
        None => carried(ctx, &tree).await,
    };
    let prepared = match submit::prepare(
        ctx,
        &req,
        tree.created_by,
        Origin::TreeHead { tree_id: id },
        carried,
    )
    .await
    {
        Ok(prepared) => Some(prepared),
        // A tree that names no workloads, a push the map gives none.
        Err(Error::NotMeasured(why)) if tree.asked.workloads.is_empty() => {
            skipped = Some(why);
            None
        }
        Err(e) => return Err(e),
    };
    let range = match &prepared {
        Some(p) => p.range.clone(),
        None => Some(
            range::read(
                ctx,
                &tree.url,
                &format!("{from}..{}", head.sha),
                ctx.config.body_limit,
            )
            .await?,
        ),
    };

    let mut tx = ctx.db.begin().await?;
    let locked = db::trees::find(&mut tx, id, true)
        .await?
        .ok_or_else(|| Error::NotFound(format!("no tree {id}")))?;
    // Another poll (this server's hook, or another server) took this head
    // while git was asked.
    if locked.tested_commit != tree.tested_commit || locked.anchor_commit != tree.anchor_commit {
        tx.commit().await?;
        return Ok(answer(
            None,
            format!(
                "queued meanwhile by another poll (tested head now {})",
                locked.tested_commit
            ),
        ));
    }
    let (comparison_id, anchor) = match &prepared {
        Some(prepared) => {
            let comparison_id =
                comparison::queue(&mut tx, &prepared.order, ctx.config.max_attempts).await?;
            let anchor = match &prepared.order.carried {
                Some(Carried::New { over, .. } | Carried::Stored { over, .. }) => over.clone(),
                None => from.to_string(),
            };
            (Some(comparison_id), anchor)
        }
        // Its commits are carried by the next head's kernels, as a
        // measured head's are.
        None if fork.is_some() => (None, from.to_string()),
        None => (None, tree.anchor_commit.clone()),
    };
    let rewritten = match &fork {
        Some(f) => {
            let note = rewrite_note(&tree.tested_commit, &head.sha, f);
            let fork = db::trees::TreeCommit {
                position: 0,
                commit_sha: f.sha.clone(),
                subject: f.subject.clone(),
                author: f.author.clone(),
                committed_at: committed_at(f.committed_at),
            };
            db::trees::rewind(&mut tx, id, &fork, &note).await?;
            tracing::info!(tree = id, %note, "branch rewritten");
            format!("{note}; ")
        }
        None => String::new(),
    };
    let mut commits = 0;
    for c in range.iter().flat_map(|r| r.commits.iter()) {
        db::trees::append_commit(
            &mut tx,
            id,
            &c.sha,
            &c.subject,
            &c.author,
            committed_at(c.committed_at),
        )
        .await?;
        commits += 1;
    }
    db::trees::tested(&mut tx, id, &head.sha, &anchor, skipped.as_deref()).await?;
    tx.commit().await?;
    let plural = if commits == 1 { "" } else { "s" };
    let Some(comparison_id) = comparison_id else {
        let why = skipped.unwrap_or_default();
        tracing::info!(tree = id, commits, %why, "new head not measured");
        return Ok(answer(
            None,
            format!("{rewritten}{commits} new commit{plural} {why}"),
        ));
    };
    ctx.jobs_changed.notify_waiters();
    tracing::info!(
        tree = id,
        comparison = comparison_id,
        commits,
        "new head queued"
    );
    Ok(answer(
        Some(comparison_id),
        format!("{rewritten}queued comparison {comparison_id} of {commits} new commit{plural}"),
    ))
}

/// The commits from the tree's anchor to its last tested head, over which
/// the next head's kernels are built: the runner has the last head's
/// kernel in its cache under exactly that series and builds the new one
/// incrementally on the anchor's build tree. `None` (nothing carried yet,
/// more than [`MAX_CARRIED`] commits, or an anchor no longer on the
/// branch's first-parent line after a forced push) builds the range over
/// its own start, which becomes the anchor.
async fn carried(ctx: &Context, tree: &TreeRow) -> Option<Carried> {
    if tree.anchor_commit == tree.tested_commit {
        return None;
    }
    let spelled = format!("{}..{}", tree.anchor_commit, tree.tested_commit);
    match range::read(ctx, &tree.url, &spelled, ctx.config.body_limit / 2).await {
        Ok(r) if r.commits.len() + r.empty.len() <= MAX_CARRIED => Some(Carried::New {
            over: r.from,
            mbox: r.mbox,
        }),
        Ok(r) => {
            tracing::info!(
                tree = tree.id,
                commits = r.commits.len() + r.empty.len(),
                "the anchor moves up to the last tested head"
            );
            None
        }
        Err(e) => {
            tracing::info!(tree = tree.id, error = %e, "the anchor moves up to the last tested head");
            None
        }
    }
}

/// When the schedule lets the next test start, if that is later than now.
fn next_allowed(tree: &TreeRow) -> Option<DateTime<Utc>> {
    let last = tree.tested_at?;
    let next = last + chrono::Duration::hours(i64::from(tree.min_hours));
    (tree.min_hours > 0 && next > Utc::now()).then_some(next)
}

/// What a tree says after its branch was rewritten from `tested` to
/// `head`, forking at `fork`.
fn rewrite_note(tested: &str, head: &str, fork: &range::RangeCommit) -> String {
    let short = |s: &str| s.chars().take(12).collect::<String>();
    format!(
        "the branch was rewritten at {}: {} is no longer on it; {} is measured against the \
         merge base {} (\"{}\")",
        Utc::now().format("%Y-%m-%d %H:%M UTC"),
        short(tested),
        short(head),
        short(&fork.sha),
        fork.subject
    )
}

/// The range comparison of `head` against `from`: the tree's last tested
/// head, or the merge base with it after a rewrite.
fn request(tree: &TreeRow, from: &str, head: &str) -> ComparisonCreateRequest {
    ComparisonCreateRequest {
        base: BaseSource::Git {
            url: tree.url.clone(),
            commit: from.to_string(),
        },
        mbox: String::new(),
        aa: false,
        per_patch: false,
        range: Some(format!("{from}..{head}")),
        setup: tree.setup(),
        order_seed: None,
    }
}

/// The tree as the API shows it.
pub fn view(ctx: &Context, t: TreeRow) -> TreeView {
    TreeView {
        id: t.id,
        page_url: ctx.config.link(&format!("/trees/{}", t.id)),
        name: t.name,
        url: t.url,
        branch: t.branch,
        workloads: t.asked.0.workloads,
        params: t.params.0,
        runs_per_side: t.runs_per_side,
        min_hours: t.min_hours,
        cc: t.cc,
        webhook_url: t.webhook_url,
        tested_commit: t.tested_commit,
        tested_at: t.tested_at,
        polled_at: t.polled_at,
        rewrite_note: t.rewrite_note,
        push_note: t.push_note,
    }
}

/// Starts the `tree-watcher` worker: every [`WAKE`] it looks at the
/// branches not looked at for [`POLL_EVERY`] (one tree that fails is logged
/// and the others go on), then writes the history of finished comparisons;
/// a finished comparison wakes it sooner.
pub fn spawn_watcher(ctx: &Context) -> tokio::task::JoinHandle<()> {
    Worker::every("tree-watcher", WAKE)
        .woken_by(&ctx.comparison_settled)
        .spawn(ctx, |ctx| async move {
            let ids = db::trees::due(&ctx.db, POLL_EVERY.as_secs_f64()).await?;
            for &id in &ids {
                if let Err(e) = poll(&ctx, id).await {
                    tracing::warn!(tree = id, error = %e, "looking at the branch failed");
                }
            }
            let written = history::record_history(&ctx).await?;
            Ok(Done::Handled(ids.len() + written))
        })
}
