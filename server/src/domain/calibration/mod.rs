//! What a machine can resolve, per kind of run: the noise floors its A/A
//! comparisons measured, which of them still speak for a comparison (not
//! older than [`Config::calibration_max_age`](crate::Config) before it, and
//! measured on the machine as it was then: same CPU, memory and host
//! kernel), and the δ a report judges with, with the sentence that says
//! where it came from. The rule for δ is the shared crate's
//! [`calibration`]. The A/A queued before a machine's first A/B of a kind
//! of run is [`automatic`]'s.

pub mod automatic;

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use patchperf_common::run::{MeasurementMode, TaskMode};
use patchperf_common::stats::VerdictPolicy;
use patchperf_common::stats::calibration;

use patchperf_common::report::stored::ComparisonReport;

use crate::db::comparisons::ComparisonRow;
use crate::domain::Context;
use crate::{Error, db};

/// How many of a machine's newest A/A comparisons are looked at for the
/// kinds of run the newest did not measure, here and when
/// [`calibrate`](crate::domain::calibration::automatic) asks whether a kind needs an A/A:
/// one window for both, so a kind counted as measured there is judged with
/// its A/A here.
pub(crate) const AAS_LOOKED_AT: i64 = 16;

/// The inventory fields whose change makes an A/A speak no more for the
/// machine: what runs the guests and how fast.
const SAME_MACHINE: [&str; 5] = [
    "cpu_model",
    "nr_cpu",
    "memory_bytes",
    "kernel_release",
    "arch",
];

/// A kind of run: (workload, mode, nr_task, measurement).
pub type RunKind = (String, TaskMode, u32, MeasurementMode);

/// A machine's noise floor for one kind of run, and where it came from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NoiseFloor {
    /// Largest A/A change the interval allows, in percent.
    pub percent: f64,
    /// The A/A comparison that measured it.
    pub aa_comparison: i64,
    /// When that comparison finished.
    pub measured_at: DateTime<Utc>,
}

/// Noise floors by kind of run.
#[derive(Debug, Clone)]
pub struct NoiseFloors {
    by_kind: HashMap<RunKind, NoiseFloor>,
    /// How old an A/A comparison may be, in days, as they were looked up.
    max_age_days: u64,
}

impl NoiseFloors {
    /// No floor for any kind of run, as a machine without A/A comparisons
    /// has, under the server's age limit.
    pub fn none(config: &crate::Config) -> Self {
        NoiseFloors {
            by_kind: HashMap::new(),
            max_age_days: config.calibration_max_age.as_secs() / 86_400,
        }
    }

    /// How old an A/A comparison may be, in days.
    pub fn max_age_days(&self) -> u64 {
        self.max_age_days
    }

    /// Every floor with its kind of run, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&RunKind, &NoiseFloor)> {
        self.by_kind.iter()
    }

    /// The floor for runs of this kind, if an A/A comparison measured one.
    pub fn get(
        &self,
        workload: &str,
        mode: TaskMode,
        nr_task: u32,
        measurement: Option<MeasurementMode>,
    ) -> Option<NoiseFloor> {
        self.by_kind
            .get(&(workload.to_string(), mode, nr_task, measurement?))
            .copied()
    }
}

/// The A/A comparisons that may give machine `machine_id` its noise
/// floors as of `as_of`, newest first: the last [`AAS_LOOKED_AT`] finished
/// ones, finished at most the configured age before `as_of`, measured on
/// the machine as `inventory` describes it. Their reports are the report
/// builder's to load ([`crate::domain::report::noise_floors`]): the floors
/// are read from them with [`NoiseFloors::add`].
pub async fn speaking_aas(
    ctx: &Context,
    machine_id: i64,
    as_of: DateTime<Utc>,
    inventory: Option<&serde_json::Value>,
) -> Result<Vec<SpeakingAa>, Error> {
    let oldest = as_of
        - chrono::Duration::from_std(ctx.config.calibration_max_age)
            .unwrap_or(chrono::Duration::MAX);
    let mut speaking = Vec::new();
    for aa in db::comparisons::finished_aas(&ctx.db, machine_id, AAS_LOOKED_AT).await? {
        if aa.finished_at < oldest {
            break;
        }
        if !same_machine(aa.machine_inventory.as_ref(), inventory) {
            continue;
        }
        if let Some(row) = db::comparisons::find(&ctx.db, aa.id).await? {
            speaking.push(SpeakingAa {
                row,
                finished_at: aa.finished_at,
            });
        }
    }
    Ok(speaking)
}

/// An A/A comparison that speaks for a machine: its row, to load its
/// report, and when it finished.
#[derive(Debug)]
pub struct SpeakingAa {
    pub row: ComparisonRow,
    pub finished_at: DateTime<Utc>,
}

impl NoiseFloors {
    /// Takes the floors A/A comparison `aa` measured for the kinds of run
    /// no newer one did (call newest first): for each kind, the largest
    /// change the 95% interval of its headline metric allows between two
    /// sets of boots of the same kernel. An A/A's own report has no floor,
    /// so loading it never asks for floors again.
    pub fn add(&mut self, aa: &SpeakingAa, report: &ComparisonReport) {
        for g in &report.groups {
            let h = &g.comparison.header;
            let (Some(measurement), Some(m)) = (h.measurement, g.comparison.headline_metric())
            else {
                continue;
            };
            if let Some(percent) = calibration::noise_floor(m.interval) {
                self.by_kind
                    .entry((h.workload.clone(), h.mode, h.nr_task, measurement))
                    .or_insert(NoiseFloor {
                        percent,
                        aa_comparison: aa.row.id,
                        measured_at: aa.finished_at,
                    });
            }
        }
    }
}

