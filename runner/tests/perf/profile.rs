//! perf profile: reading perf script's stacks and the `perf-profile.*`
//! arithmetic.

use patchperf_common::run::MetricValue;
use patchperf_runner::perf::profile::metrics::{Profile, clean_symbol};
use patchperf_runner::perf::profile::parse::{Frame, Sample, lost_samples_warning, parse_script};
use proptest::prelude::*;

use crate::{assert_close, fixture, value};

fn profile_of(text: &str) -> Vec<MetricValue> {
    let mut profile = Profile::new();
    for sample in parse_script(text).expect("parses") {
        profile.add(&sample);
    }
    profile.metrics()
}

fn names(metrics: &[MetricValue]) -> Vec<&str> {
    metrics.iter().map(|m| m.name.as_str()).collect()
}

/// Five samples, 500 units of weight in all (hand-computed below).
const SMALL: &str = "\
a 1 100
\tffffffff81000001 leaf_k ([kernel.kallsyms])
\tffffffff81000002 mid.isra.0 ([kernel.kallsyms])
\tffffffff81000003 entry ([kernel.kallsyms])
\t4 dup (/lib/libc.so.6)

a 1 100
\tffffffff81000002 mid.isra.0 ([kernel.kallsyms])
\tffffffff81000003 entry ([kernel.kallsyms])
\t4 dup (/lib/libc.so.6)

a 1 200
\t4 dup (/lib/libc.so.6)

b 2 50
\t6 [unknown] ([unknown])

b 2 50
\tffffffff81000007 rec ([kernel.kallsyms])
\tffffffff81000008 rec ([kernel.kallsyms])
\tffffffff81000003 entry ([kernel.kallsyms])
\ta [unknown] ([unknown])
\tb garbage (/bin/x)
";

#[test]
fn self_is_the_share_of_weight_sampled_in_the_function() {
    let m = profile_of(SMALL);
    assert_close(value(&m, "perf-profile.self.cycles-pp.leaf_k"), 20.0);
    assert_close(value(&m, "perf-profile.self.cycles-pp.mid"), 20.0);
    assert_close(value(&m, "perf-profile.self.cycles-pp.dup"), 40.0);
    assert_close(value(&m, "perf-profile.self.cycles-pp.rec"), 10.0);
    // The sample in an unresolved address counts in the total only.
    let selves: f64 = m
        .iter()
        .filter(|v| v.name.starts_with("perf-profile.self."))
        .map(|v| v.value)
        .sum();
    assert_close(selves, 90.0);
}

#[test]
fn children_is_the_share_of_weight_with_the_function_on_the_stack_once() {
    let m = profile_of(SMALL);
    assert_close(value(&m, "perf-profile.children.cycles-pp.leaf_k"), 20.0);
    assert_close(value(&m, "perf-profile.children.cycles-pp.mid"), 40.0);
    assert_close(value(&m, "perf-profile.children.cycles-pp.entry"), 50.0);
    assert_close(value(&m, "perf-profile.children.cycles-pp.dup"), 80.0);
    // Recursion counts once.
    assert_close(value(&m, "perf-profile.children.cycles-pp.rec"), 10.0);
    // Frames past an unresolved one are not trusted.
    assert!(!names(&m).iter().any(|n| n.contains("garbage")));
    assert!(!names(&m).iter().any(|n| n.contains("unknown")));
}

#[test]
fn calltraces_run_from_the_function_outwards_to_its_callers() {
    let m = profile_of(SMALL);
    let traces: Vec<(&str, f64)> = m
        .iter()
        .filter(|v| v.name.starts_with("perf-profile.calltrace."))
        .map(|v| (v.name.as_str(), v.value))
        .collect();
    let expected = [
        ("perf-profile.calltrace.cycles-pp.dup", 80.0),
        ("perf-profile.calltrace.cycles-pp.entry", 10.0),
        ("perf-profile.calltrace.cycles-pp.entry.dup", 40.0),
        (
            "perf-profile.calltrace.cycles-pp.leaf_k.mid.entry.dup",
            20.0,
        ),
        ("perf-profile.calltrace.cycles-pp.mid.entry.dup", 40.0),
        ("perf-profile.calltrace.cycles-pp.rec.rec.entry", 10.0),
    ];
    assert_eq!(traces.len(), expected.len(), "{traces:?}");
    for ((name, value), (want_name, want_value)) in traces.iter().zip(expected) {
        assert_eq!(*name, want_name);
        assert_close(*value, want_value);
    }
}

