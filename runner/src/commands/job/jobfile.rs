//! The job file of `patchperf-runner job`: a whole comparison described in
//! TOML, run on this machine without a server.
//!
//! ```toml
//! base = "linux-source-6.12"         # a tarball name (/usr/src/<name>.tar.*) or path;
//!                                    # the default: Debian's newest source package
//! # base = { git = "https://…/linux.git", commit = "v6.1" }   # or a repository path
//! patches = "fs-close.mbox"          # the series, relative to this file
//! # kconfig = "extra.config"         # optional Kconfig fragment for both sides
//! workloads = ["open1", "dup1"]
//! runs = 3                           # boots per side (3 to 100), in randomized ABBA blocks
//! backend = "tcg-icount"             # kvm | tcg | tcg-icount; default: best here
//! # seed = 42                        # fixes the boot order
//! # per_patch = true                 # also each patch against the ones before it
//!
//! [params]
//! mode = "process"
//! nr_task = [1]
//! seconds = 5
//! warmup_seconds = 2
//! perf_stat = false
//! perf_profile = false
//! ```

use std::path::{Path, PathBuf};

use patchperf_common::api::{AskedParams, MAX_RUNS, MIN_RUNS, Setup, git};
use patchperf_common::mbox;
use patchperf_common::protocol::{BaseSource, BootSlot, JobSpec, NrTask, WorkloadParams};
use patchperf_common::run::{MeasurementMode, Side, TaskMode};
use rand::Rng;
use serde::Deserialize;

use crate::Error;
use patchperf_common::digest::sha256_hex;

use crate::kernel::fetch::source::DEFAULT_TARBALL;

/// The base of a job file: a tarball name or path, or a git URL and commit.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum BaseEntry {
    /// `base = "linux-source-6.1"`.
    Tarball(String),
    /// `base = { git = "…", commit = "…" }`.
    Git {
        /// Clone URL (or a local path to a repository).
        git: String,
        /// Commit id, tag or branch.
        commit: String,
    },
}

fn default_base() -> BaseEntry {
    BaseEntry::Tarball(DEFAULT_TARBALL.to_string())
}

fn default_runs() -> u32 {
    3
}

/// `[params]` of a job file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParamsEntry {
    /// `process` or `thread`.
    #[serde(default)]
    pub mode: TaskMode,
    /// Task counts (`1`, `"100%"`).
    #[serde(default = "default_nr_task")]
    pub nr_task: Vec<NrTask>,
    /// Measured seconds per run.
    #[serde(default = "default_seconds")]
    pub seconds: u32,
    /// Warm-up seconds per run.
    #[serde(default = "default_warmup")]
    pub warmup_seconds: u32,
    /// Collect `perf stat` metrics.
    #[serde(default)]
    pub perf_stat: bool,
    /// Collect `perf-profile.*` metrics.
    #[serde(default)]
    pub perf_profile: bool,
}

impl ParamsEntry {
    /// The parameters as a setup asks for them, the run length given.
    fn asked(&self) -> AskedParams {
        AskedParams {
            mode: self.mode,
            nr_task: self.nr_task.clone(),
            seconds: Some(self.seconds),
            warmup_seconds: Some(self.warmup_seconds),
            perf_stat: self.perf_stat,
            perf_profile: self.perf_profile,
        }
    }
}

fn default_nr_task() -> Vec<NrTask> {
    WorkloadParams::default().nr_task
}
fn default_seconds() -> u32 {
    WorkloadParams::default().seconds
}
fn default_warmup() -> u32 {
    WorkloadParams::default().warmup_seconds
}

impl Default for ParamsEntry {
    fn default() -> Self {
        let p = WorkloadParams::default();
        ParamsEntry {
            mode: p.mode,
            nr_task: p.nr_task,
            seconds: p.seconds,
            warmup_seconds: p.warmup_seconds,
            perf_stat: p.perf_stat,
            perf_profile: p.perf_profile,
        }
    }
}

