//! Mailing lists followed: `POST /api/v1/lists` (a list whose patch series
//! patchperf tests and answers in the thread), its checked form, which
//! workloads a series gets from the files it touches, and what the server
//! answers about lists and their series.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::git;
use super::setup::{check_params, check_runs, check_workloads};
use crate::Error;
use crate::mail_header;
use crate::mbox::diff;
use crate::protocol::WorkloadParams;
use crate::run::MeasurementMode;
use crate::workload::map::{Selection, WorkloadMap};

/// Most path globs of a list's filter, and of one workload rule.
const MAX_GLOBS: usize = 64;

/// Most rules of a list's workload map.
const MAX_RULES: usize = 64;

/// Longest glob.
const MAX_GLOB_LEN: usize = 200;

/// The files a list's series must touch to be tested, unless the list
/// names its own: everything under fs/ and include/linux/. A series
/// passing this filter is then measured on the workloads the workload map
/// gives its files, or not measured, saying which files no workload runs.
pub const DEFAULT_PATHS: &[&str] = &["fs/**", "include/linux/**"];

/// Files matching `paths` call for `workloads`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct WorkloadRule {
    /// Globs over the paths a patch touches: `*` within a directory, `**`
    /// across directories, `?` one character.
    pub paths: Vec<String>,
    /// Workload names.
    pub workloads: Vec<String>,
}

/// `POST /api/v1/lists` body, as sent.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ListCreateRequest {
    /// A short name (`linux-fsdevel`): letters, digits, `.`, `_`, `-`.
    pub name: String,
    /// The list's posting address: replies are copied to it.
    pub address: String,
    /// Its public-inbox archive (`https://lore.kernel.org/linux-fsdevel`):
    /// the server mirrors `<archive>/git/N.git` and reads every new
    /// message. Without one, mail comes only through
    /// `POST /api/v1/lists/{id}/messages`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archive_url: Option<String>,
    /// Read the archive from its first message (default: only what is
    /// posted from now on).
    #[serde(default)]
    pub read_history: bool,
    /// The tracked tree (by name) whose branch head is the default base.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tree: Option<String>,
    /// Or: the repository whose `base_branch` is the default base.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// The branch of `base_url`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_branch: Option<String>,
    /// A series touching none of these globs is skipped (default:
    /// [`DEFAULT_PATHS`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paths: Option<Vec<String>>,
    /// Workloads by the files a series touches. Left out (stored empty):
    /// the workload map derived from profiles
    /// (`patchperf_common::workload::map`), which also looks at the
    /// functions a patch's hunks are in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload_map: Option<Vec<WorkloadRule>>,
    /// Workloads of a series the map says nothing about (default: none:
    /// such a series is not measured, and its page says which of its files
    /// no workload exercises).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(schema_with = super::schema::workload_names))]
    pub workloads: Option<Vec<String>>,
    /// Workload parameters.
    #[serde(default = "list_params")]
    pub params: WorkloadParams,
    /// Boots per side.
    #[serde(default = "list_runs")]
    #[cfg_attr(feature = "openapi", schema(minimum = 3, maximum = 100))]
    pub runs: u32,
    /// Measurement mode to insist on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<MeasurementMode>,
    /// Machine to measure on (the first to claim otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
    /// A pool to measure on instead of one machine (each series runs on
    /// the first machine labelled so to claim it). Not with `machine`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool: Option<String>,
    /// Copy replies to the list (0-day writes most perf reports to the
    /// author and its own list; default: true).
    #[serde(default = "yes")]
    pub cc_list: bool,
    /// Copy replies to everyone else in the thread's To and Cc.
    #[serde(default)]
    pub cc_thread: bool,
    /// Also answer improvements, not only regressions.
    #[serde(default)]
    pub report_improvements: bool,
    /// Minutes a series may wait for its missing patches before it is
    /// recorded as incomplete (default 30).
    #[serde(default = "wait_minutes")]
    #[cfg_attr(feature = "openapi", schema(maximum = 10080))]
    pub wait_minutes: u32,
    /// Minutes between two reads of the archive (default 5).
    #[serde(default = "poll_minutes")]
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 1440))]
    pub poll_minutes: u32,
    /// Most series of this list queued or running at once (default 2).
    #[serde(default = "max_in_flight")]
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 100))]
    pub max_in_flight: u32,
    /// Most replies a day (default 20).
    #[serde(default = "daily_cap")]
    #[cfg_attr(feature = "openapi", schema(maximum = 1000))]
    pub daily_cap: u32,
}

