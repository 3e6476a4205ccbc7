//! The code behind each subcommand, one module each.

use crate::Error;
use crate::cli::{Cli, Command};

pub mod agent;
pub mod b4;
pub mod bench;
pub mod bisect;
pub mod compare;
pub mod follow;
pub mod guest;
pub mod job;
pub mod lab_init;
pub mod lists;
pub mod local_tree;
pub mod machines;
pub mod measure;
pub mod outcome;
pub mod patience;
pub mod submit;
pub mod track;
pub mod workload_map;

/// Dispatches a parsed command line.
pub fn run(cli: Cli) -> Result<(), Error> {
    match cli.command {
        Command::Bench(args) => bench::run(args),
        Command::Agent(args) => agent::run(args),
        Command::Job(args) => job::run(args),
        Command::Guest(args) => guest::run(args),
        Command::LabInit(args) => lab_init::run(args),
        Command::Compare(args) => compare::run(args),
        Command::Submit(args) => submit::run(*args),
        Command::Status(args) => follow::status(&args),
        Command::Wait(args) => follow::wait(&args),
        Command::Cancel(args) => follow::cancel(&args),
        Command::Track(args) => track::run(*args),
        Command::WorkloadMap(args) => workload_map::run(args),
        Command::Machines(args) => machines::run(args),
        Command::Lists(args) => lists::run(args),
        Command::Completions(args) => completions(args.shell),
    }
}

/// Writes `shell`'s completion script for every subcommand and flag, as
/// clap knows them, to standard output (a reader that stops early, such
/// as `head`, is no error).
fn completions(shell: clap_complete::Shell) -> Result<(), Error> {
    use clap::CommandFactory;
    use std::io::Write;
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "patchperf-runner", &mut script);
    match std::io::stdout().write_all(&script) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(Error::io("writing the completion script", e))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    /// The bash script names every subcommand and the flags a developer
    /// types most, and bash reads it without a syntax error.
    #[test]
    fn the_bash_completion_script_knows_the_commands_and_bash_reads_it() {
        let mut script = Vec::new();
        clap_complete::generate(
            clap_complete::Shell::Bash,
            &mut Cli::command(),
            "patchperf-runner",
            &mut script,
        );
        let text = String::from_utf8(script).unwrap();
        for word in [
            "submit",
            "job",
            "compare",
            "wait",
            "--fail-on-regression",
            "--kconfig",
        ] {
            assert!(text.contains(word), "{word} missing");
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("patchperf-runner.bash");
        std::fs::write(&path, &text).unwrap();
        let checked = std::process::Command::new("bash")
            .arg("-n")
            .arg(&path)
            .output()
            .unwrap();
        assert!(
            checked.status.success(),
            "{}",
            String::from_utf8_lossy(&checked.stderr)
        );
    }
}
