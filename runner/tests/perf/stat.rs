//! perf stat: reading perf's CSV and the `perf-stat.*` arithmetic.

use patchperf_runner::perf::stat::metrics::{StatMetrics, derive, window_warning};
use patchperf_runner::perf::stat::parse::{Reading, parse_intervals, parse_totals};
use proptest::prelude::*;

use crate::{assert_close, fixture, value};

const HARDWARE: [&str; 6] = [
    "cycles",
    "instructions",
    "branch-instructions",
    "branch-misses",
    "cache-references",
    "cache-misses",
];

fn derive_fixture(name: &str, ops_per_second: Option<f64>) -> StatMetrics {
    let intervals = parse_intervals(&fixture(name)).expect("fixture parses");
    derive(&intervals, 1.0, ops_per_second)
}

#[test]
fn real_output_without_pmu_has_four_intervals_with_hardware_events_not_supported() {
    let intervals = parse_intervals(&fixture("stat-nopmu-dup1.csv")).unwrap();
    let ends: Vec<f64> = intervals.iter().map(|i| i.end_seconds).collect();
    assert_eq!(ends, [1.014672708, 2.019972400, 3.039361476, 3.340328659]);
    for interval in &intervals {
        assert_eq!(interval.readings.len(), 10);
        for event in HARDWARE {
            assert_eq!(interval.reading(event), Some(Reading::NotSupported));
        }
    }
    assert_eq!(
        intervals[0].reading("task-clock"),
        Some(Reading::Counted {
            value: 2035.51,
            running_percent: 100.0
        })
    );
    assert_eq!(
        intervals[3].reading("page-faults"),
        Some(Reading::Counted {
            value: 22857.0,
            running_percent: 100.0
        })
    );
}

#[test]
fn software_events_give_rates_totals_and_interval_means_without_the_short_tail() {
    let stat = derive_fixture("stat-nopmu-dup1.csv", Some(1e6));
    // Interval lengths from the time stamps; the 0.30 s tail is left out of
    // the per-interval means but not out of the totals.
    let d1 = 1.014672708;
    let d2 = 2.019972400 - 1.014672708;
    let d3 = 3.039361476 - 2.019972400;
    let elapsed = 3.340328659;

    let total = 6368.0 + 5076.0 + 10582.0 + 2735.0;
    assert_close(
        value(&stat.metrics, "perf-stat.total.context-switches"),
        total,
    );
    assert_close(
        value(&stat.metrics, "perf-stat.ps.context-switches"),
        total / elapsed,
    );
    assert_close(
        value(&stat.metrics, "perf-stat.i.context-switches"),
        (6368.0 / d1 + 5076.0 / d2 + 10582.0 / d3) / 3.0,
    );
    assert_close(
        value(&stat.metrics, "perf-stat.total.task-clock"),
        2035.51 + 2035.59 + 2034.96 + 597.39,
    );
    assert_close(
        value(&stat.metrics, "perf-stat.i.page-faults"),
        (59968.0 / d1 + 53685.0 / d2 + 73629.0 / d3) / 3.0,
    );

    let series = stat
        .series
        .iter()
        .find(|s| s.name == "perf-stat.i.cpu-migrations")
        .expect("cpu-migrations series");
    assert_eq!(series.interval_seconds, 1.0);
    assert_eq!(series.points.len(), 3);
    assert_close(series.points[1], 28.0 / d2);
    assert!(stat.warnings.is_empty(), "{:?}", stat.warnings);
}

#[test]
fn hardware_events_that_are_not_supported_are_listed_and_never_zero() {
    let stat = derive_fixture("stat-nopmu-dup1.csv", Some(1e6));
    for event in HARDWARE {
        for kind in ["ps", "i", "total"] {
            let name = format!("perf-stat.{kind}.{event}");
            assert!(stat.unsupported.contains(&name), "{name} not unsupported");
        }
    }
    for derived in ["ipc", "cpi", "branch-miss-rate%", "cache-miss-rate%"] {
        assert!(stat.unsupported.contains(&format!("perf-stat.i.{derived}")));
        assert!(
            stat.unsupported
                .contains(&format!("perf-stat.overall.{derived}"))
        );
    }
    assert!(
        stat.unsupported
            .contains(&"perf-stat.overall.path-length".to_string())
    );
    assert_eq!(stat.unsupported.len(), 6 * 3 + 4 * 2 + 1);
    for metric in &stat.metrics {
        assert!(
            !stat.unsupported.contains(&metric.name),
            "{} is both a value and unsupported",
            metric.name
        );
        assert!(
            !HARDWARE
                .iter()
                .any(|e| metric.name.ends_with(&format!(".{e}"))),
            "{} should not exist",
            metric.name
        );
    }
    assert!(
        stat.series
            .iter()
            .all(|s| !HARDWARE.iter().any(|e| s.name.ends_with(e)))
    );
}

