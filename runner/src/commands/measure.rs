//! What the measurement options shared by `submit`, `submit --bisect` and
//! `track` ask the server for: one [`Setup`] (workloads, parameters, runs,
//! backend, machine or pool, Kconfig fragment), read from the command line
//! the same way for each request.

use patchperf_common::api::submission::{ALIGN_FUNCTIONS_LINE, aligns_functions};
use patchperf_common::api::{AskedParams, Setup};
use patchperf_common::protocol::NrTask;

use crate::Error;
use crate::cli::bench::{ModeArg, PerfArg};
use crate::cli::measure::{MeasureArgs, WorkloadArgs};

/// What the command line asks to measure, and where.
pub fn setup(args: &MeasureArgs) -> Result<Setup, Error> {
    Ok(Setup {
        max_runs: args.max_runs,
        backend: args.measurement,
        config_fragment: config_fragment(args)?,
        machine: args.machine.clone(),
        pool: args.pool.clone(),
        ..Setup::new(
            args.load.workloads.clone(),
            params(&args.load, &args.perf)?,
            args.runs,
        )
    })
}

/// The workload parameters the command line names, with the perf
/// collectors `perf`; the run length left to the measurement mode where
/// it names none.
pub fn params(load: &WorkloadArgs, perf: &[PerfArg]) -> Result<AskedParams, Error> {
    let nr_task = load
        .nr_task
        .iter()
        .map(|s| s.parse::<NrTask>().map_err(Error::Usage))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(AskedParams {
        mode: match load.mode {
            ModeArg::Process => patchperf_common::run::TaskMode::Process,
            ModeArg::Thread => patchperf_common::run::TaskMode::Thread,
        },
        nr_task,
        seconds: load.seconds,
        warmup_seconds: load.warmup,
        perf_stat: perf.contains(&PerfArg::Stat),
        perf_profile: perf.contains(&PerfArg::Profile),
    })
}

/// The Kconfig fragment of `--kconfig`, read, with the alignment line of
/// `--align-functions`.
fn config_fragment(args: &MeasureArgs) -> Result<Option<String>, Error> {
    let mut fragment = match &args.kconfig {
        None => None,
        Some(path) => Some(std::fs::read_to_string(path).map_err(|e| {
            Error::Usage(format!(
                "cannot read config fragment {}: {e}",
                path.display()
            ))
        })?),
    };
    if args.align_functions && !aligns_functions(fragment.as_deref()) {
        let text = fragment.get_or_insert_with(String::new);
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(ALIGN_FUNCTIONS_LINE);
        text.push('\n');
    }
    Ok(fragment)
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Args {
        #[command(flatten)]
        measure: MeasureArgs,
    }

    fn fragment(args: &[&str]) -> Option<String> {
        let parsed = Args::try_parse_from([&["submit", "-w", "dup1"], args].concat()).unwrap();
        config_fragment(&parsed.measure).unwrap()
    }

    #[test]
    fn align_functions_adds_its_line_to_the_fragment_once() {
        assert_eq!(fragment(&[]), None);
        assert_eq!(
            fragment(&["--align-functions"]).as_deref(),
            Some("CONFIG_DEBUG_FORCE_FUNCTION_ALIGN_64B=y\n")
        );
        let dir = tempfile::tempdir().unwrap();
        let own = dir.path().join("frag.config");
        std::fs::write(&own, "CONFIG_HZ_1000=y").unwrap();
        let own = own.to_str().unwrap();
        assert_eq!(
            fragment(&["--config", own, "--align-functions"]).as_deref(),
            Some("CONFIG_HZ_1000=y\nCONFIG_DEBUG_FORCE_FUNCTION_ALIGN_64B=y\n")
        );
        std::fs::write(own, "CONFIG_DEBUG_FORCE_FUNCTION_ALIGN_64B=y\n").unwrap();
        assert_eq!(
            fragment(&["--config", own, "--align-functions"]).as_deref(),
            Some("CONFIG_DEBUG_FORCE_FUNCTION_ALIGN_64B=y\n")
        );
    }

    /// `--kconfig` names the fragment; `--config`, its first spelling,
    /// still does (elsewhere `--config` is a settings file).
    #[test]
    fn kconfig_names_the_fragment_and_config_still_does() {
        let dir = tempfile::tempdir().unwrap();
        let own = dir.path().join("frag.config");
        std::fs::write(&own, "CONFIG_HZ_1000=y\n").unwrap();
        let own = own.to_str().unwrap();
        assert_eq!(
            fragment(&["--kconfig", own]).as_deref(),
            Some("CONFIG_HZ_1000=y\n")
        );
        assert_eq!(fragment(&["--config", own]), fragment(&["--kconfig", own]));
    }
}
