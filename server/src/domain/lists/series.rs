//! From messages to measured series: each thread with new messages is
//! assembled again as b4 assembles it ([`assemble`]); each series version
//! found is recorded, and waits until its patches 1..N have all arrived or
//! the list's wait is over (then it is incomplete, with what is missing).
//! A complete one is checked against the list's path filter (else skipped,
//! saying why), gets its workloads from the files it touches and its base
//! from its `base-commit:` trailer when the base repository has that
//! commit, else the branch head now, and is queued as a per-patch
//! comparison through [`comparison::queue`] — behind CI's work, at most
//! the list's `max_in_flight` at once. A newer version supersedes an
//! older one still waiting or queued with nothing claimed (its comparison
//! cancelled); one already being measured is finished and answered.

use chrono::{TimeZone, Utc};
use patchperf_common::api::list::{touches, workloads_for};
use patchperf_common::api::{ComparisonCreateRequest, ComparisonSubmission, SeriesState, Setup};
use patchperf_common::comparison::ComparisonStatus;
use patchperf_common::mail::{Series, assemble};
use patchperf_common::mail_header::Mailbox;
use patchperf_common::mbox::diff;
use patchperf_common::protocol::BaseSource;
use patchperf_common::run::MeasurementMode;
use patchperf_common::stats::Verdict;
use patchperf_common::workload::map::Selection;

use super::messages;
use crate::db::list_series::{Filter, NewSeries, SeriesRow};
use crate::db::lists::ListRow;
use crate::domain::comparison::{self, Origin};
use crate::domain::{Context, comparison::range, comparison::submit, report};
use crate::{Error, db};

/// Does what a list's new messages and the passing time call for: threads
/// assembled, waits ended, complete series queued while slots are free.
/// How many series changed.
pub async fn settle(ctx: &Context, list: &ListRow) -> Result<usize, Error> {
    let mut changed = 0;
    for root in db::list_messages::pending_threads(&ctx.db, list.id).await? {
        changed += assemble_thread(ctx, list, &root).await?;
    }
    changed += end_waits(ctx, list).await?;
    changed += start_complete(ctx, list).await?;
    Ok(changed)
}

/// Records every series version of thread `root`.
async fn assemble_thread(ctx: &Context, list: &ListRow, root: &str) -> Result<usize, Error> {
    let messages = messages::thread(ctx, list.id, root).await?;
    let mut changed = 0;
    for s in assemble(&messages) {
        if s.patches.is_empty() {
            // A cover letter whose patches have not come: waits for them.
            if s.cover.is_none() {
                continue;
            }
        }
        let mut tx = ctx.db.begin().await?;
        let row = db::list_series::upsert(&mut tx, &new_series(list.id, root, &s)).await?;
        if !row.state.is_final() && row.state != SeriesState::Queued {
            changed += usize::from(record(&mut tx, &row, &s).await?);
        }
        if let Some(previous) =
            db::list_series::previous_version(&mut *tx, list.id, &row.series_key, row.version)
                .await?
        {
            db::list_series::follows(&mut *tx, row.id, previous).await?;
            changed += supersede(ctx, &mut tx, previous, row.version).await?;
        }
        tx.commit().await?;
    }
    db::list_messages::assembled(&ctx.db, list.id, root).await?;
    Ok(changed)
}

fn new_series<'a>(list_id: i64, root: &'a str, s: &'a Series) -> NewSeries<'a> {
    NewSeries {
        list_id,
        thread_root: root,
        anchor: &s.reply_to.message_id,
        series_key: &s.key,
        version: i32::try_from(s.version).unwrap_or(i32::MAX),
        total: i32::try_from(s.total).unwrap_or(i32::MAX),
        subject: &s.subject,
        title: &s.title,
        // Named as the list shows a sender; the address alone for one
        // without a name.
        author: s.author.as_ref().map_or_else(String::new, Mailbox::header),
        posted_at: s.date.and_then(|d| Utc.timestamp_opt(d, 0).single()),
    }
}

/// Notes what a waiting series lacks; whether that changed.
async fn record(conn: &mut sqlx::PgConnection, row: &SeriesRow, s: &Series) -> Result<bool, Error> {
    let missing: Vec<i32> = s
        .missing
        .iter()
        .map(|&n| i32::try_from(n).unwrap_or(i32::MAX))
        .collect();
    if s.oversized {
        let why = format!(
            "{} patches: more than a per-patch comparison measures",
            s.total
        );
        db::list_series::set_state(&mut *conn, row.id, SeriesState::Skipped, Some(&why), &[])
            .await?;
        return Ok(true);
    }
    let not_taken = not_taken(s);
    let reason = if s.patches.is_empty() {
        format!(
            "waiting for the patches of the cover letter (0/{})",
            s.total
        )
    } else if missing.is_empty() {
        "complete: waits for a free slot".to_string()
    } else {
        format!("waiting for {}", numbers(&missing, s.total))
    };
    let reason = format!("{reason}{not_taken}");
    let missing = if s.patches.is_empty() {
        (1..=i32::try_from(s.total).unwrap_or(0)).collect()
    } else {
        missing
    };
    if row.missing == missing && row.reason.as_deref() == Some(reason.as_str()) {
        return Ok(false);
    }
    db::list_series::set_state(
        &mut *conn,
        row.id,
        SeriesState::Waiting,
        Some(&reason),
        &missing,
    )
    .await?;
    Ok(true)
}