/// Whether an A/A measured on the machine as `then` describes it speaks
/// for the machine as `now` does; unknown inventories are taken as the
/// same.
pub(crate) fn same_machine(
    then: Option<&serde_json::Value>,
    now: Option<&serde_json::Value>,
) -> bool {
    let (Some(then), Some(now)) = (then, now) else {
        return true;
    };
    SAME_MACHINE.iter().all(|k| then.get(k) == now.get(k))
}

/// δ for one report and what the report says of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Delta {
    /// The measurement mode's δ when nothing calibrated it.
    pub default_percent: f64,
    /// δ as an A/A comparison calibrated it.
    pub calibrated_percent: Option<f64>,
    /// The A/A comparison that did.
    pub aa_comparison: Option<i64>,
    /// `δ 0.10%: tcg-icount's minimum δ; A/A comparison 12 measured ±0.02% (open1 ·
    /// process · 1 task, 2026-12-01)`.
    pub source: String,
}

/// What δ a report of runs of `measurement`, of the kind `kind` says in
/// words (`open1 · process · 1 task`), is `judged` with and where it came
/// from: the numbers are common's one rule
/// ([`calibration::judging`], which `runner compare` uses too), given
/// `floor` when an A/A measured one; this says where they came from.
pub fn delta(
    measurement: Option<MeasurementMode>,
    kind: &str,
    floor: Option<NoiseFloor>,
    judged: &VerdictPolicy,
    max_age_days: u64,
) -> Delta {
    let fallback = judged.min_change_percent;
    let Some(mode) = measurement else {
        return Delta {
            default_percent: fallback,
            calibrated_percent: None,
            aa_comparison: None,
            source: format!("δ {fallback:.2}%: the default (the measurement mode is unknown)"),
        };
    };
    let default_percent = judged.min_change_percent;
    let calibrated = floor.zip(judged.calibrated_percent);
    let Some((f, percent)) = calibrated else {
        return Delta {
            default_percent,
            calibrated_percent: None,
            aa_comparison: None,
            source: format!(
                "δ {default_percent:.2}%: {}'s default, no A/A comparison of {kind} on this \
                 machine as it is, within {max_age_days} days",
                mode.as_str()
            ),
        };
    };
    let what = format!(
        "({}, {kind}, {})",
        mode.as_str(),
        f.measured_at.format("%Y-%m-%d")
    );
    let source = if calibration::floor_binds(mode, f.percent) {
        format!(
            "δ {percent:.2}%: {}'s minimum δ; A/A comparison {} measured {} {what}, and {} × \
             that is below it",
            mode.as_str(),
            f.aa_comparison,
            calibration::floor_text(f.percent),
            calibration::NOISE_MULTIPLE
        )
    } else {
        format!(
            "δ {percent:.2}%: {} × the {} that A/A comparison {} measured {what}",
            calibration::NOISE_MULTIPLE,
            calibration::floor_text(f.percent),
            f.aa_comparison
        )
    };
    Delta {
        default_percent,
        calibrated_percent: Some(percent),
        aa_comparison: Some(f.aa_comparison),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn floor(percent: f64) -> NoiseFloor {
        NoiseFloor {
            percent,
            aa_comparison: 12,
            measured_at: "2026-12-01T10:00:00Z".parse().unwrap(),
        }
    }

    #[test]
    fn delta_says_where_it_came_from() {
        let icount = Some(MeasurementMode::TcgIcount);
        let kind = "open1 · process · 1 task";
        let judged = |mode, floor: Option<NoiseFloor>| {
            calibration::judging(
                VerdictPolicy::default(),
                mode,
                floor.map(|f| f.percent),
                calibration::Look::ONLY,
            )
        };
        let quiet = delta(
            icount,
            kind,
            Some(floor(0.02)),
            &judged(icount, Some(floor(0.02))),
            30,
        );
        assert_eq!(quiet.calibrated_percent, Some(0.1));
        assert_eq!(
            quiet.source,
            "δ 0.10%: tcg-icount's minimum δ; A/A comparison 12 measured ±0.020% (tcg-icount, \
             open1 · process · 1 task, 2026-12-01), and 2 × that is below it"
        );
        let noisy = delta(
            icount,
            kind,
            Some(floor(0.105)),
            &judged(icount, Some(floor(0.105))),
            30,
        );
        assert_eq!(noisy.calibrated_percent, Some(0.21));
        assert_eq!(
            noisy.source,
            "δ 0.21%: 2 × the ±0.105% that A/A comparison 12 measured (tcg-icount, \
             open1 · process · 1 task, 2026-12-01)"
        );
        let none = delta(icount, kind, None, &judged(icount, None), 30);
        assert_eq!((none.calibrated_percent, none.default_percent), (None, 0.5));
        assert_eq!(
            none.source,
            "δ 0.50%: tcg-icount's default, no A/A comparison of open1 · process · 1 task on \
             this machine as it is, within 30 days"
        );
        let unknown = delta(
            None,
            kind,
            Some(floor(0.02)),
            &judged(None, Some(floor(0.02))),
            30,
        );
        assert_eq!(unknown.calibrated_percent, None);
    }

    #[test]
    fn a_changed_cpu_memory_or_host_kernel_is_another_machine() {
        let then = serde_json::json!({"cpu_model": "EPYC", "nr_cpu": 2, "memory_bytes": 1,
            "kernel_release": "6.1.0", "arch": "x86_64", "hostname": "a"});
        let mut now = then.clone();
        now["hostname"] = "b".into();
        assert!(same_machine(Some(&then), Some(&now)));
        now["kernel_release"] = "6.12.0".into();
        assert!(!same_machine(Some(&then), Some(&now)));
        assert!(same_machine(None, Some(&now)));
    }
}
