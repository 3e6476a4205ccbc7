//! Why a comparison that is not final is not moving. Its boots must all
//! come from one machine, so a comparison pinned to a machine that stopped
//! calling waits for it; one no machine has claimed waits for any runner.
//! Pages and the JSON say so instead of showing "queued" for hours.

use sqlx::PgPool;

use crate::db::comparisons::ComparisonRow;
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
