//! What the kernel tests (`kernel.rs`, `commits.rs`) share: the one test
//! cache they take turns on (`exclusive`), why they skip, the pipeline on
//! that cache, a job on Debian's tarball, a recorder of what the pipeline
//! reports, the check that a job left nothing behind, and `runner agent`
//! run against a real server until its queue is empty.

// Each test binary uses a different part of this module.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use patchperf_common::digest::sha256_hex;
use patchperf_common::protocol::{
    BaseSource, BootSlot, FinishRequest, JobSpec, JobState, NrTask, WorkloadParams,
};
use patchperf_common::run::{KernelIdentity, MeasurementMode, RunResult, Side, TaskMode};
use patchperf_runner::Error;
use patchperf_runner::agent::backoff::Backoff;
use patchperf_runner::agent::beside::Turn;
use patchperf_runner::agent::client::Client;
use patchperf_runner::agent::inventory;
use patchperf_runner::agent::pipeline_executor::KernelExecutor;
use patchperf_runner::agent::worker::{Agent, AgentOptions};
use patchperf_runner::kernel::cache::Cache;
use patchperf_runner::kernel::pipeline::failure::JobFailure;
use patchperf_runner::kernel::pipeline::{self, Events, Pipeline};
pub use patchperf_testkit::test_cache::cache_dir;

/// One test at a time: they share the cache and the machine's two cores.
static SERIAL: Mutex<()> = Mutex::new(());

/// The test cache to one test at a time, in this process (the mutex) and
/// across processes sharing the cache (an flock held for the whole test,
/// so no other test's scratch trees or QEMU show up as our leftovers).
pub struct Exclusive {
    _lock: nix::fcntl::Flock<std::fs::File>,
    _serial: MutexGuard<'static, ()>,
}

pub fn exclusive() -> Exclusive {
    let serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = cache_dir();
    std::fs::create_dir_all(&dir).unwrap();
    let file = std::fs::File::create(dir.join("test.lock")).unwrap();
    let lock = nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive)
        .map_err(|(_, e)| e)
        .unwrap();
    Exclusive {
        _lock: lock,
        _serial: serial,
    }
}

/// Why the kernel tests cannot run here (they skip), or `None`.
pub fn tools_missing() -> Option<String> {
    if !Path::new("/usr/src/linux-source-6.1.tar.xz").is_file() {
        return Some(
            "/usr/src/linux-source-6.1.tar.xz missing (apt-get install linux-source-6.1)".into(),
        );
    }
    for tool in ["qemu-system-x86_64", "make", "gcc", "patch", "git"] {
        let found = std::env::var_os("PATH")
            .map(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
            .unwrap_or(false);
        if !found {
            return Some(format!("{tool} not installed"));
        }
    }
    None
}

/// Returns from the test, saying why, where [`tools_missing`] says so.
macro_rules! skip_without_tools {
    () => {
        if let Some(why) = $crate::kernel_support::tools_missing() {
            eprintln!("SKIPPED: {why}");
            return;
        }
    };
}
pub(crate) use skip_without_tools;

/// The kernel pipeline on the shared test cache, with this build's runner
/// as the guest's init, and tcg-icount guests two at a time (the test
/// command's kernel tests hold the cache one at a time, so the host's
/// two CPUs are theirs).
pub fn pipeline() -> Pipeline {
    Pipeline {
        cache: Cache::at(cache_dir()),
        runner: PathBuf::from(env!("CARGO_BIN_EXE_patchperf-runner")),
        boot_limit: None,
        run_limit: None,
        extra_cmdline: Vec::new(),
        parallel: 2,
        host: Default::default(),
        workload_paths: None,
    }
}

/// A job on Debian's tarball measuring `workload` for `seconds` with
/// `mbox` on the patched side, one boot per entry of `boots`.
pub fn job(mbox: &str, workload: &str, seconds: u32, boots: &[Side]) -> JobSpec {
    JobSpec {
        job_id: 1,
        comparison_id: 1,
        attempt: 1,
        lease_seconds: 600,
        base: BaseSource::Tarball {
            name: "linux-source-6.1".into(),
        },
        mbox: mbox.to_string(),
        aa: false,
        patches_sha256: sha256_hex(mbox.as_bytes()),
        base_mbox: String::new(),
        base_patches_sha256: String::new(),
        config_fragment: None,
        workloads: vec![workload.to_string()],
        params: WorkloadParams {
            mode: TaskMode::Process,
            nr_task: vec![NrTask::Count(1)],
            seconds,
            warmup_seconds: 1,
            perf_stat: false,
            perf_profile: false,
        },
        backend: Some(MeasurementMode::TcgIcount),
        boots: boots
            .iter()
            .enumerate()
            .map(|(i, side)| BootSlot {
                seq: i as u32,
                side: *side,
            })
            .collect(),
    }
}

/// Records what the pipeline reports; prints each state with the seconds
/// since the first.
#[derive(Default)]
pub struct Recorder {
    pub states: Vec<(JobState, String)>,
    pub results: Vec<(BootSlot, RunResult)>,
    started: Option<Instant>,
}

impl Recorder {
    /// The kernel the first run of `side` ran on.
    pub fn kernel(&self, side: Side) -> KernelIdentity {
        self.results
            .iter()
            .find(|(b, _)| b.side == side)
            .and_then(|(_, r)| r.kernel.clone())
            .unwrap_or_else(|| panic!("no {} run with a kernel", side.as_str()))
    }
}

impl Events for Recorder {
    fn state(&mut self, state: JobState, message: &str) {
        let started = *self.started.get_or_insert_with(Instant::now);
        eprintln!(
            "[{:>4.0} s] {}: {message}",
            started.elapsed().as_secs_f64(),
            state.as_str()
        );
        self.states.push((state, message.to_string()));
    }
    fn line(&mut self, line: &str) {
        if line.contains("patchperf-guest") || line.contains("error") || line.contains("panic") {
            eprintln!("    {line}");
        }
    }
    fn result(&mut self, boot: BootSlot, result: RunResult) -> Result<(), Error> {
        self.results.push((boot, result));
        Ok(())
    }
    fn cancelled(&self) -> bool {
        false
    }
}

/// No scratch tree, no mount and no process of ours (QEMU's command line
/// names its out share under the cache's `work/`) is left.
pub fn assert_no_leftovers() {
    let work = cache_dir().join("work");
    let left: Vec<_> = std::fs::read_dir(&work)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "scratch trees left behind: {left:?}");
    let cache = cache_dir().to_string_lossy().into_owned();
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(
        !mounts.contains(&cache),
        "a mount under the cache is left:\n{mounts}"
    );
    let cache = work.to_string_lossy().into_owned();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        assert!(
            !(cmdline.contains("qemu-system") && cmdline.contains(&cache)),
            "QEMU left running: {cmdline}"
        );
    }
}

