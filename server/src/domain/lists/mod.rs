//! Mailing lists followed, as 0-day follows them: patchperf reads what is
//! posted ([`intake`]: a public-inbox archive mirrored and read commit by
//! commit, or raw mail handed in), assembles each thread's patch series as
//! b4 does and measures every complete one patch by patch ([`series`]),
//! and answers in the thread ([`reply`]). One worker, `list-reader`, does
//! all three each round; a push hook or mail handed in wakes it.

pub mod intake;
pub mod manifest;
pub mod messages;
pub mod reply;
pub mod senders;
pub mod series;

use patchperf_common::credentials::without_credentials;
use std::time::Duration;

use patchperf_common::api::{ListSubmission, ListView, SeriesListQuery, SeriesState, SeriesView};
use patchperf_common::comparison::ComparisonStatus;
use patchperf_common::report::{culprit, importance, summary};

use crate::db::comparisons::ComparisonRow;
use crate::db::list_series::{Filter, SeriesRow};
use crate::db::lists::ListRow;
use crate::domain::context::workers::{Done, Worker};
use crate::domain::{Context, machines, report};
use crate::{Error, db};

/// How often the reader looks for archives due, waiting series and
/// finished comparisons.
const WAKE: Duration = Duration::from_secs(30);

/// Adds the list `req` describes; its id.
pub async fn create(ctx: &Context, created_by: i64, req: &ListSubmission) -> Result<i64, Error> {
    let tree_id = match &req.tree {
        Some(name) => Some(
            db::trees::id_by_name(&ctx.db, name)
                .await?
                .ok_or_else(|| Error::Invalid(format!("no tracked tree is named {name:?}")))?,
        ),
        None => None,
    };
    if let Some(name) = &req.machine {
        machines::named(&ctx.db, name, req.backend).await?;
    }
    if let Some(pool) = &req.pool {
        machines::check_pool(&ctx.db, pool, req.backend).await?;
    }
    let mut conn = ctx.db.acquire().await?;
    let id = db::lists::insert(&mut conn, req, tree_id, created_by)
        .await?
        .ok_or_else(|| Error::WrongState(format!("a list is already named {:?}", req.name)))?;
    drop(conn);
    // The archive is read at once: a mistyped URL shows on the list's page
    // in seconds, not after a poll interval.
    ctx.mail_arrived.notify_one();
    Ok(id)
}

/// List `id`.
pub async fn find(ctx: &Context, id: i64) -> Result<ListRow, Error> {
    db::lists::all(&ctx.db, Some(id))
        .await?
        .pop()
        .ok_or_else(|| Error::NotFound(format!("no list {id}")))
}

/// Every list, by name.
pub async fn all(ctx: &Context) -> Result<Vec<ListRow>, Error> {
    Ok(db::lists::all(&ctx.db, None).await?)
}

/// Removes list `id` with its messages and series; their comparisons stay.
pub async fn delete(ctx: &Context, id: i64) -> Result<(), Error> {
    if db::lists::delete(&ctx.db, id).await? {
        Ok(())
    } else {
        Err(Error::NotFound(format!("no list {id}")))
    }
}

/// Reads list `id`'s archive now (its push hook), then does what the new
/// messages call for; how many messages were new.
pub async fn push(ctx: &Context, id: i64) -> Result<usize, Error> {
    let list = find(ctx, id).await?;
    if list.archive_url.is_none() {
        return Err(Error::Invalid(format!(
            "list {id} has no archive to read: hand its mail to /api/v1/lists/{id}/messages"
        )));
    }
    // A request's read is bounded tighter than the reader's own: the hook
    // is told to come back, and the reader goes on in the background.
    let taken =
        match intake::read_archive_within(ctx, &list, ctx.config.list_read_timeout / 10).await {
            Ok(read) => read.stored,
            Err(e) => {
                ctx.mail_arrived.notify_one();
                return Err(e);
            }
        };
    ctx.mail_arrived.notify_one();
    Ok(taken)
}

/// The list as anyone may read it: its URLs without the credentials they
/// may carry (the API shows the archive's whole to a ci or admin token).
pub fn view(ctx: &Context, l: ListRow) -> ListView {
    let base_url = without_credentials(&l.base_url);
    let base = match &l.tree_name {
        Some(tree) => format!("the head of tree {tree} ({base_url} {})", l.base_branch),
        None => format!("the head of {base_url} {}", l.base_branch),
    };
    ListView {
        id: l.id,
        page_url: ctx.config.link(&format!("/lists/{}", l.id)),
        name: l.name,
        address: l.address,
        archive_url: l.archive_url.as_deref().map(without_credentials),
        read_history: l.read_history,
        base,
        paths: l.paths,
        workload_map: l.workload_map.0,
        workloads: l.workloads,
        runs_per_side: l.runs_per_side,
        cc_list: l.cc_list,
        cc_thread: l.cc_thread,
        report_improvements: l.report_improvements,
        wait_minutes: l.wait_minutes,
        poll_minutes: l.poll_minutes,
        max_in_flight: l.max_in_flight,
        daily_cap: l.daily_cap,
        polled_at: l.polled_at,
        poll_error: l.poll_error,
        messages: l.messages,
    }
}

