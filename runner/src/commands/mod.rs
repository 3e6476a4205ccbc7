//! The code behind each subcommand, one module each.

use crate::Error;
use crate::cli::{Cli, Command};

pub mod agent;
pub mod bench;
pub mod bisect;
pub mod compare;
pub mod follow;
pub mod guest;
pub mod job;
pub mod lab_init;
pub mod local_tree;
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
    }
}
