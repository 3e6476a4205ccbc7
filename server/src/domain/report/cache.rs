//! Built reports kept in this server's memory per comparison, in front of
//! the ones stored in the database (`db::reports`), so that the report
//! page, its JSON, its text and its plots neither build nor decode a
//! comparison's report more than once per change of its inputs.
//!
//! Several servers may stand behind one load balancer and each keeps its
//! own cache, so an entry is trusted only while its [`Inputs`] equal what
//! the database says now: every lookup reads them (two indexed queries) and
//! a new run, a status change, added boots or a new noise floor makes the
//! entry miss. Nothing is ever served that was built from older runs.
//! Requests that miss together wait for one load instead of each making
//! their own (fifty browsers on the newest comparison after a new run).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use patchperf_common::comparison::ComparisonStatus;
use serde::{Deserialize, Serialize};
use tokio::sync::Mutex as BuildLock;

use crate::db::comparisons::ComparisonRow;
use crate::db::progress::RunsSoFar;
use patchperf_common::report::stored::ComparisonReport;

/// What a built report holds, by version: a report stored by a builder of
/// another edition is built again when next read. 1: an A/A calibration's
/// header names its workloads and boots the base on both sides (no
/// `linux-source-6.1+e3b0c44298`, the hash of its empty series). 2: the
/// "why" names only significant profile entries, each in the system call
/// that carries most of it; a per-second rate has no direction. 3: a
/// failed or cancelled comparison leaves out the cells it measured on one
/// side only; a git base is named by its short commit and its repository
/// (never a path on the server).
const EDITION: u32 = 3;

/// How many comparisons' reports one server keeps. A report holds its runs'
/// metric values, a few hundred kB for a large comparison; the pages people
/// look at are the newest few dozen.
pub const CAPACITY: usize = 64;

/// What a comparison's report is built from, as read before building it.
/// Two equal `Inputs` mean the same runs judged against the same floor.
/// Stored beside the report (`comparison_reports.inputs`) as JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Inputs {
    /// The comparison row's last change (status, machine pinned, boots
    /// added), and what of it the header shows, since one transaction can
    /// change the row twice under one `now()`.
    updated_at: DateTime<Utc>,
    status: ComparisonStatus,
    runs_per_side: i32,
    runs_added: usize,
    machine_id: Option<i64>,
    /// Runs stored so far and the newest of them.
    runs: RunsSoFar,
    /// The A/A comparison that sets the noise floor.
    latest_aa: Option<i64>,
    /// The builder's [`EDITION`] (0: stored before editions).
    #[serde(default)]
    edition: u32,
}

impl Inputs {
    /// The inputs of comparison `c` with its runs and noise floor's A/A
    /// comparison as read now.
    pub fn new(c: &ComparisonRow, runs: RunsSoFar, latest_aa: Option<i64>) -> Self {
        Inputs {
            updated_at: c.updated_at,
            status: c.status,
            runs_per_side: c.runs_per_side,
            runs_added: c.runs_added_at.len(),
            machine_id: c.machine_id,
            runs,
            latest_aa,
            edition: EDITION,
        }
    }

    /// The A/A comparison whose noise floor the report is judged against.
    pub fn latest_aa(&self) -> Option<i64> {
        self.latest_aa
    }
}

/// How many rendered forms (page, text, JSON, one per plot) one report
/// keeps; a plot per metric of a large report could otherwise be thousands.
pub const RENDERED_PER_REPORT: usize = 32;

#[derive(Debug)]
struct Entry {
    inputs: Inputs,
    report: Arc<ComparisonReport>,
    used: u64,
    /// What was rendered from `report`, by what it is (`text`, a plot's
    /// query, …). It goes with the report: a new report renders anew.
    rendered: HashMap<String, Arc<str>>,
}

/// The reports this server holds, by comparison id, least recently used
/// first to go. (How many it built is counted by `domain::context::telemetry`.)
#[derive(Debug, Default)]
pub struct ReportCache {
    entries: Mutex<HashMap<i64, Entry>>,
    /// One lock per comparison whose report is being built now.
    building: Mutex<HashMap<i64, Arc<BuildLock<()>>>>,
    clock: AtomicU64,
}

impl ReportCache {
    /// The report of comparison `id` if it was built from exactly `inputs`.
    pub fn get(&self, id: i64, inputs: &Inputs) -> Option<Arc<ComparisonReport>> {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let e = entries.get_mut(&id)?;
        if &e.inputs != inputs {
            return None;
        }
        e.used = self.clock.fetch_add(1, Ordering::Relaxed);
        Some(Arc::clone(&e.report))
    }

    /// Keeps a report built or read back for `inputs`, dropping the least
    /// recently used one when full.
    pub fn put(&self, id: i64, inputs: Inputs, report: Arc<ComparisonReport>) {
        let used = self.clock.fetch_add(1, Ordering::Relaxed);
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if entries.len() >= CAPACITY && !entries.contains_key(&id) {
            let oldest = entries.iter().min_by_key(|(_, e)| e.used).map(|(k, _)| *k);
            if let Some(oldest) = oldest {
                entries.remove(&oldest);
            }
        }
        entries.insert(
            id,
            Entry {
                inputs,
                report,
                used,
                rendered: HashMap::new(),
            },
        );
    }

