//! Fuzzes the CI API (`patchperf_common::api`): the submission body and
//! its checks, and every answer `runner submit` reads. Reading never
//! panics, what reads round-trips, and what the checks accept keeps every
//! rule they state.

use chrono::{TimeZone, Utc};
use patchperf_common::api::{
    AskedParams, BisectCommit, BisectionCreateRequest, BisectionOutcome, BisectionStatus,
    BisectionSubmission, BisectionView, BootView, CancelResponse, ComparisonCreateRequest,
    ComparisonCreated, ComparisonListQuery, ComparisonSubmission, ComparisonView, FailureView,
    JobView, MAX_RUNS, MIN_RUNS, OutcomeKind, PatchMessage, PatchesView, ProbeView, RunCounts,
    Setup, StepHeadline, StepOf, StepView, TreeCreateRequest, TreeSubmission, VerdictSummary,
};
use patchperf_common::comparison::{ComparisonKind, ComparisonStatus, OverallVerdict};
use patchperf_common::protocol::{BaseSource, FailureReason, JobState, NrTask};
use patchperf_common::run::{MeasurementMode, Side, TaskMode};
use patchperf_common::stats::Verdict;
use patchperf_common::workload;
use proptest::prelude::*;

use crate::json::{inputs, round_trips, round_trips_as_json, tree};

fn submission() -> ComparisonCreateRequest {
    ComparisonCreateRequest {
        base: BaseSource::Tarball {
            name: "linux-source-6.1".into(),
        },
        mbox: "From 1 Mon Sep 17 00:00:00 2001\nFrom: A <a@x>\nSubject: [PATCH] x\n\n---\n\
               diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"
            .into(),
        aa: false,
        per_patch: true,
        range: None,
        setup: Setup {
            max_runs: Some(20),
            backend: Some(MeasurementMode::Kvm),
            config_fragment: Some("CONFIG_PREEMPT=y\n# CONFIG_DEBUG_INFO is not set\n".into()),
            machine: Some("lab-1".into()),
            ..Setup::new(
                vec!["open1".into(), "dup1".into()],
                AskedParams {
                    mode: TaskMode::Process,
                    nr_task: vec![NrTask::Count(1), NrTask::Percent(100)],
                    seconds: Some(5),
                    warmup_seconds: Some(2),
                    perf_stat: true,
                    perf_profile: false,
                },
                5,
            )
        },
        order_seed: Some(42),
    }
}

/// A git range over a git base at its first end.
fn range_submission() -> ComparisonCreateRequest {
    ComparisonCreateRequest {
        base: BaseSource::Git {
            url: "https://git.kernel.org/pub/scm/linux/kernel/git/vfs/vfs.git".into(),
            commit: "v6.1".into(),
        },
        mbox: String::new(),
        per_patch: false,
        range: Some("v6.1..vfs.all".into()),
        ..submission()
    }
}

fn bisection_request() -> BisectionCreateRequest {
    BisectionCreateRequest {
        comparison: None,
        base: Some(range_submission().base),
        bad: Some("vfs.all".into()),
        workload: "dup1".into(),
        metric: Some("will-it-scale.per_process_ops".into()),
        params: Some(AskedParams {
            nr_task: vec![NrTask::Count(1)],
            ..submission().setup.params
        }),
        runs: Some(3),
        max_runs: Some(12),
        backend: Some(MeasurementMode::TcgIcount),
        config_fragment: None,
        machine: Some("lab-1".into()),
        order_seed: Some(7),
    }
}

fn tree_request() -> TreeCreateRequest {
    TreeCreateRequest {
        name: "vfs.all".into(),
        url: "https://git.kernel.org/pub/scm/linux/kernel/git/vfs/vfs.git".into(),
        branch: "vfs.all".into(),
        setup: Setup {
            max_runs: Some(6),
            backend: Some(MeasurementMode::TcgIcount),
            machine: Some("lab-1".into()),
            ..Setup::new(vec!["dup1".into()], submission().setup.params, 3)
        },
        min_hours: 6,
        cc: vec!["linux-fsdevel@vger.kernel.org".into()],
        webhook_url: Some("https://ci.example.org/hook".into()),
    }
}

