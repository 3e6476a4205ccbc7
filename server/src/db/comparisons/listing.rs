//! The comparison listing of the dashboard and the API: filters, orders,
//! search, and one summary line per comparison, named as kernel people
//! name it, with a failed one's failure.

use chrono::{DateTime, Utc};
use patchperf_common::comparison::{ComparisonKind, ComparisonStatus, OverallVerdict};
use patchperf_common::mbox::subject::Subject;
use patchperf_common::naming::{self, FailedStep, NameFacts};
use patchperf_common::protocol::{BaseSource, FailureReason};
use patchperf_common::report::importance::HeadlineColumns;
use sqlx::PgPool;
use sqlx::types::Json;

/// Filters of the comparison listing; `None` means any.
#[derive(Debug, Clone, Default)]
pub struct ListFilter<'a> {
    /// Status equals.
    pub status: Option<ComparisonStatus>,
    /// Pinned to the machine with this name.
    pub machine: Option<&'a str>,
    /// Runs this workload.
    pub workload: Option<&'a str>,
    /// A/B comparisons only, or A/A calibrations only (a machine's page
    /// lists them apart).
    pub kind: Option<ComparisonKind>,
    /// Stored overall verdict equals (finished comparisons only; see
    /// [`crate::db::verdicts`]).
    pub verdict: Option<OverallVerdict>,
    /// Only ids below this (the cursor of the previous page, newest first).
    pub before: Option<i64>,
    /// Only ids above this (the cursor of the previous page, oldest first).
    pub after: Option<i64>,
    /// In which order.
    pub order: ListOrder,
    /// A patch of its series has this in its subject or author (any case),
    /// or this Message-Id.
    pub search: Option<&'a str>,
    /// Matching comparisons skipped first (a page number's).
    pub offset: i64,
    /// Page size.
    pub limit: i64,
}

/// The order of the comparison listing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ListOrder {
    /// Newest first.
    #[default]
    Newest,
    /// Oldest first.
    Oldest,
    /// Worst verdict first ([`OverallVerdict::ALL`]'s order; those not
    /// finished among the undecided), newest first within each.
    Verdict,
}

impl ListOrder {
    /// Every order, as `?sort=` names them.
    pub const ALL: &'static [ListOrder] =
        &[ListOrder::Newest, ListOrder::Oldest, ListOrder::Verdict];

    /// As `?sort=` names it.
    pub fn as_str(self) -> &'static str {
        match self {
            ListOrder::Newest => "newest",
            ListOrder::Oldest => "oldest",
            ListOrder::Verdict => "verdict",
        }
    }
}

/// One line of the comparison listing.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ComparisonSummary {
    /// Comparison id.
    pub id: i64,
    /// Where it stands.
    pub status: ComparisonStatus,
    /// A/B, or A/A (a calibration).
    pub kind: ComparisonKind,
    /// What it is called ([`naming::name`]): the patch's subject, the
    /// series' cover letter, `A..B (5 commits)`, `vfs.all 87d7add1d7
    /// ("subject")`, `A/A calibration of open1 on lab-1 (tcg-icount)`.
    pub name: String,
    /// Base tree.
    pub base: Json<BaseSource>,
    /// First patch's subject.
    pub subject: Option<String>,
    /// Workload names.
    pub workloads: Vec<String>,
    /// Boots per side.
    pub runs_per_side: i32,
    /// Pinned machine's name.
    pub machine: Option<String>,
    /// Submission time.
    pub created_at: DateTime<Utc>,
    /// Overall verdict (regression, improvement, no change, undecided, no
    /// results) once the comparison is final; `null` while it runs (its own
    /// `GET` has the live verdict) and for a moment after it ends.
    pub verdict: Option<OverallVerdict>,
    /// Each report's headline metric, change and verdict, with the verdict.
    pub headline: Option<String>,
    /// The most important report's headline in columns, once stored.
    pub headline_columns: Option<HeadlineColumns>,
    /// A failed comparison's failure in words ([`naming::failure`]):
    /// `patch 2/3 does not apply`, `build failed: …`.
    pub failure: Option<String>,
}

/// A listed row as the query reads it, before it is named.
struct Listed {
    id: i64,
    status: ComparisonStatus,
    kind: ComparisonKind,
    base: Json<BaseSource>,
    subject: Option<String>,
    last_subject: Option<String>,
    cover_letter: Option<String>,
    /// The subject of the list series it measures, if one: a series read
    /// from a list is stored as its patches alone.
    list_subject: Option<String>,
    patches: i64,
    git_range: Option<String>,
    commit_sha: Option<String>,
    backend: Option<String>,
    tree: Option<String>,
    commit_subject: Option<String>,
    workloads: Vec<String>,
    runs_per_side: i32,
    machine: Option<String>,
    created_at: DateTime<Utc>,
    verdict: Option<OverallVerdict>,
    headline: Option<String>,
    headline_columns: Option<Json<HeadlineColumns>>,
    failure_reason: Option<FailureReason>,
    failure_detail: Option<String>,
    failed_step: Option<i32>,
}

