//! The answer in the thread, in 0-day's words (seed 004): once a series'
//! comparison is done, a real regression (and an improvement, when the
//! list asks for those) is mailed to the series' author, Cc the list and
//! the thread when the list says so, `In-Reply-To:` the cover letter or
//! the single patch, with which patch moved the number, what changed
//! since the previous version, the text report with absolute links and the
//! `Reported-by:`/`Closes:` tags. One mail per series version, ever (the
//! outbox's key, across restarts and servers); never to our own mail or a
//! robot's, never to an address that is not in the thread, at most the
//! list's daily cap.

use patchperf_common::api::{SeriesState, StepView};
use patchperf_common::comparison::ComparisonStatus;
use patchperf_common::mail::Series;
use patchperf_common::mail_header::{self, NameAddr};
use patchperf_common::mbox::subject::Subject;
use patchperf_common::report::stored::ComparisonReport;
use patchperf_common::report::{culprit, format, importance};
use patchperf_common::stats::Verdict;
use sqlx::PgConnection;

use super::senders;
use crate::db::comparisons::ComparisonRow;
use crate::db::list_series::SeriesRow;
use crate::db::lists::ListRow;
use crate::domain::outbox::compose;
use crate::domain::outbox::notify::{self, Mail};
use crate::domain::{Context, comparison, comparison::steps, report};
use crate::{Error, db};

/// Most ids a reply's `References:` carries: the thread's root and the
/// nearest ancestors, as mailers trim long threads.
const MAX_REFERENCES: usize = 10;

/// Answers every series of `list` whose comparison finished; how many
/// series moved on.
pub async fn answer_measured(ctx: &Context, list: &ListRow) -> Result<usize, Error> {
    let mut moved = 0;
    let mut tx = ctx.db.begin().await?;
    for id in db::list_series::in_state(&mut tx, list.id, SeriesState::Queued).await? {
        let Some(row) = db::list_series::find(&mut *tx, id).await? else {
            continue;
        };
        let comparison = match row.comparison_id {
            Some(c) => db::comparisons::find(&ctx.db, c).await?,
            None => None,
        };
        let Some(comparison) = comparison else {
            let why = "its comparison was removed";
            db::list_series::set_state(&mut *tx, id, SeriesState::Failed, Some(why), &[]).await?;
            moved += 1;
            continue;
        };
        match comparison.status {
            // vN+1's answer says what became of vN's changes: measured side
            // by side, it waits for vN to settle (a later round).
            ComparisonStatus::Done if previous_still_measured(ctx, &mut tx, &row).await? => {
                continue;
            }
            ComparisonStatus::Done => {
                answer(ctx, &mut tx, list, &row, &comparison).await?;
            }
            ComparisonStatus::Failed | ComparisonStatus::Cancelled => {
                let why = failure(ctx, &comparison).await?;
                db::list_series::set_state(&mut *tx, id, SeriesState::Failed, Some(&why), &[])
                    .await?;
            }
            ComparisonStatus::Queued | ComparisonStatus::Running => continue,
        }
        moved += 1;
    }
    tx.commit().await?;
    Ok(moved)
}

/// Whether the version before `row` is still being measured (its
/// comparison queued or running).
async fn previous_still_measured(
    ctx: &Context,
    tx: &mut PgConnection,
    row: &SeriesRow,
) -> Result<bool, Error> {
    Ok(super::previous_comparison(ctx, &mut *tx, row)
        .await?
        .is_some_and(|(_, c)| !c.status.is_final()))
}

/// Why comparison `c` did not finish, in the words its page opens with
/// ([`comparison::failure`]).
async fn failure(ctx: &Context, c: &ComparisonRow) -> Result<String, Error> {
    if c.status == ComparisonStatus::Cancelled {
        return Ok("its comparison was cancelled".into());
    }
    Ok(match comparison::failure::of(ctx, c).await? {
        Some(f) => format!(
            "its comparison failed: {}",
            mail_header::one_line(&f.words.line, 200)
        ),
        None => "its comparison failed".into(),
    })
}