#[test]
fn calltraces_keep_five_frames_and_add_up_stacks_that_agree_in_them() {
    let text = "\
t 1 1
\t1 f1 (k)
\t2 f2 (k)
\t3 f3 (k)
\t4 f4 (k)
\t5 f5 (k)
\t6 f6 (k)

t 1 1
\t1 f1 (k)
\t2 f2 (k)
\t3 f3 (k)
\t4 f4 (k)
\t5 f5 (k)
\t7 f7 (k)
";
    let m = profile_of(text);
    assert_close(
        value(&m, "perf-profile.calltrace.cycles-pp.f1.f2.f3.f4.f5"),
        100.0,
    );
    assert_close(
        value(&m, "perf-profile.calltrace.cycles-pp.f2.f3.f4.f5.f6"),
        50.0,
    );
    assert_close(
        value(&m, "perf-profile.calltrace.cycles-pp.f2.f3.f4.f5.f7"),
        50.0,
    );
}

#[test]
fn entries_under_five_hundredths_of_a_percent_are_dropped() {
    let text = "t 1 1\n\t1 tiny (k)\n\nt 1 1999\n\t2 big (k)\n\nt 1 1\n\t3 edge (k)\n\nt 1 999\n\t2 big (k)\n";
    // Total 3000: tiny and edge are 1/3000 = 0.033%: dropped.
    let m = profile_of(text);
    assert!(
        !names(&m)
            .iter()
            .any(|n| n.ends_with("tiny") || n.ends_with("edge"))
    );
    // Exactly 0.05% is kept, as 0-day keeps it (>= 0.05).
    let m = profile_of("t 1 1\n\t1 edge (k)\n\nt 1 1999\n\t2 big (k)\n");
    assert_close(value(&m, "perf-profile.self.cycles-pp.edge"), 0.05);
}

#[test]
fn samples_weigh_by_their_period() {
    let m = profile_of("t 1 3\n\t1 a (k)\n\nt 1 1\n\t2 b (k)\n");
    assert_close(value(&m, "perf-profile.self.cycles-pp.a"), 75.0);
    assert_close(value(&m, "perf-profile.self.cycles-pp.b"), 25.0);
}

#[test]
fn gcc_clone_suffixes_are_stripped_as_0day_strips_them() {
    assert_eq!(clean_symbol("alloc_fd"), "alloc_fd");
    assert_eq!(clean_symbol("do_dup2.isra.0"), "do_dup2");
    assert_eq!(clean_symbol("foo.constprop.0.isra.0"), "foo");
    assert_eq!(clean_symbol("foo.part.12"), "foo");
    assert_eq!(clean_symbol("a.isra.1.b"), "a.b");
    assert_eq!(clean_symbol("foo.cold"), "foo.cold");
    assert_eq!(clean_symbol("foo.isra"), "foo.isra");
    assert_eq!(clean_symbol("foo.isra.x"), "foo.isra.x");
    assert_eq!(clean_symbol("close@plt"), "close@plt");
}

#[test]
fn the_harness_loop_is_named_testcase_as_in_will_it_scale() {
    // Shaped as perf script printed an open1 guest sample (demangled Rust
    // symbol of the harness loop under the kernel's entry path).
    let text = "\
patchperf-runne 212 1000
\tffffffff81234567 task_work_run ([kernel.kallsyms])
\tffffffff81234568 exit_to_user_mode_prepare ([kernel.kallsyms])
\tffffffff81234569 syscall_exit_to_user_mode ([kernel.kallsyms])
\tffffffff8123456a entry_SYSCALL_64_after_hwframe ([kernel.kallsyms])
\t55d0c0de1234 patchperf_runner::harness::tasks::task_loop (/usr/bin/patchperf-runner)
";
    let m = profile_of(text);
    assert_close(value(&m, "perf-profile.children.cycles-pp.testcase"), 100.0);
    assert_close(
        value(
            &m,
            "perf-profile.calltrace.cycles-pp.exit_to_user_mode_prepare.syscall_exit_to_user_mode.entry_SYSCALL_64_after_hwframe.testcase",
        ),
        100.0,
    );
    assert!(names(&m).iter().all(|n| !n.contains("patchperf_runner")));
}