/// Series versions as `q` asks, newest first.
pub async fn series_list(ctx: &Context, q: &SeriesListQuery) -> Result<Vec<SeriesView>, Error> {
    let limit = i64::from(q.limit.unwrap_or(50).clamp(1, 500));
    let filter = Filter {
        list_id: q.list,
        state: q.state,
        ..Filter::default()
    };
    let rows = db::list_series::list(&ctx.db, &filter, limit).await?;
    Ok(rows.into_iter().map(|r| series_view(ctx, r)).collect())
}

/// Every version of `row`'s series on its list, newest first.
pub async fn versions(ctx: &Context, row: &SeriesRow) -> Result<Vec<SeriesView>, Error> {
    let filter = Filter {
        list_id: Some(row.list_id),
        key: Some(&row.series_key),
        ..Filter::default()
    };
    let rows = db::list_series::list(&ctx.db, &filter, 100).await?;
    Ok(rows.into_iter().map(|r| series_view(ctx, r)).collect())
}

/// Series version `id`.
pub async fn series_find(ctx: &Context, id: i64) -> Result<SeriesRow, Error> {
    db::list_series::find(&ctx.db, id)
        .await?
        .ok_or_else(|| Error::NotFound(format!("no series {id}")))
}

/// What a queued series' comparison runs now and about how long is left,
/// once a job of it, of its steps or of the calibration before it left
/// the queue: its page says "measuring", not "queued".
pub async fn measuring(ctx: &Context, row: &SeriesRow) -> Result<Option<String>, Error> {
    if row.state != SeriesState::Queued {
        return Ok(None);
    }
    let Some(c) = comparison(ctx, row.comparison_id).await? else {
        return Ok(None);
    };
    let jobs = db::jobs::for_comparison(&ctx.db, c.id).await?;
    crate::domain::jobs::waiting::progress(&ctx.db, &c, &jobs).await
}

/// The comparison `id` names, if there is one.
async fn comparison(ctx: &Context, id: Option<i64>) -> Result<Option<ComparisonRow>, Error> {
    match id {
        Some(id) => Ok(db::comparisons::find(&ctx.db, id).await?),
        None => Ok(None),
    }
}

/// The comparison of the version before `row`, if both exist: what vN+1's
/// measuring and answer look back at.
pub(super) async fn previous_comparison(
    ctx: &Context,
    db: impl sqlx::PgExecutor<'_>,
    row: &SeriesRow,
) -> Result<Option<(SeriesRow, ComparisonRow)>, Error> {
    let Some(previous) = row.previous_id else {
        return Ok(None);
    };
    let Some(prev) = db::list_series::find(db, previous).await? else {
        return Ok(None);
    };
    Ok(comparison(ctx, prev.comparison_id)
        .await?
        .map(|c| (prev, c)))
}

/// What a measured series' page says first: its comparison's most
/// important report in a sentence (change, interval, q, δ), why it moved,
/// the patch that moved it, and where its reply is in the list's archive.
#[derive(Debug, Clone, Default)]
pub struct SeriesAnswer {
    /// `+99.1% of will-it-scale.per_process_ops on fstatat-empty · … (97.5%
    /// interval …)`, led by the verdict in words.
    pub sentence: Option<(String, String)>,
    /// Why it moved ([`patchperf_common::report::explain`]).
    pub why: Option<String>,
    /// `patch 1/2 “…”`.
    pub moved_by: Option<String>,
    /// The reply in the list's archive (public-inbox: `{archive}/{id}/`).
    pub reply_url: Option<String>,
}

