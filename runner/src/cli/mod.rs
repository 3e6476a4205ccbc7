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
pub mod lists;
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
    /// The mailing lists the server follows: list, add, show, read now,
    /// hand in mail, remove.
    Lists(lists::ListsArgs),
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
    let args = with_earlier_variables(args, |name| std::env::var_os(name));
    settings::parse_command_line(args, program, |p| std::fs::File::open(p))
}

/// The environment variables of earlier releases that still count, each
/// for the commands it was read by, with the flag it gives: one variable
/// per concept now (`PATCHPERF_TOKEN` for every token, as the agent had,
/// `PATCHPERF_MACHINE` for the agent's name), the old names kept. An old
/// name is the more specific (it can only hold a CI or an admin token),
/// so it wins over `PATCHPERF_TOKEN` where both are set: a lab machine
/// whose `PATCHPERF_TOKEN` is its runner token still submits with the
/// `PATCHPERF_CI_TOKEN` beside it. Each: the commands, the variable, the
/// flag and its argument's id.
const EARLIER_VARIABLES: [(&[&str], &str, &str, &str); 3] = [
    (
        &["submit", "status", "wait", "cancel", "track", "lists"],
        "PATCHPERF_CI_TOKEN",
        "--token",
        "token",
    ),
    (&["machines"], "PATCHPERF_ADMIN_TOKEN", "--token", "token"),
    (&["agent"], "PATCHPERF_NAME", "--machine", "name"),
];

/// `args` with the flag an earlier variable gives (read through `var`)
/// put right after the subcommand's name, unless the command line gives
/// that flag itself: so it counts as the flag's environment variable
/// would, above the settings file and below the command line.
fn with_earlier_variables(
    mut args: Vec<OsString>,
    var: impl Fn(&str) -> Option<OsString>,
) -> Vec<OsString> {
    let lenient = <Cli as clap::CommandFactory>::command()
        .ignore_errors(true)
        .try_get_matches_from(&args);
    let Ok(matches) = lenient else {
        return args;
    };
    let Some((name, sub)) = matches.subcommand() else {
        return args;
    };
    for (commands, variable, flag, id) in EARLIER_VARIABLES {
        if !commands.contains(&name) {
            continue;
        }
        let given =
            sub.try_get_raw(id).ok().flatten().is_some_and(|_| {
                sub.value_source(id) == Some(clap::parser::ValueSource::CommandLine)
            });
        let (Some(value), false) = (var(variable), given) else {
            continue;
        };
        let Some(at) = args.iter().skip(1).position(|a| a == name) else {
            continue;
        };
        args.splice(at + 2..at + 2, [OsString::from(flag), value]);
    }
    args
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

    /// The earlier variables give their flags, right after the
    /// subcommand, unless the command line gives them.
    #[test]
    fn earlier_variables_count_below_the_command_line() {
        let os = |v: &[&str]| v.iter().map(OsString::from).collect::<Vec<_>>();
        let env = |name: &str| {
            let value = match name {
                "PATCHPERF_CI_TOKEN" => "ppf_ci_old",
                "PATCHPERF_ADMIN_TOKEN" => "ppf_admin_old",
                "PATCHPERF_NAME" => "rack-7",
                _ => return None,
            };
            Some(OsString::from(value))
        };
        let submit = [
            "patchperf-runner",
            "submit",
            "--server",
            "http://s",
            "-w",
            "dup1",
        ];
        assert_eq!(
            with_earlier_variables(os(&submit), env),
            os(&[
                "patchperf-runner",
                "submit",
                "--token",
                "ppf_ci_old",
                "--server",
                "http://s",
                "-w",
                "dup1"
            ])
        );
        let given = [&submit[..], &["--token", "ppf_ci_new"]].concat();
        assert_eq!(with_earlier_variables(os(&given), env), os(&given));
        // An admin's machines command, its own subcommand after.
        let drain = [
            "patchperf-runner",
            "machines",
            "--server",
            "http://s",
            "drain",
            "m1",
        ];
        let with = with_earlier_variables(os(&drain), env);
        assert_eq!(with[2..4], os(&["--token", "ppf_admin_old"]));
        assert!(
            try_parse(
                with,
                &Program {
                    readers: &[],
                    ..SETTINGS
                }
            )
            .is_ok()
        );
        // The agent's name; a command no earlier variable was read by.
        let agent = ["patchperf-runner", "agent", "--server", "http://s"];
        assert_eq!(
            with_earlier_variables(os(&agent), env)[2..4],
            os(&["--machine", "rack-7"])
        );
        let job = ["patchperf-runner", "job", "x.toml"];
        assert_eq!(with_earlier_variables(os(&job), env), os(&job));
        assert_eq!(with_earlier_variables(os(&submit), |_| None), os(&submit));
    }

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
