//! What a comparison that is not final waits for. When it is not moving
//! ([`note`]): its boots must all come from one machine, so a comparison
//! pinned to a machine that stopped calling, or that an admin drained,
//! paused or retired, waits for it; one no machine has claimed waits for
//! any runner. When it is ([`progress`]): what runs
//! for it now (the machine's calibration first, a step of a series, which
//! job doing what) and about how long is left, from the machine's own
//! recent builds and boots. Pages, the JSON and `submit --wait` say so
//! instead of showing "queued" for hours.

use patchperf_common::comparison::ComparisonStatus;
use patchperf_common::machine_state::MachineState;
use patchperf_common::protocol::JobState;
use sqlx::PgPool;

use crate::db::comparisons::ComparisonRow;
use crate::db::jobs::JobRow;
use crate::{Error, db};

/// A machine silent for longer than this is reported: a live agent calls
/// at least every claim long-poll (30 s) or heartbeat, and a kexec reboot
/// takes a few minutes.
const SILENT_SECONDS: f64 = 600.0;

/// What the comparison waits for, when that is worth telling.
pub async fn note(db: &PgPool, c: &ComparisonRow) -> Result<Option<String>, Error> {
    if c.status.is_final() {
        return Ok(None);
    }
    if let (Some(id), Some(name)) = (c.machine_id, &c.machine_name) {
        let Some(machine) = db::machines::find(db, id).await? else {
            return Ok(None);
        };
        let held = match machine.state {
            MachineState::Active => None,
            MachineState::Draining => Some("drained"),
            MachineState::Paused => Some("paused"),
            MachineState::Retired => Some("retired"),
        };
        if let Some(held) = held {
            let why = if machine.state_note.is_empty() {
                String::new()
            } else {
                format!(" ({})", machine.state_note)
            };
            return Ok(Some(format!(
                "an admin {held} machine {name}{why}; the remaining jobs wait until it is \
                 resumed, since all boots of a comparison come from one machine: resume it \
                 (POST /api/v1/machines/{name}/resume), or cancel and resubmit"
            )));
        }
        let Some(silent) = db::machines::silent_seconds(db, id).await? else {
            return Ok(None);
        };
        return Ok((silent > SILENT_SECONDS).then(|| {
            format!(
                "machine {name} last called the server {} ago; the remaining jobs wait for it, \
                 since all boots of a comparison come from one machine: start its agent again, \
                 or cancel and resubmit",
                duration(silent)
            )
        }));
    }
    if db::machines::heard_within(db, SILENT_SECONDS).await? == 0 {
        return Ok(Some(
            "no runner has called the server in the last 10 minutes; the jobs wait for one \
             (patchperf-runner agent)"
                .into(),
        ));
    }
    Ok(None)
}

/// What runs for comparison `c` now and about how long is left, e.g. `the
/// machine measures its noise first: A/A comparison 2, job 1 of 3 building
/// the base kernel (the last build on lab-1 took 455 s); about 4 min of
/// boots left (8 boots, 30 s each lately on lab-1)`; `None` when it is
/// final or nothing of it has started. `jobs` are `c`'s own, as the view
/// has them already.
pub async fn progress(
    db: &PgPool,
    c: &ComparisonRow,
    jobs: &[JobRow],
) -> Result<Option<String>, Error> {
    if c.status.is_final() {
        return Ok(None);
    }
    let machine = c.machine_id.zip(c.machine_name.as_deref());
    // Its family in claim order: the calibration goes first, then its own
    // jobs, then the steps of a series measured patch by patch.
    let mut family = Vec::new();
    if let Some((aa, status)) = db::comparisons::calibration_of(db, c.id).await? {
        if !status.is_final() {
            family.push((
                aa,
                format!("the machine measures its noise first: A/A comparison {aa}, "),
            ));
        }
    }
    family.push((c.id, String::new()));
    let steps = db::comparisons::steps(db, c.id).await?;
    for s in steps.iter().filter(|s| s.status != ComparisonStatus::Done) {
        family.push((s.id, format!("step {} of {}: ", s.step, steps.len())));
    }
    let mut now = None;
    for (id, prefix) in &family {
        let theirs;
        let jobs = if *id == c.id {
            jobs
        } else {
            theirs = db::jobs::for_comparison(db, *id).await?;
            &theirs[..]
        };
        if let Some(job) = jobs.iter().find(|j| j.state.is_leased()) {
            let build = match (job.state, machine) {
                (JobState::Building, Some((m, name))) => db::runs::last_build_seconds(db, m)
                    .await?
                    .map(|s| format!(" (the last build on {name} took {s:.0} s)")),
                _ => None,
            };
            now = Some(format!(
                "{prefix}{}{}",
                doing(job, jobs.len()),
                build.unwrap_or_default()
            ));
            break;
        }
    }
    let Some(now) = now else {
        return Ok(None);
    };
    let Some((m, name)) = machine else {
        return Ok(Some(now));
    };
    let ids: Vec<i64> = family.iter().map(|(id, _)| *id).collect();
    let boots = db::boots::left(db, &ids).await?;
    let left = match db::jobs::seconds_per_boot(db, m).await? {
        Some(per_boot) if boots > 0 && per_boot.is_finite() => format!(
            "; about {} of boots left ({boots} boot{}, {per_boot:.0} s each lately on {name})",
            duration((per_boot * boots as f64).max(60.0)),
            if boots == 1 { "" } else { "s" }
        ),
        _ => String::new(),
    };
    Ok(Some(format!("{now}{left}")))
}

/// `job 1 of 3 building the base kernel`, `job 2 of 3 booting`.
fn doing(job: &JobRow, of: usize) -> String {
    let what = if job.message.is_empty() {
        job.state.as_str().to_string()
    } else if job.message.starts_with(job.state.as_str()) {
        job.message.clone()
    } else {
        format!("{}: {}", job.state.as_str(), job.message)
    };
    let what: String = what.chars().take(120).collect();
    format!("job {} of {of} {what}", job.seq + 1)
}

/// `47 min`, `3 h 12 min`, `2 days 4 h`.
fn duration(seconds: f64) -> String {
    let minutes = (seconds / 60.0).floor() as u64;
    let (days, hours, mins) = (minutes / 1440, minutes / 60 % 24, minutes % 60);
    match (days, hours) {
        (0, 0) => format!("{mins} min"),
        (0, h) => format!("{h} h {mins} min"),
        (1, h) => format!("1 day {h} h"),
        (d, h) => format!("{d} days {h} h"),
    }
}

#[cfg(test)]
mod tests {
    use super::duration;

    #[test]
    fn durations_read_as_people_say_them() {
        assert_eq!(duration(47.0 * 60.0 + 59.0), "47 min");
        assert_eq!(duration(3.0 * 3600.0 + 12.0 * 60.0), "3 h 12 min");
        assert_eq!(duration(86_400.0 + 3600.0), "1 day 1 h");
        assert_eq!(duration(2.0 * 86_400.0 + 4.0 * 3600.0 + 59.0), "2 days 4 h");
    }
}
