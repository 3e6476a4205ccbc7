//! Command-line definitions (clap derive), one file per subcommand, and
//! the agent's settings file read beside them ([`parse`]). The code that
//! runs each command lives in `crate::commands`.

use std::ffi::OsString;

use clap::{Parser, Subcommand};
use patchperf_common::settings::{self, Failure, Program};

pub mod agent;
pub mod bench;
pub mod compare;
pub mod duration;
pub mod follow;
pub mod guest;
pub mod job;
pub mod lab_init;
pub mod machines;
pub mod measure;
pub mod submit;
pub mod track;
pub mod workload_map;

/// patchperf runner: measure what a kernel patch does to syscall paths.
#[derive(Debug, Parser)]
#[command(name = "patchperf-runner", version, about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The runner's subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one workload on the running kernel, will-it-scale style.
    Bench(bench::BenchArgs),
    /// Take jobs from a patchperf server and execute them.
    Agent(agent::AgentArgs),
    /// Run a whole comparison on this machine: a job file's, or a series
    /// named on the command line (--patches, --range, --commit).
    Job(job::JobArgs),
    /// Inside a booted benchmark guest: run the workloads and power off.
    #[command(hide = true)]
    Guest(guest::GuestArgs),
    /// Init of a VM playing a bare-metal lab machine: mount, then run the
    /// agent (bench/kexec-vm.sh).
    #[command(hide = true)]
    LabInit(lab_init::LabInitArgs),
    /// Compare two results directories and print the 0-day style report.
    Compare(compare::CompareArgs),
    /// Submit a patch series to a patchperf server (CI), optionally wait for
    /// the verdict.
    Submit(Box<submit::SubmitArgs>),
    /// Where a submitted comparison stands: its status, verdict and
    /// report URL.
    Status(follow::FollowArgs),
    /// Follow a submitted comparison to its end, as `submit --wait` does,
    /// and print its report and verdict.
    Wait(follow::FollowArgs),
    /// Cancel a submitted comparison: its queued jobs fail as cancelled,
    /// running ones stop at their next heartbeat.
    Cancel(follow::FollowArgs),
    /// Have a patchperf server follow a branch: every new head measured
    /// against the last, its history kept, change points mailed.
    Track(Box<track::TrackArgs>),
    /// Derive which source files each workload exercises from its perf
    /// profile on real kernels, and write the workload map.
    WorkloadMap(workload_map::WorkloadMapArgs),
    /// List and steer the fleet (an admin): drain, pause, resume, retire.
    Machines(machines::MachinesArgs),
    /// Print a shell's completion script for patchperf-runner, e.g.
    /// `patchperf-runner completions bash > /etc/bash_completion.d/patchperf-runner`.
    Completions(CompletionsArgs),
}

/// Arguments of `patchperf-runner completions`.
#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell.
    pub shell: clap_complete::Shell,
}

/// The agent's settings file when `--config` names none, if it exists.
pub const DEFAULT_CONFIG: &str = "/etc/patchperf/runner.toml";

/// Only the agent, a service, reads a settings file; the other commands
/// are run by hand.
pub const SETTINGS: Program<'static> = Program {
    keys_of: "agent",
    readers: &["agent"],
    default_path: DEFAULT_CONFIG,
};

/// `args` with the settings file's values where no flag or environment
/// variable gave one.
/// `--server`: `http://` or `https://` and a host (a URL without its
/// scheme is a mistake to say at once, with exit status 2, not a server
/// to retry for ever).
pub fn server_url(text: &str) -> Result<String, String> {
    let rest = text
        .strip_prefix("http://")
        .or_else(|| text.strip_prefix("https://"))
        .ok_or_else(|| {
            format!("{text:?}: give the server as http://host[:port] or https://host[:port]")
        })?;
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if host.is_empty() || host.contains(char::is_whitespace) {
        return Err(format!("{text:?}: no host after the scheme"));
    }
    Ok(text.to_string())
}

pub fn try_parse(args: Vec<OsString>, program: &Program<'_>) -> Result<Cli, Failure> {
    settings::parse_command_line(args, program, |p| std::fs::File::open(p))
}

