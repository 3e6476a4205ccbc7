//! Whether perf may be used: the permission rules and the kallsyms check.

use patchperf_runner::perf::env::{check_access, kallsyms_hidden};
use patchperf_runner::perf::{PerfOptions, PerfTool, setup};

/// `/proc/self/status` capability lines of an unprivileged process and of root.
const USER: &str = "Name:\tx\nCapEff:\t0000000000000000\n";
const ROOT: &str = "Name:\tx\nCapEff:\t000001ffffffffff\n";
/// Only CAP_PERFMON (bit 38).
const PERFMON: &str = "CapEff:\t0000004000000000\n";

#[test]
fn system_wide_counting_needs_paranoid_at_most_0_or_a_capability() {
    assert!(check_access(Some("-1\n"), USER).is_ok());
    assert!(check_access(Some("0\n"), USER).is_ok());
    let err = check_access(Some("2\n"), USER).unwrap_err().to_string();
    assert!(err.contains("perf_event_paranoid is 2"), "{err}");
    assert!(check_access(Some("1\n"), USER).is_err());
    assert!(check_access(Some("2\n"), ROOT).is_ok());
    assert!(check_access(Some("4\n"), PERFMON).is_ok());
}

#[test]
fn a_kernel_without_perf_events_or_an_unreadable_setting_is_explained() {
    let err = check_access(None, ROOT).unwrap_err().to_string();
    assert!(err.contains("no perf events"), "{err}");
    assert!(check_access(Some("lots"), ROOT).is_err());
}

#[test]
fn zeroed_kallsyms_addresses_mean_hidden_kernel_symbols() {
    // Linux 6.1 lists per-CPU symbols at address 0 first (seen in a booted
    // benchmark guest); only function addresses tell.
    let readable = [
        "0000000000000000 A fixed_percpu_data",
        "0000000000000000 A __per_cpu_start",
        "ffffffff81000000 T _stext",
    ];
    assert!(!kallsyms_hidden(readable));
    let hidden = [
        "0000000000000000 A fixed_percpu_data",
        "0000000000000000 T _stext",
        "0000000000000000 t alloc_fd",
    ];
    assert!(kallsyms_hidden(hidden));
    assert!(!kallsyms_hidden([
        "ffffffff81000000 T srso_alias_untrain_ret"
    ]));
    assert!(!kallsyms_hidden(Vec::<String>::new()));
}

#[test]
fn a_missing_perf_gives_one_warning_and_no_collectors() {
    let options = PerfOptions {
        program: "/nonexistent/bin/perf".into(),
        ..PerfOptions::default()
    };
    let setup = setup(&[PerfTool::Stat, PerfTool::Profile], &options);
    assert!(setup.collectors.is_empty());
    assert_eq!(setup.warnings.len(), 1, "{:?}", setup.warnings);
    assert!(setup.warnings[0].contains("perf not found"));
}

#[test]
fn perf_tools_are_named_stat_and_profile() {
    assert_eq!("stat".parse::<PerfTool>().unwrap(), PerfTool::Stat);
    assert_eq!("profile".parse::<PerfTool>().unwrap(), PerfTool::Profile);
    assert!(
        "record"
            .parse::<PerfTool>()
            .unwrap_err()
            .to_string()
            .contains("stat, profile")
    );
}

#[test]
fn a_perf_stat_event_with_a_comma_is_refused() {
    let perf = patchperf_runner::perf::Perf {
        program: "/usr/bin/perf".into(),
    };
    let options = PerfOptions {
        stat_events: vec!["cpu/event=0x3c,umask=0x0/".into()],
        ..PerfOptions::default()
    };
    let err = patchperf_runner::perf::PerfStat::new(perf, &options)
        .unwrap_err()
        .to_string();
    assert!(err.contains("contains a comma"), "{err}");
}
