//! Numbers formatted exactly as 0-day's `show_perf_change` prints them
//! (lkp-tests `lib/compare.rb`): means in a 10-wide column as `%.2f` below
//! 1000, `%.4g` above 1e8 and `%d` (truncated) between; `± N%` as ` ±%3d%%`
//! when the spread exceeds 2%, six blanks otherwise; changes as `%+10.1f%% `
//! (or `%+10.2g%% ` from 100000% on) and, for points, `%+10.1f  `. The
//! trimmed cell strings (`side_text`, `change_text`, …) are the same numbers
//! as pages, the dashboard and server logs show them, so HTML, text and JSON
//! agree.

use super::model::{MetricComparison, Presence, SideStats};
use crate::stats::interval::ends_text;
use crate::stats::verdict::fmt_p;
use crate::stats::{ChangeUnit, Interval, shown_stddev_percent};

/// Width of a mean (lkp's `ABS_WIDTH`).
pub const ABS_WIDTH: usize = 10;
/// Width of a change (lkp's `REL_WIDTH`).
pub const REL_WIDTH: usize = 10;
/// Width of the `± N%` field (lkp's `ERR_WIDTH`).
pub const ERR_WIDTH: usize = 6;

/// A machine's memory as 0-day writes it (`64G`), to the nearest GiB (a
/// machine's MemTotal is a little under its installed memory), or in MiB
/// under 1 GiB: the one spelling of pages, reports and the machine list.
pub fn memory(bytes: u64) -> String {
    let gib = bytes as f64 / f64::from(1u32 << 30);
    if gib >= 1.0 {
        format!("{}G", gib.round())
    } else {
        format!("{}M", bytes >> 20)
    }
}

/// A mean, right-aligned in [`ABS_WIDTH`]: `   3436082`, ` 8.796e+08`, `      0.93`.
pub fn mean_column(v: f64) -> String {
    let s = if v.abs() < 1000.0 {
        format!("{v:.2}")
    } else if v.abs() > 100_000_000.0 {
        c_g(v, 4)
    } else {
        // Ruby's `%d` of a Float truncates towards zero.
        format!("{}", v.trunc() as i64)
    };
    format!("{s:>ABS_WIDTH$}")
}

/// The `± N%` field: ` ± 69%` when `pct` (already truncated) is shown, else
/// [`ERR_WIDTH`] blanks.
pub fn stddev_column(shown_pct: Option<u32>) -> String {
    match shown_pct {
        Some(p) => format!(" ±{p:>3}%"),
        None => " ".repeat(ERR_WIDTH),
    }
}

/// The change column including its trailing separator: `     +1.2% ` for
/// percent, `      -0.7  ` for points.
pub fn change_column(change: f64, points: bool) -> String {
    let s = if change.abs() < 100_000.0 {
        format!("{change:+.1}")
    } else {
        let g = c_g(change, 2);
        if change >= 0.0 { format!("+{g}") } else { g }
    };
    if points {
        format!("{s:>REL_WIDTH$}  ")
    } else {
        format!("{s:>REL_WIDTH$}% ")
    }
}

/// A side's mean with its `± N%`, exactly as in the text table
/// (`3436082`, `0.03 ±  8%`), `-` without values, `n/s` when unsupported.
pub fn side_text(s: &SideStats) -> String {
    match (s.presence, s.mean) {
        (Presence::Measured, Some(mean)) => {
            let spread = stddev_column(shown_stddev_percent(&s.values));
            format!("{}{}", mean_column(mean).trim(), spread.trim_end())
        }
        (Presence::Unsupported, _) => "n/s".into(),
        _ => "-".into(),
    }
}

/// The `%change` column as the text table prints it: `+1.2%`, `-0.7`.
pub fn change_text(m: &MetricComparison) -> String {
    match m.change {
        Some(v) => change_column(v, m.unit == ChangeUnit::Points)
            .trim()
            .to_string(),
        None if m.base.mean.is_some() && m.patched.mean.is_some() => "n/a".into(),
        None => String::new(),
    }
}

/// `+0.81% … +1.62%`, `unbounded`, or empty.
pub fn interval_text(m: &MetricComparison) -> String {
    let unit = m.unit.suffix();
    match m.interval {
        Some(Interval::Bounded { low, high }) => {
            let (a, b) = ends_text(low, high, 2);
            format!("{a}{unit} … {b}{unit}")
        }
        Some(Interval::Unbounded) => "unbounded".into(),
        None => String::new(),
    }
}

/// A p- or q-value, or empty.
pub fn p_text(p: Option<f64>) -> String {
    p.map(fmt_p).unwrap_or_default()
}