#[test]
fn real_dup1_profile_names_the_kernel_paths_of_dup_and_close() {
    // Counted independently from the fixture: 295 samples of equal period;
    // alloc_fd is on 27 stacks and the sampled function of 23; all 27 reach
    // it the same way.
    let m = profile_of(&fixture("script-dup1-cpu-clock.txt"));
    let share = |n: f64| 100.0 * n / 295.0;
    assert_close(
        value(&m, "perf-profile.children.cycles-pp.alloc_fd"),
        share(27.0),
    );
    assert_close(
        value(&m, "perf-profile.self.cycles-pp.alloc_fd"),
        share(23.0),
    );
    assert_close(
        value(
            &m,
            "perf-profile.calltrace.cycles-pp.alloc_fd.__x64_sys_dup.do_syscall_64.entry_SYSCALL_64_after_hwframe.__GI___dup",
        ),
        share(27.0),
    );
    assert_close(
        value(&m, "perf-profile.children.cycles-pp.__close"),
        share(157.0),
    );
    assert_close(
        value(
            &m,
            "perf-profile.calltrace.cycles-pp.entry_SYSCALL_64_after_hwframe.__close",
        ),
        share(131.0),
    );
    assert_close(
        value(
            &m,
            "perf-profile.calltrace.cycles-pp.filp_flush.__x64_sys_close.do_syscall_64.entry_SYSCALL_64_after_hwframe.__close",
        ),
        share(28.0),
    );
    assert_close(
        value(
            &m,
            "perf-profile.children.cycles-pp.entry_SYSCALL_64_after_hwframe",
        ),
        share(238.0),
    );
    assert!(!names(&m).contains(&"perf-profile.self.cycles-pp.entry_SYSCALL_64_after_hwframe"));
}

#[test]
fn real_system_wide_output_with_odd_commands_and_symbols_parses() {
    let samples = parse_script(&fixture("script-all-cpu-clock.txt")).unwrap();
    assert_eq!(samples.len(), 100);
    assert!(samples.iter().any(|s| s.comm == "opt cgu.2"));
    assert!(samples.iter().all(|s| s.period > 0 && !s.frames.is_empty()));
    let rust_symbol = "<cargo_util::process_builder::ProcessBuilder>::exec_with_streaming";
    assert!(samples.iter().any(|s| {
        s.frames
            .iter()
            .any(|f| f.symbol.as_deref() == Some(rust_symbol))
    }));
    let unknown = Frame {
        symbol: None,
        dso: "[unknown]".into(),
    };
    assert!(samples.iter().any(|s| s.frames.contains(&unknown)));

    let mut profile = Profile::new();
    samples.iter().for_each(|s| profile.add(s));
    assert_eq!(profile.samples(), 100);
    let selves: f64 = profile
        .metrics()
        .iter()
        .filter(|v| v.name.starts_with("perf-profile.self."))
        .map(|v| v.value)
        .sum();
    assert!(selves <= 100.0 + 1e-9);
}

#[test]
fn the_first_sample_is_read_exactly() {
    let samples = parse_script(&fixture("script-dup1-cpu-clock.txt")).unwrap();
    let frame = |symbol: &str, dso: &str| Frame {
        symbol: Some(symbol.into()),
        dso: dso.into(),
    };
    assert_eq!(
        samples[0],
        Sample {
            comm: "dup1".into(),
            period: 2004008,
            frames: vec![
                frame("__x64_sys_dup", "[kernel.kallsyms]"),
                frame("do_syscall_64", "[kernel.kallsyms]"),
                frame("entry_SYSCALL_64_after_hwframe", "[kernel.kallsyms]"),
                frame("__GI___dup", "/usr/lib/x86_64-linux-gnu/libc.so.6"),
            ],
        }
    );
}