fn bisection_view() -> BisectionView {
    let at = Utc.with_ymd_and_hms(2026, 12, 1, 9, 0, 0).unwrap();
    let commit = BisectCommit {
        position: 2,
        commit: Some("a".repeat(40)),
        subject: "vfs: mostly undo glibc turning fstat into fstatat(AT_EMPTY_PATH)".into(),
        author: "Mateusz Guzik <mjguzik@gmail.com>".into(),
    };
    BisectionView {
        id: 2,
        status: BisectionStatus::Done,
        page_url: "/bisections/2".into(),
        submitted_by: "ci".into(),
        created_at: at,
        finished_at: Some(at),
        base: range_submission().base,
        git_range: Some(format!("{}..{}", "1".repeat(40), "2".repeat(40))),
        comparison_id: None,
        workload: "fstatat-empty".into(),
        mode: TaskMode::Process,
        nr_task: "1".into(),
        metric: "will-it-scale.per_process_ops".into(),
        runs_per_side: 3,
        max_runs_per_side: 12,
        machine: Some("lab-1".into()),
        commits: vec![commit.clone()],
        probes: vec![ProbeView {
            position: 2,
            commit,
            comparison_id: 9,
            report_url: "/comparisons/9".into(),
            status: ComparisonStatus::Done,
            runs_per_side: 3,
            verdict: Some(Verdict::Improvement),
            change: Some(98.2),
            low: Some(97.9),
            high: Some(98.5),
            judgement: Some(patchperf_common::bisect::Judgement::Bad),
            by_estimate: false,
            failure: None,
        }],
        outcome: Some(BisectionOutcome {
            kind: OutcomeKind::Found,
            first_bad: Some(2),
            candidates: Vec::new(),
            summary: "first bad commit: [aaaaaaaaaa] vfs: …".into(),
        }),
    }
}

fn job_view() -> JobView {
    JobView {
        id: 11,
        seq: 0,
        state: JobState::Failed,
        attempt: 1,
        max_attempts: 3,
        message: "booting".into(),
        boots: vec![
            BootView {
                seq: 0,
                side: Side::Patched,
            },
            BootView {
                seq: 1,
                side: Side::Base,
            },
        ],
        failure: Some(FailureView {
            reason: FailureReason::BootFailed,
            reason_text: FailureReason::BootFailed.as_str().into(),
            detail: "no init found".into(),
        }),
        log_tail: "[    0.000000] Linux version 6.1".into(),
        runs: RunCounts {
            base: 1,
            patched: 0,
            expected_per_side: 6,
        },
        lease_expires_at: None,
        updated_at: Utc.with_ymd_and_hms(2026, 11, 30, 9, 0, 0).unwrap(),
    }
}