/// C's `%.{precision}g`: scientific notation when the exponent is below −4
/// or at least `precision`, fixed otherwise, trailing zeros removed, and a
/// two-digit exponent at least (`8.796e+08`, `7.13e+11`).
pub fn c_g(v: f64, precision: usize) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let p = precision.max(1);
    // The exponent after rounding to p significant digits decides the style.
    let sci = format!("{v:.prec$e}", prec = p - 1);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if exp < -4 || exp >= p as i32 {
        let mantissa = strip_zeros(mantissa);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.unsigned_abs())
    } else {
        let decimals = (p as i32 - 1 - exp).max(0) as usize;
        strip_zeros(&format!("{v:.decimals$}")).to_string()
    }
}

fn strip_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_is_rounded_to_the_nearest_gigabyte_everywhere() {
        assert_eq!(memory(64 << 30), "64G");
        // MemTotal of a 24 GiB machine.
        assert_eq!(memory(24_608_000 * 1024), "23G");
        assert_eq!(memory(24_900_000 * 1024), "24G");
        assert_eq!(memory(512 << 20), "512M");
    }

    #[test]
    fn means_as_in_seed_004() {
        assert_eq!(mean_column(879_645_000.0), " 8.796e+08");
        assert_eq!(mean_column(3_436_082.7), "   3436082");
        assert_eq!(mean_column(0.93), "      0.93");
        assert_eq!(mean_column(245_130.0), "    245130");
        assert_eq!(mean_column(7.13e11), "  7.13e+11");
        assert_eq!(mean_column(2.156e14), " 2.156e+14");
        assert_eq!(mean_column(18.1665), "     18.17");
        assert_eq!(mean_column(0.0), "      0.00");
        // the borders: 999.999 rounds to 1000.00 in %.2f; 1000 switches to %d;
        // exactly 1e8 is still %d, above it %.4g
        assert_eq!(mean_column(999.999), "   1000.00");
        assert_eq!(mean_column(1000.0), "      1000");
        assert_eq!(mean_column(100_000_000.0), " 100000000");
        assert_eq!(mean_column(100_000_001.0), "     1e+08");
    }

    #[test]
    fn spread_field() {
        assert_eq!(stddev_column(Some(69)), " ± 69%");
        assert_eq!(stddev_column(Some(8)), " ±  8%");
        assert_eq!(stddev_column(Some(141)), " ±141%");
        assert_eq!(stddev_column(None), "      ");
    }

    #[test]
    fn changes_in_percent_and_points() {
        assert_eq!(change_column(74.09, false), "     +74.1% ");
        assert_eq!(change_column(-48.62, false), "     -48.6% ");
        assert_eq!(change_column(1.2144, false), "      +1.2% ");
        assert_eq!(change_column(-0.70, true), "      -0.7  ");
        assert_eq!(change_column(-0.04, true), "      -0.0  ");
        assert_eq!(change_column(0.02, true), "      +0.0  ");
        assert_eq!(change_column(0.0, true), "      +0.0  ");
        // from 100000% on: %+.2g
        assert_eq!(change_column(123_456.0, false), "  +1.2e+05% ");
        assert_eq!(change_column(-250_000.0, false), "  -2.5e+05% ");
    }

    #[test]
    fn sides_print_like_the_text_table() {
        let side = |values: Vec<f64>| SideStats {
            presence: Presence::Measured,
            mean: crate::stats::mean(&values),
            stddev: None,
            stddev_percent: None,
            values,
        };
        assert_eq!(side_text(&side(vec![0.0, 0.0, 0.06])), "0.02 ±141%");
        assert_eq!(side_text(&side(vec![3_436_082.5; 3])), "3436082");
        let absent = SideStats {
            presence: Presence::Absent,
            values: vec![],
            mean: None,
            stddev: None,
            stddev_percent: None,
        };
        assert_eq!(side_text(&absent), "-");
    }

    #[test]
    fn c_g_matches_printf() {
        // printf("%.4g") of these values, as C and Ruby print them
        assert_eq!(c_g(8.796e8, 4), "8.796e+08");
        assert_eq!(c_g(1.5e11, 4), "1.5e+11");
        assert_eq!(c_g(123.456, 4), "123.5");
        assert_eq!(c_g(1234.0, 4), "1234");
        assert_eq!(c_g(12345.0, 4), "1.234e+04"); // 1.2345e4 rounds half-even on the binary value
        assert_eq!(c_g(0.0001234, 4), "0.0001234");
        assert_eq!(c_g(0.00001234, 4), "1.234e-05");
        assert_eq!(c_g(-8.796e8, 4), "-8.796e+08");
        assert_eq!(c_g(9.9996e8, 4), "1e+09");
        assert_eq!(c_g(1e100, 2), "1e+100");
    }
}
