//! One start of the agent in a kexec job after another ([`super::kexec_step`]),
//! with dry-run kexec: the whole cycle without rebooting anything.

use super::*;
use crate::kernel::boot::guest_protocol::{GuestReport, REPORT_FILE, run_file};
use crate::kernel::cache::Cache;
use patchperf_common::run::{MetricValue, RunResult, TaskMode};

#[derive(Default)]
struct Rec {
    results: Vec<(BootSlot, RunResult)>,
}
impl Events for Rec {
    fn state(&mut self, _: JobState, _: &str) {}
    fn line(&mut self, _: &str) {}
    fn result(&mut self, boot: BootSlot, result: RunResult) -> Result<(), Error> {
        self.results.push((boot, result));
        Ok(())
    }
    fn cancelled(&self) -> bool {
        false
    }
}

fn kernel(dir: &Path, key: &str) -> BuiltKernel {
    let kdir = dir.join("kernels").join(key);
    std::fs::create_dir_all(&kdir).unwrap();
    std::fs::write(kdir.join("bzImage"), "not really a kernel").unwrap();
    BuiltKernel {
        key: key.repeat(16),
        source: "linux-source-6.1 sha256:ab".into(),
        patches_sha256: (key == "p").then(|| "5e7".to_string()),
        patches: (key == "p").then_some(1),
        config_sha256: "cf".into(),
        compiler: "gcc 12".into(),
        build_seconds: 600.0,
        image_bytes: 19,
        dir: kdir,
    }
}

/// [`tests::job`](super::tests::job) as the kexec backend runs it, the
/// base kernel first.
fn job() -> JobSpec {
    JobSpec {
        backend: Some(MeasurementMode::Kexec),
        boots: vec![
            BootSlot {
                seq: 0,
                side: Side::Base,
            },
            BootSlot {
                seq: 1,
                side: Side::Patched,
            },
        ],
        ..super::tests::job()
    }
}

/// A pipeline caching under `dir` whose kexec state holds [`job`] with
/// both kernels built, as a start before the first kexec finds it.
fn kexec_job_saved(dir: &Path) -> (Pipeline, PathBuf) {
    let pipeline = Pipeline {
        cache: Cache::at(dir.join("cache")),
        runner: PathBuf::from("/usr/bin/patchperf-runner"),
        boot_limit: None,
        run_limit: None,
        extra_cmdline: vec![],
        parallel: 1,
        host: Default::default(),
        workload_paths: None,
    };
    let kexec_dir = dir.join("cache/kexec");
    KexecState::new(job(), &kernel(dir, "b"), &kernel(dir, "p"))
        .save(&kexec_dir)
        .unwrap();
    (pipeline, kexec_dir)
}

/// What the kexec'd kernel's init leaves in its directory.
fn guest_writes(dir: &Path, version: &str) {
    let result = RunResult {
        workload: "open1".into(),
        mode: TaskMode::Process,
        nr_task: 1,
        warmup_seconds: 1,
        seconds: 5,
        measurement: MeasurementMode::Kexec,
        kernel: None,
        samples: vec![],
        metrics: vec![MetricValue {
            name: "will-it-scale.per_process_ops".into(),
            value: 1000.0,
        }],
        series: vec![],
        unsupported: vec![],
        profile_event: None,
        warnings: vec![],
    };
    std::fs::write(
        dir.join(run_file(0)),
        serde_json::to_string(&result).unwrap(),
    )
    .unwrap();
    let report = GuestReport {
        release: "6.1.192".into(),
        version: version.into(),
        nr_cpu: 8,
        results: vec![run_file(0)],
        errors: vec![],
        finished: true,
    };
    std::fs::write(
        dir.join(REPORT_FILE),
        serde_json::to_string(&report).unwrap(),
    )
    .unwrap();
}

#[test]
fn a_kexec_job_boots_collects_and_resumes_across_simulated_reboots() {
    let tmp = tempfile::tempdir().unwrap();
    let (pipeline, kexec_dir) = kexec_job_saved(tmp.path());
    let (base, patched) = (kernel(tmp.path(), "b"), kernel(tmp.path(), "p"));
    let cmdline = "BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro";
    let mut rec = Rec::default();

    // Start 1: kexec into the base kernel.
    let mut k = Kexec::dry_run();
    assert_eq!(
        kexec_step(&pipeline, &job(), cmdline, &mut k, &mut rec),
        Ok(KexecProgress::Rebooting)
    );
    let boot0 = boot_dir(&kexec_dir, 0);
    assert!(boot0.join(REQUEST_FILE).is_file());
    let log = k.dry_run.take().unwrap();
    assert_eq!(
        log[0],
        format!(
            "kexec -l {} \"--command-line=root=/dev/sda1 rw panic=10 init=/usr/bin/patchperf-runner -- guest --kexec-out {}\"",
            base.image().display(),
            boot0.display()
        )
    );
    assert_eq!(log[1], "kexec -e");
    guest_writes(&boot0, "#bbbbbbbbbbbb SMP");

    // Start 2 (after the reboot): collect boot 0, kexec into patched.
    let mut k = Kexec::dry_run();
    assert_eq!(
        kexec_step(&pipeline, &job(), cmdline, &mut k, &mut rec),
        Ok(KexecProgress::Rebooting)
    );
    assert!(k.dry_run.unwrap()[0].contains(&patched.image().display().to_string()));
    assert_eq!(rec.results.len(), 1);
    guest_writes(&boot_dir(&kexec_dir, 1), "#pppppppppppp SMP");

    // Start 3: collect boot 1 and finish.
    let mut k = Kexec::dry_run();
    assert_eq!(
        kexec_step(&pipeline, &job(), cmdline, &mut k, &mut rec),
        Ok(KexecProgress::Finished)
    );
    assert!(k.dry_run.unwrap().is_empty());
    let sides: Vec<Side> = rec.results.iter().map(|(s, _)| s.side).collect();
    assert_eq!(sides, [Side::Base, Side::Patched]);
    let (_, r) = &rec.results[1];
    assert_eq!(r.measurement, MeasurementMode::Kexec);
    let id = r.kernel.as_ref().unwrap();
    assert_eq!(id.patches_sha256.as_deref(), Some("5e7"));
    assert_eq!(id.version, "#pppppppppppp SMP");
    assert_eq!(KexecState::load(&kexec_dir).unwrap(), None);
}

#[test]
fn a_kexec_boot_that_left_nothing_fails_the_job_as_no_results() {
    let tmp = tempfile::tempdir().unwrap();
    let (pipeline, kexec_dir) = kexec_job_saved(tmp.path());
    let mut rec = Rec::default();
    let mut k = Kexec::dry_run();
    kexec_step(&pipeline, &job(), "root=/dev/sda1", &mut k, &mut rec).unwrap();
    // The kernel panicked and the machine came back: nothing written.
    let failure = kexec_step(&pipeline, &job(), "root=/dev/sda1", &mut k, &mut rec).unwrap_err();
    assert_eq!(failure.reason, FailureReason::NoResults);
    assert!(failure.detail.contains("boot 1"), "{}", failure.detail);
    assert_eq!(KexecState::load(&kexec_dir).unwrap(), None);
}