/// One task, 5 s measured after 1 s of warm-up: what a list bot can
/// afford per boot for every series posted (a second of warm-up less than
/// a comparison's default).
fn list_params() -> WorkloadParams {
    let l = crate::run_length::default_for(crate::run_length::Asker::ListSeries, None);
    WorkloadParams {
        seconds: l.seconds,
        warmup_seconds: l.warmup_seconds,
        ..WorkloadParams::default()
    }
}
fn list_runs() -> u32 {
    5
}
fn yes() -> bool {
    true
}
fn wait_minutes() -> u32 {
    30
}
fn poll_minutes() -> u32 {
    5
}
fn max_in_flight() -> u32 {
    2
}
fn daily_cap() -> u32 {
    20
}

checked!(
    /// A [`ListCreateRequest`] whose fields were checked, defaults filled in.
    /// Read it through `Deref`; build it with `try_from`.
    ListSubmission(ListCreateRequest),
    check
);

/// What an archive URL may not carry beyond a clone URL: the epochs'
/// repositories are found by appending `/git/N.git` to it, so a query or
/// fragment would end up in the middle of each, and a `..` segment would
/// walk out of the archive to other repositories of the host.
fn check_archive(url: &str) -> Result<(), String> {
    if url.contains(['?', '#']) {
        return Err("an archive URL has no query or fragment".into());
    }
    if url.split('/').any(|segment| segment == "..") {
        return Err("an archive URL has no `..` segment".into());
    }
    Ok(())
}

fn check(mut req: ListCreateRequest) -> Result<ListCreateRequest, Error> {
    super::tree::check_name(&req.name)?;
    mail_header::check_address(&req.address)
        .or_else(|why| invalid(format!("address {:?}: {why}", req.address)))?;
    if let Some(url) = &req.archive_url {
        git::check_url(url).or_else(|why| invalid(format!("archive_url {url:?}: {why}")))?;
        check_archive(url).or_else(|why| invalid(format!("archive_url {url:?}: {why}")))?;
    }
    match (&req.tree, &req.base_url, &req.base_branch) {
        (Some(_), None, None) => {}
        (None, Some(url), Some(branch)) => {
            git::check_url(url).or_else(|why| invalid(format!("base_url {url:?}: {why}")))?;
            git::check_commit(branch)
                .or_else(|why| invalid(format!("base_branch {branch:?}: {why}")))?;
        }
        _ => {
            return invalid(
                "name the default base: `tree` (a tracked tree), or `base_url` with \
                 `base_branch`"
                    .into(),
            );
        }
    }
    let paths = req
        .paths
        .take()
        .unwrap_or_else(|| DEFAULT_PATHS.iter().map(|s| (*s).to_string()).collect());
    check_globs("paths", &paths)?;
    req.paths = Some(paths);
    let map = req.workload_map.take().unwrap_or_default();
    if map.len() > MAX_RULES {
        return invalid(format!(
            "workload_map has {} rules; at most {MAX_RULES}",
            map.len()
        ));
    }
    for rule in &map {
        check_globs("workload_map paths", &rule.paths)?;
        check_workloads(&rule.workloads)?;
    }
    req.workload_map = Some(map);
    let workloads = req.workloads.take().unwrap_or_default();
    if !workloads.is_empty() {
        check_workloads(&workloads)?;
    }
    req.workloads = Some(workloads);
    check_params(&req.params)?;
    check_runs(req.runs, None)?;
    crate::machine_state::check_machine_or_pool(req.machine.as_deref(), req.pool.as_deref())
        .or_else(invalid)?;
    let bounded = [
        ("wait_minutes", req.wait_minutes, 0, 10_080),
        ("poll_minutes", req.poll_minutes, 1, 1_440),
        ("max_in_flight", req.max_in_flight, 1, 100),
        ("daily_cap", req.daily_cap, 0, 1_000),
    ];
    for (name, value, least, most) in bounded {
        if !(least..=most).contains(&value) {
            return invalid(format!("{name} is {value}; from {least} to {most}"));
        }
    }
    Ok(req)
}