fn comparison_view() -> ComparisonView<VerdictSummary> {
    let at = Utc.with_ymd_and_hms(2026, 11, 30, 9, 0, 0).unwrap();
    let request = submission();
    ComparisonView {
        id: 3,
        kind: ComparisonKind::Ab,
        status: ComparisonStatus::Running,
        report_url: "/comparisons/3".into(),
        submitted_by: "ci".into(),
        created_at: at,
        updated_at: at,
        finished_at: Some(at),
        base: request.base,
        git_range: Some(format!("{}..{}", "1".repeat(40), "2".repeat(40))),
        commit: Some("2".repeat(40)),
        patches: PatchesView {
            sha256: "ab".repeat(32),
            messages: vec![PatchMessage {
                position: 0,
                subject: "[PATCH] x".into(),
                message_id: Some("1@x".into()),
                author: "A <a@x>".into(),
                has_diff: true,
            }],
        },
        workloads: request.setup.workloads,
        params: request.setup.params.resolve(request.setup.backend),
        run_length_pending: false,
        runs_per_side: 5,
        max_runs_per_side: Some(20),
        runs_added_at: vec![5],
        backend: Some("kvm".into()),
        config_fragment: request.setup.config_fragment,
        machine: Some(serde_json::json!({"name": "lab-1", "nr_cpu": 2})),
        pool: Some("fast".into()),
        waiting: None,
        progress: None,
        failure: Some("patch 2/3 does not apply".into()),
        boot_order: "ABBA".into(),
        order_seed: 42,
        jobs: vec![job_view()],
        runs: RunCounts::default(),
        verdict: VerdictSummary {
            overall: OverallVerdict::NoChange,
            headlines: vec!["dup1: no change".into()],
        },
        steps: vec![StepView {
            step: 1,
            comparison_id: 4,
            subject: "[PATCH 1/2] x".into(),
            commit: Some("3".repeat(40)),
            status: ComparisonStatus::Done,
            overall: OverallVerdict::Improvement,
            headlines: vec![StepHeadline {
                workload: "dup1".into(),
                mode: TaskMode::Process,
                nr_task: 1,
                metric: "will-it-scale.per_process_ops".into(),
                change: Some(4.5),
                verdict: Verdict::Improvement,
            }],
            failure: None,
        }],
        step_of: Some(StepOf {
            parent_id: 2,
            step: 2,
            of: 2,
            subject: "[PATCH 2/2] y".into(),
            commit: Some("4".repeat(40)),
        }),
    }
}

/// The rules `ComparisonSubmission` promises, checked on what it accepted.
fn keeps_the_rules(req: &ComparisonCreateRequest) -> Result<(), TestCaseError> {
    match &req.base {
        BaseSource::Git { url, commit } => {
            prop_assert!(!url.trim().is_empty());
            prop_assert!(!commit.is_empty() && !commit.contains(char::is_whitespace));
        }
        BaseSource::Tarball { name } => {
            prop_assert!(!name.is_empty() && !name.starts_with('.') && !name.contains('/'));
        }
    }
    // None named: the server takes the workload map's; an A/A names them.
    prop_assert!(!req.aa || !req.setup.workloads.is_empty());
    for (i, w) in req.setup.workloads.iter().enumerate() {
        prop_assert!(
            workload::find(w).is_some(),
            "unknown workload {w:?} accepted"
        );
        prop_assert!(
            !req.setup.workloads[..i].contains(w),
            "{w:?} accepted twice"
        );
    }
    let p = &req.setup.params;
    prop_assert!((1..=16).contains(&p.nr_task.len()));
    for n in &p.nr_task {
        match *n {
            NrTask::Count(c) => prop_assert!((1..=4096).contains(&c)),
            NrTask::Percent(q) => prop_assert!((1..=100).contains(&q)),
        }
    }
    prop_assert!(p.seconds.is_none_or(|s| (1..=600).contains(&s)));
    prop_assert!(p.warmup_seconds.is_none_or(|w| w <= 300));
    prop_assert!((MIN_RUNS..=MAX_RUNS).contains(&req.setup.runs));
    if let Some(max) = req.setup.max_runs {
        prop_assert!(max >= req.setup.runs && max <= MAX_RUNS);
    }
    prop_assert!(
        !req.aa || req.mbox.trim().is_empty(),
        "an A/A comparison with a patch"
    );
    if let Some(range) = &req.range {
        let (from, _) = range.split_once("..").unwrap_or_default();
        let at_start = matches!(&req.base, BaseSource::Git { commit, .. } if commit == from);
        prop_assert!(at_start, "range {range:?} not starting at its base");
        prop_assert!(req.mbox.trim().is_empty() && !req.aa);
    }
    Ok(())
}