/// Runs `job` through the whole pipeline, recording what it reports.
pub fn run(pipeline: &Pipeline, job: &JobSpec) -> (Recorder, Result<(), JobFailure>) {
    let mut rec = Recorder::default();
    let outcome = pipeline::execute(pipeline, job, &mut rec);
    (rec, outcome)
}

/// `runner agent` as its command runs it on a tcg-icount machine with
/// `--parallel 2`: claims jobs from the server at `url` as the runner whose
/// token is `runner`, holding up to two (of different comparisons) at once,
/// and runs each with the kernel executor, until the queue is empty; what
/// each job finished with, in the order they ended. Runs blocking (call it
/// on the blocking pool, the server keeps answering on its runtime
/// meanwhile).
pub fn run_agent_until_idle(url: &str, runner: &str, name: &str) -> Vec<FinishRequest> {
    run_agent_while(url, runner, name, || false)
}

/// [`run_agent_until_idle`], but an empty queue ends it only once
/// `more_to_come` says no more work is coming (a bisection queues its next
/// probe after the last one settled).
pub fn run_agent_while(
    url: &str,
    runner: &str,
    name: &str,
    mut more_to_come: impl FnMut() -> bool,
) -> Vec<FinishRequest> {
    let spool = tempfile::tempdir().unwrap();
    let options = AgentOptions {
        name: name.into(),
        spool_dir: spool.path().to_path_buf(),
        wait_seconds: 1,
        backoff: Backoff::default(),
        idle_retry: Duration::from_millis(100),
        jobs: 2,
    };
    let mut agent = Agent::new(Client::new(url, runner), options, inventory::collect()).unwrap();
    let executor = KernelExecutor {
        pipeline: pipeline(),
    };
    let mut finishes = Vec::new();
    agent
        .run_beside(&executor, |turn| match turn {
            Turn::Ended { finish, .. } => {
                finishes.push(finish.clone());
                false
            }
            Turn::Idle { in_hand } => in_hand == 0 && !more_to_come(),
            Turn::ServerDown(why) => panic!("server down: {why}"),
            Turn::Held(state) => panic!("the server holds the machine: {state}"),
        })
        .unwrap();
    finishes
}

/// `GET <path>` of the server at `server` as the token `token` reads it.
pub fn get_json(server: &str, token: &str, path: &str) -> serde_json::Value {
    ureq::get(&format!("{server}{path}"))
        .header("authorization", &format!("Bearer {token}"))
        .call()
        .unwrap()
        .body_mut()
        .read_json()
        .unwrap()
}

/// `POST <path>` of `body` to the server at `server` as the token `token`;
/// the answer's `id`.
pub fn post_for_id(server: &str, token: &str, path: &str, body: &serde_json::Value) -> i64 {
    let mut resp = ureq::post(&format!("{server}{path}"))
        .header("authorization", &format!("Bearer {token}"))
        .send_json(body)
        .unwrap();
    let created: serde_json::Value = resp.body_mut().read_json().unwrap();
    created["id"].as_i64().unwrap()
}

/// `GET /api/v1/comparisons/{id}` as the CI token `ci` reads it.
pub fn comparison(server: &str, ci: &str, id: i64) -> serde_json::Value {
    get_json(server, ci, &format!("/api/v1/comparisons/{id}"))
}

/// The load average, for the timings a test prints.
pub fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split(' ')
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// A git history of `patchperf_testkit::git_fixture`, or `None` after
/// saying why the test skips.
pub fn history_or_skip(
    history: Result<patchperf_testkit::git_fixture::LinuxHistory, String>,
) -> Option<patchperf_testkit::git_fixture::LinuxHistory> {
    match history {
        Ok(h) => Some(h),
        Err(why) => {
            eprintln!("SKIPPED: {why}");
            None
        }
    }
}
