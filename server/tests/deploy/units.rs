//! `deploy/systemd/patchperf-server.service` passes `systemd-analyze
//! verify` with its binary where the unit says it is.

use patchperf_testkit::deploy::{Checked, deploy_dir, verify_units};

const INSTALLED: &str = "/usr/local/bin/patchperf-server";
const BUILT: &str = env!("CARGO_BIN_EXE_patchperf-server");

#[test]
fn the_server_unit_passes_systemd_analyze_verify() {
    match verify_units(&["patchperf-server.service"], &[(INSTALLED, BUILT)]) {
        Ok(Checked::Passed) => {}
        Ok(Checked::Skipped(why)) => eprintln!("skipped: {why}"),
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn a_value_systemd_cannot_parse_fails_the_check() {
    // verify exits 0 when it ignores a bad line; the check must not pass.
    let rewrites = [
        (INSTALLED, BUILT),
        ("ProtectSystem=strict", "ProtectSystem=strictest"),
    ];
    match verify_units(&["patchperf-server.service"], &rewrites) {
        Ok(Checked::Skipped(why)) => eprintln!("skipped: {why}"),
        Ok(Checked::Passed) => panic!("ProtectSystem=strictest passed"),
        Err(e) => assert!(e.contains("strictest"), "{e}"),
    }
}

#[test]
fn a_missing_binary_fails_the_check() {
    if std::path::Path::new(INSTALLED).exists() {
        eprintln!("skipped: {INSTALLED} is installed on this machine");
        return;
    }
    match verify_units(&["patchperf-server.service"], &[]) {
        Ok(Checked::Skipped(why)) => eprintln!("skipped: {why}"),
        Ok(Checked::Passed) => panic!("{INSTALLED} is not on this machine, yet it passed"),
        Err(e) => assert!(e.contains(INSTALLED), "{e}"),
    }
}

#[test]
fn the_server_runs_as_its_own_user_with_its_state_under_var_lib_patchperf() {
    let dir = deploy_dir().join("systemd");
    let unit = std::fs::read_to_string(dir.join("patchperf-server.service")).unwrap();
    for line in [
        "User=patchperf",
        "StateDirectory=patchperf",
        "ProtectSystem=strict",
        "PrivateTmp=yes",
        "NoNewPrivileges=yes",
    ] {
        assert!(unit.lines().any(|l| l == line), "no {line}");
    }
    let sysusers = std::fs::read_to_string(dir.join("patchperf-sysusers.conf")).unwrap();
    assert!(
        sysusers
            .lines()
            .any(|l| l.starts_with("u patchperf ") && l.contains("/var/lib/patchperf")),
        "{sysusers}"
    );
}

/// A unit that restarts on failure does not on exit status 2 (a setting
/// that cannot work, an incompatible server): it would restart for ever.
#[test]
fn units_do_not_restart_on_a_bad_setting() {
    let dir = patchperf_testkit::deploy::deploy_dir().join("systemd");
    let mut units = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "service") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        if text.lines().any(|l| l.trim() == "Restart=on-failure") {
            units += 1;
            assert!(
                text.lines()
                    .any(|l| l.trim() == "RestartPreventExitStatus=2"),
                "{} restarts on exit status 2",
                path.display()
            );
        }
    }
    assert_eq!(units, 3);
}