fn check_globs(what: &str, globs: &[String]) -> Result<(), Error> {
    if globs.is_empty() || globs.len() > MAX_GLOBS {
        return invalid(format!("{what} must list 1 to {MAX_GLOBS} globs"));
    }
    for g in globs {
        let ok = !g.is_empty()
            && g.len() <= MAX_GLOB_LEN
            && !g.starts_with('/')
            && g.chars().all(|c| c.is_ascii_graphic());
        if !ok {
            return invalid(format!(
                "{what}: {g:?} must be a relative path glob of at most {MAX_GLOB_LEN} \
                 printable characters"
            ));
        }
    }
    Ok(())
}

fn invalid<T>(message: String) -> Result<T, Error> {
    Err(Error::InvalidSubmission(message))
}

/// Whether `path` matches `glob`: `**` any run of characters, `*` any run
/// within one directory, `?` one character but `/`, else itself.
pub fn glob_matches(glob: &str, path: &str) -> bool {
    // Iterative with one backtrack point per star kind, so a hostile glob
    // costs at most |glob|·|path| steps.
    let (g, p) = (glob.as_bytes(), path.as_bytes());
    let (mut gi, mut pi) = (0, 0);
    let mut star: Option<(usize, usize, bool)> = None;
    while pi < p.len() {
        if gi + 1 < g.len() && g[gi] == b'*' && g[gi + 1] == b'*' {
            star = Some((gi + 2, pi, true));
            gi += 2;
        } else if gi < g.len() && g[gi] == b'*' {
            star = Some((gi + 1, pi, false));
            gi += 1;
        } else if gi < g.len() && (g[gi] == p[pi] || (g[gi] == b'?' && p[pi] != b'/')) {
            gi += 1;
            pi += 1;
        } else if let Some((after, from, deep)) = star {
            if !deep && p[from] == b'/' {
                return false;
            }
            star = Some((after, from + 1, deep));
            gi = after;
            pi = from + 1;
        } else {
            return false;
        }
    }
    g[gi..].iter().all(|&c| c == b'*')
}

/// Whether any of `touched` matches any of `globs`.
pub fn touches(globs: &[String], touched: &[String]) -> bool {
    touched
        .iter()
        .any(|p| globs.iter().any(|g| glob_matches(g, p)))
}

/// The workloads for a series whose diffs are `mbox`: with a list's own
/// rules (`map`), every matching rule's, in the rules' order without
/// repeats; with none, the derived workload map's
/// ([`WorkloadMap::select`], which also reads the functions the hunks are
/// in). The touched files no rule or map entry covers are named; when
/// nothing matches at all, `default` (if the list names one) is measured.
pub fn workloads_for(map: &[WorkloadRule], default: &[String], mbox: &str) -> Selection {
    let touched: Vec<String> = diff::paths(mbox).into_iter().collect();
    let mut selection = if map.is_empty() {
        WorkloadMap::derived().select(&touched, &diff::functions(mbox))
    } else {
        let mut selection = Selection::default();
        for rule in map.iter().filter(|r| touches(&r.paths, &touched)) {
            for w in &rule.workloads {
                if !selection.workloads.contains(w) {
                    selection.workloads.push(w.clone());
                }
            }
        }
        selection.unexercised = touched
            .iter()
            .filter(|f| {
                !map.iter()
                    .any(|r| touches(&r.paths, std::slice::from_ref(f)))
            })
            .cloned()
            .collect();
        selection
    };
    if selection.workloads.is_empty() && !default.is_empty() {
        selection.workloads = default.to_vec();
        selection.fallback = true;
    }
    selection
}

