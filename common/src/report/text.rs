//! The plain-text report, laid out exactly like 0-day's emails (seed 004):
//! the headline sentence, the header block, the `=====` axes block, the
//! commit block and the `%stddev %change %stddev` table, followed by our
//! verdict per changed metric.

use std::fmt::Write as _;

use super::format::{ABS_WIDTH, ERR_WIDTH, REL_WIDTH, change_column, mean_column, stddev_column};
use super::model::{Comparison, KernelLabel, MetricComparison, Presence, ReportHeader, SideStats};
use super::order::sort_rows;
use crate::naming::NameKind;
use crate::stats::verdict::fmt_p;
use crate::stats::{ChangeUnit, Interval, Verdict, shown_stddev_percent};

/// What the text shows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TextOptions {
    /// Show every metric, not only will-it-scale rows, changed rows (by
    /// either rule) and rows with a side missing.
    pub all_rows: bool,
}

/// The whole report as an email to the patch author would carry it.
pub fn render(c: &Comparison, opts: &TextOptions) -> String {
    let h = &c.header;
    let mut out = String::new();
    let w = &mut out;
    let _ = writeln!(w, "{}\n", summary_line(c));
    // How much, how sure and against what threshold, before the details.
    if let Some(sentence) = super::summary::headline_sentence(c) {
        let _ = writeln!(w, "{sentence}");
    }
    if let Some(moved_by) = &h.moved_by {
        let _ = writeln!(w, "from: {moved_by}");
    }
    if let Some(why) = &c.explanation {
        let _ = writeln!(w, "why: {why}");
    }
    let _ = writeln!(w);
    let patched_subject = h.patch_subject.as_deref().or(h.patched.subject.as_deref());
    match patched_subject {
        // A calibration boots the base on both sides: no commit to name
        // beyond its `base:` line.
        _ if h.is_calibration() => {}
        Some(s) => {
            let _ = writeln!(w, "commit: {} (\"{s}\")", h.patched.id);
        }
        None => {
            let _ = writeln!(w, "commit: {}", h.patched.id);
        }
    }
    // A patch is named by its subject line below; anything else by what
    // it is: `series: [PATCH v2 0/3] …`, `range: A..B (5 commits)`.
    if let Some(n) = h.name.as_ref().filter(|n| n.kind != NameKind::Patch) {
        let _ = writeln!(w, "{}: {}", n.kind.as_str(), n.text);
    }
    if let Some(base) = &h.base_source {
        let _ = writeln!(w, "base: {base}");
    }
    if let Some(s) = &h.patch_subject {
        let _ = writeln!(w, "patch subject: {s}");
    }
    if let Some(url) = &h.report_url {
        let _ = writeln!(w, "report: {url}");
    }
    let _ = writeln!(w, "\ntestcase: will-it-scale");
    match &h.machine_description {
        Some(d) => {
            let _ = writeln!(w, "test machine: {}: {d}", h.machine);
        }
        None => {
            let _ = writeln!(w, "test machine: {}", h.machine);
        }
    }
    let _ = writeln!(w, "parameters:\n");
    let _ = writeln!(w, "\tnr_task: {}", nr_task(c));
    let _ = writeln!(w, "\tmode: {}", h.mode.as_str());
    let _ = writeln!(w, "\ttest: {}", h.workload);
    let _ = writeln!(w);
    if let Some(m) = h.measurement {
        let _ = writeln!(w, "measurement: {}: {}", m.as_str(), m.explanation());
    }
    if let Some(layout) = &h.code_layout {
        let _ = writeln!(w, "{layout}");
    }
    if let Some(e) = &h.profile_event {
        let _ = writeln!(w, "perf-profile sampled on: {e}");
    }
    if let Some(line) = pipeline_line(c) {
        let _ = writeln!(w, "{line}");
    }
    let _ = writeln!(
        w,
        "runs: {} base, {} patched ({}{}{})\n",
        c.base_runs,
        c.patched_runs,
        boots_of(h),
        runs_added(h),
        looks_line(c)
    );
    let _ = writeln!(w, "{}", "=".repeat(89));
    let (keys, values) = axes(c);
    let _ = writeln!(w, "{}:\n  {}\n", keys.join("/"), values.join("/"));
    out.push_str(&table(c, opts));
    let rows = selected_rows(c, opts);
    let legend = legend(&rows) + &unsupported_line(c, &rows);
    if !legend.is_empty() {
        out.push('\n');
        out.push_str(&legend);
    }
    let unsupported = c
        .metrics
        .iter()
        .filter(|m| unsupported_on_both_sides(m) && !rows.iter().any(|r| r.name == m.name))
        .count();
    let hidden = c.metrics.len() - rows.len() - unsupported;
    if hidden > 0 {
        let _ = writeln!(
            out,
            "\n({hidden} more metrics changed by neither rule are not shown)"
        );
    }
    out.push('\n');
    out.push_str(&verdicts(c, &rows));
    if !c.warnings.is_empty() {
        out.push_str("\nwarnings:\n");
        for warning in &c.warnings {
            let _ = writeln!(out, "  {warning}");
        }
    }
    out
}

