//! `patchperf-runner guest`: the init process of a benchmark guest. It
//! mounts what the workloads need (the root is the host's, read-only over
//! 9p), does the runs the host asked for, writes each result to the `out`
//! share and powers off. As PID 1 it must never exit (the kernel would
//! panic): every failure is written to the console and the report, and the
//! guest powers off all the same.

use std::path::{Path, PathBuf};

use nix::mount::{MsFlags, mount};
use patchperf_common::run::RunResult;

use crate::Error;
use crate::cli::guest::GuestArgs;
use crate::harness::{self, BenchConfig};
use crate::kernel::boot::guest_protocol::{
    DONE_MARKER, GUEST_OUT, GUEST_TMP, GuestReport, GuestRequest, GuestRun, OUT_TAG, REPORT_FILE,
    REQUEST_FILE, RUN_MARKER, UP_MARKER, paths_file, run_file,
};
use crate::perf::{self, PathsRequest, PerfOptions, PerfTool};

/// Runs `patchperf-runner guest`.
pub fn run(args: GuestArgs) -> Result<(), Error> {
    if let Some(dir) = args.kexec_out {
        println!("{UP_MARKER}");
        let outcome = std::panic::catch_unwind(|| mount_local().and_then(|()| drive(&dir)));
        report_outcome(outcome);
        nix::unistd::sync();
        let err = nix::sys::reboot::reboot(nix::sys::reboot::RebootMode::RB_AUTOBOOT);
        println!("patchperf-guest: reboot failed: {err:?}");
        power_off();
    }
    match args.out_dir {
        Some(dir) => drive(&dir),
        None => {
            // Output from here on is the guest's console, which the host
            // captures; say we are up before anything can go wrong.
            println!("{UP_MARKER}");
            let outcome = std::panic::catch_unwind(|| {
                mount_local()?;
                mount_out_share()?;
                drive(Path::new(GUEST_OUT))
            });
            report_outcome(outcome);
            power_off()
        }
    }
}

fn report_outcome(outcome: std::thread::Result<Result<(), Error>>) {
    match outcome {
        Ok(Ok(())) => {}
        Ok(Err(e)) => println!("patchperf-guest: error: {e}"),
        Err(_) => println!("patchperf-guest: error: the guest driver panicked"),
    }
}

/// Mounts proc, sys, devtmpfs and the tmpfs.
pub(crate) fn mount_local() -> Result<(), Error> {
    let mounts: [(&str, &str, &str, Option<&str>); 4] = [
        ("proc", "/proc", "proc", None),
        ("sysfs", "/sys", "sysfs", None),
        ("devtmpfs", "/dev", "devtmpfs", None),
        ("tmpfs", GUEST_TMP, "tmpfs", Some("mode=1777")),
    ];
    for (source, target, fstype, data) in mounts {
        mount(Some(source), target, Some(fstype), MsFlags::empty(), data)
            .map_err(|e| Error::io(format!("mounting {fstype} on {target}"), e.into()))?;
    }
    Ok(())
}

/// Mounts the `out` share of a QEMU guest.
fn mount_out_share() -> Result<(), Error> {
    std::fs::create_dir_all(GUEST_OUT)
        .map_err(|e| Error::io(format!("creating {GUEST_OUT}"), e))?;
    mount(
        Some(OUT_TAG),
        GUEST_OUT,
        Some("9p"),
        MsFlags::empty(),
        Some("trans=virtio,version=9p2000.L,msize=262144"),
    )
    .map_err(|e| {
        Error::io(
            format!("mounting the {OUT_TAG} share on {GUEST_OUT}"),
            e.into(),
        )
    })?;
    Ok(())
}

/// Does the runs of `out/request.json`, writing results and the report into
/// `out`.
fn drive(out: &Path) -> Result<(), Error> {
    let path = out.join(REQUEST_FILE);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
    let request: GuestRequest = serde_json::from_str(&text).map_err(Error::json)?;
    let uts = nix::sys::utsname::uname().map_err(|e| Error::io("uname", e.into()))?;
    let mut report = GuestReport {
        release: uts.release().to_string_lossy().into_owned(),
        version: uts.version().to_string_lossy().into_owned(),
        nr_cpu: std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
        ..GuestReport::default()
    };
    write_json(&out.join(REPORT_FILE), &report)?;
    let scratch = PathBuf::from(GUEST_TMP);
    let total = request.runs.len();
    for (i, run) in request.runs.iter().enumerate() {
        println!("{RUN_MARKER}{}/{total} {}", i + 1, run.workload);
        let paths = request.syscall_paths.then(|| out.join(paths_file(i)));
        match one_run(run, &request, report.nr_cpu, &scratch, paths) {
            Ok(result) => {
                let name = run_file(i);
                write_json(&out.join(&name), &result)?;
                report.results.push(name);
            }
            Err(e) => {
                println!("patchperf-guest: run {} failed: {e}", i + 1);
                report
                    .errors
                    .push(format!("run {} ({}): {e}", i + 1, run.workload));
            }
        }
        write_json(&out.join(REPORT_FILE), &report)?;
    }
    report.finished = true;
    write_json(&out.join(REPORT_FILE), &report)?;
    println!("{DONE_MARKER}");
    Ok(())
}

fn one_run(
    run: &GuestRun,
    request: &GuestRequest,
    nr_cpu: u32,
    scratch: &Path,
    paths: Option<PathBuf>,
) -> Result<RunResult, Error> {
    let mut config = BenchConfig::new(run.workload.clone(), run.nr_task.resolve(nr_cpu));
    let params = &request.params;
    config.mode = params.mode;
    config.seconds = params.seconds;
    config.warmup = params.warmup_seconds;
    config.scratch = Some(scratch.to_path_buf());
    config.measurement = request.measurement;
    config.validate()?;
    let tools: Vec<PerfTool> = [
        (params.perf_stat, PerfTool::Stat),
        (params.perf_profile, PerfTool::Profile),
    ]
    .into_iter()
    .filter_map(|(wanted, tool)| wanted.then_some(tool))
    .collect();
    // The guest's root is read-only; perf keeps its data on the tmpfs.
    let options = PerfOptions {
        work_dir: scratch.to_path_buf(),
        syscall_paths: paths.map(|out| PathsRequest {
            workload: run.workload.clone(),
            out,
        }),
        ..PerfOptions::default()
    };
    let perf = perf::setup(&tools, &options);
    let mut collectors = perf.collectors;
    let mut result = harness::run(&config, &mut collectors)?;
    result.warnings.splice(0..0, perf.warnings);
    Ok(result)
}

fn write_json<T: serde::Serialize>(path: &Path, value: &T) -> Result<(), Error> {
    let text = serde_json::to_string_pretty(value).map_err(Error::json)?;
    // Written whole and renamed, so the host never reads half a file.
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).map_err(|e| Error::io(format!("writing {}", tmp.display()), e))?;
    std::fs::rename(&tmp, path).map_err(|e| Error::io(format!("writing {}", path.display()), e))
}

/// Flushes and powers the guest off (QEMU exits); never returns.
pub(crate) fn power_off() -> ! {
    nix::unistd::sync();
    let err = nix::sys::reboot::reboot(nix::sys::reboot::RebootMode::RB_POWER_OFF);
    println!("patchperf-guest: power off failed: {err:?}");
    loop {
        std::thread::sleep(std::time::Duration::from_secs(3600));
    }
}
