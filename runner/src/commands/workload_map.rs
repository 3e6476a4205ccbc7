//! `patchperf-runner workload-map`: the workload map derived from profiles
//! (`patchperf_common::workload::map` says what it is and how the server
//! uses it).
//!
//! For each base: a kernel built with the benchmark config plus line
//! tables (so its code maps back to source lines; `-g` does not change
//! the code gcc emits), booted once under tcg-icount, every workload run
//! with one task and profiled; the guest keeps each run's samples through
//! the workload's own syscalls (`perf::profile::paths`), and
//! [`crate::kernel::build::code_files`] turns their functions into files. The
//! bases' maps are merged: a file's share is the largest seen, and its
//! line says on which releases it was seen.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use patchperf_common::api::{AskedParams, Setup};
use patchperf_common::protocol::{BaseSource, BootSlot, JobState, NrTask};
use patchperf_common::run::{MeasurementMode, RunResult, Side, TaskMode};
use patchperf_common::workload::map::{Exercised, RunsThrough, WorkloadMap};
use patchperf_common::workload::{self, WORKLOADS};

use crate::Error;
use crate::cli::workload_map::WorkloadMapArgs;
use crate::commands::job::run_job;
use crate::kernel::boot::guest_protocol::{GuestRequest, REQUEST_FILE, paths_file};
use crate::kernel::build::code_files;
use crate::kernel::cache::Cache;
use crate::kernel::pipeline::{self, Events, Pipeline};
use crate::perf::profile::metrics::{MIN_PERCENT, clean_symbol};
use crate::perf::profile::paths::SyscallPaths;

/// What the map's kernels add to the benchmark config: line tables, no
/// type information (DWARF's bulk), so the build stays close in time.
pub const LINE_TABLES: &str = "\
CONFIG_DEBUG_KERNEL=y
CONFIG_DEBUG_INFO_DWARF_TOOLCHAIN_DEFAULT=y
CONFIG_DEBUG_INFO_REDUCED=y
";

/// Runs `patchperf-runner workload-map`.
pub fn run(args: WorkloadMapArgs) -> Result<(), Error> {
    let workloads: Vec<String> = if args.workloads.is_empty() {
        WORKLOADS.iter().map(|w| w.name.to_string()).collect()
    } else {
        for w in &args.workloads {
            if workload::find(w).is_none() {
                return Err(Error::Usage(format!("unknown workload {w:?}")));
            }
        }
        args.workloads.clone()
    };
    let mut pipeline = Pipeline::from_env()?;
    if let Some(cache) = &args.cache {
        pipeline.cache = Cache::at(cache);
    }
    crate::proc::install_interrupt_handler()?;
    let scratch = tempfile::tempdir().map_err(|e| Error::io("a temporary directory", e))?;
    let keep = args
        .keep
        .clone()
        .unwrap_or_else(|| scratch.path().to_path_buf());
    let mut map = WorkloadMap::default();
    map.notes.push(
        "patchperf workload map: the source files each workload's system calls run code from"
            .into(),
    );
    map.notes.push(format!(
        "written by `patchperf-runner workload-map {} --seconds {}`; do not edit by hand",
        args.base
            .iter()
            .map(|b| format!("--base {b}"))
            .collect::<Vec<_>>()
            .join(" "),
        args.seconds
    ));
    for base in &args.base {
        let out = keep.join(base.replace('/', "_"));
        let derived = derive(&pipeline, base, &workloads, args.seconds, &out)?;
        map.notes.push(derived.note.clone());
        merge(&mut map, derived);
    }
    map.notes.push(format!(
        "share: % of the workload's syscall samples through a function holding code of the \
         file (the largest such function); functions under {MIN_PERCENT}% left out"
    ));
    map.sort();
    let (files, functions) = (map.render(), map.render_functions());
    match &args.out {
        Some(dir) => {
            for (name, text) in [("map.tsv", files), ("functions.tsv", functions)] {
                let path = dir.join(name);
                std::fs::write(&path, text)
                    .map_err(|e| Error::io(format!("writing {}", path.display()), e))?;
            }
        }
        None => print!("{files}\n{functions}"),
    }
    Ok(())
}

