//! The answer of one report in a sentence, as the top of a comparison page
//! (and later the text and mail forms) puts it first: what moved, how much,
//! how sure, from how many runs, measured how, against which threshold.

use super::format::{change_text, interval_text, p_text};
use super::model::Comparison;
use crate::stats::ChangeUnit;

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
    Some(format!(
        "{} of {} on {} · {} · nr_task {} ({}; {} and {} runs, {}; changes under {threshold:.2}% count as none: {source})",
        change_text(m),
        m.name,
        h.workload,
        h.mode.as_str(),
        h.nr_task,
        how_sure.join(", "),
        c.base_runs,
        c.patched_runs,
        h.measurement.map_or("measurement unknown", |m| m.as_str()),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::build::{build_comparison, header_from_runs};
    use crate::report::test_runs::run;
    use crate::stats::VerdictPolicy;

    const OPS: &str = "will-it-scale.per_process_ops";

    #[test]
    fn the_sentence_says_size_metric_interval_runs_mode_and_threshold() {
        let base = vec![run(&[(OPS, 1000.0)]); 3];
        let patched = vec![run(&[(OPS, 1100.0)]); 3];
        let header = header_from_runs("qemu-tcg", &base, &patched);
        let c = build_comparison(header, &base, &patched, &VerdictPolicy::default()).unwrap();
        assert_eq!(
            headline_sentence(&c).unwrap(),
            "+10.0% of will-it-scale.per_process_ops on dup1 · process · nr_task 2 \
             (95% interval +10.00% … +10.00%, q 0; 3 and 3 runs, tcg-icount; \
             changes under 1.00% count as none: default)"
        );
        let nothing = build_comparison(
            header_from_runs("qemu-tcg", &base, &[]),
            &base,
            &[],
            &VerdictPolicy::default(),
        )
        .unwrap();
        assert_eq!(headline_sentence(&nothing), None);
    }
}
