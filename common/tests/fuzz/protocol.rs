//! Fuzzes the runner protocol's bodies (`patchperf_common::protocol`) and
//! `RunResult` with edited valid bodies, garbled JSON text and arbitrary
//! JSON: reading never panics, and what reads writes back and reads back
//! the same.

use patchperf_common::limits::{MAX_METRICS, MAX_NR_TASK, MAX_SECONDS, MAX_WARMUP_SECONDS};
use patchperf_common::machine_state::MachineState;
use patchperf_common::protocol::{
    BaseSource, BootSlot, ClaimRequest, ErrorBody, FailureReason, FinishRequest, HeartbeatResponse,
    JobSpec, JobState, MachineInventory, NrTask, PROTOCOL_VERSION, RegisterRequest,
    RegisterResponse, RunUpload, RunUploadResponse, StateUpdate, WorkloadParams,
};
use patchperf_common::run::{
    KernelIdentity, MeasurementMode, MetricValue, RunResult, SecondSample, Series, Side, TaskMode,
};
use proptest::prelude::*;

use crate::json::{inputs, round_trips, tree};

fn inventory() -> MachineInventory {
    MachineInventory {
        hostname: "lab-1".into(),
        cpu_model: "AMD EPYC 7543".into(),
        nr_cpu: 64,
        memory_bytes: 1 << 37,
        kernel_release: "6.1.0-28-amd64".into(),
        arch: "x86_64".into(),
        kvm_usable: true,
        pmu_usable: false,
        backends: vec![MeasurementMode::Kvm, MeasurementMode::TcgIcount],
        notes: vec!["SMT off".into()],
    }
}

fn params() -> WorkloadParams {
    WorkloadParams {
        mode: TaskMode::Thread,
        nr_task: vec![NrTask::Count(1), NrTask::Percent(50), NrTask::Percent(100)],
        seconds: 5,
        warmup_seconds: 2,
        perf_stat: true,
        perf_profile: true,
    }
}

fn job_spec() -> JobSpec {
    JobSpec {
        job_id: 7,
        comparison_id: 3,
        attempt: 2,
        lease_seconds: 120,
        base: BaseSource::Git {
            url: "https://git.kernel.org/pub/scm/linux/kernel/git/torvalds/linux.git".into(),
            commit: "v6.1".into(),
        },
        mbox: "From 1 Mon Sep 17 00:00:00 2001\nSubject: [PATCH] x\n\n---\n".into(),
        aa: false,
        patches_sha256: "ab".repeat(32),
        base_mbox: "From 1 Mon Sep 17 00:00:00 2001\nSubject: [PATCH 1/2] w\n\n---\n".into(),
        base_patches_sha256: "cd".repeat(32),
        config_fragment: Some("CONFIG_PREEMPT=y\n".into()),
        workloads: vec!["open1".into(), "dup1".into()],
        params: params(),
        backend: Some(MeasurementMode::Tcg),
        boots: vec![
            BootSlot {
                seq: 0,
                side: Side::Base,
            },
            BootSlot {
                seq: 1,
                side: Side::Patched,
            },
        ],
    }
}

/// A run as the guest writes it, with every optional part present.
pub fn run_result() -> RunResult {
    RunResult {
        workload: "dup1".into(),
        mode: TaskMode::Process,
        nr_task: 2,
        warmup_seconds: 2,
        seconds: 3,
        measurement: MeasurementMode::TcgIcount,
        kernel: Some(KernelIdentity {
            release: "6.1.119".into(),
            source: "linux-source-6.1.tar.xz@1234".into(),
            patches_sha256: Some("cd".repeat(32)),
            patches: Some(2),
            config_sha256: "ef".repeat(32),
            compiler: "gcc (Debian 12.2.0-14) 12.2.0".into(),
            version: "#1 SMP PREEMPT_DYNAMIC".into(),
        }),
        samples: vec![
            SecondSample {
                total: 2_000_000,
                min: 990_000,
                max: 1_010_000,
            },
            SecondSample {
                total: 2_100_000,
                min: 1_040_000,
                max: 1_060_000,
            },
        ],
        metrics: vec![
            MetricValue {
                name: "will-it-scale.per_process_ops".into(),
                value: 1.025e6,
            },
            MetricValue {
                name: "perf-stat.ps.task-clock".into(),
                value: 2002.57,
            },
            MetricValue {
                name: "perf-profile.self.cycles-pp.filp_flush".into(),
                value: 12.5,
            },
        ],
        series: vec![Series {
            name: "will-it-scale.2.processes".into(),
            interval_seconds: 1.0,
            points: vec![2e6, 2.1e6, 0.1 + 0.2],
        }],
        unsupported: vec!["perf-stat.ps.cycles".into()],
        profile_event: Some("cpu-clock".into()),
        warnings: vec!["perf stat: cycles <not supported>".into()],
    }
}

/// One property per body: `$name` fuzzes `$ty` starting from `$valid`.
macro_rules! fuzz_bodies {
    ($($name:ident: $ty:ty = $valid:expr;)*) => {
        proptest! {
            $(
                #[test]
                fn $name(text in inputs(tree(&$valid))) {
                    round_trips::<$ty>(&text)?;
                }
            )*
        }
    };
}

