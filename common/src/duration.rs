//! How both programs' command lines and settings files spell a duration,
//! the same for every flag that takes one: `10s`, `30m`, `2h`, `1d`. A
//! bare number keeps the unit its flag had before units were accepted
//! (seconds, minutes for `--stall-timeout`, days for `--prune-after`), so
//! that scripts and settings files written then mean what they meant.

use std::time::Duration;

/// How one flag reads a duration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reading {
    /// Seconds a bare number counts.
    pub bare: u64,
    /// The shortest taken (a longer one than `most` is refused as a typo).
    pub least: Duration,
    /// The longest taken.
    pub most: Duration,
    /// Whether `0` is taken, meaning what the flag says ("never", "for
    /// ever"); it reads as [`Duration::ZERO`].
    pub zero: bool,
}

const DAY: u64 = 86_400;

/// Seconds when bare, from a second to a week: `--timeout`, `--poll`.
pub const SECONDS: Reading = Reading {
    bare: 1,
    least: Duration::from_secs(1),
    most: Duration::from_secs(7 * DAY),
    zero: false,
};

/// Minutes when bare, up to a week, `0` for ever: `--stall-timeout`.
pub const MINUTES_OR_NEVER: Reading = Reading {
    bare: 60,
    zero: true,
    ..SECONDS
};

/// Reads `text` as `how` says.
pub fn read(text: &str, how: Reading) -> Result<Duration, String> {
    let t = text.trim();
    let (number, unit) = match t.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => t.split_at(i),
        None => (t, ""),
    };
    let n: u64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration such as 10s, 30m or 2h"))?;
    let seconds = match unit {
        "" => n.saturating_mul(how.bare),
        "s" => n,
        "m" | "min" => n.saturating_mul(60),
        "h" => n.saturating_mul(3600),
        "d" => n.saturating_mul(DAY),
        _ => return Err(format!("{text:?}: the unit is one of s, m, h, d")),
    };
    let d = Duration::from_secs(seconds);
    if seconds == 0 && how.zero {
        return Ok(Duration::ZERO);
    }
    if d < how.least || d > how.most {
        return Err(format!(
            "{text:?}: between {} and {}",
            spelled(how.least),
            spelled(how.most)
        ));
    }
    Ok(d)
}

/// `7 days`, `10 s`: a bound as the error names it.
fn spelled(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        s if s == DAY => "1 day".to_string(),
        s if s >= DAY && s % DAY == 0 => format!("{} days", s / DAY),
        s if s >= 3600 && s % 3600 == 0 => format!("{} h", s / 3600),
        s if s >= 60 && s % 60 == 0 => format!("{} min", s / 60),
        s => format!("{s} s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_ci_files_write_them() {
        let read = |t| read(t, SECONDS);
        assert_eq!(read("90m"), Ok(Duration::from_secs(5400)));
        assert_eq!(read("2h"), Ok(Duration::from_secs(7200)));
        assert_eq!(read("3600"), Ok(Duration::from_secs(3600)));
        assert_eq!(read("45s"), Ok(Duration::from_secs(45)));
        for bad in ["", "0", "m", "1w", "-5m", "8d", "99999999999999999999"] {
            assert!(read(bad).is_err(), "{bad:?} was accepted");
        }
        assert_eq!(read("8d").unwrap_err(), "\"8d\": between 1 s and 7 days");
    }

    #[test]
    fn a_bare_stall_timeout_is_minutes_and_zero_is_for_ever() {
        let read = |t| read(t, MINUTES_OR_NEVER);
        assert_eq!(read("30"), Ok(Duration::from_secs(1800)));
        assert_eq!(read("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(read("2h"), Ok(Duration::from_secs(7200)));
        assert_eq!(read("0"), Ok(Duration::ZERO));
        assert!(read("0s").is_ok_and(|d| d.is_zero()));
        assert!(read("x").is_err());
    }
}
