//! A job described on the command line instead of in a job file: `job
//! --patches MBOX` (a file, or `-` for standard input) on a source tarball,
//! or `job --range A..B` / `--commit C` of the clone the current directory
//! is in, whose kernels are built from that clone. It becomes the same
//! [`JobFile`] a file would give, checked by the same rules, so the two
//! forms cannot measure differently.

use std::path::PathBuf;

use patchperf_common::protocol::{BaseSource, JobSpec};
use patchperf_common::run_length::{Asker, default_for};
use patchperf_common::workload::map;

use super::jobfile::{BaseEntry, JobFile, ParamsEntry};
use crate::Error;
use crate::cli::job::JobArgs;
use crate::commands::local_tree::{self, BaseAt};
use crate::commands::measure::params;
use crate::commands::submit::read_mbox;
use crate::kernel::fetch::source::DEFAULT_TARBALL;

/// The job `args` describe, and the spec to run.
pub fn job(args: &JobArgs) -> Result<(JobFile, JobSpec), Error> {
    let here = std::env::current_dir().map_err(|e| Error::io("the current directory", e))?;
    let (base, mbox, named) = match (&args.patches, &args.range, &args.commit) {
        (Some(path), _, _) => {
            let base = BaseEntry::Tarball(
                args.base
                    .clone()
                    .unwrap_or_else(|| DEFAULT_TARBALL.to_string()),
            );
            let named = if path.as_os_str() == "-" {
                "standard input".to_string()
            } else {
                path.display().to_string()
            };
            (base, read_mbox(path)?, named)
        }
        (None, Some(range), _) => from_clone(local_tree::range(&here, range, BaseAt::ThisClone)?),
        (None, None, Some(commit)) => {
            from_clone(local_tree::commit(&here, commit, BaseAt::ThisClone)?)
        }
        (None, None, None) => {
            return Err(Error::Usage(
                "name a job file, or the series with --patches, --range or --commit".into(),
            ));
        }
    };
    // None named: the workloads the map gives what the series touches, as
    // the server takes them.
    let workloads = if args.load.workloads.is_empty() {
        let mapped = map::for_series(&mbox).map_err(|why| Error::Usage(why.to_string()))?;
        eprintln!(
            "workloads (the workload map's, by what the series touches): {}",
            mapped.join(", ")
        );
        mapped
    } else {
        args.load.workloads.clone()
    };
    let asked = params(&args.load, &[])?;
    // A local job is a comparison: its mode's run length unless given.
    let length = default_for(Asker::Comparison, args.measurement);
    let job = JobFile {
        base,
        patches: PathBuf::from(&named),
        config: args.kconfig.clone(),
        workloads,
        runs: args.runs,
        backend: args.measurement,
        seed: args.seed,
        per_patch: args.per_patch,
        params: ParamsEntry {
            mode: asked.mode,
            nr_task: asked.nr_task,
            seconds: asked.seconds.unwrap_or(length.seconds),
            warmup_seconds: asked.warmup_seconds.unwrap_or(length.warmup_seconds),
            perf_stat: false,
            perf_profile: false,
        },
    };
    job.check().map_err(Error::Usage)?;
    // Paths on the command line are the current directory's.
    let spec = job.spec_with(&here, mbox, &named)?;
    Ok((job, spec))
}

/// A clone's commits: built from the clone at their base.
fn from_clone(local: local_tree::Local) -> (BaseEntry, String, String) {
    eprintln!("{}", local.summary());
    let base = match local.base {
        BaseSource::Git { url, commit } => BaseEntry::Git { git: url, commit },
        BaseSource::Tarball { name } => BaseEntry::Tarball(name),
    };
    (base, local.mbox, "the commits".to_string())
}