/// The answer of series `row` ([`SeriesAnswer`]), once its comparison is
/// done; the reply's link once it was sent to a list with an archive.
pub async fn answer_of(ctx: &Context, row: &SeriesRow) -> Result<SeriesAnswer, Error> {
    let mut answer = SeriesAnswer::default();
    if let (Some(reply), Some(list)) = (
        row.reply_message_id.as_deref(),
        db::lists::all(&ctx.db, Some(row.list_id)).await?.pop(),
    ) {
        // In the archive only when the list was copied; the page is
        // anyone's, so the archive's URL without its credentials.
        answer.reply_url = list
            .archive_url
            .as_deref()
            .filter(|_| list.cc_list)
            .map(|a| {
                format!(
                    "{}/{}/",
                    without_credentials(a).trim_end_matches('/'),
                    percent_encoding::utf8_percent_encode(reply, MSGID_IN_PATH)
                )
            });
    }
    let Some(c) = comparison(ctx, row.comparison_id)
        .await?
        .filter(|c| c.status == ComparisonStatus::Done)
    else {
        return Ok(answer);
    };
    let built = report::load_shared(ctx, &c).await?;
    let steps = report::steps::views(ctx, &c).await?;
    if let Some(g) = importance::most_important(&built.groups, |g| &g.comparison) {
        answer.sentence = g.comparison.headline_metric().and_then(|m| {
            Some((
                m.verdict_words().to_string(),
                summary::headline_sentence(&g.comparison)?,
            ))
        });
        answer.why = g.comparison.explanation.clone();
        answer.moved_by =
            culprit::moved_by(&g.comparison, &steps).map(|s| culprit::step_words(s, steps.len()));
    }
    Ok(answer)
}

/// What of a Message-ID is escaped in an archive's URL path, as
/// public-inbox writes its links (`/` and `%` and what no path may hold).
const MSGID_IN_PATH: &percent_encoding::AsciiSet = &percent_encoding::CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'/')
    .add(b'<')
    .add(b'>')
    .add(b'?');

/// A series version as the API shows it.
pub fn series_view(ctx: &Context, s: SeriesRow) -> SeriesView {
    SeriesView {
        id: s.id,
        page_url: ctx.config.link(&format!("/series/{}", s.id)),
        list_id: s.list_id,
        list: s.list,
        subject: s.subject,
        version: s.version,
        total: s.total,
        author: s.author,
        posted_at: s.posted_at,
        message_id: s.anchor,
        state: s.state,
        reason: s.reason,
        missing: s.missing,
        comparison_id: s.comparison_id,
        verdict: s.verdict,
        previous_id: s.previous_id,
        next_id: s.next_id,
        reply_message_id: s.reply_message_id,
        seen_at: s.seen_at,
    }
}

/// One round of the reader: the archives due are read, then every list's
/// new threads are assembled and its complete series queued, then every
/// measured series answered. One list's failure is logged, noted on the
/// list and does not stop the others.
pub async fn round(ctx: &Context) -> Result<usize, Error> {
    let mut handled = 0;
    // Lists catching up (their read stopped at a round's end, messages
    // left): their threads are assembled once they have caught up, not
    // again at every round of the catching up.
    let mut catching_up = std::collections::HashSet::new();
    // Each archive read on its own, side by side and each bounded
    // (`list_read_timeout`): one slow remote holds only its own list.
    let mut reads = tokio::task::JoinSet::new();
    for id in db::lists::due(&ctx.db).await? {
        let ctx = ctx.clone();
        reads.spawn(async move {
            let list = find(&ctx, id).await?;
            let read = intake::read_archive(&ctx, &list).await;
            Ok::<_, Error>((list.id, list.name, read))
        });
    }
    while let Some(joined) = reads.join_next().await {
        match joined {
            Ok(Ok((id, _, Ok(read)))) => {
                handled += read.stored;
                if read.more {
                    catching_up.insert(id);
                }
            }
            Ok(Ok((_, name, Err(e)))) => {
                tracing::warn!(list = %name, error = %e, "reading the archive failed");
            }
            Ok(Err(e)) => tracing::warn!(error = %e, "a list to read is gone"),
            Err(e) => tracing::error!(error = %e, "reading an archive panicked"),
        }
    }
    for list in all(ctx).await? {
        // Finished (or cancelled) series first: their slots are free for
        // the complete ones settling starts.
        match reply::answer_measured(ctx, &list).await {
            Ok(n) => handled += n,
            Err(e) => tracing::warn!(list = %list.name, error = %e, "answering series failed"),
        }
        if catching_up.contains(&list.id) {
            continue;
        }
        match series::settle(ctx, &list).await {
            Ok(n) => handled += n,
            Err(e) => tracing::warn!(list = %list.name, error = %e, "assembling series failed"),
        }
    }
    Ok(handled)
}

/// Starts the `list-reader` worker: every [`WAKE`], and as soon as mail is
/// handed in, a hook pushed or a comparison finished, one [`round`].
pub fn spawn_reader(ctx: &Context) -> tokio::task::JoinHandle<()> {
    Worker::every("list-reader", WAKE)
        .woken_by(&ctx.mail_arrived)
        .woken_by(&ctx.comparison_settled)
        .settling(Duration::from_millis(200))
        .spawn(
            ctx,
            |ctx| async move { Ok(Done::Handled(round(&ctx).await?)) },
        )
}