/// Answers series `row`, measured by `c`, or notes why it is not answered.
async fn answer(
    ctx: &Context,
    tx: &mut PgConnection,
    list: &ListRow,
    row: &SeriesRow,
    c: &ComparisonRow,
) -> Result<(), Error> {
    let built = report::load_shared(ctx, c).await?;
    let Some(headline) = compose::headline(&built) else {
        return measured(tx, row, "no change beyond the noise: not answered").await;
    };
    if headline.verdict == Verdict::Improvement && !list.report_improvements {
        return measured(tx, row, "an improvement; the list answers regressions only").await;
    }
    let (Some(report_url), Some(series_url)) = (
        compose::link(&ctx.config, &format!("/comparisons/{}", c.id)),
        compose::link(&ctx.config, &format!("/series/{}", row.id)),
    ) else {
        return measured(
            tx,
            row,
            // Said as what happened then: an operator may set the URL
            // later, and the reason must not then claim it is missing.
            "not answered: it was measured while the server had no --public-url to link to",
        )
        .await;
    };
    let Some(from) = ctx.config.mail_from.as_deref() else {
        return measured(tx, row, "not answered: the server has no --mail-from").await;
    };
    let sent_today = db::list_series::replies_today(&mut *tx, list.id).await?;
    if sent_today >= i64::from(list.daily_cap) {
        let why = format!(
            "not answered: the list's cap of {} replies a day is reached",
            list.daily_cap
        );
        return measured(tx, row, &why).await;
    }
    let Some((messages, series)) =
        super::messages::posting(ctx, list.id, &row.thread_root, &row.anchor).await?
    else {
        return measured(tx, row, "not answered: its messages are gone").await;
    };
    let series = &series;
    if let Some(why) = senders::not_ours_to_answer(&messages, series, Some(from)) {
        return measured(tx, row, &format!("not answered: {why}")).await;
    }
    let Some(author) = series.author.as_ref() else {
        return measured(tx, row, "not answered: it names no author").await;
    };
    let to = NameAddr::new(&author.name, &author.address);
    let mut cc = copies(list, series, &author.address);
    // The other followed lists carrying this posting: it was measured
    // once, here, and this is the one answer.
    let key = |a: &str| mail_header::address_key(a);
    for other in db::list_series::other_lists_carrying(&mut *tx, &row.anchor, list.id).await? {
        let in_thread = series
            .participants
            .iter()
            .any(|p| key(&p.address) == key(&other));
        if in_thread && !cc.iter().any(|c| key(c) == key(&other)) {
            cc.push(other);
        }
    }
    let steps = steps::views(ctx, c).await?;
    let since = since_previous(ctx, tx, row, &built).await?;
    // A version already being measured when the next was posted is
    // answered all the same, and says so.
    let newer = db::list_series::newest_version(&mut *tx, list.id, &row.series_key)
        .await?
        .filter(|&v| v > row.version)
        .map(|v| {
            format!(
                "v{v} of this series was posted while v{} was measured; v{v} is measured \
                 and answered on its own.",
                row.version
            )
        });
    let since = match (since, newer) {
        (Some(s), Some(n)) => Some(format!("{s}\n\n{n}")),
        (s, n) => s.or(n),
    };
    // Each report names the patch that moved it, not only the headline's.
    let text = compose::report_text(&report::steps::with_culprits(&built, &steps), &report_url);
    let reporter = NameAddr::parse(from).map_or_else(|| from.to_string(), |a| a.header());
    // As decided when it was queued.
    let scope = row
        .reason
        .as_deref()
        .and_then(super::series::scope_of)
        .map(|s| format!("{s}\n\n"))
        .unwrap_or_default();
    let body = body(
        &reporter,
        row,
        series,
        moved_by(&steps, &built, row.total).as_deref(),
        &headline,
        since.as_deref(),
        &report_url,
        &series_url,
        &format!("{scope}{text}"),
    );
    let subject = series.reply_to.subject.clone();
    let references = references(series);
    let key = format!("series:{}", row.id);
    let mail = Mail {
        key: &key,
        subject: &subject,
        body: &body,
        to: Some(&to),
        cc: &cc,
        thread: Some((&series.reply_to.message_id, &references)),
    };
    notify::queue_mail(tx, &mail).await?;
    let reply_id = notify::message_id(&key, from);
    let why = format!("answered: {}", headline.words);
    db::list_series::reported(&mut *tx, row.id, &reply_id, &why).await?;
    Ok(())
}

async fn measured(tx: &mut PgConnection, row: &SeriesRow, why: &str) -> Result<(), Error> {
    db::list_series::set_state(tx, row.id, SeriesState::Measured, Some(why), &[]).await?;
    Ok(())
}

/// Who is copied: the list when it asks and is in the thread, and the
/// thread's other participants when it asks; only addresses of the
/// thread.
fn copies(list: &ListRow, s: &Series, author: &str) -> Vec<String> {
    let key = |a: &str| mail_header::address_key(a);
    let in_thread = |a: &str| s.participants.iter().any(|p| key(&p.address) == key(a));
    let mut cc = Vec::new();
    if list.cc_list && in_thread(&list.address) {
        cc.push(list.address.clone());
    }
    if list.cc_thread {
        for p in &s.participants {
            if key(&p.address) != key(author) && !cc.iter().any(|c| key(c) == key(&p.address)) {
                cc.push(p.address.clone());
            }
        }
    }
    cc
}

