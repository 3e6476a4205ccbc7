//! How the command line spells a duration, the same for every flag that
//! takes one: `10s`, `30m`, `2h`, `1d`. A bare number keeps the unit its
//! flag had before units were accepted (seconds, or minutes for
//! `--stall-timeout`), so that scripts written then mean what they meant.

use std::time::Duration;

/// `90m`, `2h`, `45s`, `1d` or a number of seconds; more than a week is
/// refused as a typo.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    parse(text, 1, false)
}

/// As [`parse_duration`], but a bare number is minutes and `0` is "for
/// ever" (`Duration::ZERO`): `--stall-timeout`'s spelling.
pub fn minutes_or_duration(text: &str) -> Result<Duration, String> {
    parse(text, 60, true)
}

fn parse(text: &str, bare_unit: u64, zero_is_never: bool) -> Result<Duration, String> {
    let t = text.trim();
    let (number, unit) = match t.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => t.split_at(i),
        None => (t, ""),
    };
    let n: u64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration such as 10s, 30m or 2h"))?;
    let seconds = match unit {
        "" => n.saturating_mul(bare_unit),
        "s" => n,
        "m" | "min" => n.saturating_mul(60),
        "h" => n.saturating_mul(3600),
        "d" => n.saturating_mul(86_400),
        _ => return Err(format!("{text:?}: the unit is one of s, m, h, d")),
    };
    if seconds == 0 && zero_is_never {
        return Ok(Duration::ZERO);
    }
    if seconds == 0 || seconds > 7 * 86_400 {
        return Err(format!("{text:?}: between 1 s and 7 days"));
    }
    Ok(Duration::from_secs(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_ci_files_write_them() {
        assert_eq!(parse_duration("90m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("2h"), Ok(Duration::from_secs(7200)));
        assert_eq!(parse_duration("3600"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("45s"), Ok(Duration::from_secs(45)));
        for bad in ["", "0", "m", "1w", "-5m", "8d", "99999999999999999999"] {
            assert!(parse_duration(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn a_bare_stall_timeout_is_minutes_and_zero_is_for_ever() {
        assert_eq!(minutes_or_duration("30"), Ok(Duration::from_secs(1800)));
        assert_eq!(minutes_or_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(minutes_or_duration("2h"), Ok(Duration::from_secs(7200)));
        assert_eq!(minutes_or_duration("0"), Ok(Duration::ZERO));
        assert!(minutes_or_duration("0s").is_ok_and(|d| d.is_zero()));
        assert!(minutes_or_duration("x").is_err());
    }
}
