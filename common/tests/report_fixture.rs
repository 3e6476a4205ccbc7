//! Reports built from synthetic runs (see `synthetic`) must serialize to the
//! JSON recorded in `fixtures/` byte for byte: every mean, p-value,
//! interval, q-value and verdict, bit for bit. The fixtures were written by
//! the report code before its statistics were made faster (memoized
//! Mann–Whitney null distributions and t critical values, one pass over the
//! runs), so these tests show that those changes changed no number.
//!
//! Two fixtures: `synthetic_reports.jsonl` holds a whole report (5 against
//! 4 runs, with ties), one line for the header and one per metric row
//! (`<report>\t<header|metric>\t<JSON>`), to read and diff;
//! `synthetic_report_digests.txt` holds the sha256 of the JSON of 200
//! reports, every pair of run counts from 1 to 10 a side with and without
//! ties, to cover what one report cannot (whole reports of that many would
//! weigh megabytes). To record them anew, for a change meant to change
//! numbers, run these tests with `PATCHPERF_WRITE_FIXTURE=1` and review the
//! diff.

mod synthetic;

use patchperf_common::report::Comparison;
use sha2::{Digest, Sha256};
use synthetic::{Shape, build, runs};

/// One report: `base_runs` base and `patched_runs` patched runs.
fn report(
    base_runs: usize,
    patched_runs: usize,
    ties: bool,
    profile_entries: usize,
    seed: u64,
) -> (String, Comparison) {
    let shape = Shape {
        runs: base_runs.max(patched_runs),
        profile_entries,
        ties,
        seed,
    };
    let (mut base, mut patched) = runs(&shape, 8);
    base.truncate(base_runs);
    patched.truncate(patched_runs);
    let label = format!(
        "{base_runs}-vs-{patched_runs}{}",
        if ties { "-ties" } else { "" }
    );
    (label, build(&base, &patched))
}

/// Compares `got` with the fixture's lines (after writing them, when asked).
fn check(fixture: &str, got: &[String]) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(fixture);
    if std::env::var_os("PATCHPERF_WRITE_FIXTURE").is_some() {
        std::fs::write(&path, got.join("\n") + "\n").unwrap();
    }
    let recorded = std::fs::read_to_string(&path).unwrap();
    let want: Vec<&str> = recorded.lines().collect();
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g, w, "line {} of {fixture} differs", i + 1);
    }
    assert_eq!(got.len(), want.len(), "lines in {fixture}");
}

#[test]
fn a_whole_report_reproduces_its_recorded_json_line_by_line() {
    let mut lines = Vec::new();
    for (label, mut c) in [report(5, 4, true, 6, 1)] {
        let metrics = std::mem::take(&mut c.metrics);
        lines.push(format!(
            "{label}\theader\t{}",
            serde_json::to_string(&c).unwrap()
        ));
        for m in &metrics {
            lines.push(format!(
                "{label}\tmetric\t{}",
                serde_json::to_string(m).unwrap()
            ));
        }
    }
    check("synthetic_reports.jsonl", &lines);
}

#[test]
fn two_hundred_reports_reproduce_their_recorded_json_digests() {
    let mut lines = Vec::new();
    for ties in [false, true] {
        for base_runs in 1..=10 {
            for patched_runs in 1..=10 {
                let seed =
                    100 * base_runs as u64 + patched_runs as u64 + if ties { 10_000 } else { 0 };
                let (label, c) = report(base_runs, patched_runs, ties, 30, seed);
                let json = serde_json::to_string(&c).unwrap();
                let digest: String = Sha256::digest(json.as_bytes())
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect();
                lines.push(format!("{label}\t{} metrics\t{digest}", c.metrics.len()));
            }
        }
    }
    check("synthetic_report_digests.txt", &lines);
}