/// A job file as written.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobFile {
    /// The base tree.
    #[serde(default = "default_base")]
    pub base: BaseEntry,
    /// The patch series (mbox), relative to the job file.
    pub patches: PathBuf,
    /// An optional Kconfig fragment for both sides, relative to the job
    /// file (`kconfig`, or `config` as first spelled).
    #[serde(default, alias = "kconfig")]
    pub config: Option<PathBuf>,
    /// Workloads run in every boot.
    pub workloads: Vec<String>,
    /// Boots per side.
    #[serde(default = "default_runs")]
    pub runs: u32,
    /// Boot backend; the best available when absent.
    #[serde(default)]
    pub backend: Option<MeasurementMode>,
    /// Seed of the boot order; random when absent.
    #[serde(default)]
    pub seed: Option<u64>,
    /// Also measure each patch on its own: step k boots patches 1..k-1
    /// against patches 1..k (see [`JobFile::step_specs`]).
    #[serde(default)]
    pub per_patch: bool,
    /// Workload parameters.
    #[serde(default)]
    pub params: ParamsEntry,
}

impl JobFile {
    /// Reads and checks a job file.
    pub fn load(path: &Path) -> Result<JobFile, Error> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::Usage(format!("cannot read job file {}: {e}", path.display())))?;
        let job: JobFile = toml::from_str(&text)
            .map_err(|e| Error::Usage(format!("job file {}: {e}", path.display())))?;
        job.check()
            .map_err(|why| Error::Usage(format!("job file {}: {why}", path.display())))?;
        Ok(job)
    }

    /// What is wrong with the job, said as for its file; the same rules
    /// for a job the command line describes.
    pub fn check(&self) -> Result<(), String> {
        if self.workloads.is_empty() {
            return Err("no workloads".into());
        }
        // The boot order is built in memory: billions of runs would
        // exhaust it before the first boot.
        // As the server takes them: fewer than 3 a side give no interval.
        if !(MIN_RUNS..=MAX_RUNS).contains(&self.runs) {
            return Err(format!(
                "runs is {}; a comparison needs {MIN_RUNS} to {MAX_RUNS} a side",
                self.runs
            ));
        }
        if self.params.nr_task.is_empty() || self.params.seconds == 0 {
            return Err("params need at least one nr_task and one second".into());
        }
        if self.params.nr_task.contains(&NrTask::Count(0)) {
            return Err("a task count must be at least 1".into());
        }
        let known = crate::harness::workload_names();
        for w in &self.workloads {
            if !known.contains(&w.as_str()) {
                return Err(format!(
                    "unknown workload {w:?} (known: {})",
                    known.join(", ")
                ));
            }
        }
        Ok(())
    }

    /// The job as the pipeline runs it, with the series and fragment read
    /// from files next to `path` and boots in a randomized ABBA order.
    pub fn to_spec(&self, path: &Path) -> Result<JobSpec, Error> {
        let dir = path.parent().unwrap_or(Path::new("."));
        let patches = dir.join(&self.patches);
        let mbox = std::fs::read_to_string(&patches).map_err(|e| {
            Error::Usage(format!("cannot read the series {}: {e}", patches.display()))
        })?;
        self.spec_with(dir, mbox, &patches.display().to_string())
    }

    /// The job with the series `mbox` (read from `named`), its other paths
    /// relative to `dir`.
    pub fn spec_with(&self, dir: &Path, mbox: String, named: &str) -> Result<JobSpec, Error> {
        // Read with the server's parser when the file is read, not after a
        // kernel build: an mbox without a patch, or a plain `git diff`
        // (no From: and Subject:), is said at once, as the server says it.
        patchperf_common::mbox::parse(&mbox).map_err(|e| Error::Usage(format!("{named}: {e}")))?;
        let base = match &self.base {
            BaseEntry::Tarball(name) => {
                let p = Path::new(name);
                let name = if p.is_relative() && name.contains('/') {
                    dir.join(p).to_string_lossy().into_owned()
                } else {
                    name.clone()
                };
                BaseSource::Tarball { name }
            }
            BaseEntry::Git { git: url, commit } => {
                let url = local_repository(dir, url)?;
                git::check_url(&url)
                    .map_err(|why| Error::Usage(format!("job file: base git {url:?}: {why}")))?;
                git::check_commit(commit).map_err(|why| {
                    Error::Usage(format!("job file: base commit {commit:?}: {why}"))
                })?;
                BaseSource::Git {
                    url,
                    commit: commit.clone(),
                }
            }
        };
        let mut setup = Setup {
            backend: self.backend,
            ..Setup::new(self.workloads.clone(), self.params.asked(), self.runs)
        };
        if let Some(c) = &self.config {
            let p = dir.join(c);
            let lines = std::fs::read_to_string(&p).map_err(|e| {
                Error::Usage(format!(
                    "cannot read the config fragment {}: {e}",
                    p.display()
                ))
            })?;
            setup.add_kconfig(&lines);
        }
        let seed = self.seed.unwrap_or_else(|| rand::rng().random());
        Ok(setup.local_job(base, mbox, false, abba_order(self.runs, seed)))
    }
}