/// One base's map.
struct Derived {
    release: String,
    note: String,
    /// (workload, file) → share in %.
    shares: BTreeMap<(String, String), f64>,
    /// (workload, function as 0-day names it) → share in %, its files.
    functions: BTreeMap<(String, String), (f64, BTreeSet<String>)>,
}

fn derive(
    pipeline: &Pipeline,
    base: &str,
    workloads: &[String],
    seconds: u32,
    out: &Path,
) -> Result<Derived, Error> {
    let mut setup = Setup {
        backend: Some(MeasurementMode::TcgIcount),
        ..Setup::new(
            workloads.to_vec(),
            AskedParams {
                mode: TaskMode::Process,
                nr_task: vec![NrTask::Count(1)],
                seconds: Some(seconds),
                warmup_seconds: Some(1),
                perf_stat: false,
                perf_profile: true,
            },
            1,
        )
    };
    setup.add_kconfig(LINE_TABLES);
    let boot = BootSlot {
        seq: 0,
        side: Side::Base,
    };
    let tarball = BaseSource::Tarball { name: base.into() };
    let spec = setup.local_job(tarball, String::new(), true, vec![boot]);
    let guest = out.join("guest");
    let pipeline = Pipeline {
        workload_paths: Some(guest.clone()),
        ..pipeline.clone()
    };
    if guest.join("boot-0").join(paths_file(0)).is_file() {
        eprintln!("{base}: mapping the samples kept in {}", out.display());
    } else {
        eprintln!(
            "{base}: building with line tables, booting, profiling {} workloads",
            workloads.len()
        );
        run_job(&pipeline, &spec, out)?;
    }
    let results = read_results(&out.join("base"))?;
    let release = results
        .iter()
        .find_map(|r| r.kernel.as_ref().map(|k| k.release.clone()))
        .ok_or_else(|| Error::Bench(format!("{base}: the guest reported no kernel release")))?;
    let mut paths = read_paths(&guest.join("boot-0"))?;
    paths.retain(|w, _| workloads.contains(w));
    if let Some(missing) = workloads.iter().find(|w| !paths.contains_key(*w)) {
        return Err(Error::Usage(format!(
            "{base}: the boot kept in {} ran no {missing}; remove it to boot again",
            out.display()
        )));
    }

    let lock = pipeline.cache.lock()?;
    let setup = pipeline::prepare::fetch(&lock, &spec, &mut Quiet).map_err(|f| Error::Job {
        reason: f.reason.as_str().to_string(),
        detail: format!("{base}: {}", f.detail),
        log_tail: f.log_tail,
    })?;
    // The kernel the samples were taken on, kept beside them: a later
    // fragment (another cache key) builds another kernel.
    let vmlinux = out.join("vmlinux");
    if !vmlinux.is_file() {
        let built = pipeline::prepare::base_build_dir(&lock, &setup).join("vmlinux");
        std::fs::hard_link(&built, &vmlinux)
            .or_else(|_| std::fs::copy(&built, &vmlinux).map(drop))
            .map_err(|e| Error::io(format!("keeping {}", built.display()), e))?;
    }
    eprintln!("{base}: reading {}", vmlinux.display());
    let symbols = code_files::text_symbols(&vmlinux)?;

    let mut shares = BTreeMap::new();
    let mut by_function: BTreeMap<(String, String), (f64, BTreeSet<String>)> = BTreeMap::new();
    for (workload, paths) in &paths {
        if paths.through == 0 {
            return Err(Error::Bench(format!(
                "{base}: no sample of {workload}'s tasks in a system call ({} samples in all)",
                paths.samples
            )));
        }
        let function_share = |count: u64| count as f64 / paths.through as f64 * 100.0;
        let functions: Vec<&str> = paths
            .functions
            .iter()
            .filter(|(_, n)| function_share(**n) >= MIN_PERCENT)
            .map(|(f, _)| f.as_str())
            .collect();
        let files = code_files::files_of(&vmlinux, &setup.pristine.dir, &symbols, &functions)?;
        let found: BTreeSet<&String> = files.values().flatten().collect();
        eprintln!(
            "{base}: {workload}: {} of {} samples in its system calls, {} functions over \
             {MIN_PERCENT}%, {} files",
            paths.through,
            paths.samples,
            functions.len(),
            found.len()
        );
        for (function, files) in files {
            let share = function_share(paths.functions[&function]);
            // `do_sys_poll.isra.0` is `do_sys_poll` to a hunk header.
            let named = by_function
                .entry((workload.clone(), clean_symbol(&function)))
                .or_insert((0.0, BTreeSet::new()));
            named.0 = named.0.max(share);
            named.1.extend(files.iter().cloned());
            for file in files {
                let entry = shares.entry((workload.clone(), file)).or_insert(0.0);
                *entry = f64::max(*entry, share);
            }
        }
    }
    drop(lock);
    let note = format!(
        "{base}: {release}, tcg-icount, 1 task, {seconds} s after 1 s, perf cpu-clock at the 250 Hz tick, \
         kernel with line tables ({})",
        LINE_TABLES.trim().replace('\n', " ")
    );
    Ok(Derived {
        release,
        note,
        shares,
        functions: by_function,
    })
}

