//! What the measurement options shared by `submit`, `submit --bisect` and
//! `track` ask the server for: one [`Setup`] (workloads, parameters, runs,
//! backend, machine or pool, Kconfig fragment), read from the command line
//! the same way for each request.

use patchperf_common::api::submission::ALIGN_FUNCTIONS_LINE;
use patchperf_common::api::{AskedParams, Setup};
use patchperf_common::protocol::NrTask;

use crate::Error;
use crate::cli::bench::{ModeArg, PerfArg};
use crate::cli::measure::{MeasureArgs, WorkloadArgs};

/// What the command line asks to measure, and where.
pub fn setup(args: &MeasureArgs) -> Result<Setup, Error> {
    let mut setup = Setup {
        max_runs: args.max_runs,
        backend: args.measurement,
        machine: args.machine.clone(),
        pool: args.pool.clone(),
        ..Setup::new(
            args.load.workloads.clone(),
            params(&args.load, &args.perf)?,
            args.runs,
        )
    };
    add_kconfig(&mut setup, args)?;
    Ok(setup)
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
fn add_kconfig(setup: &mut Setup, args: &MeasureArgs) -> Result<(), Error> {
    if let Some(path) = &args.kconfig {
        let lines = std::fs::read_to_string(path).map_err(|e| {
            Error::Usage(format!(
                "cannot read config fragment {}: {e}",
                path.display()
            ))
        })?;
        setup.add_kconfig(&lines);
    }
    if args.align_functions && !setup.aligns_functions() {
        setup.add_kconfig(&format!("{ALIGN_FUNCTIONS_LINE}\n"));
    }
    Ok(())
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

    /// The setup the flags `args` ask for, of dup1.
    fn asked(args: &[&str]) -> Setup {
        let parsed = Args::try_parse_from([&["submit", "-w", "dup1"], args].concat()).unwrap();
        setup(&parsed.measure).unwrap()
    }

    /// The setup of dup1 without flags, with exactly the Kconfig `lines`.
    fn with_kconfig(lines: &str) -> Setup {
        let mut s = asked(&[]);
        s.add_kconfig(lines);
        s
    }

    #[test]
    fn align_functions_adds_its_line_to_the_fragment_once() {
        assert_eq!(asked(&[]).config_fragment, None);
        assert_eq!(
            asked(&["--align-functions"]),
            with_kconfig("CONFIG_DEBUG_FORCE_FUNCTION_ALIGN_64B=y\n")
        );
        let dir = tempfile::tempdir().unwrap();
        let own = dir.path().join("frag.config");
        std::fs::write(&own, "CONFIG_HZ_1000=y").unwrap();
        let own = own.to_str().unwrap();
        assert_eq!(
            asked(&["--config", own, "--align-functions"]),
            with_kconfig("CONFIG_HZ_1000=y\nCONFIG_DEBUG_FORCE_FUNCTION_ALIGN_64B=y\n")
        );
        std::fs::write(own, "CONFIG_DEBUG_FORCE_FUNCTION_ALIGN_64B=y\n").unwrap();
        assert_eq!(
            asked(&["--config", own, "--align-functions"]),
            with_kconfig("CONFIG_DEBUG_FORCE_FUNCTION_ALIGN_64B=y\n")
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
            asked(&["--kconfig", own]),
            with_kconfig("CONFIG_HZ_1000=y\n")
        );
        assert_eq!(asked(&["--config", own]), asked(&["--kconfig", own]));
    }
}