/// "patchperf noticed a 49.5% improvement of will-it-scale.per_process_ops on:"
/// — the first line of the email, as 0-day words it, and what we say when
/// the runs show no change or cannot decide yet; an A/A calibration's
/// names it and says the noise floor it measured instead.
pub fn summary_line(c: &Comparison) -> String {
    if c.header.is_calibration() {
        return super::summary::calibration_line(c);
    }
    let Some(m) = c.headline_metric() else {
        return "patchperf has no will-it-scale results yet on:".into();
    };
    let name = &m.name;
    let change = m.change.map(|v| format!("{v:+.1}%"));
    match (m.verdict, m.change) {
        (Verdict::Improvement, Some(v)) => {
            format!(
                "patchperf noticed a {:.1}% improvement of {name} on:",
                v.abs()
            )
        }
        (Verdict::Regression, Some(v)) => {
            format!("patchperf noticed a {v:.1}% regression of {name} on:")
        }
        (Verdict::NoChange, _) if m.real_below_delta => format!(
            "patchperf noticed {} of {name}, {}, on:",
            change.unwrap_or_default(),
            super::summary::below_delta(c, m).unwrap_or_default()
        ),
        (Verdict::NoChange, _) => format!(
            "patchperf noticed no change of {name} ({}, {}) on:",
            change.unwrap_or_default(),
            m.reason
        ),
        _ => match change {
            Some(ch) => format!(
                "patchperf cannot decide yet whether {name} changes ({ch}: {}) on:",
                m.reason
            ),
            None => format!("patchperf cannot decide yet on {name} ({}) on:", m.reason),
        },
    }
}

/// [`summary_line`] as a sentence of its own, for a page that shows the
/// kernels elsewhere: without 0-day's "on:" (which leads to the commit
/// lines) and the comma that stood before it.
pub fn summary_sentence(c: &Comparison) -> String {
    let line = summary_line(c);
    let words = line.strip_suffix(" on:").unwrap_or(&line);
    format!("{}.", words.trim_end_matches(','))
}

/// The commit block and the table, byte for byte in 0-day's layout.
pub fn table(c: &Comparison, opts: &TextOptions) -> String {
    let h = &c.header;
    let mut out = String::new();
    out.push_str("commit: \n");
    for k in [&h.base, &h.patched] {
        out.push_str(&commit_line(k));
    }
    out.push('\n');
    let first = ABS_WIDTH + ERR_WIDTH;
    let width = first + REL_WIDTH + 1;
    let _ = writeln!(
        out,
        "{:>first$} {:>width$} ",
        column_label(&h.base.id, first),
        column_label(&h.patched.id, width)
    );
    let _ = writeln!(out, "{} {} ", "-".repeat(first), "-".repeat(width));
    out.push_str("         %stddev     %change         %stddev\n");
    out.push_str("             \\          |                \\  \n");
    for m in selected_rows(c, opts) {
        out.push_str(&row(m));
        out.push('\n');
    }
    out
}