    /// What was rendered as `what` from exactly this `report` (the one
    /// [`get`](Self::get) returned), if it was kept.
    pub fn rendered(
        &self,
        id: i64,
        report: &Arc<ComparisonReport>,
        what: &str,
    ) -> Option<Arc<str>> {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let e = entries
            .get(&id)
            .filter(|e| Arc::ptr_eq(&e.report, report))?;
        e.rendered.get(what).cloned()
    }

    /// Keeps `body`, rendered as `what` from `report`, while that report is
    /// the one kept for comparison `id`; returns it.
    pub fn keep_rendered(
        &self,
        id: i64,
        report: &Arc<ComparisonReport>,
        what: &str,
        body: String,
    ) -> Arc<str> {
        let body: Arc<str> = body.into();
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(e) = entries
            .get_mut(&id)
            .filter(|e| Arc::ptr_eq(&e.report, report))
        {
            if e.rendered.len() < RENDERED_PER_REPORT || e.rendered.contains_key(what) {
                e.rendered.insert(what.to_string(), Arc::clone(&body));
            }
        }
        body
    }

    /// The lock whose holder builds comparison `id`'s report; who waits
    /// for it should look again before building.
    pub fn builder(&self, id: i64) -> Arc<BuildLock<()>> {
        let mut building = self.building.lock().unwrap_or_else(|p| p.into_inner());
        // Forget the locks of builds over, so the map holds only live ones.
        building.retain(|_, lock| Arc::strong_count(lock) > 1);
        Arc::clone(building.entry(id).or_default())
    }

    /// How many reports are kept now.
    pub fn len(&self) -> usize {
        self.entries.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// Whether none is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs(runs: i64) -> Inputs {
        Inputs {
            updated_at: DateTime::<Utc>::UNIX_EPOCH,
            status: ComparisonStatus::Running,
            runs_per_side: 3,
            runs_added: 0,
            machine_id: Some(1),
            runs: RunsSoFar {
                runs,
                last_run: Some(runs),
            },
            latest_aa: None,
            edition: EDITION,
        }
    }

    #[test]
    fn a_report_stored_by_an_earlier_edition_of_the_builder_is_not_current() {
        let now = inputs(3);
        let mut stored = serde_json::to_value(&now).unwrap();
        assert_eq!(
            serde_json::from_value::<Inputs>(stored.clone()).unwrap(),
            now
        );
        stored.as_object_mut().unwrap().remove("edition");
        assert_ne!(serde_json::from_value::<Inputs>(stored).unwrap(), now);
    }

    fn report() -> Arc<ComparisonReport> {
        Arc::new(ComparisonReport { groups: Vec::new() })
    }

    #[test]
    fn an_entry_serves_only_its_own_inputs() {
        let cache = ReportCache::default();
        cache.put(7, inputs(2), report());
        assert!(cache.get(7, &inputs(2)).is_some());
        assert!(cache.get(7, &inputs(3)).is_none(), "a new run misses");
        assert!(cache.get(8, &inputs(2)).is_none());
    }

    #[test]
    fn rendered_forms_go_with_their_report() {
        let cache = ReportCache::default();
        let first = report();
        cache.put(7, inputs(2), Arc::clone(&first));
        cache.keep_rendered(7, &first, "text", "report one".into());
        assert_eq!(
            cache.rendered(7, &first, "text").as_deref(),
            Some("report one")
        );
        assert!(cache.rendered(7, &first, "page").is_none());
        // A new report for new inputs: nothing rendered from the old one
        // is served, and what is rendered from the old one is not kept.
        let second = report();
        cache.put(7, inputs(3), Arc::clone(&second));
        assert!(cache.rendered(7, &second, "text").is_none());
        cache.keep_rendered(7, &first, "text", "stale".into());
        assert!(cache.rendered(7, &second, "text").is_none());
        for i in 0..RENDERED_PER_REPORT + 5 {
            cache.keep_rendered(7, &second, &format!("plot {i}"), String::new());
        }
        let kept = (0..RENDERED_PER_REPORT + 5)
            .filter(|i| cache.rendered(7, &second, &format!("plot {i}")).is_some())
            .count();
        assert_eq!(kept, RENDERED_PER_REPORT);
    }

    #[test]
    fn one_build_at_a_time_per_comparison() {
        let cache = ReportCache::default();
        let (a, b) = (cache.builder(7), cache.builder(7));
        assert!(Arc::ptr_eq(&a, &b));
        assert!(!Arc::ptr_eq(&a, &cache.builder(8)));
        drop((a, b));
        let _c = cache.builder(9);
        let building = cache.building.lock().unwrap();
        assert_eq!(building.len(), 1, "finished builds are forgotten");
    }

    #[test]
    fn the_least_recently_used_goes_first() {
        let cache = ReportCache::default();
        for id in 0..i64::try_from(CAPACITY).unwrap() {
            cache.put(id, inputs(1), report());
        }
        assert!(cache.get(0, &inputs(1)).is_some());
        cache.put(1000, inputs(1), report());
        assert_eq!(cache.len(), CAPACITY);
        assert!(cache.get(0, &inputs(1)).is_some(), "used just now");
        assert!(cache.get(1, &inputs(1)).is_none(), "the oldest went");
    }
}
