//! The answer of one report in a sentence, as the top of a comparison page
//! (and later the text and mail forms) puts it first: what moved, how much,
//! how sure, from how many runs, measured how, against which threshold; for
//! an A/A calibration, the noise floor it measured and the δ that gives.

use super::format::{change_text, interval_text, p_text};
use super::model::{Comparison, MetricComparison};
use crate::stats::ChangeUnit;
use crate::stats::calibration::{self, NOISE_MULTIPLE, calibration_words, noise_floor};
use crate::stats::verdict::{below_delta_words, delta_text};

/// `real (q 0.0035) but below this machine's δ of 3.3%` for metric `m` of
/// report `c` when it is a real change smaller than δ, else `None`.
pub fn below_delta(c: &Comparison, m: &MetricComparison) -> Option<String> {
    m.real_below_delta
        .then(|| below_delta_words(m.q.unwrap_or(1.0), &c.policy, m.unit))
}

/// `+5.1% improvement of will-it-scale.per_process_ops`, or for a real
/// change smaller than δ `-1.7% of will-it-scale.per_process_ops, real (q
/// 0.0035) but below this machine's δ of 3.3%`: a metric's change and
/// verdict in the words listings and mail subjects use.
pub fn change_phrase(c: &Comparison, m: &MetricComparison) -> String {
    match below_delta(c, m) {
        Some(words) => format!("{} of {}, {words}", change_text(m), m.name),
        None => format!("{} {} of {}", change_text(m), m.verdict.as_str(), m.name),
    }
}

/// An A/A calibration's answer: `noise floor ±0.075% → δ 0.15%`, from
/// its headline metric's interval ([`calibration::noise_floor`]); `None`
/// for any other report, and until the interval is bounded.
pub fn calibration_answer(c: &Comparison) -> Option<String> {
    if !c.header.is_calibration() {
        return None;
    }
    let floor = noise_floor(c.headline_metric()?.interval)?;
    Some(match c.header.measurement {
        Some(mode) => calibration_words(mode, floor),
        None => format!("noise floor {}", calibration::floor_text(floor)),
    })
}

/// An A/A calibration's first line, named as one: `A/A calibration of
/// open1 on lab-1 (tcg-icount): noise floor ±0.075% → δ 0.15% for open1 ·
/// process · nr_task 1`.
pub(super) fn calibration_line(c: &Comparison) -> String {
    let h = &c.header;
    let name = h
        .name
        .as_ref()
        .map_or("A/A calibration", |n| n.text.as_str());
    let answer = calibration_answer(c).unwrap_or_else(|| "no noise floor yet".to_string());
    format!("{name}: {answer} for {}", h.title())
}

/// What an A/A calibration's answer stands on, for the report's headline
/// metric: `will-it-scale.per_process_ops of one kernel against itself on
/// open1 · process · nr_task 1 (95% interval -0.074% … +0.050%; 3 and 3
/// runs, tcg-icount; δ is 2 × the floor, at least tcg-icount's 0.1%)`.
fn calibration_sentence(c: &Comparison, m: &MetricComparison) -> String {
    let h = &c.header;
    let interval = interval_text(m);
    let interval = if interval.is_empty() {
        String::new()
    } else {
        format!("{} interval {interval}; ", c.policy.interval_label())
    };
    let delta = match h.measurement {
        Some(mode) => format!(
            "; δ is {NOISE_MULTIPLE} × the floor, at least {}'s {}%",
            mode.as_str(),
            delta_text(calibration::floor_percent(mode))
        ),
        None => String::new(),
    };
    format!(
        "{} of one kernel against itself on {} ({interval}{} and {} runs, {}{delta})",
        m.name,
        h.title(),
        c.base_runs,
        c.patched_runs,
        h.measurement.map_or("measurement unknown", |m| m.as_str()),
    )
}

