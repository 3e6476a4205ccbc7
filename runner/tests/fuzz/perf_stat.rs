//! Fuzzes perf stat's CSV reader (`perf::stat::parse`) and the metrics
//! derived from it (`perf::stat::metrics`), starting from the recorded
//! and synthetic fixtures with lines and fields changed.

use patchperf_runner::perf::stat::metrics::{StatMetrics, derive};
use patchperf_runner::perf::stat::parse::{Interval, Reading, parse_intervals, parse_totals};
use proptest::prelude::*;
use proptest::sample::Index;

use crate::{apply_line_edits, fixture, line_edits};

const INTERVAL_FIXTURES: &[&str] = &["stat-nopmu-dup1.csv", "stat-pmu-synthetic.csv"];
const TOTAL_FIXTURES: &[&str] = &["probe-nopmu.csv", "probe-pmu-synthetic.csv"];

/// Field values at the edges of what perf prints.
fn odd_field() -> impl Strategy<Value = String> + Clone {
    let fixed = proptest::sample::select(vec![
        "",
        " ",
        "<not counted>",
        "<not supported>",
        "0",
        "0.0",
        "1",
        "1.5",
        "100.00",
        "100.01",
        "99.99",
        "-1",
        "nan",
        "NaN",
        "inf",
        "1e5",
        ".",
        "..",
        "1.",
        ".5",
        "0.000000001",
        "18446744073709551615",
        "18446744073709551616",
        "cycles",
        "instructions",
        "branch-misses",
        "cpu_core/cycles/",
        "msec",
        "é",
        "\u{0}",
    ])
    .prop_map(String::from);
    prop_oneof![
        6 => fixed,
        1 => Just("9".repeat(308)),
        1 => Just("9".repeat(400)),
        1 => "[0-9.]{1,12}",
        1 => ".{0,8}",
    ]
}

/// A line of `fixture` with one field swapped for an odd one.
fn field_edited_line(fixture_text: String) -> impl Strategy<Value = String> + Clone {
    (any::<Index>(), any::<Index>(), odd_field()).prop_map(move |(line, field, value)| {
        let lines: Vec<&str> = fixture_text.lines().collect();
        let mut fields: Vec<String> = lines[line.index(lines.len())]
            .split(',')
            .map(String::from)
            .collect();
        let at = field.index(fields.len());
        fields[at] = value;
        fields.join(",")
    })
}

/// A fixture with up to six line edits, the new lines being fixture lines
/// with a field changed, odd fields joined by commas, or anything.
fn edited(fixtures: &'static [&'static str]) -> impl Strategy<Value = String> {
    proptest::sample::select(fixtures).prop_flat_map(|name| {
        let text = fixture(name);
        let pool = prop_oneof![
            4 => field_edited_line(text.clone()),
            1 => proptest::collection::vec(odd_field(), 0..10).prop_map(|f| f.join(",")),
            1 => ".{0,40}",
        ];
        line_edits(pool, 6).prop_map(move |edits| apply_line_edits(&text, &edits))
    })
}

/// What parse promises of its intervals: time stamps that only go forward,
/// each event once an interval, counts finite and not negative, running
/// shares within 0–100%.
fn check_intervals(intervals: &[Interval]) -> Result<(), TestCaseError> {
    let mut previous = f64::NEG_INFINITY;
    for interval in intervals {
        prop_assert!(interval.end_seconds.is_finite() && interval.end_seconds >= 0.0);
        prop_assert!(
            interval.end_seconds > previous,
            "time stamps go back or repeat"
        );
        previous = interval.end_seconds;
        for (k, (event, reading)) in interval.readings.iter().enumerate() {
            prop_assert!(!event.is_empty());
            prop_assert!(
                interval.readings[..k].iter().all(|(e, _)| e != event),
                "{event} twice at {}",
                interval.end_seconds
            );
            check_reading(reading)?;
        }
    }
    Ok(())
}

fn check_reading(reading: &Reading) -> Result<(), TestCaseError> {
    if let Reading::Counted {
        value,
        running_percent,
    } = *reading
    {
        prop_assert!(value.is_finite() && value >= 0.0, "count {value}");
        prop_assert!(
            (0.0..=100.0).contains(&running_percent),
            "running {running_percent}%"
        );
    }
    Ok(())
}

/// No NaN, infinity or negative number comes out, and every metric and
/// series is a perf-stat one.
fn check_metrics(stat: &StatMetrics, interval_seconds: f64) -> Result<(), TestCaseError> {
    for m in &stat.metrics {
        prop_assert!(
            m.value.is_finite() && m.value >= 0.0,
            "{} = {}",
            m.name,
            m.value
        );
        prop_assert!(m.name.starts_with("perf-stat."), "{}", m.name);
    }
    for s in &stat.series {
        prop_assert!(s.name.starts_with("perf-stat.i."), "{}", s.name);
        prop_assert_eq!(s.interval_seconds, interval_seconds);
        prop_assert!(
            s.points.iter().all(|p| p.is_finite() && *p >= 0.0),
            "{:?}",
            s
        );
    }
    Ok(())
}

fn interval_seconds() -> impl Strategy<Value = f64> {
    prop_oneof![Just(1.0), Just(0.5), Just(0.001), 1e-3..10.0f64]
}

