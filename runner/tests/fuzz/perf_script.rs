//! Fuzzes perf script's sample reader (`perf::profile::parse`) and the
//! `perf-profile.*` shares folded from the samples
//! (`perf::profile::metrics`), starting from the recorded fixtures.

use patchperf_runner::perf::profile::metrics::{MIN_PERCENT, Profile, clean_symbol};
use patchperf_runner::perf::profile::parse::{Frame, Sample, lost_samples_warning, parse_script};
use proptest::prelude::*;

use crate::{apply_line_edits, fixture, line_edits};

const FIXTURES: &[&str] = &["script-all-cpu-clock.txt", "script-dup1-cpu-clock.txt"];

/// Lines perf script could print, and some it could not.
fn odd_line() -> impl Strategy<Value = String> + Clone {
    let fixed = proptest::sample::select(vec![
        "",
        "\t",
        "\tffff",
        "\tffff sym (",
        "\tffff sym ()",
        "\tffff  ([kernel.kallsyms])",
        "\tzz sym (dso)",
        "\tffffffff81000130 [unknown] ([unknown])",
        "\tffffffff81000130 foo.isra.0.constprop.1 ([kernel.kallsyms])",
        "\tffffffff81000131 foo.constprop.2 ([kernel.kallsyms])",
        "\tffffffff81000132 foo.part. ([kernel.kallsyms])",
        "\t7f00 patchperf_runner::harness::tasks::task_loop<x> (/usr/bin/patchperf-runner)",
        "\t7f00 std::ops::Fn (a) (b) (/usr/lib/libstd.so)",
        "dup1 18818   10101010",
        "opt cgu.2 1 18446744073709551615",
        "comm 1 18446744073709551616",
        "comm -1 5",
        "comm 1 -5",
        "  1 2",
        "comm tid period",
        "é 1 1",
        "\u{0} 0 0",
    ])
    .prop_map(String::from);
    prop_oneof![
        6 => fixed,
        1 => (".{0,12}", any::<i64>(), any::<u64>()).prop_map(|(c, t, p)| format!("{c} {t} {p}")),
        1 => ("[0-9a-f ]{0,12}", ".{0,16}", ".{0,12}").prop_map(|(a, s, d)| format!("\t{a} {s} ({d})")),
        1 => ".{0,40}",
    ]
}

/// A fixture with up to eight line edits.
fn edited() -> impl Strategy<Value = String> {
    (
        proptest::sample::select(FIXTURES),
        line_edits(odd_line(), 8),
    )
        .prop_map(|(name, edits)| apply_line_edits(&fixture(name), &edits))
}

/// Samples the parser could give: any period, stacks of symbols that clash
/// once clone suffixes are gone, unresolved frames, repeated frames.
fn samples() -> impl Strategy<Value = Vec<Sample>> {
    let frame = (
        proptest::option::weighted(
            0.9,
            proptest::sample::select(vec![
                "foo",
                "foo.isra.0",
                "foo.constprop.1",
                "bar",
                "bar.part.3",
                "baz",
                "patchperf_runner::harness::tasks::task_loop<x>",
            ]),
        ),
        proptest::sample::select(vec!["[kernel.kallsyms]", "/usr/lib/libc.so.6"]),
    )
        .prop_map(|(symbol, dso)| Frame {
            symbol: symbol.map(String::from),
            dso: dso.to_string(),
        });
    let period = prop_oneof![
        Just(0u64),
        Just(1),
        Just(u64::MAX),
        any::<u64>(),
        1u64..10_000_000
    ];
    let sample =
        (period, proptest::collection::vec(frame, 0..8)).prop_map(|(period, frames)| Sample {
            comm: "dup1".into(),
            period,
            frames,
        });
    proptest::collection::vec(sample, 0..24)
}

/// Every share is a finite percentage of at least `MIN_PERCENT` and at
/// most 100; the self shares add up to at most 100.
fn check_profile(profile: &Profile) -> Result<(), TestCaseError> {
    let metrics = profile.metrics();
    let mut self_sum = 0.0;
    for m in &metrics {
        prop_assert!(
            m.value.is_finite() && (MIN_PERCENT..=100.0).contains(&m.value),
            "{} = {}",
            m.name,
            m.value
        );
        prop_assert!(m.name.starts_with("perf-profile."), "{}", m.name);
        if m.name.starts_with("perf-profile.self.") {
            self_sum += m.value;
        }
    }
    prop_assert!(self_sum <= 100.0 + 1e-9, "self shares add up to {self_sum}");
    prop_assert!(profile.kernel_samples() <= profile.samples());
    Ok(())
}

