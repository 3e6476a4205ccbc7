//! Fuzzes what host and guest read from each other through the `out`
//! share (`kernel::boot::guest_protocol`): the host's request and the
//! guest's report, from edited valid bodies, garbled text and arbitrary JSON
//! (the runs' `RunResult` files are fuzzed with the protocol in common).

use patchperf_common::protocol::{NrTask, WorkloadParams};
use patchperf_common::run::{MeasurementMode, TaskMode};
use patchperf_runner::kernel::boot::guest_protocol::{
    GuestReport, GuestRequest, GuestRun, run_file,
};
use proptest::prelude::*;

use crate::json::{inputs, round_trips, tree};

fn request() -> GuestRequest {
    GuestRequest {
        measurement: MeasurementMode::TcgIcount,
        params: WorkloadParams {
            mode: TaskMode::Thread,
            nr_task: vec![NrTask::Percent(100), NrTask::Count(2)],
            seconds: 5,
            warmup_seconds: 2,
            perf_stat: true,
            perf_profile: true,
        },
        syscall_paths: true,
        runs: vec![
            GuestRun {
                workload: "open1".into(),
                nr_task: NrTask::Percent(100),
            },
            GuestRun {
                workload: "dup1".into(),
                nr_task: NrTask::Count(2),
            },
        ],
    }
}

fn report() -> GuestReport {
    GuestReport {
        release: "6.1.119".into(),
        version: "#1 SMP PREEMPT_DYNAMIC".into(),
        nr_cpu: 2,
        results: vec![run_file(0), run_file(1)],
        errors: vec!["dup1: perf stat failed".into()],
        finished: true,
    }
}

proptest! {
    #[test]
    fn fuzz_guest_request(text in inputs(tree(&request()))) {
        round_trips::<GuestRequest>(&text)?;
    }

    #[test]
    fn fuzz_guest_report(text in inputs(tree(&report()))) {
        round_trips::<GuestReport>(&text)?;
    }

    #[test]
    fn fuzz_run_file_names(i in any::<usize>()) {
        prop_assert!(run_file(i).starts_with("run-") && run_file(i).ends_with(".json"));
    }
}
