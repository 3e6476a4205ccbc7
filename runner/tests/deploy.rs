//! The runner's systemd units (`deploy/systemd/patchperf-runner.service`,
//! and `patchperf-runner-kexec.service` for bare metal) pass
//! `systemd-analyze verify` with the binary where they say it is, run as
//! root (and say why), and the kexec one is started at every boot, which
//! is what resumes a kexec job.

use patchperf_testkit::deploy::{Checked, deploy_dir, verify_units};

const INSTALLED: &str = "/usr/local/bin/patchperf-runner";
const BUILT: &str = env!("CARGO_BIN_EXE_patchperf-runner");
const UNITS: [&str; 2] = ["patchperf-runner.service", "patchperf-runner-kexec.service"];

#[test]
fn the_runner_units_pass_systemd_analyze_verify() {
    match verify_units(&UNITS, &[(INSTALLED, BUILT)]) {
        Ok(Checked::Passed) => {}
        Ok(Checked::Skipped(why)) => eprintln!("skipped: {why}"),
        Err(e) => panic!("{e}"),
    }
}

fn unit(name: &str) -> String {
    std::fs::read_to_string(deploy_dir().join("systemd").join(name)).unwrap()
}

#[test]
fn the_agent_runs_as_root_and_says_why() {
    for name in UNITS {
        let text = unit(name);
        let at = text
            .find("\nUser=root\n")
            .unwrap_or_else(|| panic!("{name}: not User=root"));
        let comment = &text[..at];
        assert!(
            comment.contains("Root, on purpose"),
            "{name}: no reason for root"
        );
        assert!(text.contains("\nProtectSystem=full\n") && text.contains("\nPrivateTmp=yes\n"));
        // The two agents would share one cache and one machine name.
        let other = UNITS.iter().find(|u| **u != name).unwrap();
        assert!(text.contains(&format!("Conflicts={other}")), "{name}");
    }
}

#[test]
fn the_kexec_agent_is_started_at_every_boot_with_kexec_and_one_cache() {
    let text = unit("patchperf-runner-kexec.service");
    let exec = text.lines().find(|l| l.starts_with("ExecStart=")).unwrap();
    assert!(exec.split_whitespace().any(|w| w == "--kexec"), "{exec}");
    assert!(text.contains("\nWantedBy=multi-user.target\n"));
    // The state that carries a job across reboots is in the cache: the
    // same directory at every boot.
    assert!(text.contains("\nCacheDirectory=patchperf\n"));
    let settings = std::fs::read_to_string(deploy_dir().join("runner.toml.example")).unwrap();
    assert!(settings.contains("\ncache = \"/var/cache/patchperf\"\n"));
}

#[test]
fn the_units_carry_the_settings_file_instead_of_a_command_line() {
    for name in UNITS {
        let text = unit(name);
        let exec = text.lines().find(|l| l.starts_with("ExecStart=")).unwrap();
        assert!(
            exec.contains(" agent --config /etc/patchperf/runner.toml"),
            "{name}: {exec}"
        );
        assert!(
            text.contains("deploy/runner.toml.example /etc/patchperf/runner.toml"),
            "{name} does not say how to install the settings file"
        );
    }
}
