//! The answer of one report in a sentence, as the top of a comparison page
//! (and later the text and mail forms) puts it first: what moved, how much,
//! how sure, from how many runs, measured how, against which threshold.

use super::format::{change_text, interval_text, p_text};
use super::model::{Comparison, MetricComparison};
use crate::stats::ChangeUnit;
use crate::stats::verdict::below_delta_words;

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

/// `+4.8% of will-it-scale.per_process_ops on open1 · process · nr_task 1
/// (95% interval +4.78% … +4.82%, q 0.0012; 3 and 3 runs, tcg-icount;
/// changes under 1.00% count as none: default)`, for the report's headline
/// metric; `None` while it has no value on both sides.
pub fn headline_sentence(c: &Comparison) -> Option<String> {
    let m = c.headline_metric()?;
    m.change?;
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
    use crate::stats::VerdictPolicy;

    const OPS: &str = "will-it-scale.per_process_ops";

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