#[test]
fn pmu_output_gives_0day_derived_metrics() {
    // Hand-computed from stat-pmu-synthetic.csv: three 1 s intervals and a
    // 0.25 s tail, 3.25 s in all.
    // 1.3e9 operations over the 3.25 s: 4e8 a second.
    let stat = derive_fixture("stat-pmu-synthetic.csv", Some(4e8));
    let m = &stat.metrics;
    assert_close(value(m, "perf-stat.total.cycles"), 13e9);
    assert_close(value(m, "perf-stat.ps.cycles"), 13e9 / 3.25);
    assert_close(value(m, "perf-stat.i.cycles"), 4e9);
    assert_close(value(m, "perf-stat.total.instructions"), 13.04e9);
    assert_close(value(m, "perf-stat.i.instructions"), 12.04e9 / 3.0);
    // Per interval ipc 1.0, 1.1, 0.9.
    assert_close(value(m, "perf-stat.i.ipc"), 1.0);
    assert_close(
        value(m, "perf-stat.i.cpi"),
        (1.0 + 1.0 / 1.1 + 1.0 / 0.9) / 3.0,
    );
    assert_close(value(m, "perf-stat.overall.ipc"), 13.04 / 13.0);
    assert_close(value(m, "perf-stat.overall.cpi"), 13.0 / 13.04);
    // Branch misses 0.5%, 1%, 0.75% per interval; 19e6 of 2.6e9 overall.
    assert_close(value(m, "perf-stat.i.branch-miss-rate%"), 0.75);
    assert_close(
        value(m, "perf-stat.overall.branch-miss-rate%"),
        100.0 * 19e6 / 2.6e9,
    );
    // Cache misses 10%, 20%, 30%; 65e6 of 325e6 overall.
    assert_close(value(m, "perf-stat.i.cache-miss-rate%"), 20.0);
    assert_close(value(m, "perf-stat.overall.cache-miss-rate%"), 20.0);
    // Instructions per operation: (13.04e9 / 3.25 s) / (4e8 ops/s).
    assert_close(value(m, "perf-stat.overall.path-length"), 13.04e9 / 1.3e9);
    assert_close(value(m, "perf-stat.ps.cpu-migrations"), 7.0 / 3.25);
    assert_close(value(m, "perf-stat.i.page-faults"), 10.0);
    assert!(stat.unsupported.is_empty(), "{:?}", stat.unsupported);

    let ipc = stat
        .series
        .iter()
        .find(|s| s.name == "perf-stat.i.ipc")
        .unwrap();
    assert_eq!(ipc.points.len(), 3);
    assert_close(ipc.points[1], 1.1);
}

#[test]
fn multiplexed_counters_are_used_as_scaled_by_perf_and_low_shares_are_warned_about() {
    let intervals = parse_intervals(&fixture("stat-pmu-synthetic.csv")).unwrap();
    // perf already scaled the count: 800000000 is its estimate from 40% running.
    assert_eq!(
        intervals[1].reading("branch-instructions"),
        Some(Reading::Counted {
            value: 800_000_000.0,
            running_percent: 40.0
        })
    );
    let stat = derive(&intervals, 1.0, None);
    assert_close(value(&stat.metrics, "perf-stat.i.branch-instructions"), 8e8);
    assert_eq!(stat.warnings.len(), 1, "{:?}", stat.warnings);
    let warning = &stat.warnings[0];
    for event in ["branch-instructions 40%", "cache-misses 40%"] {
        assert!(warning.contains(event), "{warning}");
    }
    assert!(!warning.contains("cycles"), "{warning}");
}

