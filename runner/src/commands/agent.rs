//! `patchperf-runner agent`: collect the inventory, then run the agent loop
//! with the kernel pipeline as executor.

use std::time::Duration;

use crate::Error;
use crate::agent::backoff::Backoff;
use crate::agent::client::Client;
use crate::agent::inventory;
use crate::agent::worker::{Agent, AgentOptions};
use crate::cli::agent::AgentArgs;
use crate::kernel::executor::KernelExecutor;
use crate::kernel::pipeline::Pipeline;

/// Runs `patchperf-runner agent`.
pub fn run(args: AgentArgs) -> Result<(), Error> {
    crate::proc::install_interrupt_handler()?;
    let inventory = inventory::collect();
    let name = args.name.unwrap_or_else(|| inventory.hostname.clone());
    eprintln!(
        "patchperf-runner agent: {name} ({}, {} CPUs) serving {}",
        inventory.cpu_model, inventory.nr_cpu, args.server
    );
    for note in &inventory.notes {
        eprintln!("patchperf-runner agent:   {note}");
    }
    let options = AgentOptions {
        name,
        spool_dir: args.spool,
        wait_seconds: args.wait,
        backoff: Backoff::default(),
        idle_retry: Duration::from_secs(10),
    };
    let mut agent = Agent::new(Client::new(&args.server, &args.token), options, inventory)?;
    let mut executor = KernelExecutor {
        pipeline: Pipeline::from_env()?,
    };
    agent.run(&mut executor, args.once)
}
