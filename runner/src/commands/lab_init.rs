//! `patchperf-runner lab-init`: the init process of a VM that plays a
//! bare-metal lab machine, so that `agent --kexec` can be proven end to end
//! without one (`bench/kexec-vm.sh`). It does what the lab machine's own
//! boot does before its systemd unit starts the agent: mounts proc, sys,
//! devtmpfs and a tmpfs, sets the environment (PATH included: the kernel
//! gives init none, and the agent runs `/usr/sbin/kexec`), then runs this
//! binary with the given arguments as its child, reaping orphans as PID 1
//! must. When the child exits it powers the machine off (QEMU exits). As
//! PID 1 it must never return: every failure is printed on the console and
//! the machine powered off all the same.

use std::path::Path;

use nix::sys::wait::{WaitStatus, waitpid};
use nix::unistd::Pid;

use crate::Error;
use crate::cli::lab_init::LabInitArgs;
use crate::commands::guest::{mount_local, power_off};

/// What a lab machine's services get when the environment file sets no
/// PATH: the usual one, /usr/sbin (kexec) included.
pub const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// Printed first, so a console log shows each start of the lab machine.
pub const LAB_UP_MARKER: &str = "patchperf-lab: up";

/// Runs `patchperf-runner lab-init`; never returns as init.
pub fn run(args: LabInitArgs) -> Result<(), Error> {
    // It mounts over /proc, /sys, /dev and /tmp and powers the machine
    // off: only ever as the init of a lab VM.
    if std::process::id() != 1 {
        return Err(Error::Usage(
            "lab-init is the init of a lab VM (PID 1); it would power this machine off".into(),
        ));
    }
    println!("{LAB_UP_MARKER}");
    match start(&args) {
        Ok(status) => println!("patchperf-lab: {} exited: {status}", args.command[0]),
        Err(e) => println!("patchperf-lab: error: {e}"),
    }
    power_off()
}

/// Mounts, starts the command, reaps every child until the command exits;
/// returns how it exited.
fn start(args: &LabInitArgs) -> Result<String, Error> {
    mount_local()?;
    let env = match &args.env_file {
        Some(path) => read_env_file(path)?,
        None => Vec::new(),
    };
    let exe = std::env::current_exe().map_err(|e| Error::io("finding the runner binary", e))?;
    let mut cmd = std::process::Command::new(&exe);
    cmd.args(&args.command).env("PATH", DEFAULT_PATH).envs(env);
    let child = cmd
        .spawn()
        .map_err(|e| Error::io(format!("starting {}", exe.display()), e))?;
    let child = Pid::from_raw(child.id() as i32);
    // As PID 1 every orphan becomes ours: reap them all, stop at the
    // command itself.
    loop {
        match waitpid(Pid::from_raw(-1), None) {
            Ok(WaitStatus::Exited(pid, code)) if pid == child => {
                return Ok(format!("status {code}"));
            }
            Ok(WaitStatus::Signaled(pid, signal, _)) if pid == child => {
                return Ok(format!("signal {signal}"));
            }
            Ok(_) => {}
            Err(nix::errno::Errno::EINTR) => {}
            Err(e) => return Err(Error::io("waiting for the command", e.into())),
        }
    }
}

fn read_env_file(path: &Path) -> Result<Vec<(String, String)>, Error> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
    parse_env(&text).map_err(|e| Error::Usage(format!("{}: {e}", path.display())))
}

/// `NAME=VALUE` lines, each value taken as is (no quotes, no expansion);
/// blank lines and `#` comments are skipped.
pub fn parse_env(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut vars = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let (name, value) = trimmed
            .split_once('=')
            .filter(|(n, _)| valid_name(n))
            .ok_or_else(|| format!("line {}: {line:?} is not NAME=VALUE", i + 1))?;
        vars.push((name.to_string(), value.to_string()));
    }
    Ok(vars)
}

fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    #[test]
    fn the_kernel_command_line_tail_parses_into_the_env_file_and_the_agent_arguments() {
        // What the kernel hands init for `init=R -- lab-init --env-file F
        // agent --kexec --name lab`: argv[0] is the init path.
        let cli = Cli::try_parse_from([
            "/usr/bin/patchperf-runner",
            "lab-init",
            "--env-file",
            "/tmp/lab.env",
            "agent",
            "--kexec",
            "--name",
            "lab",
        ])
        .unwrap();
        let Command::LabInit(args) = cli.command else {
            panic!("not lab-init: {:?}", cli.command)
        };
        assert_eq!(args.env_file.as_deref(), Some(Path::new("/tmp/lab.env")));
        assert_eq!(args.command, ["agent", "--kexec", "--name", "lab"]);
    }

    #[test]
    fn lab_init_without_a_command_is_refused() {
        assert!(Cli::try_parse_from(["patchperf-runner", "lab-init", "--env-file", "/x"]).is_err());
    }

    #[test]
    fn an_env_file_keeps_values_as_they_are_and_skips_comments() {
        let vars = parse_env(
            "# lab machine\nPATCHPERF_SERVER=http://10.0.2.2:8080\n\n  PATCHPERF_TOKEN=a=b c\nEMPTY=\n",
        )
        .unwrap();
        assert_eq!(
            vars,
            [
                ("PATCHPERF_SERVER".into(), "http://10.0.2.2:8080".into()),
                ("PATCHPERF_TOKEN".into(), "a=b c".into()),
                ("EMPTY".into(), String::new()),
            ]
        );
    }

    #[test]
    fn a_line_that_is_not_name_equals_value_is_an_error_naming_it() {
        let err = parse_env("A=1\nexport B=2\n").unwrap_err();
        assert!(
            err.contains("line 2") && err.contains("export B=2"),
            "{err}"
        );
        assert!(parse_env("=x").is_err());
        assert!(parse_env("1A=x").is_err());
        assert!(parse_env("JUSTANAME").is_err());
    }
}