/// The thread's ids a reply references: the root and the nearest
/// ancestors, then the message answered.
fn references(s: &Series) -> String {
    let mut ids: Vec<&str> = s.reply_to.references.iter().map(String::as_str).collect();
    if ids.len() >= MAX_REFERENCES {
        let keep = ids.len() - (MAX_REFERENCES - 2);
        ids.drain(1..keep);
    }
    ids.push(&s.reply_to.message_id);
    ids.dedup();
    ids.join(" ")
}

/// Which patch moved what, by [`culprit::moved_by`]'s rule: `The change
/// comes with patch 2/3 ("fs: …").` for the headline's cell (the most
/// important report), then, when more than one cell changed, a line per
/// changed cell naming the patch that made it.
fn moved_by(steps: &[StepView], built: &ComparisonReport, total: i32) -> Option<String> {
    let patch = |s: &StepView| {
        let title = Subject::parse(&s.subject).title;
        format!(
            "patch {}/{total} (\"{}\")",
            s.step,
            mail_header::one_line(&title, 200)
        )
    };
    let g = importance::most_important(&built.groups, |g| &g.comparison)?;
    let mut text = format!(
        "The change comes with {}.",
        patch(culprit::moved_by(&g.comparison, steps)?)
    );
    let changed: Vec<(String, String, String)> =
        importance::by_importance(&built.groups, |g| &g.comparison)
            .into_iter()
            .filter_map(|g| {
                let c = &g.comparison;
                let m = c.headline_metric()?;
                if !matches!(m.verdict, Verdict::Regression | Verdict::Improvement) {
                    return None;
                }
                let step = culprit::moved_by(c, steps)
                    .map_or_else(|| "no single patch: each moved it less".to_string(), &patch);
                let cell = format!("{} · nr_task {}", c.header.workload, c.header.nr_task);
                let change = format!("{} {}", format::change_text(m), m.verdict_words());
                Some((cell, change, step))
            })
            .collect();
    if changed.len() > 1 {
        let w0 = changed
            .iter()
            .map(|c| c.0.chars().count())
            .max()
            .unwrap_or(0);
        let w1 = changed
            .iter()
            .map(|c| c.1.chars().count())
            .max()
            .unwrap_or(0);
        text.push_str("\n\nEach change and the patch that made it:\n");
        for (cell, change, step) in &changed {
            text.push_str(&format!("  {cell:<w0$}  {change:<w1$}  {step}\n"));
        }
        text.pop();
    }
    Some(text)
}

/// What changed since the series' previous version was measured, when it
/// was: each of its real changes gone or still there, and changes new.
async fn since_previous(
    ctx: &Context,
    tx: &mut PgConnection,
    row: &SeriesRow,
    now: &ComparisonReport,
) -> Result<Option<String>, Error> {
    let Some((prev, c)) = super::previous_comparison(ctx, &mut *tx, row)
        .await?
        .filter(|(_, c)| c.status == ComparisonStatus::Done)
    else {
        return Ok(None);
    };
    let then = report::load_shared(ctx, &c).await?;
    let changes = |r: &ComparisonReport| -> Vec<(String, Verdict, String)> {
        r.groups
            .iter()
            .filter_map(|g| {
                let m = g.comparison.headline_metric()?;
                m.verdict.is_change().then(|| {
                    let words = importance::subject_line(&g.comparison).unwrap_or_default();
                    (g.comparison.header.workload.clone(), m.verdict, words)
                })
            })
            .collect()
    };
    let (old, new) = (changes(&then), changes(now));
    let (v_old, v_new) = (prev.version, row.version);
    let mut lines = Vec::new();
    for (w, verdict, words) in &old {
        if new.iter().any(|(w2, v2, _)| w2 == w && v2 == verdict) {
            lines.push(format!(
                "the {words} of v{v_old} is still there in v{v_new}"
            ));
        } else {
            lines.push(format!("the {words} of v{v_old} is gone in v{v_new}"));
        }
    }
    for (w, verdict, words) in &new {
        if !old.iter().any(|(w2, v2, _)| w2 == w && v2 == verdict) {
            lines.push(format!("new in v{v_new}: {words}"));
        }
    }
    if lines.is_empty() {
        lines.push(format!("v{v_old} showed no change beyond the noise"));
    }
    Ok(Some(format!(
        "Since v{v_old} (comparison {}): {}.",
        c.id,
        lines.join("; ")
    )))
}

