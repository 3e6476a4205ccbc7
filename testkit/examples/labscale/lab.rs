//! The lab: machines registered with the runner token, comparisons
//! submitted with the CI token and pinned to a machine, and one runner
//! thread per machine that claims each job, posts its state, heartbeats,
//! uploads every run of every boot and finishes it, as
//! `runner/src/agent/worker.rs` does minus the kernels.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use patchperf_common::protocol::{
    ATTEMPT_HEADER, ClaimRequest, FinishRequest, JobSpec, JobState, MACHINE_HEADER,
    MachineInventory, RegisterRequest, RunUpload, StateUpdate,
};
use patchperf_common::run::MeasurementMode;
use patchperf_common::workload::WORKLOADS;
use serde_json::{Value, json};

use crate::client::{Client, Errors};
use crate::runs::{Shape, Truth};

/// Boot-to-boot spread of throughput on the lab's machines.
pub const MACHINE_NOISE: f64 = 0.005;

/// A registered machine and the workload its comparisons mostly run.
#[derive(Debug, Clone)]
pub struct Machine {
    pub name: String,
    pub id: i64,
    workload: usize,
}

/// The kinds of comparison the lab runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// 3 boots a side, one workload and task count, will-it-scale only.
    Small,
    /// 5 boots a side, one workload and task count, with perf.
    Typical,
    /// 10 boots a side × 2 workloads × 3 task counts, with perf.
    Large,
    /// A/A with `noise` spread: the machine's noise floor for both its
    /// workloads at every task count.
    Aa { noise_permille: u32 },
}

impl Machine {
    fn workload(&self, k: usize) -> &'static str {
        WORKLOADS[(self.workload + k) % WORKLOADS.len()].name
    }

    /// What a comparison of `kind` on this machine asks for.
    pub fn shape(&self, kind: Kind, seconds: u32) -> Shape {
        let (workloads, nr_task, runs, perf, aa) = match kind {
            Kind::Small => (vec![self.workload(0)], vec![1], 3, false, false),
            Kind::Typical => (vec![self.workload(0)], vec![1], 5, true, false),
            Kind::Large => (
                vec![self.workload(0), self.workload(1)],
                vec![1, 2, 4],
                10,
                true,
                false,
            ),
            Kind::Aa { .. } => (
                vec![self.workload(0), self.workload(1)],
                vec![1, 2, 4],
                3,
                false,
                true,
            ),
        };
        Shape {
            workloads,
            nr_task,
            runs,
            seconds,
            perf,
            aa,
        }
    }
}

/// One comparison to submit: its number (seeds its truth), kind and machine.
#[derive(Debug, Clone, Copy)]
pub struct Planned {
    pub n: u64,
    pub kind: Kind,
    pub machine: usize,
}

/// A comparison to run: submitted already, or to submit when its machine
/// is free.
#[derive(Debug, Clone, Copy)]
pub enum Item {
    Planned(Planned),
    Submitted(Planned, i64),
}

impl Item {
    fn planned(&self) -> &Planned {
        match self {
            Item::Planned(p) | Item::Submitted(p, _) => p,
        }
    }
}

/// A comparison the lab ran to the end.
#[derive(Debug, Clone)]
pub struct Finished {
    pub id: i64,
    pub kind: Kind,
    pub machine: usize,
    pub first_job: i64,
}

/// What was uploaded, counted as the uploads succeed.
#[derive(Debug, Default)]
pub struct Counts {
    pub comparisons: AtomicU64,
    pub runs: AtomicU64,
    /// Scalar metric values.
    pub values: AtomicU64,
    /// Points of per-second series.
    pub points: AtomicU64,
    /// Latency of each successful upload.
    pub upload_times: Mutex<Vec<Duration>>,
    /// When the last comparison was finished (its last job's answer came).
    pub last_done: Mutex<Option<Instant>>,
}

/// The server and the tokens the lab uses.
pub struct Lab<'a> {
    pub url: &'a str,
    pub ci_token: &'a str,
    pub runner_token: &'a str,
    pub errors: &'a Errors,
    pub seconds: u32,
    pub timeout: Duration,
    pub counts: Counts,
}