/// Where a series of a list is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum SeriesState {
    /// Patches are missing; waiting for them (or for a free slot).
    Waiting,
    /// The wait is over and patches are still missing: not tested.
    Incomplete,
    /// Not tested, for the reason given (outside the paths, an RFC, …).
    Skipped,
    /// A newer version arrived before this one was measured.
    Superseded,
    /// Its comparison is queued or running.
    Queued,
    /// Measured; nothing to report, or not reported (see the reason).
    Measured,
    /// Measured and answered in the thread.
    Reported,
    /// Its comparison failed (a patch did not apply or build).
    Failed,
}

impl SeriesState {
    /// Every state, in the order a series passes through them.
    pub const ALL: [SeriesState; 8] = [
        SeriesState::Waiting,
        SeriesState::Incomplete,
        SeriesState::Skipped,
        SeriesState::Superseded,
        SeriesState::Queued,
        SeriesState::Measured,
        SeriesState::Reported,
        SeriesState::Failed,
    ];

    /// The stored and shown spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            SeriesState::Waiting => "waiting",
            SeriesState::Incomplete => "incomplete",
            SeriesState::Skipped => "skipped",
            SeriesState::Superseded => "superseded",
            SeriesState::Queued => "queued",
            SeriesState::Measured => "measured",
            SeriesState::Reported => "reported",
            SeriesState::Failed => "failed",
        }
    }

    /// The state spelled `s`.
    pub fn parse(s: &str) -> Option<SeriesState> {
        SeriesState::ALL.into_iter().find(|x| x.as_str() == s)
    }

    /// Whether nothing more happens to it.
    pub fn is_final(self) -> bool {
        !matches!(self, SeriesState::Waiting | SeriesState::Queued)
    }
}

#[cfg(feature = "sqlx")]
text_column!(SeriesState, as_str, parse);

/// A list as the API shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ListView {
    /// List id.
    pub id: i64,
    /// Its name.
    pub name: String,
    /// Its posting address.
    pub address: String,
    /// Its public-inbox archive.
    pub archive_url: Option<String>,
    /// Whether the archive is read from its first message.
    pub read_history: bool,
    /// The default base, in words (`tree vfs.all`, `<url> master`).
    pub base: String,
    /// The path filter.
    pub paths: Vec<String>,
    /// Workloads by path.
    pub workload_map: Vec<WorkloadRule>,
    /// Workloads otherwise.
    pub workloads: Vec<String>,
    /// Boots per side.
    pub runs_per_side: i32,
    /// Replies copied to the list.
    pub cc_list: bool,
    /// Replies copied to the thread.
    pub cc_thread: bool,
    /// Improvements answered too.
    pub report_improvements: bool,
    /// Minutes a series waits for missing patches.
    pub wait_minutes: i32,
    /// Minutes between reads of the archive.
    pub poll_minutes: i32,
    /// Series queued at once.
    pub max_in_flight: i32,
    /// Replies a day.
    pub daily_cap: i32,
    /// When the archive was last read, and what went wrong if it failed.
    pub polled_at: Option<DateTime<Utc>>,
    /// The last read's failure.
    pub poll_error: Option<String>,
    /// Messages stored.
    pub messages: i64,
    /// Where people read it.
    pub page_url: String,
}