/// The rows the table shows, in 0-day's order.
pub fn selected_rows<'a>(c: &'a Comparison, opts: &TextOptions) -> Vec<&'a MetricComparison> {
    let mut rows: Vec<&MetricComparison> = c
        .metrics
        .iter()
        .filter(|m| {
            opts.all_rows
                || (!unsupported_on_both_sides(m)
                    && (m.name.starts_with("will-it-scale.")
                        || m.verdict.is_change()
                        || m.zero_day.is_some_and(|z| z.changed)
                        || m.base.presence != Presence::Measured
                        || m.patched.presence != Presence::Measured))
        })
        .collect();
    // The order depends on which rows are shown (family sizes), so sort again.
    sort_rows(&mut rows);
    rows
}

/// `; look 2 of 3: 98.75% intervals and q ≤ 0.0125, the level spent over
/// the looks`, or nothing for a comparison with one look.
pub fn looks_line(c: &Comparison) -> String {
    match c.header.looks {
        Some([look, of]) if of > 1 => format!(
            "; look {look} of at most {of}: {} intervals and q ≤ {}, the 5% level spent over \
             the looks",
            c.policy.interval_label(),
            crate::stats::looks::level_label(c.policy.fdr)
        ),
        _ => String::new(),
    }
}

/// Where the boots came from: `boots interleaved`, or for a whole series
/// taken from its steps `step 1's base boots and step 3's patched boots,
/// each interleaved within its step`.
pub fn boots_of(h: &ReportHeader) -> String {
    match h.runs_from_steps {
        Some([base, patched]) => format!(
            "step {base}'s base boots and step {patched}'s patched boots, each interleaved \
             within its step"
        ),
        None => "boots interleaved".to_string(),
    }
}

/// `; more added while undecided: 3 → 6 → 12 a side`, or nothing.
pub fn runs_added(h: &ReportHeader) -> String {
    if h.runs_steps.len() < 2 {
        return String::new();
    }
    let steps: Vec<String> = h.runs_steps.iter().map(u32::to_string).collect();
    format!("; more added while undecided: {} a side", steps.join(" → "))
}

/// `kernels: build 440.8 s base, 19.5 s patched; boot 5.06 s base, 4.64 s
/// patched; bzImage 4.1 MB base, 4.1 MB patched`: what the pipeline did,
/// for the reader's information (cached and incremental builds make these
/// no measure of the patch).
pub fn pipeline_line(c: &Comparison) -> Option<String> {
    let fact = |name: &str, fmt: &dyn Fn(f64) -> String| {
        let f = c.pipeline.iter().find(|f| f.name == name)?;
        let side = |v: Option<f64>, label: &str| v.map(|v| format!("{} {label}", fmt(v)));
        let parts: Vec<String> = [side(f.base, "base"), side(f.patched, "patched")]
            .into_iter()
            .flatten()
            .collect();
        (!parts.is_empty()).then(|| parts.join(", "))
    };
    let parts: Vec<String> = [
        fact(crate::metric::KERNEL_BUILD_SECONDS, &|v| {
            format!("{v:.1} s")
        })
        .map(|s| format!("build {s}")),
        fact(crate::metric::KERNEL_BOOT_SECONDS, &|v| format!("{v:.2} s"))
            .map(|s| format!("boot {s}")),
        fact(crate::metric::KERNEL_IMAGE_BYTES, &|v| {
            format!("{:.2} MB", v / 1e6)
        })
        .map(|s| format!("bzImage {s}")),
    ]
    .into_iter()
    .flatten()
    .collect();
    (!parts.is_empty()).then(|| format!("kernels: {}", parts.join("; ")))
}

/// A metric this machine cannot count at all (a hardware event on a VM
/// without a PMU): one line under the table says so instead of a row of
/// `n/s` on both sides for each such metric.
fn unsupported_on_both_sides(m: &MetricComparison) -> bool {
    m.base.presence == Presence::Unsupported && m.patched.presence == Presence::Unsupported
}