proptest! {
    /// The submission body: reads without panicking, round-trips, and the
    /// checks either refuse it with a message or accept a request that
    /// keeps every rule.
    #[test]
    fn fuzz_submission(text in inputs(tree(&submission()))) {
        if let Some(req) = round_trips::<ComparisonCreateRequest>(&text)? {
            match ComparisonSubmission::try_from(req.clone()) {
                Ok(checked) => {
                    prop_assert_eq!(&*checked, &req);
                    keeps_the_rules(&checked)?;
                }
                Err(err) => prop_assert!(!err.to_string().is_empty()),
            }
        }
    }

    #[test]
    fn fuzz_range_submission(text in inputs(tree(&range_submission()))) {
        if let Some(req) = round_trips::<ComparisonCreateRequest>(&text)? {
            match ComparisonSubmission::try_from(req.clone()) {
                Ok(checked) => keeps_the_rules(&checked)?,
                Err(err) => prop_assert!(!err.to_string().is_empty()),
            }
        }
    }

    /// The bisection body: reads, round-trips, and what the checks accept
    /// names one known workload and at most one task count.
    #[test]
    fn fuzz_bisection_request(text in inputs(tree(&bisection_request()))) {
        if let Some(req) = round_trips::<BisectionCreateRequest>(&text)? {
            match BisectionSubmission::try_from(req.clone()) {
                Ok(checked) => {
                    prop_assert!(workload::find(&checked.workload).is_some());
                    prop_assert!(checked.params.as_ref().is_none_or(|p| p.nr_task.len() == 1));
                    prop_assert!(checked.comparison.is_some() != checked.bad.is_some());
                }
                Err(err) => prop_assert!(!err.to_string().is_empty()),
            }
        }
    }

    /// The tracked tree body: what the checks accept has a plain name, at
    /// most 16 Cc addresses that cannot smuggle a header, and an http(s)
    /// hook.
    #[test]
    fn fuzz_tree_request(text in inputs(tree(&tree_request()))) {
        if let Some(req) = round_trips::<TreeCreateRequest>(&text)? {
            match TreeSubmission::try_from(req.clone()) {
                Ok(checked) => {
                    prop_assert!(!checked.name.is_empty() && !checked.name.contains('/'));
                    prop_assert!(checked.cc.len() <= 16);
                    for a in &checked.cc {
                        prop_assert!(!a.contains(['\n', '\r', ',', '<']), "{a:?}");
                    }
                    prop_assert!(checked.webhook_url.as_deref().is_none_or(|u| u.starts_with("http")));
                    prop_assert!(checked.min_hours <= 8760);
                }
                Err(err) => prop_assert!(!err.to_string().is_empty()),
            }
        }
    }

    #[test]
    fn fuzz_bisection_view(text in inputs(tree(&bisection_view()))) {
        round_trips_as_json::<BisectionView>(&text)?;
    }

    #[test]
    fn fuzz_comparison_view(text in inputs(tree(&comparison_view()))) {
        round_trips_as_json::<ComparisonView<VerdictSummary>>(&text)?;
        round_trips_as_json::<ComparisonView<serde_json::Value>>(&text)?;
    }

    #[test]
    fn fuzz_job_view(text in inputs(tree(&job_view()))) {
        round_trips::<JobView>(&text)?;
    }

    #[test]
    fn fuzz_comparison_created(text in inputs(tree(&ComparisonCreated {
        id: 3,
        url: "/api/v1/comparisons/3".into(),
        report_url: "/comparisons/3".into(),
        workloads: vec!["poll1".into()],
    }))) {
        round_trips::<ComparisonCreated>(&text)?;
    }

    #[test]
    fn fuzz_cancel_response(text in inputs(tree(&CancelResponse {
        id: 3,
        status: ComparisonStatus::Cancelled,
    }))) {
        round_trips::<CancelResponse>(&text)?;
    }

    #[test]
    fn fuzz_list_query(text in inputs(tree(&ComparisonListQuery {
        status: Some("done".into()),
        machine: Some("lab-1".into()),
        workload: Some("dup1".into()),
        verdict: Some("no change".into()),
        q: Some("task_work".into()),
        limit: Some(50),
        before: Some(100),
        after: Some(7),
        sort: Some("oldest".into()),
    }))) {
        round_trips::<ComparisonListQuery>(&text)?;
    }
}
