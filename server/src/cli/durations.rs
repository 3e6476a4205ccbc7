//! How the server's duration flags read their values: units as every flag
//! of both programs takes them (`patchperf_common::duration`), a bare
//! number in the unit the flag had before (seconds, days for the ones
//! that were `-days`), each within its bounds.

use std::time::Duration;

use patchperf_common::duration::{Reading, SECONDS, read};

const DAY: u64 = 86_400;

/// `--lease`: 10 s to a day (a runner heartbeats a few times a lease).
pub fn lease(text: &str) -> Result<Duration, String> {
    read(
        text,
        Reading {
            least: Duration::from_secs(10),
            most: Duration::from_secs(DAY),
            ..SECONDS
        },
    )
}

/// `--git-timeout`, `--git-stall`: a second to a day.
pub fn git(text: &str) -> Result<Duration, String> {
    read(
        text,
        Reading {
            most: Duration::from_secs(DAY),
            ..SECONDS
        },
    )
}

/// `--prune-after`: days when bare, up to a hundred years; 0 never.
pub fn prune_after(text: &str) -> Result<Duration, String> {
    read(
        text,
        Reading {
            bare: DAY,
            least: Duration::from_secs(DAY),
            most: Duration::from_secs(36_500 * DAY),
            zero: true,
        },
    )
}

/// `--calibration-max-age`: days when bare, a day to ten years.
pub fn calibration_max_age(text: &str) -> Result<Duration, String> {
    read(
        text,
        Reading {
            bare: DAY,
            least: Duration::from_secs(DAY),
            most: Duration::from_secs(3_650 * DAY),
            zero: false,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A value written before units were accepted means what it meant.
    #[test]
    fn bare_numbers_keep_their_old_units() {
        assert_eq!(lease("120"), Ok(Duration::from_secs(120)));
        assert_eq!(lease("2m"), Ok(Duration::from_secs(120)));
        assert!(lease("5").is_err() && lease("2d").is_err());
        assert_eq!(git("1800"), Ok(Duration::from_secs(1800)));
        assert_eq!(prune_after("90"), Ok(Duration::from_secs(90 * DAY)));
        assert_eq!(prune_after("0"), Ok(Duration::ZERO));
        assert_eq!(
            prune_after("12h").unwrap_err(),
            "\"12h\": between 1 day and 36500 days"
        );
        assert_eq!(calibration_max_age("30"), Ok(Duration::from_secs(30 * DAY)));
        assert!(calibration_max_age("0").is_err());
    }
}