impl From<Listed> for ComparisonSummary {
    fn from(l: Listed) -> Self {
        let patches = usize::try_from(l.patches).unwrap_or(0);
        let name = naming::name(&NameFacts {
            kind: Some(l.kind),
            machine: l.machine.as_deref(),
            backend: l.backend.as_deref(),
            workloads: &l.workloads,
            tree: l.tree.as_deref(),
            git_range: l.git_range.as_deref(),
            commit: l.commit_sha.as_deref(),
            commit_subject: l.commit_subject.as_deref(),
            cover_letter: l.cover_letter.as_deref().or(l
                .list_subject
                .as_deref()
                .filter(|s| Subject::is_cover_letter(s))),
            first_patch: l.subject.as_deref(),
            last_patch: l.last_subject.as_deref(),
            patches,
        });
        let failure = l.failure_reason.map(|reason| {
            let step = l.failed_step.map(|step| FailedStep {
                step,
                of: patches,
                commits: l.git_range.is_some(),
            });
            naming::failure(reason, l.failure_detail.as_deref(), step)
        });
        ComparisonSummary {
            id: l.id,
            status: l.status,
            kind: l.kind,
            name: name.text,
            base: l.base,
            subject: l.subject,
            workloads: l.workloads,
            runs_per_side: l.runs_per_side,
            machine: l.machine,
            created_at: l.created_at,
            verdict: l.verdict,
            headline: l.headline,
            headline_columns: l.headline_columns.map(|Json(c)| c),
            failure,
        }
    }
}