#[allow(clippy::too_many_arguments)]
fn body(
    reporter: &str,
    row: &SeriesRow,
    s: &Series,
    moved_by: Option<&str>,
    h: &compose::Headline,
    since: Option<&str>,
    report_url: &str,
    series_url: &str,
    text: &str,
) -> String {
    let moved = moved_by.map(|p| format!("\n{p}\n")).unwrap_or_default();
    let since = since.map(|s| format!("\n{s}\n")).unwrap_or_default();
    format!(
        "Hello,\n\n\
         patchperf noticed a {words} on:\n\n\
         \x20   \"{subject}\" (v{version}, {total} patch{es}, posted to {list})\n\
         {moved}{since}\n\
         If you fix the issue in a separate patch/commit (i.e. not just a new\n\
         version of the same patch/commit), kindly add following tags\n\
         | Reported-by: {reporter}\n\
         | Closes: {series_url}\n\n\
         Each patch was measured on its own against the one before (patches\n\
         1..k-1 against 1..k), boots of both kernels interleaved; the\n\
         series' page, with every run, is\n\
         {report_url}\n\n\
         {text}\n\
         -- \n\
         patchperf\n",
        subject = mail_header::one_line(&s.subject, 300),
        version = row.version,
        total = row.total,
        es = if row.total == 1 { "" } else { "es" },
        list = row.list,
        words = h.words,
    )
}

#[cfg(test)]
mod tests {
    use patchperf_common::mail::{Message, assemble};

    use super::*;

    fn read(raw: &str) -> Message {
        Message::read(raw.as_bytes()).unwrap()
    }

    fn patch(extra: &str, from: &str) -> String {
        format!(
            "From: {from}\nTo: list@example.org\nCc: Rev Iewer <rev@example.org>\n\
             Subject: [PATCH] fs: x\nMessage-ID: <p@example.org>\n{extra}\n\
             x\n---\ndiff --git a/fs/a.c b/fs/a.c\n--- a/fs/a.c\n+++ b/fs/a.c\n@@ -1 +1 @@\n-a\n+b\n"
        )
    }

    fn list(cc_list: bool, cc_thread: bool, address: &str) -> ListRow {
        ListRow {
            id: 1,
            name: "l".into(),
            address: address.into(),
            archive_url: None,
            read_history: false,
            tree_id: None,
            tree_name: None,
            base_url: String::new(),
            base_branch: String::new(),
            paths: Vec::new(),
            workload_map: sqlx::types::Json(Vec::new()),
            workloads: Vec::new(),
            params: sqlx::types::Json(
                serde_json::from_value(serde_json::json!({
                    "nr_task": [1], "seconds": 1, "warmup_seconds": 0
                }))
                .unwrap(),
            ),
            runs_per_side: 3,
            backend: None,
            machine_name: None,
            pool: None,
            cc_list,
            cc_thread,
            report_improvements: false,
            wait_minutes: 30,
            poll_minutes: 5,
            max_in_flight: 2,
            daily_cap: 20,
            created_by: 1,
            polled_at: None,
            poll_error: None,
            messages: 0,
        }
    }

    #[test]
    fn robots_and_our_own_mail_are_not_answered() {
        let from = "patchperf <perf@example.org>";
        for (extra, sender, answered) in [
            ("", "A <a@example.org>", true),
            ("Auto-Submitted: auto-generated", "A <a@example.org>", false),
            ("Precedence: bulk", "A <a@example.org>", false),
            ("", "patchperf <PERF@example.org>", false),
        ] {
            let messages = vec![read(&patch(extra, sender))];
            // A robot's patch may not even be a series (assembly passes
            // it over); if it is, it is not answered.
            let series = assemble(&messages);
            let answers = series.first().is_some_and(|s| {
                super::senders::not_ours_to_answer(&messages, s, Some(from)).is_none()
            });
            assert_eq!(answers, answered, "{extra:?} {sender:?}");
        }
    }

    #[test]
    fn copies_go_only_to_addresses_of_the_thread() {
        let messages = vec![read(&patch("", "A <a@example.org>"))];
        let s = &assemble(&messages)[0];
        assert_eq!(
            copies(&list(true, false, "LIST@example.org"), s, "a@example.org"),
            ["LIST@example.org"]
        );
        assert!(copies(&list(true, false, "other@example.org"), s, "a@example.org").is_empty());
        assert_eq!(
            copies(&list(false, true, "list@example.org"), s, "a@example.org"),
            ["list@example.org", "rev@example.org"]
        );
    }

    #[test]
    fn references_keep_the_root_and_the_nearest() {
        let mut raw = patch("", "A <a@example.org>");
        let refs: Vec<String> = (0..30).map(|i| format!("<r{i}@example.org>")).collect();
        raw = raw.replace(
            "Message-ID: <p@example.org>\n",
            &format!(
                "Message-ID: <p@example.org>\nIn-Reply-To: <r29@example.org>\nReferences: {}\n",
                refs.join(" ")
            ),
        );
        let messages = vec![read(&raw)];
        let s = assemble(&messages);
        let ids = references(&s[0]);
        let ids: Vec<&str> = ids.split(' ').collect();
        assert!(ids.len() <= MAX_REFERENCES, "{ids:?}");
        assert_eq!(ids.first(), Some(&"r0@example.org"));
        assert_eq!(ids.last(), Some(&"p@example.org"));
    }
}