fuzz_bodies! {
    fuzz_register_request: RegisterRequest = RegisterRequest { name: "lab-1".into(), inventory: inventory(), protocol_version: PROTOCOL_VERSION };
    fuzz_register_response: RegisterResponse = RegisterResponse { machine_id: 4, protocol_version: 2, oldest_protocol_version: 1, state: MachineState::Draining };
    fuzz_claim_request: ClaimRequest = ClaimRequest { machine_id: 4, wait_seconds: 30 };
    fuzz_job_spec: JobSpec = job_spec();
    fuzz_heartbeat_response: HeartbeatResponse = HeartbeatResponse { lease_seconds: 120, cancelled: true };
    fuzz_state_update: StateUpdate = StateUpdate {
        state: JobState::Building,
        message: "building patched kernel".into(),
        log_tail: "  CC      fs/open.o\n".into(),
    };
    fuzz_run_upload: RunUpload = RunUpload { boot: BootSlot { seq: 3, side: Side::Patched }, result: run_result() };
    fuzz_run_upload_response: RunUploadResponse = RunUploadResponse { run_id: 99, stored: false };
    fuzz_finish_done: FinishRequest = FinishRequest::Done { log_tail: "done".into() };
    fuzz_finish_failed: FinishRequest = FinishRequest::Failed {
        reason: FailureReason::KernelPanic,
        detail: "Kernel panic - not syncing".into(),
        log_tail: String::new(),
    };
    fuzz_error_body: ErrorBody = ErrorBody { error: "no such job".into() };
    fuzz_run_result: RunResult = run_result();
}

proptest! {
    /// What `NrTask` reads from JSON is a count, or a percentage of 1–100,
    /// whatever the text.
    #[test]
    fn fuzz_nr_task(text in inputs(tree(&vec![NrTask::Count(4), NrTask::Percent(100)]))) {
        if let Some(tasks) = round_trips::<Vec<NrTask>>(&text)? {
            for task in tasks {
                if let NrTask::Percent(p) = task {
                    prop_assert!((1..=100).contains(&p), "{task:?} from {text}");
                }
                prop_assert!(task.resolve(u32::MAX) >= 1 || task == NrTask::Count(0));
                prop_assert_eq!(task.to_string().parse::<NrTask>().ok().unwrap_or(task), task);
            }
        }
    }

    /// Every failure reason and job state a body can name is one the
    /// server can store and read back.
    #[test]
    fn fuzz_codes(text in inputs(tree(&(FailureReason::Timeout, JobState::Running)))) {
        if let Some((reason, state)) = round_trips::<(FailureReason, JobState)>(&text)? {
            prop_assert_eq!(FailureReason::from_code(reason.code()), Some(reason));
            prop_assert_eq!(JobState::parse(state.as_str()), Some(state));
        }
    }

    /// `RunResult::validate` never panics, and what it accepts keeps the
    /// bounds of `limits`.
    #[test]
    fn fuzz_run_result_validate(text in inputs(tree(&run_result()))) {
        if let Ok(run) = serde_json::from_str::<RunResult>(&text) {
            if run.validate().is_ok() {
                prop_assert!(run.seconds <= MAX_SECONDS && run.warmup_seconds <= MAX_WARMUP_SECONDS);
                prop_assert!((1..=MAX_NR_TASK).contains(&run.nr_task));
                prop_assert!((1..=MAX_METRICS).contains(&run.metrics.len()));
                prop_assert!(run.metrics.iter().all(|m| m.value.is_finite()));
            }
        }
    }

    /// `RunResult`'s numbers are finite whatever the JSON said (JSON has no
    /// NaN or infinity, and numbers beyond f64 are refused).
    #[test]
    fn fuzz_run_result_values_are_finite(text in inputs(tree(&run_result()))) {
        if let Ok(run) = serde_json::from_str::<RunResult>(&text) {
            prop_assert!(run.metrics.iter().all(|m| m.value.is_finite()));
            prop_assert!(run.series.iter().all(|s| s.interval_seconds.is_finite()
                && s.points.iter().all(|p| p.is_finite())));
        }
    }
}

/// Found by `fuzz_comparison_view` in a long run: serde_json's default float
/// parser read `7.863859847831178e+90` one ulp off, so a number written and
/// read back changed (a metric value would shift on every upload). The
/// workspace now builds serde_json with `float_roundtrip`.
#[test]
fn a_metric_value_reads_back_as_the_number_written() {
    let mut run = run_result();
    run.metrics[0].value = 7.863_859_847_831_178e90;
    let text = serde_json::to_string(&run).unwrap();
    let back: RunResult = serde_json::from_str(&text).unwrap();
    assert_eq!(
        back.metrics[0].value.to_bits(),
        run.metrics[0].value.to_bits()
    );
    assert_eq!(back, run);
}

/// The run the edits start from passes `validate`, so edited runs reach
/// every check behind the first.
#[test]
fn the_run_edits_start_from_is_valid() {
    run_result().validate().unwrap();
}