/// Comparisons matching `filter` in its order; the steps of per-patch
/// comparisons are left out (their parent lists them).
///
/// Each order's keys are `CASE`s on the order asked for, which a plan made
/// for the values at hand folds away: newest and oldest first walk the
/// primary key's index, the verdict order (its verdict, then the larger
/// headline change, as every list orders worst first)
/// `comparisons_worst_first`. What
/// names a row (its series' subjects, its tree) and a failed one's failure
/// are looked up for the page's rows only, not for those a page number
/// skips (page 1000 took 140 ms at 10⁵ comparisons, now 15).
///
/// A failed comparison's failure is its failed job's that failed on its
/// own (not cancelled, not failed for an earlier one: "not run: …"); a
/// per-patch comparison's is its first failed step's.
///
/// A search is asked of each comparison, newest first, until the page is
/// full (`EXISTS`), not by first collecting every matching patch: a common
/// word matches thousands of patches (277 ms at 10⁵ comparisons), the
/// newest page of them takes under 1 ms; a term no trigram narrows and
/// nothing matches reads every comparison (180 ms at 10⁵, load 6).
///
/// Planned for the filter values at hand: a prepared statement soon gets a
/// generic plan, in which `$5 IS NULL OR c.verdict = $5` cannot use the
/// verdict index and a rare verdict means walking every comparison (26 ms
/// at 10⁵ of them, against 0.1 ms planned with the value).
pub async fn list(
    db: &PgPool,
    filter: &ListFilter<'_>,
) -> Result<Vec<ComparisonSummary>, sqlx::Error> {
    let search = filter.search.map(Search::new);
    let mut tx = db.begin().await?;
    sqlx::query!("SET LOCAL plan_cache_mode = force_custom_plan")
        .execute(&mut *tx)
        .await?;
    let listed = sqlx::query_as!(
        Listed,
        r#"SELECT l.id AS "id!", l.status AS "status!: ComparisonStatus",
                  l.kind AS "kind!: ComparisonKind",
                  l.base AS "base!: Json<BaseSource>",
                  (SELECT p.subject FROM patches p
                   WHERE p.series_id = l.series_id AND p.has_diff
                   ORDER BY p.position LIMIT 1) AS subject,
                  (SELECT p.subject FROM patches p
                   WHERE p.series_id = l.series_id AND p.has_diff
                   ORDER BY p.position DESC LIMIT 1) AS last_subject,
                  (SELECT p.subject FROM patches p
                   WHERE p.series_id = l.series_id AND p.position = 0
                     AND NOT p.has_diff) AS cover_letter,
                  (SELECT ls.subject FROM list_series ls
                   WHERE ls.comparison_id = l.id ORDER BY ls.id LIMIT 1) AS list_subject,
                  (SELECT count(*) FROM patches p
                   WHERE p.series_id = l.series_id AND p.has_diff) AS "patches!",
                  l.git_range, l.commit_sha, l.backend,
                  t.name AS "tree?",
                  (SELECT tc.subject FROM tree_commits tc
                   WHERE tc.tree_id = l.tree_id AND tc.commit_sha = l.commit_sha)
                    AS commit_subject,
                  l.workloads AS "workloads!", l.runs_per_side AS "runs_per_side!",
                  l.machine AS "machine?", l.created_at AS "created_at!",
                  l.verdict AS "verdict?: OverallVerdict", l.headline AS "headline?",
                  hc.columns AS "headline_columns?: Json<HeadlineColumns>",
                  f.failure_reason AS "failure_reason?: FailureReason",
                  f.failure_detail AS "failure_detail?",
                  fs.step AS "failed_step?"
           FROM (SELECT c.id, c.status, c.kind, c.base, c.series_id, c.git_range,
                        c.commit_sha, c.setup ->> 'backend' AS backend, c.tree_id,
                        setup_workloads(c.setup) AS workloads, c.runs_per_side,
                        m.name AS machine, c.created_at, c.verdict, c.headline,
                        CASE WHEN $10 = 'verdict' THEN verdict_rank(c.verdict) END AS rank,
                        CASE WHEN $10 = 'verdict' THEN c.change_size END AS size,
                        CASE WHEN $10 = 'oldest' THEN c.id END AS oldest
                 FROM comparisons c
                 LEFT JOIN machines m ON m.id = c.machine_id
                 WHERE c.parent_id IS NULL AND c.bisection_id IS NULL
                   AND ($1::text IS NULL OR c.status = $1)
                   AND ($2::text IS NULL OR m.name = $2)
                   AND ($3::text IS NULL OR c.setup -> 'workloads' ? $3)
                   AND ($4::bigint IS NULL OR c.id < $4)
                   AND ($11::bigint IS NULL OR c.id > $11)
                   AND ($5::text IS NULL OR c.verdict = $5)
                   AND ($12::text IS NULL OR c.kind = $12)
                   AND ($8::text IS NULL OR EXISTS (
                         SELECT 1 FROM patches p
                         WHERE p.series_id = c.series_id
                           AND (p.message_id = $8 OR lower(p.subject) LIKE $9
                                OR lower(p.author) LIKE $9)))
                 ORDER BY rank, size DESC NULLS LAST, oldest, c.id DESC
                 LIMIT $6 OFFSET $7) l
           LEFT JOIN trees t ON t.id = l.tree_id
           LEFT JOIN comparison_headlines hc ON hc.comparison_id = l.id
           LEFT JOIN LATERAL (
                 SELECT s.id, s.step FROM comparisons s
                 WHERE l.status = 'failed' AND s.parent_id = l.id AND s.status = 'failed'
                 ORDER BY s.step LIMIT 1) fs ON true
           LEFT JOIN LATERAL (
                 SELECT j.failure_reason, j.failure_detail FROM jobs j
                 WHERE l.status = 'failed' AND j.comparison_id = coalesce(fs.id, l.id)
                   AND j.failure_reason IS NOT NULL
                 ORDER BY j.failure_reason = 'cancelled', j.failure_detail LIKE 'not run:%',
                          j.seq
                 LIMIT 1) f ON true
           ORDER BY l.rank, l.size DESC NULLS LAST, l.oldest, l.id DESC"#,
        filter.status.map(ComparisonStatus::as_str),
        filter.machine,
        filter.workload,
        filter.before,
        filter.verdict.map(OverallVerdict::as_str),
        filter.limit,
        filter.offset,
        search.as_ref().map(|s| s.message_id.as_str()),
        search.as_ref().map(|s| s.pattern.as_str()),
        filter.order.as_str(),
        filter.after,
        filter.kind.map(ComparisonKind::as_str)
    )
    .fetch_all(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(listed.into_iter().map(ComparisonSummary::from).collect())
}

/// A search term as the listing's query uses it.
struct Search {
    /// As a Message-Id: without the angle brackets stored ids lack.
    message_id: String,
    /// As part of a subject or an author: `%term%`, lower case, with
    /// LIKE's wildcards in the term matched as themselves.
    pattern: String,
}

impl Search {
    fn new(term: &str) -> Search {
        let term = term.trim();
        let mut pattern = String::from("%");
        for ch in term.to_lowercase().chars() {
            if matches!(ch, '%' | '_' | '\\') {
                pattern.push('\\');
            }
            pattern.push(ch);
        }
        pattern.push('%');
        Search {
            message_id: term
                .trim_start_matches('<')
                .trim_end_matches('>')
                .to_string(),
            pattern,
        }
    }
}