/// `not counted on this machine (…): cycles, instructions (12 metrics)`, or
/// nothing when every metric could be counted.
pub fn unsupported_line(c: &Comparison, shown: &[&MetricComparison]) -> String {
    let names: Vec<&str> = c
        .metrics
        .iter()
        .filter(|m| unsupported_on_both_sides(m) && !shown.iter().any(|s| s.name == m.name))
        .map(|m| m.name.as_str())
        .collect();
    if names.is_empty() {
        return String::new();
    }
    // Name the perf events when the metrics come from perf stat: every
    // perf-stat.* metric of an event that cannot be counted is missing.
    let mut events: Vec<&str> = names
        .iter()
        .filter_map(|n| {
            ["perf-stat.total.", "perf-stat.ps.", "perf-stat.i."]
                .iter()
                .find_map(|prefix| n.strip_prefix(prefix))
        })
        .filter(|e| !matches!(*e, "ipc" | "cpi" | "path-length") && !e.ends_with('%'))
        .collect();
    events.sort_unstable();
    events.dedup();
    let what = if events.is_empty() {
        names.join(", ")
    } else {
        format!("perf events {}", events.join(", "))
    };
    let count = match names.len() {
        1 => "1 metric".to_string(),
        n => format!("{n} metrics"),
    };
    format!(
        "  not countable on this machine (perf's <not supported>; never shown as 0): {what} \
         ({count})\n"
    )
}

/// One table row: `   3436082            +1.2%    3477810        will-it-scale.per_process_ops`.
pub fn row(m: &MetricComparison) -> String {
    let mut s = side(&m.base);
    s.push_str(&match m.change {
        Some(v) => change_column(v, m.unit == ChangeUnit::Points),
        None if m.base.mean.is_some() && m.patched.mean.is_some() => {
            format!("{:>REL_WIDTH$}% ", "n/a")
        }
        None => " ".repeat(REL_WIDTH + 2),
    });
    s.push_str(&side(&m.patched));
    s.push_str("  ");
    s.push_str(&m.name);
    s
}

fn side(s: &SideStats) -> String {
    match (s.presence, s.mean) {
        (Presence::Measured, Some(mean)) => {
            format!(
                "{}{}",
                mean_column(mean),
                stddev_column(shown_stddev_percent(&s.values))
            )
        }
        (Presence::Unsupported, _) => format!("{:>ABS_WIDTH$}{}", "n/s", " ".repeat(ERR_WIDTH)),
        _ => format!("{:>ABS_WIDTH$}{}", "-", " ".repeat(ERR_WIDTH)),
    }
}

fn commit_line(k: &KernelLabel) -> String {
    let id = abbreviate(&k.id);
    match &k.subject {
        Some(s) => format!("  {id} (\"{s}\")\n"),
        None => format!("  {id}\n"),
    }
}

/// Commit ids shorten to 10 hex digits like 0-day's commit block; other
/// labels (tarball names) stay whole.
fn abbreviate(id: &str) -> &str {
    if id.len() > 10 && id.bytes().all(|b| b.is_ascii_hexdigit()) {
        &id[..10]
    } else {
        id
    }
}