#[test]
fn counters_at_75_percent_are_not_warned_about() {
    let text = "     1.000000000,100,,cache-misses,750000000,75.00,,\n";
    let stat = derive(&parse_intervals(text).unwrap(), 1.0, None);
    assert!(stat.warnings.is_empty(), "{:?}", stat.warnings);
}

#[test]
fn a_perf_window_much_shorter_than_the_measured_seconds_is_warned_about() {
    assert!(window_warning(9.7, 10.0).is_none());
    assert!(window_warning(0.6, 1.0).is_none());
    let warning = window_warning(8.2, 10.0).unwrap();
    assert!(
        warning.contains("8.20 s of the 10 measured seconds"),
        "{warning}"
    );
}

#[test]
fn path_length_needs_the_workload() {
    let stat = derive_fixture("stat-pmu-synthetic.csv", None);
    assert!(
        !stat
            .metrics
            .iter()
            .any(|m| m.name == "perf-stat.overall.path-length")
    );
    assert!(stat.unsupported.is_empty());
}

#[test]
fn an_event_never_counted_is_unsupported_with_a_warning() {
    let text = "\
     1.000000000,<not counted>,,cycles,0,0.00,,
     1.000000000,2000,,instructions,2000000000,100.00,,
     2.000000000,<not counted>,,cycles,0,0.00,,
     2.000000000,3000,,instructions,2000000000,100.00,,
";
    // 5000 instructions in 2 s at 10 operations a second: 250 per operation.
    let stat = derive(&parse_intervals(text).unwrap(), 1.0, Some(10.0));
    for name in [
        "perf-stat.ps.cycles",
        "perf-stat.i.cycles",
        "perf-stat.total.cycles",
        "perf-stat.i.ipc",
        "perf-stat.overall.ipc",
        "perf-stat.i.cpi",
        "perf-stat.overall.cpi",
    ] {
        assert!(stat.unsupported.contains(&name.to_string()), "{name}");
    }
    assert!(stat.warnings.iter().any(|w| w.contains("<not counted>")));
    assert_close(value(&stat.metrics, "perf-stat.total.instructions"), 5000.0);
    assert_close(value(&stat.metrics, "perf-stat.overall.path-length"), 250.0);
    assert!(!stat.metrics.iter().any(|m| m.name.contains("cycles")));
}

#[test]
fn an_event_missing_in_some_intervals_keeps_only_its_interval_mean() {
    let text = "\
     1.000000000,100,,cycles,1000,100.00,,
     1.000000000,200,,instructions,1000,100.00,,
     2.000000000,<not counted>,,cycles,0,0.00,,
     2.000000000,400,,instructions,1000,100.00,,
     3.000000000,300,,cycles,1000,100.00,,
     3.000000000,300,,instructions,1000,100.00,,
";
    let stat = derive(&parse_intervals(text).unwrap(), 1.0, Some(9.0));
    let m = &stat.metrics;
    assert_close(value(m, "perf-stat.i.cycles"), 200.0);
    // ipc per interval where both counted: 2.0 and 1.0.
    assert_close(value(m, "perf-stat.i.ipc"), 1.5);
    assert_close(value(m, "perf-stat.total.instructions"), 900.0);
    for absent in [
        "perf-stat.total.cycles",
        "perf-stat.ps.cycles",
        "perf-stat.overall.ipc",
        "perf-stat.overall.cpi",
    ] {
        assert!(!m.iter().any(|v| v.name == absent), "{absent} present");
    }
    assert!(
        stat.warnings
            .iter()
            .any(|w| w.contains("cycles was not counted in 1 of 3 intervals"))
    );
    // A series needs every interval.
    assert!(!stat.series.iter().any(|s| s.name == "perf-stat.i.cycles"));
    assert!(
        stat.series
            .iter()
            .any(|s| s.name == "perf-stat.i.instructions")
    );
}

#[test]
fn a_run_stopped_within_the_first_interval_has_totals_but_no_interval_means() {
    let text = "     0.300000000,90,,context-switches,600000000,100.00,150.000,/sec\n";
    let stat = derive(&parse_intervals(text).unwrap(), 1.0, None);
    assert_close(
        value(&stat.metrics, "perf-stat.total.context-switches"),
        90.0,
    );
    assert_close(value(&stat.metrics, "perf-stat.ps.context-switches"), 300.0);
    assert!(
        !stat
            .metrics
            .iter()
            .any(|m| m.name.starts_with("perf-stat.i."))
    );
    assert!(stat.series.is_empty());
}