#[test]
fn malformed_script_output_is_an_error_naming_the_line() {
    let cases = [
        ("\tffff alloc_fd ([kernel.kallsyms])\n", 1),
        ("dup1 12 100\n\tffff alloc_fd\n", 2),
        ("dup1 12 100\n\tzzzz alloc_fd ([kernel.kallsyms])\n", 2),
        ("dup1 12 100\n\tffff  ([kernel.kallsyms])\n", 2),
        ("hello\n", 1),
        ("dup1 twelve 100\n", 1),
        ("dup1 12 -5\n", 1),
    ];
    for (text, line) in cases {
        match parse_script(text) {
            Err(patchperf_runner::Error::Parse { line: at, .. }) => {
                assert_eq!(at, line, "wrong line for {text:?}")
            }
            other => panic!("{text:?} gave {other:?}"),
        }
    }
}

#[test]
fn lost_samples_reported_by_perf_script_become_a_warning() {
    // The two forms perf 6.1 prints (tools/perf/util/session.c).
    let chunks = "Warning:\nProcessed 48211 events and lost 3 chunks!\n\nCheck IO/CPU overload!\n";
    let warning = lost_samples_warning(chunks).unwrap();
    assert!(
        warning.contains("Processed 48211 events and lost 3 chunks!"),
        "{warning}"
    );
    let samples = "Warning:\nProcessed 20000 samples and lost 7.50%!\n";
    assert!(
        lost_samples_warning(samples)
            .unwrap()
            .contains("lost 7.50%")
    );
    assert_eq!(lost_samples_warning(""), None);
    assert_eq!(
        lost_samples_warning(
            "Warning:\nKernel address maps (/proc/{kallsyms,modules}) are restricted\n"
        ),
        None
    );
}

fn stacks() -> impl Strategy<Value = Vec<(u64, Vec<&'static str>)>> {
    let symbol = prop_oneof![
        Just("a"),
        Just("b"),
        Just("c"),
        Just("d"),
        Just("e"),
        Just("f"),
        Just("[unknown]")
    ];
    proptest::collection::vec((1u64..1000, proptest::collection::vec(symbol, 0..9)), 1..40)
}

proptest! {
    #[test]
    fn script_parsing_never_panics(text in any::<String>()) {
        let _ = parse_script(&text);
    }

    #[test]
    fn profile_shares_are_consistent(stacks in stacks()) {
        let mut profile = Profile::new();
        for (period, symbols) in &stacks {
            profile.add(&Sample {
                comm: "t".into(),
                period: *period,
                frames: symbols
                    .iter()
                    .map(|s| Frame {
                        symbol: (*s != "[unknown]").then(|| s.to_string()),
                        dso: "k".into(),
                    })
                    .collect(),
            });
        }
        let m = profile.metrics();
        let get = |name: String| m.iter().find(|v| v.name == name).map(|v| v.value);
        let selves: f64 = m.iter().filter(|v| v.name.contains(".self.")).map(|v| v.value).sum();
        prop_assert!(selves <= 100.0 + 1e-9);
        for symbol in ["a", "b", "c", "d", "e", "f"] {
            let children = get(format!("perf-profile.children.cycles-pp.{symbol}")).unwrap_or(0.0);
            let own = get(format!("perf-profile.self.cycles-pp.{symbol}")).unwrap_or(0.0);
            prop_assert!(own <= children + 1e-9);
            prop_assert!(children <= 100.0 + 1e-9);
            let prefix = format!("perf-profile.calltrace.cycles-pp.{symbol}");
            let traces: f64 = m
                .iter()
                .filter(|v| v.name == prefix || v.name.starts_with(&format!("{prefix}.")))
                .map(|v| v.value)
                .sum();
            prop_assert!(traces <= children + 1e-9);
        }
    }
}