/// One version of a series posted to a list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SeriesView {
    /// Series id.
    pub id: i64,
    /// Its list.
    pub list_id: i64,
    /// The list's name.
    pub list: String,
    /// The cover letter's (or single patch's) subject.
    pub subject: String,
    /// vN.
    pub version: i32,
    /// N patches.
    pub total: i32,
    /// Who sent it, `Name <address>` (the address alone when the mail
    /// gives no name; series read before names were kept have only it).
    pub author: String,
    /// When it was posted (its `Date:`).
    pub posted_at: Option<DateTime<Utc>>,
    /// The message a reply answers: the cover letter or the single patch.
    pub message_id: String,
    /// Where it is.
    pub state: SeriesState,
    /// Why it is there, in words (what is missing, why skipped, which base).
    pub reason: Option<String>,
    /// Patch numbers not arrived.
    pub missing: Vec<i32>,
    /// Its per-patch comparison.
    pub comparison_id: Option<i64>,
    /// The comparison's overall verdict, once measured.
    pub verdict: Option<String>,
    /// The earlier version this one supersedes.
    pub previous_id: Option<i64>,
    /// The later version that superseded it.
    pub next_id: Option<i64>,
    /// The reply's Message-ID, once queued.
    pub reply_message_id: Option<String>,
    /// When it was first seen.
    pub seen_at: DateTime<Utc>,
    /// Where people read it.
    pub page_url: String,
}

/// `POST /api/v1/lists/{id}/messages` answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MessagesTaken {
    /// Messages stored.
    pub taken: u32,
    /// Messages the list had already.
    pub known: u32,
    /// Messages refused, each with why.
    pub refused: Vec<String>,
}

/// `GET /api/v1/series` query.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::IntoParams))]
#[serde(deny_unknown_fields)]
pub struct SeriesListQuery {
    /// Only this list's.
    pub list: Option<i64>,
    /// Only in this state.
    pub state: Option<SeriesState>,
    /// At most this many (default 50, at most 500), newest first.
    pub limit: Option<u32>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn globs_match_as_kernel_people_write_them() {
        assert!(glob_matches("fs/**", "fs/open.c"));
        assert!(glob_matches("fs/**", "fs/ext4/inode.c"));
        assert!(glob_matches("fs/*.c", "fs/open.c"));
        assert!(!glob_matches("fs/*.c", "fs/ext4/inode.c"));
        assert!(glob_matches("include/linux/fs.h", "include/linux/fs.h"));
        assert!(!glob_matches("include/linux/fs.h", "include/linux/fs.hh"));
        assert!(glob_matches("fs/?pen.c", "fs/open.c"));
        assert!(!glob_matches("fs/**", "mm/filemap.c"));
        assert!(glob_matches("**/Makefile", "fs/ext4/Makefile"));
    }

    /// A one-file patch of `file`, its hunk in `function`.
    fn patch(file: &str, function: &str) -> String {
        format!(
            "diff --git a/{file} b/{file}\n--- a/{file}\n+++ b/{file}\n\
             @@ -1,1 +1,1 @@ static int {function}(void)\n-a\n+b\n"
        )
    }

    #[test]
    fn workloads_follow_the_files_touched() {
        let w = |file: &str| workloads_for(&[], &[], &patch(file, "no_such_function"));
        let stat = w("fs/stat.c");
        assert!(!stat.workloads.is_empty());
        assert!(
            stat.workloads.iter().all(|w| w.contains("stat")),
            "{stat:?}"
        );
        for (file, family) in [
            ("fs/select.c", "poll"),
            ("fs/pipe.c", "pipe"),
            ("fs/locks.c", "lock"),
            ("fs/eventfd.c", "eventfd"),
            ("fs/file.c", "dup"),
        ] {
            let s = w(file);
            assert!(
                s.workloads.iter().any(|w| w.starts_with(family)),
                "{file}: {s:?}"
            );
            assert!(s.unexercised.is_empty(), "{file}: {s:?}");
        }
        // The unlink path of fs/namei.c, not its open path.
        let unlink = workloads_for(&[], &[], &patch("fs/namei.c", "do_unlinkat"));
        assert!(
            !unlink.workloads.is_empty()
                && unlink.workloads.iter().all(|w| w.starts_with("unlink")),
            "{unlink:?}"
        );
        // No workload runs ext4: not measured, not measured on a stand-in.
        let none = w("fs/ext4/inode.c");
        assert!(none.workloads.is_empty(), "{none:?}");
        assert_eq!(none.unexercised, ["fs/ext4/inode.c"]);
        // Unless the list names workloads for such series.
        let fallback = workloads_for(
            &[],
            &["open1".to_string()],
            &patch("fs/ext4/inode.c", "ext4_iget"),
        );
        assert_eq!(fallback.workloads, ["open1"]);
        assert!(fallback.fallback && !none.fallback);
        // A series touching both: measured on what is exercised, the rest named.
        let both = workloads_for(
            &[],
            &[],
            &format!(
                "{}{}",
                patch("fs/pipe.c", "x"),
                patch("fs/ext4/inode.c", "y")
            ),
        );
        assert!(!both.workloads.is_empty());
        assert_eq!(both.unexercised, ["fs/ext4/inode.c"]);
        let globs: Vec<String> = DEFAULT_PATHS.iter().map(|s| (*s).to_string()).collect();
        assert!(touches(&globs, &["fs/open.c".to_string()]));
        assert!(!touches(&globs, &["mm/filemap.c".to_string()]));
    }