/// `+4.8% of will-it-scale.per_process_ops on open1 · process · nr_task 1
/// (95% interval +4.78% … +4.82%, q 0.0012; 3 and 3 runs, tcg-icount;
/// changes under 1.00% count as none: default)`, for the report's headline
/// metric; `None` while it has no value on both sides. An A/A
/// calibration's says what its noise floor stands on instead.
pub fn headline_sentence(c: &Comparison) -> Option<String> {
    let m = c.headline_metric()?;
    m.change?;
    if c.header.is_calibration() {
        return Some(calibration_sentence(c, m));
    }
    let h = &c.header;
    let interval = interval_text(m);
    let mut how_sure = Vec::new();
    if !interval.is_empty() {
        how_sure.push(format!("{} interval {interval}", c.policy.interval_label()));
    }
    let q = p_text(m.q);
    if !q.is_empty() {
        how_sure.push(format!("q {q}"));
    }
    let threshold = c.policy.threshold(ChangeUnit::Percent);
    // In short: the report's notes say it in full (`delta_source`).
    let source = match (h.delta_aa, &h.delta_source, h.measurement) {
        (Some(aa), _, _) => format!("calibrated by A/A comparison {aa}"),
        (None, Some(_), Some(mode)) => format!("{}'s default", mode.as_str()),
        _ => "default".into(),
    };
    let real = below_delta(c, m).map_or(String::new(), |w| format!(", {w}"));
    // Before a side has two runs there is no interval and no q to say.
    let how_sure = if how_sure.is_empty() {
        String::new()
    } else {
        format!("{}; ", how_sure.join(", "))
    };
    Some(format!(
        "{} of {} on {}{real} ({how_sure}{} and {} runs, {}; changes under {threshold:.2}% count as none: {source})",
        change_text(m),
        m.name,
        h.title(),
        c.base_runs,
        c.patched_runs,
        h.measurement.map_or("measurement unknown", |m| m.as_str()),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::build::{build_comparison, header_from_runs};
    use crate::report::test_runs::{compare, run};
    use crate::report::text::{TextOptions, render, summary_sentence};
    use crate::stats::VerdictPolicy;

    const OPS: &str = "will-it-scale.per_process_ops";

    #[test]
    fn a_calibration_answers_with_its_noise_floor_and_names_no_commit() {
        let side = |values: [f64; 3]| values.map(|v| run(&[(OPS, v)])).to_vec();
        let mut c = compare(
            "qemu-tcg",
            &side([999.9, 1000.0, 1000.1]),
            &side([1000.0, 1000.1, 999.9]),
        );
        c.header.name = Some(crate::naming::Name {
            kind: crate::naming::NameKind::Calibration,
            text: "A/A calibration of dup1 on lab-1 (tcg-icount)".into(),
        });
        c.header.base_source = Some("linux-source-6.1".into());
        let text = render(&c, &TextOptions::default());
        let lines: Vec<&str> = text.lines().collect();
        // ±0.015% between the means at most: δ is tcg-icount's floor.
        let floor =
            crate::stats::calibration::noise_floor(c.headline_metric().unwrap().interval).unwrap();
        assert_eq!(
            lines[0],
            format!(
                "A/A calibration of dup1 on lab-1 (tcg-icount): noise floor {} → δ 0.1% for \
                 dup1 · process · nr_task 2",
                crate::stats::calibration::floor_text(floor)
            )
        );
        assert!(
            lines[2].starts_with(
                "will-it-scale.per_process_ops of one kernel against itself on dup1 · process · \
                 nr_task 2 (95% interval "
            ) && lines[2].ends_with(
                "; 3 and 3 runs, tcg-icount; δ is 2 × the floor, at least tcg-icount's 0.1%)"
            ),
            "{text}"
        );
        let header: Vec<&str> = lines[4..7].to_vec();
        assert_eq!(
            header,
            [
                "calibration: A/A calibration of dup1 on lab-1 (tcg-icount)",
                "base: linux-source-6.1",
                ""
            ],
            "{text}"
        );
        assert_eq!(summary_sentence(&c), format!("{}.", lines[0]));
    }

    #[test]
    fn the_sentence_says_size_metric_interval_runs_mode_and_threshold() {
        let base = vec![run(&[(OPS, 1000.0)]); 3];
        let patched = vec![run(&[(OPS, 1100.0)]); 3];
        let header = header_from_runs("qemu-tcg", &base, &patched);
        let c =
            build_comparison(header.clone(), &base, &patched, &VerdictPolicy::default()).unwrap();
        assert_eq!(
            headline_sentence(&c).unwrap(),
            "+10.0% of will-it-scale.per_process_ops on dup1 · process · nr_task 2 \
             (95% interval +10.00% … +10.00%, q 0; 3 and 3 runs, tcg-icount; \
             changes under 1.00% count as none: default)"
        );
        // One patched run: nothing to be sure with yet, and nothing said
        // in its place.
        let c = build_comparison(header, &base, &patched[..1], &VerdictPolicy::default()).unwrap();
        assert_eq!(
            headline_sentence(&c).unwrap(),
            "+10.0% of will-it-scale.per_process_ops on dup1 · process · nr_task 2 \
             (3 and 1 runs, tcg-icount; changes under 1.00% count as none: default)"
        );
        let nothing = compare("qemu-tcg", &base, &[]);
        assert_eq!(headline_sentence(&nothing), None);
    }

    #[test]
    fn a_real_change_below_delta_says_so_in_every_phrase() {
        // −0.3% with ±0.01% between boots: real, but under the default 1%.
        let base: Vec<_> = [999.9, 1000.0, 1000.1]
            .iter()
            .map(|&v| run(&[(OPS, v)]))
            .collect();
        let patched: Vec<_> = [996.9, 997.0, 997.1]
            .iter()
            .map(|&v| run(&[(OPS, v)]))
            .collect();
        let header = header_from_runs("lab", &base, &patched);
        let policy = VerdictPolicy {
            calibrated_percent: Some(3.3),
            ..VerdictPolicy::default()
        };
        let c = build_comparison(header, &base, &patched, &policy).unwrap();
        let m = c.headline_metric().unwrap();
        assert!(m.real_below_delta);
        assert_eq!(m.verdict_words(), "real, below δ");
        let q = crate::stats::verdict::fmt_p(m.q.unwrap());
        assert_eq!(
            change_phrase(&c, m),
            format!(
                "-0.3% of will-it-scale.per_process_ops, real (q {q}) but below this \
                 machine's δ of 3.3%"
            )
        );
        let sentence = headline_sentence(&c).unwrap();
        assert!(
            sentence.starts_with(&format!(
                "-0.3% of will-it-scale.per_process_ops on dup1 · process · nr_task 2, real \
                 (q {q}) but below this machine's δ of 3.3% (95% interval"
            )),
            "{sentence}"
        );
        let json = serde_json::to_value(m).unwrap();
        assert_eq!(json["real_below_delta"], true);
        assert_eq!(json["verdict"], "no-change");
    }
}
