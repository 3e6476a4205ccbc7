//! Command-line definitions (clap derive), one file per subcommand. The code
//! that runs each command lives in `crate::commands`.

use clap::{Parser, Subcommand};

pub mod agent;
pub mod bench;
pub mod compare;
pub mod guest;
pub mod job;
pub mod lab_init;
pub mod measure;
pub mod submit;
pub mod track;

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
    /// Run a whole comparison described by a job file on this machine.
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
    /// Have a patchperf server follow a branch: every new head measured
    /// against the last, its history kept, change points mailed.
    Track(Box<track::TrackArgs>),
}
