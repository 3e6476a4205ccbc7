//! Tracked trees: `POST /api/v1/trees` (a branch patchperf measures by
//! itself), its checked form, and what the server answers about a tree,
//! a push and a metric's history.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::git;
use super::setup::Setup;
use crate::Error;
use crate::mail_header;
use crate::protocol::WorkloadParams;
use crate::run::TaskMode;

/// Most addresses a tree's reports are copied to.
const MAX_CC: usize = 16;

/// `POST /api/v1/trees` body, as sent.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
// Unknown fields are refused by the flattened `Setup`'s `others`.
pub struct TreeCreateRequest {
    /// A short name (`vfs.all`): letters, digits, `.`, `_`, `-`.
    pub name: String,
    /// The repository to fetch from.
    pub url: String,
    /// The branch to follow.
    pub branch: String,
    /// What to measure each new head on, and where (flattened: its fields
    /// sit beside these); a run length left out is fixed when the tree is
    /// added: `backend`'s, else the named machine's best, else a
    /// wall-clock mode's (5 s after 2 s), since a history keeps one length.
    #[serde(flatten)]
    pub setup: Setup,
    /// At most one test per this many hours; 0 (the default) tests every
    /// new head.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(maximum = 8760))]
    pub min_hours: u32,
    /// Addresses (the list, the maintainers) copied on every report mailed
    /// to a commit's author.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cc: Vec<String>,
    /// Where each report's JSON is POSTed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook_url: Option<String>,
}

checked!(
    /// A [`TreeCreateRequest`] whose fields were checked. Read it through
    /// `Deref`; build it with `try_from`.
    TreeSubmission(TreeCreateRequest),
    check
);

fn check(req: TreeCreateRequest) -> Result<TreeCreateRequest, Error> {
    check_name(&req.name)?;
    git::check_url(&req.url).or_else(|why| invalid(format!("url {:?}: {why}", req.url)))?;
    git::check_commit(&req.branch)
        .or_else(|why| invalid(format!("branch {:?}: {why}", req.branch)))?;
    // None named: each push is measured on the workloads the workload map
    // gives the files it touches.
    req.setup.check()?;
    if req.min_hours > 8760 {
        return invalid(format!(
            "min_hours is {}; at most 8760 (a year)",
            req.min_hours
        ));
    }
    if req.cc.len() > MAX_CC {
        return invalid(format!(
            "cc lists {} addresses; at most {MAX_CC}",
            req.cc.len()
        ));
    }
    let mut seen = Vec::new();
    for address in &req.cc {
        if let Err(why) = mail_header::check_address(address) {
            return invalid(format!("cc {address:?} is not a mail address: {why}"));
        }
        // `LIST@` and `list@` are one recipient (see `address_key`).
        let key = mail_header::address_key(address);
        if seen.contains(&key) {
            return invalid(format!("cc lists {address:?} twice"));
        }
        seen.push(key);
    }
    if let Some(url) = &req.webhook_url {
        let web = url.starts_with("https://") || url.starts_with("http://");
        if !web || url.len() > 1024 || url.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return invalid(format!("webhook_url {url:?} must be an http(s) URL"));
        }
    }
    Ok(req)
}

/// A tree's or a list's name: 1 to 64 letters, digits, `.`, `_` or `-`,
/// starting with a letter or digit (it goes into URLs and subjects).
pub(crate) fn check_name(name: &str) -> Result<(), Error> {
    let ok = (1..=64).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(())
    } else {
        invalid(format!(
            "name {name:?} must be 1 to 64 letters, digits, `.`, `_` or `-`"
        ))
    }
}

fn invalid<T>(message: String) -> Result<T, Error> {
    Err(Error::InvalidSubmission(message))
}

/// `201` answer of `POST /api/v1/trees`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TreeCreated {
    /// The tree.
    pub tree: TreeView,
    /// Where to read it (this API).
    pub url: String,
}

/// A tracked tree as the API shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TreeView {
    /// Tree id.
    pub id: i64,
    /// Its name.
    pub name: String,
    /// The repository.
    pub url: String,
    /// The branch followed.
    pub branch: String,
    /// Workloads measured.
    pub workloads: Vec<String>,
    /// Their parameters.
    pub params: WorkloadParams,
    /// Boots per side.
    pub runs_per_side: i32,
    /// At most one test per this many hours (0: every head).
    pub min_hours: i32,
    /// Copied on every mailed report.
    pub cc: Vec<String>,
    /// Where report JSON is POSTed.
    pub webhook_url: Option<String>,
    /// The newest head queued for testing.
    pub tested_commit: String,
    /// When it was queued.
    pub tested_at: Option<DateTime<Utc>>,
    /// When the branch was last looked at.
    pub polled_at: Option<DateTime<Utc>>,
    /// What the last rewrite of the branch (a forced push) did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rewrite_note: Option<String>,
    /// Why the last new head was not measured (`not measured: no workload
    /// exercises fs/xyz.c`), until one is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push_note: Option<String>,
    /// Where people read its history.
    pub page_url: String,
}

