//! `patchperf-runner agent`: collect the inventory, then run the agent loop
//! with the kernel pipeline as executor.

use std::time::Duration;

use patchperf_common::run::MeasurementMode;

use crate::Error;
use crate::agent::backoff::Backoff;
use crate::agent::client::Client;
use crate::agent::inventory;
use crate::agent::log::agent_log;
use crate::agent::pipeline_executor::{KernelExecutor, KexecExecutor};
use crate::agent::worker::{Agent, AgentOptions};
use crate::cli::agent::AgentArgs;
use crate::kernel::cache::Cache;
use crate::kernel::pipeline::Pipeline;
use crate::kernel::pipeline::kexec::Kexec;

/// Runs `patchperf-runner agent`.
pub fn run(args: AgentArgs) -> Result<(), Error> {
    crate::proc::install_interrupt_handler()?;
    let mut inventory = inventory::collect();
    if args.kexec {
        // Every job runs on this machine's own hardware.
        inventory.backends = vec![MeasurementMode::Kexec];
        inventory
            .notes
            .push("kexec: each kernel boots on this machine itself".to_string());
    }
    let name = args.name.unwrap_or_else(|| inventory.hostname.clone());
    agent_log!(
        "{name} ({}, {} CPUs) serving {}",
        inventory.cpu_model,
        inventory.nr_cpu,
        args.server
    );
    for note in &inventory.notes {
        agent_log!("  {note}");
    }
    let mut pipeline = Pipeline {
        cache: Cache::at(&args.cache),
        ..Pipeline::from_env()?
    };
    if let Some(n) = args.parallel {
        pipeline.parallel = n as usize;
    }
    // Several jobs at once only where guests count instructions: a
    // machine measuring wall-clock time runs one job at a time anyway,
    // and jobs it held waiting would be jobs other machines could run.
    let icount = inventory.backends.first() == Some(&MeasurementMode::TcgIcount);
    let jobs = if icount && !args.kexec {
        pipeline.parallel
    } else {
        1
    };
    if jobs > 1 {
        agent_log!(
            "up to {} tcg-icount guests at once (--parallel), of up to {jobs} jobs of other \
             comparisons; builds beside them; a wall-clock job's boots alone",
            pipeline.parallel
        );
    } else {
        agent_log!(
            "up to {} tcg-icount guest{} at once (--parallel), one job at a time; \
             wall-clock modes one guest at a time",
            pipeline.parallel,
            if pipeline.parallel == 1 { "" } else { "s" }
        );
    }
    let options = AgentOptions {
        name,
        spool_dir: args.spool,
        wait_seconds: u32::try_from(args.wait.as_secs()).unwrap_or(u32::MAX),
        backoff: Backoff::default(),
        idle_retry: Duration::from_secs(10),
        jobs,
    };
    let mut agent = Agent::new(Client::new(&args.server, &args.token), options, inventory)?;
    if !args.kexec {
        let mut executor = KernelExecutor { pipeline };
        return agent.run(&mut executor, args.once);
    }
    let mut executor = KexecExecutor {
        pipeline,
        kexec: Kexec::default(),
    };
    if let Some(job) = executor.in_progress()? {
        agent_log!("resuming job {} after a kexec boot", job.job_id);
        // Either finishes the job or kexecs into its next kernel.
        agent.resume(&job, &mut executor)?;
        if args.once {
            return Ok(());
        }
    }
    agent.run(&mut executor, args.once)
}