/// Adds one base's map to `map`.
fn merge(map: &mut WorkloadMap, derived: Derived) {
    for ((workload, function), (share, files)) in derived.functions {
        // Functions of no file of the tree (assembly without line tables)
        // name nothing a patch could touch.
        if files.is_empty() {
            continue;
        }
        let rounded = (share * 100.0).round() / 100.0;
        match map
            .functions
            .iter_mut()
            .find(|f| f.workload == workload && f.function == function)
        {
            Some(f) => {
                f.share = f.share.max(rounded);
                for file in files {
                    if !f.files.contains(&file) {
                        f.files.push(file);
                    }
                }
                f.files.sort();
                f.seen_on.push(derived.release.clone());
            }
            None => map.functions.push(RunsThrough {
                workload,
                function,
                files: files.into_iter().collect(),
                share: rounded,
                seen_on: vec![derived.release.clone()],
            }),
        }
    }
    for ((workload, file), share) in derived.shares {
        let rounded = (share * 100.0).round() / 100.0;
        match map
            .entries
            .iter_mut()
            .find(|e| e.workload == workload && e.file == file)
        {
            Some(e) => {
                e.share = e.share.max(rounded);
                e.seen_on.push(derived.release.clone());
            }
            None => map.entries.push(Exercised {
                workload,
                file,
                share: rounded,
                seen_on: vec![derived.release.clone()],
            }),
        }
    }
}

fn read_results(dir: &Path) -> Result<Vec<RunResult>, Error> {
    let mut out = Vec::new();
    for entry in
        std::fs::read_dir(dir).map_err(|e| Error::io(format!("reading {}", dir.display()), e))?
    {
        let path = entry.map_err(|e| Error::io("a results entry", e))?.path();
        let text = std::fs::read_to_string(&path)
            .map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
        out.push(serde_json::from_str(&text).map_err(Error::json)?);
    }
    Ok(out)
}

/// Each workload's syscall paths, from a kept boot's files: the request
/// says which run was which.
fn read_paths(boot: &Path) -> Result<BTreeMap<String, SyscallPaths>, Error> {
    let read = |name: &str| {
        let path: PathBuf = boot.join(name);
        std::fs::read_to_string(&path)
            .map_err(|e| Error::io(format!("reading {}", path.display()), e))
    };
    let request: GuestRequest = serde_json::from_str(&read(REQUEST_FILE)?).map_err(Error::json)?;
    let mut out = BTreeMap::new();
    let mut missing = BTreeSet::new();
    for (i, run) in request.runs.iter().enumerate() {
        match read(&paths_file(i)) {
            Ok(text) => {
                let paths: SyscallPaths = serde_json::from_str(&text).map_err(Error::json)?;
                out.insert(run.workload.clone(), paths);
            }
            Err(_) => {
                missing.insert(run.workload.clone());
            }
        }
    }
    if !missing.is_empty() {
        return Err(Error::Bench(format!(
            "no syscall paths for {}: did perf record run in the guest?",
            missing.into_iter().collect::<Vec<_>>().join(", ")
        )));
    }
    Ok(out)
}

/// Progress of a step that was already done (the fetch of a cached base).
struct Quiet;

impl Events for Quiet {
    fn state(&mut self, _: JobState, _: &str) {}
    fn line(&mut self, _: &str) {}
    fn result(&mut self, _: BootSlot, _: RunResult) -> Result<(), Error> {
        Ok(())
    }
    fn cancelled(&self) -> bool {
        crate::proc::interrupted()
    }
}
