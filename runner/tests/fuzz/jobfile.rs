//! Fuzzes the job file reader (`commands::job::jobfile`): the documented
//! example with lines dropped, doubled or swapped for odd settings, and
//! garbled bytes. Reading never panics, and what it accepts turns into a
//! job the pipeline can run: workloads, at least one second, task counts
//! of at least one task, and runs that give an ABBA order of two boots per
//! run.

use patchperf_common::protocol::NrTask;
use patchperf_runner::commands::job::jobfile::JobFile;
use proptest::prelude::*;
use proptest::sample::Index;

use crate::{apply_line_edits, line_edits};

const EXAMPLE: &str = r#"base = "linux-source-6.1"
patches = "fs-close.mbox"
config = "extra.config"
workloads = ["open1", "dup1"]
runs = 3
backend = "tcg-icount"
seed = 42

[params]
mode = "process"
nr_task = [1, "100%"]
seconds = 5
warmup_seconds = 2
perf_stat = false
perf_profile = false
"#;

fn odd_line() -> impl Strategy<Value = String> + Clone {
    let fixed = proptest::sample::select(vec![
        "runs = 4294967295",
        "runs = 1000000000",
        "runs = 101",
        "runs = 100",
        "runs = 0",
        "runs = -1",
        "runs = 1e9",
        "seed = 18446744073709551615",
        "seed = -1",
        "seconds = 0",
        "seconds = 4294967295",
        "warmup_seconds = 4294967295",
        "nr_task = [0]",
        "nr_task = [\"0%\"]",
        "nr_task = [\"101%\"]",
        "nr_task = [\"4294967296%\"]",
        "nr_task = []",
        "nr_task = [4294967295]",
        "base = { git = \"--upload-pack=touch /tmp/x\", commit = \"--output=x\" }",
        "base = { git = \"\", commit = \"\" }",
        "base = \"../../x\"",
        "base = 1",
        "backend = \"kvm\"",
        "backend = \"vmware\"",
        "workloads = [\"open1\", \"open1\"]",
        "workloads = []",
        "workloads = [\"nosuch\"]",
        "patches = \"../../missing\"",
        "patches = \"\"",
        "config = \"missing.config\"",
        "mode = \"thread\"",
        "mode = \"both\"",
        "typo = 1",
        "[params]",
        "[base]",
        "[[params]]",
        "\u{0}",
        "\"",
    ])
    .prop_map(String::from);
    prop_oneof![6 => fixed, 1 => ".{0,30}"]
}

/// The example with line edits, then up to two garbled bytes.
fn job_files() -> impl Strategy<Value = String> {
    (
        line_edits(odd_line(), 5),
        proptest::collection::vec((any::<Index>(), any::<u8>()), 0..3),
    )
        .prop_map(|(edits, bytes)| {
            let mut text = apply_line_edits(EXAMPLE, &edits).into_bytes();
            for (at, byte) in bytes {
                let i = at.index(text.len() + 1);
                text.insert(i, byte);
            }
            String::from_utf8_lossy(&text).into_owned()
        })
}

proptest! {
    #[test]
    fn fuzz_job_file(text in job_files()) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("fs-close.mbox"), "From x\nSubject: y\n").unwrap();
        std::fs::write(dir.path().join("extra.config"), "CONFIG_PREEMPT=y\n").unwrap();
        let path = dir.path().join("job.toml");
        std::fs::write(&path, &text).unwrap();
        let Ok(job) = JobFile::load(&path) else {
            return Ok(());
        };
        prop_assert!(!job.workloads.is_empty());
        prop_assert!(job.params.seconds >= 1);
        prop_assert!(!job.params.nr_task.is_empty());
        for n in &job.params.nr_task {
            prop_assert!(n.resolve(1) >= 1, "{n} tasks accepted in {text}");
            if let NrTask::Percent(p) = n {
                prop_assert!((1..=100).contains(p));
            }
        }
        if let Ok(spec) = job.to_spec(&path) {
            prop_assert_eq!(spec.boots.len(), 2 * job.runs as usize);
            for (k, pair) in spec.boots.chunks(2).enumerate() {
                prop_assert_ne!(pair[0].side, pair[1].side);
                prop_assert_eq!(pair[0].seq as usize, 2 * k);
            }
        }
    }
}