impl JobFile {
    /// The steps of a per-patch job, for `whole` (its [`JobFile::to_spec`]):
    /// step k boots patches 1..k-1 of the series against patches 1..k, each
    /// in its own ABBA order (from `seed + k` when the file fixes one). A
    /// series of fewer than two patches has none.
    pub fn step_specs(&self, whole: &JobSpec) -> Vec<JobSpec> {
        let prefixes = mbox::prefixes(&whole.mbox);
        if prefixes.len() < 2 {
            return Vec::new();
        }
        let mut base_mbox = String::new();
        let mut steps = Vec::with_capacity(prefixes.len());
        for (k, mbox) in (1u64..).zip(prefixes) {
            let seed = match self.seed {
                Some(s) => s.wrapping_add(k),
                None => rand::rng().random(),
            };
            let sha = |text: &str| {
                if text.is_empty() {
                    String::new()
                } else {
                    sha256_hex(text.as_bytes())
                }
            };
            steps.push(JobSpec {
                patches_sha256: sha(&mbox),
                base_patches_sha256: sha(&base_mbox),
                base_mbox: std::mem::replace(&mut base_mbox, mbox.clone()),
                mbox,
                boots: abba_order(self.runs, seed),
                ..whole.clone()
            });
        }
        steps
    }
}

/// A git base written as a path relative to the job file (`../linux`),
/// made absolute as a clone URL must be; URLs and absolute paths as they are.
fn local_repository(dir: &Path, url: &str) -> Result<String, Error> {
    if url.contains(':') || url.starts_with(['/', '-']) {
        return Ok(url.to_string());
    }
    let path = std::path::absolute(dir.join(url))
        .map_err(|e| Error::io(format!("resolving {url} against {}", dir.display()), e))?;
    Ok(path.to_string_lossy().into_owned())
}

