//! The kexec job's state as it is kept on disk across reboots (boot,
//! collect, boot, collect; a failure kept), and the kernel command line
//! that runs the guest on the machine's own root.

use super::*;
use patchperf_common::protocol::{BaseSource, NrTask, WorkloadParams};
use patchperf_common::run::TaskMode;

fn kernel(key: &str) -> BuiltKernel {
    BuiltKernel {
        key: key.into(),
        source: "linux-source-6.1 sha256:ab".into(),
        patches_sha256: None,
        patches: None,
        config_sha256: "cf".into(),
        compiler: "gcc 12".into(),
        build_seconds: 600.0,
        image_bytes: 1_000_000,
        dir: PathBuf::from(format!("/c/kernels/{key}")),
    }
}

pub(super) fn job() -> JobSpec {
    JobSpec {
        job_id: 7,
        comparison_id: 3,
        attempt: 1,
        lease_seconds: 600,
        base: BaseSource::Tarball {
            name: "linux-source-6.1".into(),
        },
        mbox: String::new(),
        aa: false,
        patches_sha256: String::new(),
        base_mbox: String::new(),
        base_patches_sha256: String::new(),
        config_fragment: None,
        workloads: vec!["open1".into()],
        params: WorkloadParams {
            mode: TaskMode::Process,
            nr_task: vec![NrTask::Count(1)],
            seconds: 5,
            warmup_seconds: 2,
            perf_stat: false,
            perf_profile: false,
        },
        backend: None,
        boots: vec![
            BootSlot {
                seq: 0,
                side: Side::Patched,
            },
            BootSlot {
                seq: 1,
                side: Side::Base,
            },
        ],
    }
}

#[test]
fn a_job_walks_boot_collect_boot_collect_across_reboots() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = KexecState::new(job(), &kernel("aaaa"), &kernel("bbbb"));
    let mut seen = Vec::new();
    // Each loop turn is one start of the agent: load, act, save.
    s.save(dir.path()).unwrap();
    loop {
        let mut s2 = KexecState::load(dir.path()).unwrap().unwrap();
        let action = s2.action();
        seen.push(action.clone());
        match action {
            Action::Boot(..) => s2.booting(),
            Action::Collect(..) => s2.collected(),
            Action::Finished | Action::Failed(..) => break,
        }
        s2.save(dir.path()).unwrap();
        s = s2;
    }
    let p = BootSlot {
        seq: 0,
        side: Side::Patched,
    };
    let b = BootSlot {
        seq: 1,
        side: Side::Base,
    };
    assert_eq!(
        seen,
        [
            Action::Boot(0, p),
            Action::Collect(0, p),
            Action::Boot(1, b),
            Action::Collect(1, b),
            Action::Finished
        ]
    );
    assert_eq!(s.phase, Phase::Done);
    assert_eq!(
        s.kernel(Side::Patched).image(),
        Path::new("/c/kernels/bbbb/bzImage")
    );
    KexecState::clear(dir.path()).unwrap();
    assert_eq!(KexecState::load(dir.path()).unwrap(), None);
}

#[test]
fn a_failure_survives_the_reboot() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = KexecState::new(job(), &kernel("aaaa"), &kernel("bbbb"));
    s.booting();
    s.fail(FailureReason::NoResults, "boot 1 wrote no results");
    s.save(dir.path()).unwrap();
    let back = KexecState::load(dir.path()).unwrap().unwrap();
    assert_eq!(
        back.action(),
        Action::Failed(FailureReason::NoResults, "boot 1 wrote no results".into())
    );
}

#[test]
fn the_kexec_command_line_keeps_the_machines_root_and_runs_the_guest() {
    let current =
        "BOOT_IMAGE=/boot/vmlinuz-6.1.0-13-amd64 root=UUID=1234 ro quiet console=ttyS0,115200";
    let line = kernel_cmdline(
        current,
        Path::new("/usr/bin/patchperf-runner"),
        Path::new("/var/cache/patchperf/kexec/boot-000"),
    );
    assert_eq!(
        line,
        "root=UUID=1234 console=ttyS0,115200 rw panic=10 init=/usr/bin/patchperf-runner \
         -- guest --kexec-out /var/cache/patchperf/kexec/boot-000"
    );
    let mut k = Kexec::dry_run();
    k.boot(Path::new("/c/kernels/bbbb/bzImage"), &line).unwrap();
    assert_eq!(
        k.dry_run.unwrap(),
        [
            format!("kexec -l /c/kernels/bbbb/bzImage \"--command-line={line}\""),
            "kexec -e".to_string()
        ]
    );
}