/// A kernel's name over its column, in `width` characters: whole when it
/// fits; else without its repository (`linux-069e….git b67165085bbd+patch
/// 1` → `b67165085bbd+patch 1`), then only what the side adds to the base
/// (`+patches 1..2`); cut when nothing shorter names it, a commit id as
/// 0-day cuts it and anything else marked `…`. The commit lines above the
/// table name each kernel whole.
fn column_label(id: &str, width: usize) -> String {
    let fits = |s: &str| s.chars().count() <= width;
    // The repository is what comes before the first space, unless that
    // space is in what the side adds (`+patches 1..2`).
    let plus = id.find('+');
    let without_repository = match id.find(' ') {
        Some(space) if plus.is_none_or(|p| space < p) => &id[space + 1..],
        _ => id,
    };
    let added = plus.map(|at| &id[at..]);
    for label in [Some(id), Some(without_repository), added]
        .into_iter()
        .flatten()
    {
        if fits(label) {
            return label.to_string();
        }
    }
    // A commit id is cut as 0-day cuts it: what is left is still a
    // prefix that names the commit.
    if id.chars().all(|c| c.is_ascii_hexdigit()) {
        return id.chars().take(width).collect();
    }
    let mut cut: String = id.chars().take(width.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

fn nr_task(c: &Comparison) -> String {
    c.header
        .nr_task_requested
        .clone()
        .unwrap_or_else(|| c.header.nr_task.to_string())
}

/// 0-day's axes block: `compiler/…/testcase:` and the values.
fn axes(c: &Comparison) -> (Vec<&'static str>, Vec<String>) {
    let h = &c.header;
    let mut keys = Vec::new();
    let mut values = Vec::new();
    if let Some(compiler) = &h.compiler {
        keys.push("compiler");
        values.push(compiler_short(compiler));
    }
    if let Some(config) = &h.config {
        keys.push("kconfig");
        values.push(config.clone());
    }
    if let Some(m) = h.measurement {
        keys.push("measurement");
        values.push(m.as_str().to_string());
    }
    keys.extend(["mode", "nr_task", "tbox_group", "test", "testcase"]);
    values.extend([
        h.mode.as_str().to_string(),
        nr_task(c),
        h.machine.clone(),
        h.workload.clone(),
        "will-it-scale".to_string(),
    ]);
    (keys, values)
}

/// `gcc (Debian 12.2.0-14) 12.2.0` → `gcc-12`, as 0-day names compilers.
pub fn compiler_short(version_line: &str) -> String {
    let name = if version_line.contains("clang") {
        "clang"
    } else if version_line.contains("gcc") {
        "gcc"
    } else {
        return version_line.split_whitespace().next().unwrap_or("").into();
    };
    let major = version_line
        .split_whitespace()
        .rev()
        .find(|t| t.starts_with(|c: char| c.is_ascii_digit()))
        .and_then(|t| t.split('.').next());
    match major {
        Some(m) => format!("{name}-{m}"),
        None => name.into(),
    }
}

fn legend(rows: &[&MetricComparison]) -> String {
    let mut out = String::new();
    let any = |p: Presence| {
        rows.iter()
            .any(|m| m.base.presence == p || m.patched.presence == p)
    };
    if any(Presence::Absent) {
        out.push_str("  -: no value on this side\n");
    }
    if any(Presence::Unsupported) {
        out.push_str("  n/s: not supported on this machine (perf's <not supported>), never 0\n");
    }
    out
}

/// The verdict lines: the headline metric always, then every shown row our
/// rule calls a real change.
fn verdicts(c: &Comparison, rows: &[&MetricComparison]) -> String {
    let p = &c.policy;
    let mut out = format!(
        "patchperf verdicts ({} Fieller interval of the change, Welch's t-test, \
         Benjamini–Hochberg q over {} metrics;\nchanges under {}% ({} points for \
         percentages) do not count):\n",
        p.interval_label(),
        c.tested_metrics(),
        crate::stats::verdict::delta_text(p.threshold(ChangeUnit::Percent)),
        crate::stats::verdict::delta_text(p.threshold(ChangeUnit::Points)),
    );
    if let Some(source) = &c.header.delta_source {
        out.push_str(&format!("  ({source})\n"));
    }
    let headline = c.headline_metric();
    let mut listed = Vec::new();
    if let Some(h) = headline {
        listed.push(h);
    }
    for m in rows {
        if m.verdict.is_change() && !listed.iter().any(|l| l.name == m.name) {
            listed.push(m);
        }
    }
    if listed.is_empty() {
        out.push_str("  none\n");
    }
    for m in listed {
        out.push_str(&verdict_line(m));
        out.push('\n');
    }
    out
}

/// `  improvement  will-it-scale.per_process_ops  +1.2%: 95% CI … (Welch p = …)`
pub fn verdict_line(m: &MetricComparison) -> String {
    let change = match (m.change, m.unit) {
        (Some(v), ChangeUnit::Percent) => format!("{v:+.1}%"),
        (Some(v), ChangeUnit::Points) => format!("{v:+.2} points"),
        (None, _) => "n/a".into(),
    };
    let mut tests = Vec::new();
    if let Some(w) = m.welch {
        tests.push(format!("Welch p = {}", fmt_p(w.p)));
    }
    if let Some(mw) = m.mann_whitney {
        tests.push(format!("Mann–Whitney p = {}", fmt_p(mw.p)));
    }
    tests.push(match m.zero_day {
        Some(z) if z.changed => "0-day's rule: changed".into(),
        Some(_) => "0-day's rule: unchanged".into(),
        None => "0-day's rule: not judged".into(),
    });
    if let Some(Interval::Unbounded) = m.interval {
        tests.push("interval unbounded".into());
    }
    format!(
        "  {:<12} {}  {change}: {} ({})",
        m.verdict_words(),
        m.name,
        m.reason,
        tests.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::test_runs::{compare, run};

    #[test]
    fn a_kernel_is_named_over_its_column_without_being_cut() {
        // The base column is 16 wide, the patched one 27.
        for (id, width, label) in [
            ("linux-source-6.1", 16, "linux-source-6.1"),
            (
                "linux-source-6.1+3f2a9c1d0e",
                27,
                "linux-source-6.1+3f2a9c1d0e",
            ),
            ("linux-source-6.1+patch 1", 16, "+patch 1"),
            ("linux-source-6.1+patches 1..2", 27, "+patches 1..2"),
            ("linux-069e….git b67165085bbd", 16, "b67165085bbd"),
            (
                "linux-069e….git b67165085bbd+patches 1..2",
                27,
                "b67165085bbd+patches 1..2",
            ),
            ("linux-069e….git b67165085bbd+patch 1", 16, "+patch 1"),
            (
                "a-very-long-base-name-without-parts",
                16,
                "a-very-long-bas…",
            ),
            (
                "f1139c8e66d5c618aad04a93a2381d9e9b4ff8ad",
                27,
                "f1139c8e66d5c618aad04a93a23",
            ),
        ] {
            assert_eq!(column_label(id, width), label, "{id}");
            assert!(label.chars().count() <= width);
        }
    }

    const OPS: &str = "will-it-scale.per_process_ops";

    fn comparison(base: &[f64], patched: &[f64]) -> Comparison {
        let b: Vec<_> = base.iter().map(|&v| run(&[(OPS, v)])).collect();
        let p: Vec<_> = patched.iter().map(|&v| run(&[(OPS, v)])).collect();
        compare("qemu-tcg", &b, &p)
    }

    #[test]
    fn the_headline_says_improvement_or_regression_like_0day() {
        // 1000 → 1495: +49.5%; constant runs differ exactly (p = 0)
        let c = comparison(&[1000.0; 3], &[1495.0; 3]);
        assert_eq!(
            summary_line(&c),
            "patchperf noticed a 49.5% improvement of will-it-scale.per_process_ops on:"
        );
        let c = comparison(&[1000.0; 3], &[948.0; 3]);
        assert_eq!(
            summary_line(&c),
            "patchperf noticed a -5.2% regression of will-it-scale.per_process_ops on:"
        );
    }

    #[test]
    fn the_headline_admits_no_change_and_indecision() {
        let c = comparison(&[1000.0; 3], &[1000.0; 3]);
        assert_eq!(
            summary_line(&c),
            "patchperf noticed no change of will-it-scale.per_process_ops (+0.0%, 95% CI \
             +0.00% … +0.00% lies within ±1%) on:"
        );
        // means 1005 and 1095: 90/1005 = 8.955% → +9.0%
        let c = comparison(&[1000.0, 1010.0], &[1100.0, 1090.0]);
        assert_eq!(
            summary_line(&c),
            "patchperf cannot decide yet whether will-it-scale.per_process_ops changes \
             (+9.0%: too few runs (2 base, 2 patched; 3 a side needed)) on:"
        );
        // Real, but within δ: said as it is, not as "no change".
        let c = comparison(&[999.9, 1000.0, 1000.1], &[996.9, 997.0, 997.1]);
        let m = c.headline_metric().unwrap();
        assert!(m.real_below_delta, "{m:?}");
        let q = fmt_p(m.q.unwrap());
        assert_eq!(
            summary_line(&c),
            format!(
                "patchperf noticed -0.3% of will-it-scale.per_process_ops, real (q {q}) but \
                 below the default δ of 1%, on:"
            )
        );
        let text = render(&c, &TextOptions::default());
        assert!(
            text.contains(&format!(
                "  real, below δ will-it-scale.per_process_ops  -0.3%: real (q {q}) but below \
                 the default δ of 1%: 95% CI -0.32% … -0.28% lies within ±1% (Welch p"
            )),
            "{text}"
        );
        assert_eq!(
            summary_sentence(&c),
            format!(
                "patchperf noticed -0.3% of will-it-scale.per_process_ops, real (q {q}) but \
                 below the default δ of 1%."
            )
        );
        let empty = comparison(&[], &[]);
        assert_eq!(
            summary_sentence(&empty),
            "patchperf has no will-it-scale results yet."
        );
        assert_eq!(
            summary_line(&empty),
            "patchperf has no will-it-scale results yet on:"
        );
    }

    #[test]
    fn missing_and_unsupported_sides_are_marked_not_zero() {
        let mut b = run(&[(OPS, 1000.0), ("perf-stat.ps.page-faults", 3.5)]);
        b.unsupported.push("perf-stat.ps.cycles".into());
        let p = run(&[(OPS, 1000.0)]);
        let (b, p) = (vec![b], vec![p]);
        let c = compare("m", &b, &p);
        // mean (10) + blank spread (6) + blank change (12) + `-` right-aligned
        // in 10 + blank spread (6) + 2 before the name
        let faults = row(c.metric("perf-stat.ps.page-faults").unwrap());
        assert_eq!(
            faults,
            "      3.50                           -        perf-stat.ps.page-faults"
        );
        let cycles = row(c.metric("perf-stat.ps.cycles").unwrap());
        assert_eq!(
            cycles,
            "       n/s                           -        perf-stat.ps.cycles"
        );
        let text = render(&c, &TextOptions::default());
        assert!(text.contains("  -: no value on this side\n"));
        assert!(text.contains("  n/s: not supported on this machine"));
    }

    #[test]
    fn the_header_says_how_long_the_kernels_took_to_build_and_boot() {
        let b = run(&[
            (OPS, 1000.0),
            ("kernel.build_seconds", 440.82),
            ("kernel.boot_seconds", 5.06),
            ("kernel.image_bytes", 4_088_832.0),
        ]);
        let p = run(&[
            (OPS, 1000.0),
            ("kernel.build_seconds", 19.46),
            ("kernel.boot_seconds", 4.64),
        ]);
        let (b, p) = (vec![b], vec![p]);
        let c = compare("m", &b, &p);
        let text = render(&c, &TextOptions::default());
        assert!(
            text.contains(
                "kernels: build 440.8 s base, 19.5 s patched; boot 5.06 s base, 4.64 s patched; \
                 bzImage 4.09 MB base\n"
            ),
            "{text}"
        );
        assert!(!text.contains("  kernel.build_seconds"), "{text}");
    }

    #[test]
    fn metrics_no_side_could_count_are_named_under_the_table_not_as_rows() {
        let mk = |ops: f64| {
            let mut r = run(&[(OPS, ops)]);
            r.unsupported = vec![
                "perf-stat.total.cycles".into(),
                "perf-stat.ps.cycles".into(),
                "perf-stat.total.instructions".into(),
                "perf-stat.overall.ipc".into(),
            ];
            r
        };
        let (b, p) = (vec![mk(1000.0)], vec![mk(1100.0)]);
        let c = compare("m", &b, &p);
        let text = render(&c, &TextOptions::default());
        assert!(!text.contains("perf-stat.ps.cycles\n"), "{text}");
        assert!(!text.contains("n/s"), "{text}");
        assert!(
            text.contains(
                "  not countable on this machine (perf's <not supported>; never shown as 0): \
                 perf events cycles, instructions (4 metrics)\n"
            ),
            "{text}"
        );
        // Every row asked for still shows them, marked.
        let all = render(&c, &TextOptions { all_rows: true });
        assert!(all.contains("n/s"), "{all}");
        assert!(!all.contains("not countable on this machine"), "{all}");
    }

    #[test]
    fn unchanged_metrics_are_hidden_unless_all_rows_are_asked_for() {
        let mk = |ops: f64, cpi: f64| run(&[(OPS, ops), ("perf-stat.i.cpi", cpi)]);
        let b = vec![mk(1000.0, 1.0), mk(1001.0, 1.1), mk(999.0, 0.9)];
        let p = vec![mk(1000.0, 1.0), mk(1001.0, 1.1), mk(999.0, 0.9)];
        let c = compare("m", &b, &p);
        let default = table(&c, &TextOptions::default());
        assert!(default.contains(OPS) && !default.contains("perf-stat.i.cpi"));
        let all = table(&c, &TextOptions { all_rows: true });
        assert!(all.contains("perf-stat.i.cpi"));
        assert!(render(&c, &TextOptions::default()).contains("(1 more metrics changed"));
    }

    #[test]
    fn the_full_report_has_0days_blocks_and_our_verdicts() {
        let c = comparison(&[1000.0, 1002.0, 998.0], &[1100.0, 1102.0, 1098.0]);
        let text = render(&c, &TextOptions::default());
        let expected_start = "\
patchperf noticed a 10.0% improvement of will-it-scale.per_process_ops on:

+10.0% of will-it-scale.per_process_ops on dup1 · process · nr_task 2 (95% interval +9.52% … \
+10.48%, q 4.3e-7; 3 and 3 runs, tcg-icount; changes under 1.00% count as none: default)
why: dup1 +10.0%: 9.1% fewer instructions per dup(2) + close(2) (tcg-icount: guest time counts \
instructions); no profile to say where

commit: patched

testcase: will-it-scale
test machine: qemu-tcg
parameters:

\tnr_task: 2
\tmode: process
\ttest: dup1

measurement: tcg-icount: measured in QEMU TCG guests with -icount shift=0: guest time counts \
instructions, so ops/s reflects path length, not cycles, cache misses or atomics; the guest has \
one CPU, so nr_task > 1 tasks take turns on it and contention between CPUs (locks, shared cache \
lines) is not measured
runs: 3 base, 3 patched (boots interleaved)

=========================================================================================
measurement/mode/nr_task/tbox_group/test/testcase:
  tcg-icount/process/2/qemu-tcg/dup1/will-it-scale

commit: 
  base
  patched

            base                     patched 
---------------- --------------------------- 
         %stddev     %change         %stddev
             \\          |                \\  
      1000           +10.0%       1100        will-it-scale.per_process_ops
";
        assert!(text.starts_with(expected_start), "{text}");
        // Welch: se = √(4/3 + 4/3) = 1.633, t = 100/1.633 = 61.24, df 4, p = 4.26e-7.
        // Fieller: r = 1.1, df = (1.21·4/3 + 4/3)² / ((1.21·4/3)²/2 + (4/3)²/2) = 3.964,
        // t* = 2.78636, a = 10⁶ − t*²·4/3, D = t*²(4/3·a + 1100²·4/3)
        // → ρ = (1.1·10⁶ ∓ √D)/a = 1.095228, 1.104794 → +9.52% … +10.48%
        assert!(
            text.contains(
                "  improvement  will-it-scale.per_process_ops  +10.0%: 95% CI +9.52% … +10.48% \
             excludes 0, q = 4.3e-7 (Welch p = 4.3e-7, "
            ),
            "{text}"
        );
        assert!(
            text.contains("Mann–Whitney p = 0.1, 0-day's rule: changed)"),
            "{text}"
        );
    }

    #[test]
    fn compilers_are_named_as_0day_names_them() {
        assert_eq!(compiler_short("gcc (Debian 12.2.0-14) 12.2.0"), "gcc-12");
        assert_eq!(compiler_short("Debian clang version 14.0.6"), "clang-14");
    }
}