/// `POST /api/v1/trees/{id}/push` answer: what looking at the branch did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PushResponse {
    /// The tree.
    pub tree_id: i64,
    /// The branch's head now.
    pub head: String,
    /// The comparison queued for the new commits, when there were any and
    /// the schedule allowed one.
    pub comparison_id: Option<i64>,
    /// What happened, in words.
    pub status: String,
}

/// One point of a metric's history: one tested commit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct HistoryPoint {
    /// The commit's place in the tree's tested line (0: the head when the
    /// tree was added).
    pub position: i32,
    /// The commit.
    pub commit: String,
    /// Its subject.
    pub subject: String,
    /// Its author.
    pub author: String,
    /// When it was committed.
    pub committed_at: Option<DateTime<Utc>>,
    /// The metric on each boot of this commit.
    pub runs: Vec<f64>,
    /// Their mean.
    pub mean: f64,
    /// 95% interval of the mean, low end.
    pub low: Option<f64>,
    /// 95% interval of the mean, high end.
    pub high: Option<f64>,
    /// The comparison that measured it.
    pub comparison_id: i64,
}

/// `GET /api/v1/trees/{id}/history` answer: one metric on one machine, in
/// commit order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct HistoryView {
    /// The tree.
    pub tree_id: i64,
    /// The workload.
    pub workload: String,
    /// Processes or threads.
    pub mode: TaskMode,
    /// Tasks.
    pub nr_task: i32,
    /// The metric.
    pub metric: String,
    /// The machine measured on.
    pub machine: String,
    /// How it measured.
    pub measurement: String,
    /// The points, oldest commit first.
    pub points: Vec<HistoryPoint>,
}

/// `GET /api/v1/trees/{id}/history` query: which history. Each part may be
/// left out when the tree has only one value for it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::IntoParams),
    into_params(parameter_in = Query)
)]
pub struct HistoryQuery {
    /// Workload.
    pub workload: Option<String>,
    /// `process` or `thread`.
    pub mode: Option<String>,
    /// Tasks.
    pub nr_task: Option<i32>,
    /// Metric (the headline, `will-it-scale.per_process_ops`, is recorded).
    pub metric: Option<String>,
    /// Machine name.
    pub machine: Option<String>,
    /// Measurement mode (`tcg-icount`, `kvm`, …).
    pub measurement: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> TreeCreateRequest {
        serde_json::from_value(serde_json::json!({
            "name": "vfs.all",
            "url": "https://git.kernel.org/pub/scm/linux/kernel/git/vfs/vfs.git",
            "branch": "vfs.all",
            "workloads": ["open1", "dup1"],
            "params": { "nr_task": [1], "seconds": 5, "warmup_seconds": 2 },
            "runs": 3,
            "cc": ["linux-fsdevel@vger.kernel.org"],
        }))
        .unwrap()
    }

    fn rejection(req: TreeCreateRequest) -> String {
        match TreeSubmission::try_from(req) {
            Err(Error::InvalidSubmission(m)) => m,
            other => panic!("expected a rejection, got {other:?}"),
        }
    }

    #[test]
    fn a_sound_tree_is_accepted() {
        assert!(TreeSubmission::try_from(request()).is_ok());
    }

    #[test]
    fn names_branches_addresses_and_hooks_are_checked() {
        let mut r = request();
        r.name = "../etc".into();
        assert!(rejection(r).starts_with("name \"../etc\""));
        let mut r = request();
        r.branch = "--upload-pack=x".into();
        assert!(rejection(r).starts_with("branch"));
        let mut r = request();
        r.cc = vec!["Al <viro@zeniv.linux.org.uk>".into()];
        assert!(rejection(r).contains("is not a mail address"));
        let mut r = request();
        r.cc = vec!["a@b.c\nBcc: x@y.z".into()];
        assert!(rejection(r).contains("is not a mail address"));
        let mut r = request();
        r.webhook_url = Some("file:///etc/passwd".into());
        assert!(rejection(r).contains("must be an http(s) URL"));
        let mut r = request();
        r.min_hours = 9000;
        assert!(rejection(r).starts_with("min_hours"));
    }

    #[test]
    fn an_address_literal_or_the_same_list_twice_is_no_cc() {
        let mut r = request();
        r.cc = vec!["root@[127.0.0.1]".into()];
        assert!(rejection(r).contains("is not a mail address"));
        let mut r = request();
        r.cc = vec![
            "linux-fsdevel@vger.kernel.org".into(),
            "LINUX-FSDEVEL@vger.kernel.org".into(),
        ];
        assert!(rejection(r).contains("twice"));
    }
}