    #[test]
    fn a_list_s_own_rules_replace_the_map() {
        let rules = vec![WorkloadRule {
            paths: vec!["fs/stat.c".into()],
            workloads: vec!["statx-empty".into()],
        }];
        let s = workloads_for(
            &rules,
            &[],
            &format!("{}{}", patch("fs/stat.c", "a"), patch("fs/pipe.c", "b")),
        );
        assert_eq!(s.workloads, ["statx-empty"]);
        assert_eq!(s.unexercised, ["fs/pipe.c"]);
    }

    fn request() -> ListCreateRequest {
        serde_json::from_value(serde_json::json!({
            "name": "linux-fsdevel",
            "address": "linux-fsdevel@vger.kernel.org",
            "tree": "vfs.all",
        }))
        .unwrap()
    }

    #[test]
    fn a_list_is_checked_and_its_defaults_filled_in() {
        let list = ListSubmission::try_from(request()).unwrap();
        assert_eq!(list.paths.as_ref().unwrap().len(), DEFAULT_PATHS.len());
        assert_eq!(list.runs, 5);
        assert!(list.cc_list && !list.cc_thread && !list.report_improvements);
        for bad in [
            serde_json::json!({"address": "x\r\nBcc: a@b.org"}),
            serde_json::json!({"tree": null}),
            serde_json::json!({"base_url": "https://example.org/x.git"}),
            serde_json::json!({"paths": ["/etc/passwd"]}),
            serde_json::json!({"workloads": ["nope"]}),
            serde_json::json!({"max_in_flight": 0}),
            serde_json::json!({"archive_url": "ftp://x"}),
            serde_json::json!({"archive_url": "https://lore.example.org/fsdevel?x=1"}),
            serde_json::json!({"archive_url": "https://lore.example.org/fsdevel#0"}),
            serde_json::json!({"archive_url": "https://lore.example.org/fsdevel/../lkml"}),
            serde_json::json!({"archive_url": "/srv/pi/../../etc"}),
        ] {
            let mut v = serde_json::to_value(request()).unwrap();
            for (k, x) in bad.as_object().unwrap() {
                v[k] = x.clone();
            }
            let req: Result<ListCreateRequest, _> = serde_json::from_value(v.clone());
            if let Ok(req) = req {
                assert!(ListSubmission::try_from(req).is_err(), "{v}");
            }
        }
    }

    proptest! {
        #[test]
        fn matching_is_total_and_literal_globs_match_only_themselves(
            glob in "[a-z/*?.]{0,40}",
            path in "[a-z/.]{0,60}",
        ) {
            let _ = glob_matches(&glob, &path);
            if !glob.contains(['*', '?']) {
                prop_assert_eq!(glob_matches(&glob, &path), glob == path);
            }
            prop_assert!(glob_matches("**", &path));
        }
    }
}