#[test]
fn output_without_intervals_gives_no_metrics_and_a_warning() {
    let intervals = parse_intervals("# started on Mon Nov 30 09:00:00 2026\n\n").unwrap();
    assert!(intervals.is_empty());
    let stat = derive(&intervals, 1.0, Some(5.0));
    assert!(stat.metrics.is_empty());
    assert_eq!(stat.warnings.len(), 1);
}

#[test]
fn zero_counts_are_real_zeros() {
    let text = "     1.000000000,0,,page-faults,1000000000,100.00,0.000,/sec\n";
    let stat = derive(&parse_intervals(text).unwrap(), 1.0, None);
    assert_eq!(value(&stat.metrics, "perf-stat.total.page-faults"), 0.0);
    assert!(stat.unsupported.is_empty());
}

#[test]
fn metric_only_continuation_lines_are_skipped() {
    let text = "\
     1.000000000,4000,,instructions,1000,100.00,1.00,insn per cycle
     1.000000000,,,,,0.25,stalled cycles per insn
";
    let intervals = parse_intervals(text).unwrap();
    assert_eq!(intervals.len(), 1);
    assert_eq!(intervals[0].readings.len(), 1);
}

#[test]
fn the_pmu_probe_reads_cycles_as_supported_or_not() {
    assert_eq!(
        parse_totals(&fixture("probe-nopmu.csv")).unwrap(),
        [("cycles".to_string(), Reading::NotSupported)]
    );
    assert_eq!(
        parse_totals(&fixture("probe-pmu-synthetic.csv")).unwrap(),
        [(
            "cycles".to_string(),
            Reading::Counted {
                value: 1198303.0,
                running_percent: 100.0
            }
        )]
    );
}

#[test]
fn malformed_output_is_an_error_naming_the_line() {
    let cases = [
        ("hello world\n", 1),
        ("# comment\n     1.0,abc,,cycles,0,100.00,,\n", 2),
        ("     1.0,5\n", 1),
        ("     x.y,5,,cycles,0,100.00,,\n", 1),
        ("     1.0,5,,cycles,zero,100.00,,\n", 1),
        ("     1.0,5,,cycles,10,250.00,,\n", 1),
        ("     1.0,5,,cycles,10,-1,,\n", 1),
        ("     1.0,5,,,10,100.00,,\n", 1),
        (
            "     2.0,5,,cycles,10,100.00,,\n     1.0,5,,cycles,10,100.00,,\n",
            2,
        ),
        (
            "     1.0,5,,cycles,10,100.00,,\n     1.0,6,,cycles,10,100.00,,\n",
            2,
        ),
        ("     1.0,inf,,cycles,10,100.00,,\n", 1),
    ];
    for (text, line) in cases {
        match parse_intervals(text) {
            Err(patchperf_runner::Error::Parse { line: at, .. }) => {
                assert_eq!(at, line, "wrong line for {text:?}")
            }
            other => panic!("{text:?} gave {other:?}"),
        }
    }
}

proptest! {
    #[test]
    fn parsing_never_panics_on_any_text(text in any::<String>()) {
        if let Ok(intervals) = parse_intervals(&text) {
            let _ = derive(&intervals, 1.0, Some(1.0));
        }
        let _ = parse_totals(&text);
    }

    #[test]
    fn parsing_never_panics_on_near_csv(
        lines in proptest::collection::vec(
            proptest::collection::vec(
                prop_oneof![
                    Just(String::new()),
                    Just("<not counted>".to_string()),
                    Just("<not supported>".to_string()),
                    Just("cycles".to_string()),
                    Just("instructions".to_string()),
                    "[0-9]{1,4}(\\.[0-9]{1,3})?",
                    ".{0,6}",
                ],
                0..9,
            ),
            0..12,
        )
    ) {
        let text: String = lines.iter().map(|fields| fields.join(",") + "\n").collect();
        if let Ok(intervals) = parse_intervals(&text) {
            let stat = derive(&intervals, 1.0, Some(3.0));
            prop_assert!(stat.metrics.iter().all(|m| m.value.is_finite()));
        }
    }
}