fn frame(symbol: &str, dso: &str) -> Frame {
    Frame {
        symbol: Some(symbol.into()),
        dso: dso.into(),
    }
}

fn one_sample_profile(period: u64, frames: Vec<Frame>) -> Profile {
    let mut profile = Profile::new();
    profile.add(&Sample {
        comm: "dup1".into(),
        period,
        frames,
    });
    profile
}

/// Found by `fuzz_perf_profile_metrics`: one symbol in two DSOs on one
/// stack, or `foo` calling its own `foo.part.0`, made `children.foo` 200%.
#[test]
fn a_name_twice_on_a_stack_counts_its_sample_once() {
    for frames in [
        vec![
            frame("foo", "[kernel.kallsyms]"),
            frame("foo", "/usr/lib/libc.so.6"),
        ],
        vec![
            frame("foo.part.0", "[kernel.kallsyms]"),
            frame("foo", "[kernel.kallsyms]"),
        ],
    ] {
        let metrics = one_sample_profile(1, frames).metrics();
        let children: Vec<(&str, f64)> = metrics
            .iter()
            .filter(|m| m.name.starts_with("perf-profile.children."))
            .map(|m| (m.name.as_str(), m.value))
            .collect();
        assert_eq!(children, [("perf-profile.children.cycles-pp.foo", 100.0)]);
        let traces: f64 = metrics
            .iter()
            .filter(|m| m.name.starts_with("perf-profile.calltrace.cycles-pp.foo"))
            .map(|m| m.value)
            .sum();
        assert_eq!(traces, 100.0, "traces from foo add up to children of foo");
    }
}

/// Seen while checking the same property's bound: with a total near
/// 1.4e19, `100 × weight ÷ total` rounded to 100.00000000000001%.
#[test]
fn a_sample_that_is_all_of_a_huge_total_is_exactly_100_percent() {
    let metrics =
        one_sample_profile(13_980_478_692_463_443_968, vec![frame("foo", "[k]")]).metrics();
    assert!(metrics.iter().all(|m| m.value == 100.0), "{metrics:?}");
}

proptest! {
    /// Edited perf script output: reading never panics, and the profile of
    /// what was read has shares within 0–100%.
    #[test]
    fn fuzz_perf_script(text in edited()) {
        if let Ok(samples) = parse_script(&text) {
            let mut profile = Profile::new();
            for sample in &samples {
                prop_assert!(sample.frames.iter().all(|f| f.symbol.as_deref() != Some("")));
                profile.add(sample);
            }
            prop_assert_eq!(profile.samples(), samples.len() as u64);
            check_profile(&profile)?;
        }
        let _ = lost_samples_warning(&text);
    }

    /// The folding alone, on samples with clashing clone names, `[unknown]`
    /// frames, recursion and periods up to `u64::MAX`.
    #[test]
    fn fuzz_perf_profile_metrics(samples in samples()) {
        let mut profile = Profile::new();
        for sample in &samples {
            profile.add(sample);
        }
        check_profile(&profile)?;
    }

    /// Trailing blanks on any line and extra blank lines between samples
    /// change no sample.
    #[test]
    fn fuzz_perf_script_ignores_trailing_and_extra_blanks(
        name in proptest::sample::select(FIXTURES),
        noise in proptest::collection::vec((any::<bool>(), 0usize..3), 64),
    ) {
        let text = fixture(name);
        let mut noisy = String::new();
        for (k, line) in text.lines().enumerate() {
            let (trailing, blanks) = noise[k % noise.len()];
            noisy.push_str(line);
            if trailing {
                noisy.push_str(" \t ");
            }
            noisy.push('\n');
            if line.trim().is_empty() {
                noisy.push_str(&"\n".repeat(blanks));
            }
        }
        prop_assert_eq!(parse_script(&noisy).unwrap(), parse_script(&text).unwrap());
    }

    /// Cleaning clone suffixes off any text never panics and only shortens.
    #[test]
    fn fuzz_clean_symbol(symbol in "([a-z_]{0,4}(\\.(isra|constprop|part)\\.?[0-9]{0,2})?){0,4}|.{0,24}") {
        prop_assert!(clean_symbol(&symbol).len() <= symbol.len());
    }
}