fn ops_per_second() -> impl Strategy<Value = Option<f64>> {
    proptest::option::of(prop_oneof![
        Just(0.0),
        Just(f64::MIN_POSITIVE),
        Just(1e308),
        0.0..1e12f64,
    ])
}

/// The fixture's data lines padded with spaces around fields, blank and
/// `#` lines slipped in, and one more event perf counted (or could not) in
/// every interval: none of it changes what the fixture's events give.
fn padded_with_extra_event() -> impl Strategy<Value = (String, String)> {
    let extra = prop_oneof![
        Just("<not supported>".to_string()),
        Just("<not counted>".to_string()),
        (0u64..u64::MAX).prop_map(|v| v.to_string()),
    ];
    (
        proptest::sample::select(INTERVAL_FIXTURES),
        extra,
        0u8..=100,
        proptest::collection::vec((any::<bool>(), any::<bool>(), any::<bool>()), 64),
    )
        .prop_map(|(name, extra, percent, noise)| {
            let text = fixture(name);
            let mut out = Vec::new();
            let mut stamp = None;
            for (k, line) in text.lines().enumerate() {
                let (pad, blank, comment) = noise[k % noise.len()];
                if blank {
                    out.push("   ".to_string());
                }
                if comment {
                    out.push("# perf stat, padded".to_string());
                }
                let fields: Vec<&str> = line.split(',').collect();
                if fields.len() < 7 {
                    out.push(line.to_string());
                    continue;
                }
                let joint = if pad { " , " } else { "," };
                out.push(fields.join(joint));
                if stamp != Some(fields[0]) {
                    stamp = Some(fields[0]);
                    out.push(format!(
                        "{},{extra},,fuzz-extra-event,1000,{percent}.00,,",
                        fields[0]
                    ));
                }
            }
            (text, out.join("\n"))
        })
}

proptest! {
    /// Edited interval output: parsing never panics and keeps its promises;
    /// the metrics derived from what parsed are finite, not negative and
    /// perf-stat's own, for any interval length and workload rate.
    #[test]
    fn fuzz_perf_stat_intervals(
        text in edited(INTERVAL_FIXTURES),
        interval in interval_seconds(),
        ops in ops_per_second(),
    ) {
        if let Ok(intervals) = parse_intervals(&text) {
            check_intervals(&intervals)?;
            check_metrics(&derive(&intervals, interval, ops), interval)?;
        }
    }

    /// Arbitrary intervals (any event names, counts and time stamps that
    /// parse could give): the metrics step alone.
    #[test]
    fn fuzz_perf_stat_metrics(
        intervals in proptest::collection::vec(
            (
                0.0..1e6f64,
                proptest::collection::vec(
                    (
                        proptest::sample::select(vec![
                            "cycles", "instructions", "branch-instructions", "branch-misses",
                            "cache-references", "cache-misses", "task-clock",
                        ]),
                        prop_oneof![
                            Just(Reading::NotCounted),
                            Just(Reading::NotSupported),
                            (prop_oneof![Just(0.0), Just(f64::MAX), Just(5e-324), 0.0..1e15f64], 0.0..=100.0f64)
                                .prop_map(|(value, running_percent)| Reading::Counted { value, running_percent }),
                        ],
                    ),
                    0..8,
                ),
            ),
            0..8,
        ),
        interval in interval_seconds(),
        ops in ops_per_second(),
    ) {
        let mut end = 0.0;
        let intervals: Vec<Interval> = intervals
            .into_iter()
            .map(|(step, mut readings)| {
                end += step;
                // parse refuses an event twice in one interval.
                let mut seen: Vec<&str> = Vec::new();
                readings.retain(|&(event, _)| {
                    let first = !seen.contains(&event);
                    seen.push(event);
                    first
                });
                Interval {
                    end_seconds: end,
                    readings: readings.into_iter().map(|(e, r)| (e.to_string(), r)).collect(),
                }
            })
            .collect();
        check_metrics(&derive(&intervals, interval, ops), interval)?;
    }

    /// Edited `perf stat` totals (the PMU probe's form).
    #[test]
    fn fuzz_perf_stat_totals(text in edited(TOTAL_FIXTURES)) {
        if let Ok(readings) = parse_totals(&text) {
            for (event, reading) in &readings {
                prop_assert!(!event.is_empty());
                check_reading(reading)?;
            }
        }
    }

    /// Padding, blank and comment lines and an extra event are ignored:
    /// the fixture's events keep every metric, series and unsupported name.
    #[test]
    fn fuzz_perf_stat_ignores_padding_comments_and_other_events(
        (original, noisy) in padded_with_extra_event(),
    ) {
        let before = derive(&parse_intervals(&original).unwrap(), 1.0, Some(1e6));
        let after_intervals = parse_intervals(&noisy);
        prop_assert!(after_intervals.is_ok(), "{:?}\n{}", after_intervals, noisy);
        let after = derive(&after_intervals.unwrap(), 1.0, Some(1e6));
        for m in &before.metrics {
            let again = after.metrics.iter().find(|a| a.name == m.name).map(|a| a.value);
            prop_assert_eq!(again, Some(m.value), "{}", m.name);
        }
        for s in &before.series {
            prop_assert!(after.series.contains(s), "{} lost", s.name);
        }
        for u in &before.unsupported {
            prop_assert!(after.unsupported.contains(u), "{u} lost");
        }
    }
}