impl Lab<'_> {
    fn client(&self) -> Client<'_> {
        Client::new(self.url, self.errors, self.timeout)
    }

    /// Registers `count` machines `lab-00`, `lab-01`, … with a PMU and KVM.
    pub fn register(&self, count: usize) -> Vec<Machine> {
        let c = self.client();
        (0..count)
            .filter_map(|i| {
                let name = format!("lab-{i:02}");
                let body = RegisterRequest {
                    name: name.clone(),
                    inventory: MachineInventory {
                        hostname: format!("{name}.lab"),
                        cpu_model: "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz".into(),
                        nr_cpu: 64,
                        memory_bytes: 256 << 30,
                        kernel_release: "6.1.0-13-amd64".into(),
                        arch: "x86_64".into(),
                        kvm_usable: true,
                        pmu_usable: true,
                        backends: vec![MeasurementMode::Kvm, MeasurementMode::Tcg],
                        notes: vec![],
                    },
                    protocol_version: patchperf_common::protocol::PROTOCOL_VERSION,
                };
                let text = serde_json::to_string(&body).ok()?;
                let (answer, _) = c.post("/api/v1/runner/register", self.runner_token, &[], &text);
                let id =
                    serde_json::from_str::<Value>(&answer?.body).ok()?["machine_id"].as_i64()?;
                Some(Machine {
                    name,
                    id,
                    workload: i,
                })
            })
            .collect()
    }

    /// Submits `p` with the CI token; its id.
    pub fn submit(&self, c: &Client<'_>, machines: &[Machine], p: &Planned) -> Option<i64> {
        let m = &machines[p.machine];
        let shape = m.shape(p.kind, self.seconds);
        let mut body = json!({
            "base": { "kind": "tarball", "name": "linux-source-6.1" },
            "workloads": shape.workloads,
            "params": {
                "mode": "process",
                "nr_task": shape.nr_task,
                "seconds": shape.seconds,
                "warmup_seconds": 2,
                "perf_stat": shape.perf,
                "perf_profile": shape.perf,
            },
            "runs": shape.runs,
            "backend": "kvm",
            "machine": m.name,
            "order_seed": p.n,
        });
        if shape.aa {
            body["aa"] = json!(true);
        } else {
            body["mbox"] = json!(patchperf_testkit::mbox::one_patch(&format!(
                "[PATCH] fs: {} lab change {}",
                shape.workloads[0], p.n
            )));
        }
        let (answer, _) = c.post("/api/v1/comparisons", self.ci_token, &[], &body.to_string());
        serde_json::from_str::<Value>(&answer?.body).ok()?["id"].as_i64()
    }

    /// Runs `machine`'s jobs until none is left to claim; each comparison
    /// it meets must be one of `known` (its truth and shape). Returns the
    /// first job of each comparison it ran.
    pub fn run_jobs(
        &self,
        c: &Client<'_>,
        machine: &Machine,
        known: &HashMap<i64, (Truth, Shape)>,
    ) -> HashMap<i64, i64> {
        let mut first_jobs = HashMap::new();
        let claim = serde_json::to_string(&ClaimRequest {
            machine_id: machine.id,
            wait_seconds: 0,
        })
        .unwrap_or_default();
        loop {
            let (answer, _) = c.post("/api/v1/jobs/claim", self.runner_token, &[], &claim);
            let Some(answer) = answer else { break };
            if answer.status == 204 {
                break;
            }
            let Ok(spec) = serde_json::from_str::<JobSpec>(&answer.body) else {
                break;
            };
            let Some((truth, shape)) = known.get(&spec.comparison_id) else {
                // Not ours: give it back as a runner that cannot run it would.
                self.finish_failed(c, machine, &spec);
                continue;
            };
            first_jobs.entry(spec.comparison_id).or_insert(spec.job_id);
            self.run_job(c, machine, &spec, truth, shape);
        }
        first_jobs
    }

    fn headers(machine: &Machine, spec: &JobSpec) -> [(&'static str, String); 2] {
        [
            (MACHINE_HEADER, machine.id.to_string()),
            (ATTEMPT_HEADER, spec.attempt.to_string()),
        ]
    }

    fn run_job(
        &self,
        c: &Client<'_>,
        machine: &Machine,
        spec: &JobSpec,
        truth: &Truth,
        shape: &Shape,
    ) {
        let headers = Self::headers(machine, spec);
        let path = |action: &str| format!("/api/v1/jobs/{}/{action}", spec.job_id);
        let token = self.runner_token;
        let state = serde_json::to_string(&StateUpdate {
            state: JobState::Running,
            message: format!("running {}", shape.workloads.join(", ")),
            log_tail: "booted\n".into(),
        })
        .unwrap_or_default();
        c.post(&path("state"), token, &headers, &state);
        c.post(&path("heartbeat"), token, &headers, "{}");
        for boot in &spec.boots {
            for result in truth.boot(shape, boot.seq, boot.side) {
                let values = result.metrics.len() as u64;
                let points: usize = result.series.iter().map(|s| s.points.len()).sum();
                let Ok(body) = serde_json::to_string(&RunUpload {
                    boot: *boot,
                    result,
                }) else {
                    continue;
                };
                let (answer, took) = c.post(&path("runs"), token, &headers, &body);
                if answer.is_some() {
                    let n = &self.counts;
                    n.runs.fetch_add(1, Ordering::Relaxed);
                    n.values.fetch_add(values, Ordering::Relaxed);
                    n.points.fetch_add(points as u64, Ordering::Relaxed);
                    n.upload_times
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push(took);
                }
            }
        }
        let finish = serde_json::to_string(&FinishRequest::Done {
            log_tail: "guest powered off\n".into(),
        })
        .unwrap_or_default();
        let (answer, _) = c.post(&path("finish"), token, &headers, &finish);
        let final_status = answer
            .and_then(|a| serde_json::from_str::<Value>(&a.body).ok())
            .and_then(|v| v["comparison_status"].as_str().map(str::to_string));
        if final_status.as_deref() == Some("done") {
            self.counts.comparisons.fetch_add(1, Ordering::Relaxed);
            *self
                .counts
                .last_done
                .lock()
                .unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
        }
    }

    fn finish_failed(&self, c: &Client<'_>, machine: &Machine, spec: &JobSpec) {
        let body = serde_json::to_string(&FinishRequest::Failed {
            reason: patchperf_common::protocol::FailureReason::Unsupported,
            detail: "not submitted by this benchmark".into(),
            log_tail: String::new(),
        })
        .unwrap_or_default();
        c.post(
            &format!("/api/v1/jobs/{}/finish", spec.job_id),
            self.runner_token,
            &Self::headers(machine, spec),
            &body,
        );
    }

    /// Submits every comparison of `plan` now, for [`Lab::run`]; one
    /// whose submission failed (counted as an error) is left out.
    pub fn submit_all(&self, machines: &[Machine], plan: &[Planned]) -> Vec<Item> {
        let c = self.client();
        plan.iter()
            .filter_map(|p| Some(Item::Submitted(*p, self.submit(&c, machines, p)?)))
            .collect()
    }

    /// Runs comparisons to the end, one runner thread per machine; one
    /// [`Item::Planned`] is submitted when its machine has finished the
    /// previous one, as CI keeps a lab busy.
    pub fn run(&self, machines: &[Machine], items: &[Item]) -> Vec<Finished> {
        let done = Mutex::new(Vec::new());
        let work = |i: usize| {
            let c = self.client();
            let m = &machines[i];
            let mut known = HashMap::new();
            let mut mine = Vec::new();
            for item in items.iter().filter(|item| item.planned().machine == i) {
                let (p, id) = match item {
                    Item::Submitted(p, id) => (p, Some(*id)),
                    Item::Planned(p) => (p, self.submit(&c, machines, p)),
                };
                let Some(id) = id else { continue };
                let shape = m.shape(p.kind, self.seconds);
                let noise = match p.kind {
                    Kind::Aa { noise_permille } => f64::from(noise_permille) / 1000.0,
                    _ => MACHINE_NOISE,
                };
                known.insert(id, (Truth::new(p.n, &shape, noise), shape));
                mine.push((id, *p));
                if matches!(item, Item::Planned(_)) {
                    self.collect(&c, m, &known, &mut mine, &done);
                }
            }
            self.collect(&c, m, &known, &mut mine, &done);
        };
        std::thread::scope(|s| {
            for i in 0..machines.len() {
                if items.iter().any(|item| item.planned().machine == i) {
                    let work = &work;
                    s.spawn(move || work(i));
                }
            }
        });
        done.into_inner().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs what is queued for `m` and moves what it finished from `mine`
    /// to `done`.
    fn collect(
        &self,
        c: &Client<'_>,
        m: &Machine,
        known: &HashMap<i64, (Truth, Shape)>,
        mine: &mut Vec<(i64, Planned)>,
        done: &Mutex<Vec<Finished>>,
    ) {
        let first_jobs = self.run_jobs(c, m, known);
        let mut done = done.lock().unwrap_or_else(|p| p.into_inner());
        for (id, p) in mine.drain(..) {
            if let Some(&first_job) = first_jobs.get(&id) {
                done.push(Finished {
                    id,
                    kind: p.kind,
                    machine: p.machine,
                    first_job,
                });
            }
        }
    }
}