/// `runs` boots of each side in blocks of two, each block base-then-patched
/// or patched-then-base at random (A B B A …), so drift hits both sides alike.
pub fn abba_order(runs: u32, seed: u64) -> Vec<BootSlot> {
    use rand::SeedableRng;
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut boots = Vec::with_capacity(2 * runs as usize);
    for _ in 0..runs {
        let pair = if rng.random::<bool>() {
            [Side::Base, Side::Patched]
        } else {
            [Side::Patched, Side::Base]
        };
        for side in pair {
            boots.push(BootSlot {
                seq: boots.len() as u32,
                side,
            });
        }
    }
    boots
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn abba_blocks_hold_one_boot_of_each_side_and_the_seed_fixes_the_order() {
        let order = abba_order(5, 7);
        assert_eq!(order.len(), 10);
        for (i, pair) in order.chunks(2).enumerate() {
            assert_ne!(pair[0].side, pair[1].side, "block {i}");
            assert_eq!(pair[0].seq as usize, 2 * i);
        }
        assert_eq!(order, abba_order(5, 7));
        // Over many seeds both block orders occur.
        let firsts: std::collections::HashSet<Side> =
            (0..20).map(|s| abba_order(1, s)[0].side).collect();
        assert_eq!(firsts.len(), 2);
    }

    const ONE_PATCH: &str = "From 0 Mon Sep 17 00:00:00 2001\nFrom: A <a@example.org>\n\
                             Subject: [PATCH] fs: y\n\n---\ndiff --git a/f b/f\n--- a/f\n\
                             +++ b/f\n@@ -1 +1,2 @@\n x\n+y\n";

    #[test]
    fn a_job_file_reads_with_defaults_and_files_next_to_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("s.mbox"), ONE_PATCH).unwrap();
        let path = dir.path().join("job.toml");
        std::fs::write(
            &path,
            "patches = \"s.mbox\"\nworkloads = [\"open1\"]\nbackend = \"tcg-icount\"\nseed = 3\n\
             [params]\nnr_task = [1, \"100%\"]\nseconds = 4\n",
        )
        .unwrap();
        let job = JobFile::load(&path).unwrap();
        assert_eq!(job.base, BaseEntry::Tarball("linux-source-6.12".into()));
        assert_eq!(job.runs, 3);
        let spec = job.to_spec(&path).unwrap();
        assert_eq!(
            spec.base,
            BaseSource::Tarball {
                name: "linux-source-6.12".into()
            }
        );
        assert_eq!(spec.mbox, ONE_PATCH);
        assert_eq!(spec.patches_sha256, sha256_hex(ONE_PATCH.as_bytes()));
        assert_eq!(
            spec.params.nr_task,
            [NrTask::Count(1), NrTask::Percent(100)]
        );
        assert_eq!(spec.params.seconds, 4);
        assert_eq!(spec.params.warmup_seconds, 2);
        assert_eq!(spec.backend, Some(MeasurementMode::TcgIcount));
        assert_eq!(spec.boots, abba_order(3, 3));
    }

    #[test]
    fn a_per_patch_job_file_has_one_step_per_patch_chained_by_their_series() {
        let dir = tempfile::tempdir().unwrap();
        let patch = |n: u32| {
            format!(
                "{}From: A <a@example.org>\nSubject: [PATCH {n}/3] f{n}\n\n---\n\
                 --- a/f{n}\n+++ b/f{n}\n@@ -1 +1 @@\n-a\n+b\n\n",
                mbox::SEPARATOR
            )
        };
        let series: String = (1..=3).map(patch).collect();
        std::fs::write(dir.path().join("s.mbox"), &series).unwrap();
        let path = dir.path().join("job.toml");
        std::fs::write(
            &path,
            "patches = \"s.mbox\"\nworkloads = [\"open1\"]\nseed = 3\nper_patch = true\n",
        )
        .unwrap();
        let job = JobFile::load(&path).unwrap();
        assert!(job.per_patch);
        let whole = job.to_spec(&path).unwrap();
        let steps = job.step_specs(&whole);
        assert_eq!(steps.len(), 3);
        assert_eq!(steps[0].base_mbox, "");
        assert_eq!(steps[0].base_patches_sha256, "");
        for pair in steps.windows(2) {
            // Step k's patched kernel is step k+1's base kernel.
            assert_eq!(pair[0].mbox, pair[1].base_mbox);
            assert_eq!(pair[0].patches_sha256, pair[1].base_patches_sha256);
        }
        assert_eq!(steps[2].mbox, series);
        assert_eq!(steps[1].boots, abba_order(3, 5));
        // One patch: nothing to take apart.
        std::fs::write(dir.path().join("s.mbox"), patch(1)).unwrap();
        assert!(job.step_specs(&job.to_spec(&path).unwrap()).is_empty());
    }

    /// Seen while writing `tests/fuzz/jobfile.rs`, which feeds this line:
    /// `runs = 4294967295` was accepted and `to_spec` then built an ABBA
    /// order of 8.6 billion boots in memory (68 GB), aborting the runner.
    #[test]
    fn a_job_file_with_billions_of_runs_is_refused_before_any_boot_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("job.toml");
        std::fs::write(
            &path,
            "patches = \"s\"\nworkloads = [\"open1\"]\nruns = 4294967295\n",
        )
        .unwrap();
        match JobFile::load(&path) {
            Err(Error::Usage(message)) => {
                assert!(
                    message.contains("a comparison needs 3 to 100 a side"),
                    "{message}"
                )
            }
            other => panic!("expected a usage error, got {other:?}"),
        }
    }

    #[test]
    fn git_bases_and_bad_job_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("job.toml");
        std::fs::write(
            &path,
            "base = { git = \"/srv/linux.git\", commit = \"v6.1\" }\npatches = \"s\"\nworkloads = [\"dup1\"]\n",
        )
        .unwrap();
        assert_eq!(
            JobFile::load(&path).unwrap().base,
            BaseEntry::Git {
                git: "/srv/linux.git".into(),
                commit: "v6.1".into()
            }
        );
        std::fs::write(dir.path().join("s"), ONE_PATCH).unwrap();
        for (git, url) in [
            (
                "../linux",
                dir.path().join("../linux").display().to_string(),
            ),
            (
                "git@example.org:linux.git",
                "git@example.org:linux.git".into(),
            ),
        ] {
            std::fs::write(
                &path,
                format!(
                    "base = {{ git = \"{git}\", commit = \"v6.1\" }}\npatches = \"s\"\n\
                     workloads = [\"dup1\"]\n"
                ),
            )
            .unwrap();
            let spec = JobFile::load(&path).unwrap().to_spec(&path).unwrap();
            assert_eq!(
                spec.base,
                BaseSource::Git {
                    url,
                    commit: "v6.1".into()
                }
            );
        }
        for (git, commit) in [
            ("--upload-pack=x", "v6.1"),
            ("/srv/linux.git", "--output=x"),
        ] {
            std::fs::write(
                &path,
                format!(
                    "base = {{ git = \"{git}\", commit = \"{commit}\" }}\npatches = \"s\"\n\
                     workloads = [\"dup1\"]\n"
                ),
            )
            .unwrap();
            let job = JobFile::load(&path).unwrap();
            assert!(
                matches!(job.to_spec(&path), Err(Error::Usage(_))),
                "{git} {commit}"
            );
        }
        for bad in [
            "patches = \"s\"\nworkloads = []\n",
            "patches = \"s\"\nworkloads = [\"nosuch\"]\n",
            "patches = \"s\"\nworkloads = [\"open1\"]\nruns = 0\n",
            "patches = \"s\"\nworkloads = [\"open1\"]\nruns = 2\n",
            "patches = \"s\"\nworkloads = [\"open1\"]\nruns = 101\n",
            "patches = \"s\"\nworkloads = [\"open1\"]\n[params]\nnr_task = [0]\n",
            "patches = \"s\"\nworkloads = [\"open1\"]\nbackend = \"vmware\"\n",
            "patches = \"s\"\nworkloads = [\"open1\"]\ntypo = 1\n",
        ] {
            std::fs::write(&path, bad).unwrap();
            assert!(
                matches!(JobFile::load(&path), Err(Error::Usage(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_series_without_a_patch_or_a_plain_diff_is_refused_when_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("job.toml");
        std::fs::write(&path, "patches = \"s.mbox\"\nworkloads = [\"open1\"]\n").unwrap();
        let said = |series: &str| {
            std::fs::write(dir.path().join("s.mbox"), series).unwrap();
            let job = JobFile::load(&path).unwrap();
            let e = job.to_spec(&path).unwrap_err();
            assert_eq!(e.exit_code(), crate::error::exit::REFUSED, "{e}");
            e.to_string()
        };
        let e = said("From x\nSubject: [PATCH 0/1] a cover letter\n\nno diff\n");
        assert!(e.contains("no patch"), "{e}");
        let e = said("diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1 +1,2 @@\n x\n+y\n");
        assert!(e.contains("s.mbox"), "{e}");
    }
}