/// What of the thread was not taken into series `s`, in words (empty when
/// nothing was): messages another sender posted as its cover letter or
/// patches.
fn not_taken(s: &Series) -> String {
    if s.ignored.is_empty() {
        return String::new();
    }
    let each: Vec<String> = s
        .ignored
        .iter()
        .take(5)
        .map(|i| {
            let what = match i.number {
                0 => "a cover letter".to_string(),
                n => format!("a patch {n}/{}", s.total),
            };
            format!("{what} from {} <{}>", i.sender, i.id)
        })
        .collect();
    let more = s.ignored.len().saturating_sub(each.len());
    let more = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    format!(
        ". Not taken, not being from the series' sender: {}{more}",
        each.join(", ")
    )
}

/// `2/5, 4/5`.
fn numbers(missing: &[i32], total: u32) -> String {
    missing
        .iter()
        .map(|n| format!("{n}/{total}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Series `previous` was superseded by version `version`: waiting, or
/// queued with nothing measured yet, it is dropped (its comparison
/// cancelled); already being measured, it is finished and answered, its
/// answer saying that a newer version was posted. 1 when it changed.
async fn supersede(
    ctx: &Context,
    tx: &mut sqlx::PgConnection,
    previous: i64,
    version: i32,
) -> Result<usize, Error> {
    let Some(row) = db::list_series::find(&mut *tx, previous).await? else {
        return Ok(0);
    };
    if row.state.is_final() {
        return Ok(0);
    }
    let why = format!("superseded by v{version} before it was measured");
    if let (SeriesState::Queued, Some(id)) = (row.state, row.comparison_id) {
        if db::comparisons::started(&mut *tx, id).await? {
            let note = format!("v{version} was posted while this version was measured");
            if row.reason.as_deref().is_some_and(|r| r.contains(&note)) {
                return Ok(0);
            }
            let reason = match row.reason.as_deref() {
                Some(r) => format!("{note}: it is finished and answered. {r}"),
                None => format!("{note}: it is finished and answered."),
            };
            db::list_series::set_state(
                &mut *tx,
                row.id,
                SeriesState::Queued,
                Some(&reason),
                &row.missing,
            )
            .await?;
            return Ok(1);
        }
        crate::domain::jobs::lifecycle::cancel(&mut *tx, id, &why).await?;
        ctx.jobs_changed.notify_waiters();
    }
    db::list_series::set_state(
        &mut *tx,
        row.id,
        SeriesState::Superseded,
        Some(&why),
        &row.missing,
    )
    .await?;
    Ok(1)
}

/// Series that waited longer than the list allows for missing patches are
/// recorded incomplete, not tested.
async fn end_waits(ctx: &Context, list: &ListRow) -> Result<usize, Error> {
    let mut tx = ctx.db.begin().await?;
    let mut ended = 0;
    for id in db::list_series::overdue(&mut tx, list.id, list.wait_minutes).await? {
        let Some(row) = db::list_series::find(&mut *tx, id).await? else {
            continue;
        };
        let why = format!(
            "{} never arrived within {} minutes: not tested",
            numbers(&row.missing, u32::try_from(row.total).unwrap_or(0)),
            list.wait_minutes
        );
        db::list_series::set_state(
            &mut *tx,
            id,
            SeriesState::Incomplete,
            Some(&why),
            &row.missing,
        )
        .await?;
        ended += 1;
    }
    tx.commit().await?;
    Ok(ended)
}

/// Most complete series a round starts (or skips) for one list; a backlog
/// beyond it is worked off by rounds that follow at once.
const STARTS_PER_ROUND: i64 = 500;

/// Queues complete waiting series, oldest first, while the list has free
/// slots.
async fn start_complete(ctx: &Context, list: &ListRow) -> Result<usize, Error> {
    let mut started = 0;
    let filter = Filter {
        list_id: Some(list.id),
        state: Some(SeriesState::Waiting),
        oldest_first: true,
        complete: true,
        ..Filter::default()
    };
    // The oldest first: a backlog (a list reading its history) is worked
    // off in the order it was posted, none left behind.
    let waiting = db::list_series::list(&ctx.db, &filter, STARTS_PER_ROUND).await?;
    let full = i64::try_from(waiting.len()).is_ok_and(|n| n >= STARTS_PER_ROUND);
    let mut held = 0;
    for row in waiting {
        if db::list_series::in_flight(&ctx.db, list.id).await? >= i64::from(list.max_in_flight) {
            return Ok(started);
        }
        match start(ctx, list, &row).await {
            Ok(()) => started += 1,
            // The base cannot be read now (the remote down, git busy): the
            // series waits for the next round.
            Err(e @ Error::Unavailable { .. }) => {
                tracing::info!(series = row.id, error = %e, "the series waits");
                held += 1;
            }
            Err(e) => {
                let why = format!("not tested: {e}");
                db::list_series::set_state(&ctx.db, row.id, SeriesState::Skipped, Some(&why), &[])
                    .await?;
            }
        }
    }
    // More backlog: the next round follows at once, unless a base that
    // cannot be read held series back (then the reader's own pace).
    if full && held == 0 {
        ctx.mail_arrived.notify_one();
    }
    Ok(started)
}

/// Queues complete series `row`, or records why it is not tested.
async fn start(ctx: &Context, list: &ListRow, row: &SeriesRow) -> Result<(), Error> {
    if db::list_series::has_later_version(&ctx.db, list.id, &row.series_key, row.version).await? {
        let why = "a later version was posted before it was measured";
        db::list_series::set_state(&ctx.db, row.id, SeriesState::Superseded, Some(why), &[])
            .await?;
        return Ok(());
    }
    let Some((messages, s)) = messages::posting(ctx, list.id, &row.thread_root, &row.anchor)
        .await?
        .filter(|(_, s)| s.is_complete())
    else {
        return Err(Error::Invalid("its patches are no longer all there".into()));
    };
    if let Some(why) =
        super::senders::not_ours_to_answer(&messages, &s, ctx.config.mail_from.as_deref())
    {
        let why = format!("not measured: {why}");
        db::list_series::set_state(&ctx.db, row.id, SeriesState::Skipped, Some(&why), &[]).await?;
        return Ok(());
    }
    let mbox = s.mbox(&messages);
    let touched: Vec<String> = diff::paths(&mbox).into_iter().collect();
    if !touches(&list.paths, &touched) {
        let why = format!(
            "touches none of {}: only {}",
            list.paths.join(", "),
            shortened(&touched)
        );
        db::list_series::set_state(&ctx.db, row.id, SeriesState::Skipped, Some(&why), &[]).await?;
        return Ok(());
    }
    let selection = workloads_for(&list.workload_map, &list.workloads, &mbox);
    if selection.workloads.is_empty() {
        let why = format!(
            "not measured: {} {}",
            none_for(list),
            shortened(&selection.unexercised)
        );
        db::list_series::set_state(&ctx.db, row.id, SeriesState::Skipped, Some(&why), &[]).await?;
        return Ok(());
    }
    let mut scope = scope(list, &selection);
    let mut workloads = selection.workloads;
    // What the version before moved is measured again, even where this
    // one no longer touches it: its reply tells whether that change is gone.
    if let Some((version, moved)) = moved_before(ctx, row).await? {
        let added: Vec<String> = moved
            .into_iter()
            .filter(|w| !workloads.contains(w))
            .collect();
        if !added.is_empty() {
            scope.push_str(&format!(
                " Also measured: {}, which v{version} moved, to tell whether that change is \
                 still there.",
                added.join(", ")
            ));
            workloads.extend(added);
        }
    }
    let (commit, base_note) = base(ctx, list, s.base_commit.as_deref()).await?;
    let req = ComparisonCreateRequest {
        base: BaseSource::Git {
            url: list.base_url.clone(),
            commit,
        },
        mbox,
        aa: false,
        per_patch: true,
        range: None,
        setup: Setup {
            backend: list.backend.as_deref().and_then(MeasurementMode::parse),
            machine: list.machine_name.clone(),
            pool: list.pool.clone(),
            ..Setup::new(
                workloads.clone(),
                list.params.0.clone().into(),
                u32::try_from(list.runs_per_side).unwrap_or(5),
            )
        },
        order_seed: None,
    };
    let req = ComparisonSubmission::try_from(req).map_err(|e| Error::Invalid(e.to_string()))?;
    let prepared = submit::prepare(
        ctx,
        &req,
        list.created_by,
        Origin::ListSeries { series_id: row.id },
        None,
    )
    .await?;
    let mut tx = ctx.db.begin().await?;
    // Another server (or a newer version) moved it meanwhile.
    if !db::list_series::lock_in_state(&mut tx, row.id, SeriesState::Waiting).await? {
        return Ok(());
    }
    // Cross-posted (a subsystem list and LKML): one measurement, one
    // answer, Cc every followed list that carries it.
    if let Some((other, list_name)) =
        db::list_series::measured_elsewhere(&mut tx, &row.anchor, list.id).await?
    {
        let why =
            format!("cross-posted: measured and answered once, as series {other} of {list_name}");
        db::list_series::set_state(&mut *tx, row.id, SeriesState::Skipped, Some(&why), &[]).await?;
        tx.commit().await?;
        return Ok(());
    }
    let id = comparison::queue(&mut tx, &prepared.order, ctx.config.max_attempts).await?;
    let note = format!("{base_note}{}. {scope}", not_taken(&s));
    db::list_series::queued(&mut *tx, row.id, id, &note).await?;
    tx.commit().await?;
    ctx.jobs_changed.notify_waiters();
    tracing::info!(list = %list.name, series = row.id, comparison = id, "series queued");
    Ok(())
}

/// The base commit: the series' `base-commit:` when the base repository
/// has it, else the branch's head now; with the words saying which.
async fn base(
    ctx: &Context,
    list: &ListRow,
    trailer: Option<&str>,
) -> Result<(String, String), Error> {
    if let Some(wanted) = trailer {
        if let Ok(mut mirror) = ctx.git.open(&list.base_url, &[wanted]).await {
            if let Ok(commit) = mirror.resolve(wanted).await {
                mirror.keep();
                return Ok((commit, format!("base {wanted} (its base-commit)")));
            }
        }
        let head = range::head(ctx, &list.base_url, &list.base_branch).await?;
        let note = format!(
            "its base-commit {wanted} is not in {}: based on the head of {} ({})",
            list.base_url,
            list.base_branch,
            &head.sha[..12.min(head.sha.len())]
        );
        return Ok((head.sha, note));
    }
    let head = range::head(ctx, &list.base_url, &list.base_branch).await?;
    let note = format!(
        "no base-commit: based on the head of {} when it arrived ({})",
        list.base_branch,
        &head.sha[..12.min(head.sha.len())]
    );
    Ok((head.sha, note))
}

/// Up to five paths, and how many more.
/// What a series is measured on and why, and which of its files are not:
/// the sentence its page shows once it is queued and its reply repeats
/// ([`scope_of`]), e.g. `Measured on lock1, lock2: the workloads the
/// workload map gives the files and functions it changes.`
fn scope(list: &ListRow, selection: &Selection) -> String {
    let why = if selection.fallback {
        "the list's workloads for a series its rules or the map say nothing of"
    } else if list.workload_map.is_empty() {
        "the workloads the workload map gives the files and functions it changes"
    } else {
        "the workloads the list's rules give the files it changes"
    };
    let mut out = format!("{SCOPE}{}: {why}.", selection.workloads.join(", "));
    if !selection.unexercised.is_empty() {
        out.push_str(&format!(
            " Not measured: {} {}.",
            none_for(list),
            shortened(&selection.unexercised)
        ));
    }
    out
}

/// The version before `row` and the workloads whose headline it moved
/// (a real regression or improvement), once its comparison is done;
/// `None` before that, or for a first version.
async fn moved_before(ctx: &Context, row: &SeriesRow) -> Result<Option<(i32, Vec<String>)>, Error> {
    let Some((prev, c)) = super::previous_comparison(ctx, &ctx.db, row)
        .await?
        .filter(|(_, c)| c.status == ComparisonStatus::Done)
    else {
        return Ok(None);
    };
    let report = report::load_shared(ctx, &c).await?;
    let mut moved: Vec<String> = Vec::new();
    for g in &report.groups {
        let changed = g
            .comparison
            .headline_metric()
            .is_some_and(|m| matches!(m.verdict, Verdict::Regression | Verdict::Improvement));
        let w = &g.comparison.header.workload;
        if changed && !moved.contains(w) {
            moved.push(w.clone());
        }
    }
    Ok((!moved.is_empty()).then_some((prev.version, moved)))
}

/// How a series' scope sentence begins.
const SCOPE: &str = "Measured on ";

/// The scope sentence in a queued series' note (`reason`), as [`scope`]
/// wrote it; `None` for a note written before it had one.
pub(super) fn scope_of(note: &str) -> Option<&str> {
    note.find(SCOPE).map(|at| &note[at..])
}

/// What "nothing measures this file" is in a list's words.
fn none_for(list: &ListRow) -> &'static str {
    if list.workload_map.is_empty() {
        "no workload exercises"
    } else {
        "no rule of the list names"
    }
}

fn shortened(paths: &[String]) -> String {
    let mut out = paths.iter().take(5).cloned().collect::<Vec<_>>().join(", ");
    if paths.len() > 5 {
        out.push_str(&format!(" and {} more", paths.len() - 5));
    }
    if out.is_empty() {
        out.push_str("no file");
    }
    out
}