/// This process's command line, as [`try_parse`] reads it; on a bad
/// command line or settings file, says why and exits (status 2).
pub fn parse() -> Cli {
    match try_parse(std::env::args_os().collect(), &SETTINGS) {
        Ok(cli) => cli,
        Err(Failure::Usage(e)) => e.exit(),
        Err(Failure::File(why)) => {
            eprintln!("patchperf-runner: {why}");
            std::process::exit(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn agent(args: &[&str]) -> Result<agent::AgentArgs, Failure> {
        let args = args.iter().map(OsString::from).collect();
        match try_parse(args, &SETTINGS)?.command {
            Command::Agent(a) => Ok(a),
            other => panic!("{other:?}"),
        }
    }

    fn example() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/runner.toml.example")
    }

    /// The example with every setting uncommented.
    fn uncommented() -> String {
        std::fs::read_to_string(example())
            .unwrap()
            .lines()
            .map(|l| {
                l.strip_prefix('#')
                    .filter(|k| k.contains(" = "))
                    .unwrap_or(l)
            })
            .map(|l| format!("{l}\n"))
            .collect()
    }

    #[test]
    fn the_example_names_every_agent_flag_and_each_of_its_values_is_accepted() {
        let text = uncommented();
        let cli = <Cli as clap::CommandFactory>::command();
        let cmd = cli.find_subcommand("agent").unwrap();
        let parsed = settings::parse(&text, cmd).unwrap();
        for arg in cmd.get_arguments() {
            let Some(long) = arg.get_long() else { continue };
            if ["config", "help"].contains(&long) {
                continue;
            }
            assert!(
                parsed.iter().any(|s| s.key == long),
                "--{long} is not in deploy/runner.toml.example"
            );
        }
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("runner.toml");
        std::fs::write(&file, &text).unwrap();
        let a = agent(&["r", "agent", "--config", file.to_str().unwrap()]).unwrap();
        assert_eq!(a.server, "http://perf.example.org:8080");
        assert_eq!(a.cache, Path::new("/var/cache/patchperf"));
    }

    #[test]
    fn a_server_without_its_scheme_is_a_usage_error() {
        for bad in [
            "perf.example.org:8080",
            "ftp://perf.example.org",
            "http://",
            "http:// x",
        ] {
            let Err(Failure::Usage(e)) = agent(&["r", "agent", "--server", bad, "--token", "t"])
            else {
                panic!("{bad:?} accepted");
            };
            assert_eq!(e.exit_code(), 2, "{bad}: {e}");
        }
        for good in [
            "http://perf.example.org:8080",
            "https://perf.example.org/patchperf/",
        ] {
            assert!(agent(&["r", "agent", "--server", good, "--token", "t"]).is_ok());
        }
    }

    #[test]
    fn a_flag_wins_over_the_file_and_an_unknown_key_names_itself_and_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("runner.toml");
        std::fs::write(
            &file,
            "server = \"http://a:1\"\ntoken = \"ppf_runner_x\"\nwait = 5\nkexec = true\n",
        )
        .unwrap();
        let f = file.to_str().unwrap();
        let a = agent(&["r", "agent", "--config", f, "--wait", "7"]).unwrap();
        assert_eq!(
            (a.server.as_str(), a.wait, a.kexec),
            ("http://a:1", std::time::Duration::from_secs(7), true)
        );
        // The file's bare number is seconds, as the flag's; units work.
        let a = agent(&["r", "agent", "--config", f]).unwrap();
        assert_eq!(a.wait, std::time::Duration::from_secs(5));
        let a = agent(&["r", "agent", "--config", f, "--claim-wait", "1m"]).unwrap();
        assert_eq!(a.wait, std::time::Duration::from_secs(60));
        std::fs::write(&file, "server = \"http://a:1\"\nspooll = \"/x\"\n").unwrap();
        let Err(Failure::File(e)) = agent(&["r", "agent", "--config", f]) else {
            panic!("an unknown key was accepted")
        };
        assert!(
            e.starts_with(f) && e.contains("unknown key `spooll`"),
            "{e}"
        );
    }
}
