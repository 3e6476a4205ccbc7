//! SVG plots of a report, drawn with plotters' SVG backend into a string
//! (no files, no system fonts: text is laid out by plotters' estimate and
//! rendered by the browser). plotters escapes the text it writes, so metric
//! names from uploads cannot inject markup. Every plot names its unit on
//! the value axis, keeps its legend outside the data, and carries a
//! `<title>` and a `<desc>` saying in words what it shows.

use patchperf_common::limits::MAX_VALUE;
use patchperf_common::metric;
use patchperf_common::report::MetricComparison;
use patchperf_common::run::Side;
use patchperf_common::stats::interval::ends_text;
use patchperf_common::stats::verdict::delta_text;
use patchperf_common::stats::{ChangeUnit, Interval, VerdictPolicy};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Colour of the base kernel's marks.
const BASE: RGBColor = RGBColor(31, 119, 180);
/// Colour of the patched kernel's marks.
const PATCHED: RGBColor = RGBColor(214, 39, 40);

/// The height of a plot's smaller text (axis labels and names, legends,
/// notes), in pixels: what a person reads without leaning in.
pub(crate) const TEXT_PX: f64 = 12.0;

/// A sans-serif font whose text is `px` pixels high in the SVG. plotters'
/// SVG backend writes a font's size divided by 1.24 (its guess of a
/// glyph's height from a size in points), so that much more is asked for.
pub(crate) fn font(px: f64) -> FontDesc<'static> {
    ("sans-serif", px * 1.24).into_font()
}

pub(super) fn side_colour(side: Side) -> RGBColor {
    match side {
        Side::Base => BASE,
        Side::Patched => PATCHED,
    }
}

/// The value axis of a plot: the range of the finite `values`, with a
/// margin; `None` when there is none.
///
/// plotters looks for an axis' key points by stepping through the range;
/// over an infinite range, or one no wider than a few spacings of `f64`
/// near its values, that search never ends. So values are clamped to what
/// a run may carry ([`MAX_VALUE`]: rows stored before uploads were bounded
/// can hold more), and a range narrower than a billionth of its magnitude
/// is widened by 1% of it, as a single value's is.
pub(crate) fn axis(values: impl IntoIterator<Item = f64>) -> Option<(f64, f64)> {
    let (lo, hi) = values
        .into_iter()
        .filter(|v| v.is_finite())
        .map(|v| v.clamp(-MAX_VALUE, MAX_VALUE))
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    if lo > hi {
        return None;
    }
    let magnitude = lo.abs().max(hi.abs());
    let span = hi - lo;
    let pad = if span > (magnitude * 1e-9).max(1e-12) {
        span * 0.15
    } else {
        magnitude.max(1.0) * 0.01
    };
    Some((lo - pad, hi + pad))
}

/// `v` drawn within the axis `(lo, hi)`; `None` for a value that is not a
/// number.
pub(crate) fn on_axis(v: f64, (lo, hi): (f64, f64)) -> Option<f64> {
    (!v.is_nan()).then(|| v.clamp(lo, hi))
}

/// Per-run dots of one metric: base on the left, patched on the right, each
/// side's mean as a bar, and the interval of the change (at the confidence
/// `policy` judged with, `95%`) drawn on the
/// patched side as the range where the patched mean plausibly lies relative
/// to the base mean, labelled with the change. Behind them a grey band
/// spans the base mean ± δ: a patched mean inside it is a change the
/// verdict counts as none, however far apart the dots look, and the axis
/// always takes the band in, so a small real change is drawn as small as
/// it is. `None` when neither side has values.
pub fn runs_plot(m: &MetricComparison, policy: &VerdictPolicy) -> Option<String> {
    let confidence = policy.interval_label();
    let around_base = |low: f64, high: f64| {
        let base = m.base.mean?;
        let (a, b) = match m.unit {
            ChangeUnit::Percent => (base * (1.0 + low / 100.0), base * (1.0 + high / 100.0)),
            ChangeUnit::Points => (base + low, base + high),
        };
        (a.is_finite() && b.is_finite()).then_some((a, b))
    };
    let interval = match m.interval {
        Some(Interval::Bounded { low, high }) => around_base(low, high),
        _ => None,
    };
    let delta = policy.threshold(m.unit);
    let band = around_base(-delta, delta);
    let values = m.base.values.iter().chain(&m.patched.values).copied();
    let (lo, hi) = axis(values.chain(interval.into_iter().chain(band).flat_map(|(a, b)| [a, b])))?;
    let change = change_label(m, &confidence);
    let delta_label = format!("±δ {}{}", delta_text(delta), m.unit.suffix());
    let (width, height) = (480, 280);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        root.fill(&WHITE).ok()?;
        let mut chart = frame(&root, &m.name, width, 24, false)
            .build_cartesian_2d(0.0f64..2.0f64, lo..hi)
            .ok()?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .light_line_style(TRANSPARENT)
            .x_labels(0)
            .y_labels(6)
            .y_desc(metric::unit(&m.name))
            .y_label_formatter(&|v| short_number(*v))
            .label_style(font(TEXT_PX))
            .axis_desc_style(font(TEXT_PX))
            .draw()
            .ok()?;
        if let Some((a, b)) = band.map(|(a, b)| (a.clamp(lo, hi), b.clamp(lo, hi))) {
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(0.0, a), (2.0, b)],
                    BLACK.mix(0.08).filled(),
                )))
                .ok()?;
            chart
                .draw_series(std::iter::once(Text::new(
                    delta_label.clone(),
                    (0.03, b),
                    font(TEXT_PX)
                        .color(&BLACK.mix(0.6))
                        .pos(Pos::new(HPos::Left, VPos::Bottom)),
                )))
                .ok()?;
        }
        for (side, centre, values, mean) in [
            (Side::Base, 0.5, &m.base.values, m.base.mean),
            (Side::Patched, 1.5, &m.patched.values, m.patched.mean),
        ] {
            let colour = side_colour(side);
            let n = values.len().max(1) as f64;
            chart
                .draw_series(values.iter().enumerate().filter_map(|(i, &v)| {
                    // spread the dots sideways so equal values stay visible
                    let x = centre - 0.25 + 0.5 * (i as f64 + 0.5) / n;
                    Some(Circle::new((x, on_axis(v, (lo, hi))?), 4, colour.filled()))
                }))
                .ok()?;
            if let Some(mean) = mean.and_then(|v| on_axis(v, (lo, hi))) {
                chart
                    .draw_series(std::iter::once(PathElement::new(
                        vec![(centre - 0.3, mean), (centre + 0.3, mean)],
                        colour.stroke_width(2),
                    )))
                    .ok()?;
            }
            chart
                .draw_series(std::iter::once(Text::new(
                    format!("{} ({} runs)", side.as_str(), values.len()),
                    (centre - 0.25, lo),
                    font(TEXT_PX)
                        .color(&colour)
                        .pos(Pos::new(HPos::Left, VPos::Bottom)),
                )))
                .ok()?;
        }
        if let Some((a, b)) = interval.map(|(a, b)| (a.clamp(lo, hi), b.clamp(lo, hi))) {
            let x = 1.88;
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(x, a), (x, b)],
                    PATCHED.stroke_width(3),
                )))
                .ok()?;
            for y in [a, b] {
                chart
                    .draw_series(std::iter::once(PathElement::new(
                        vec![(x - 0.05, y), (x + 0.05, y)],
                        PATCHED.stroke_width(2),
                    )))
                    .ok()?;
            }
        }
        if let Some(change) = &change {
            // In the top margin the axis leaves above the highest value.
            chart
                .draw_series(std::iter::once(Text::new(
                    change.clone(),
                    (1.97, hi),
                    font(TEXT_PX)
                        .color(&BLACK)
                        .pos(Pos::new(HPos::Right, VPos::Top)),
                )))
                .ok()?;
        }
        root.present().ok()?;
    }
    let desc = format!(
        "{} ({}): base {} runs, mean {}; patched {} runs, mean {}{}{}",
        m.name,
        unit_or_values(&m.name),
        m.base.values.len(),
        m.base.mean.map_or("none".into(), short_number),
        m.patched.values.len(),
        m.patched.mean.map_or("none".into(), short_number),
        change.map_or(String::new(), |c| format!("; {c}")),
        band.map_or(String::new(), |_| format!(
            "; the grey band is the base mean {delta_label}: a change inside it counts as none"
        )),
    );
    Some(described(svg, &m.name, &desc))
}

/// `change +4.80% [+4.78%, +4.82%]` (points for a metric that is itself a
/// percentage), when there is a change to tell.
fn change_label(m: &MetricComparison, confidence: &str) -> Option<String> {
    let change = m.change.filter(|c| c.is_finite())?;
    let unit = match m.unit {
        ChangeUnit::Percent => "%",
        ChangeUnit::Points => " points",
    };
    Some(match m.interval {
        Some(Interval::Bounded { low, high }) => {
            let (low, high) = ends_text(low, high, 2);
            format!("change {change:+.2}{unit}, {confidence} interval [{low}, {high}]")
        }
        _ => format!("change {change:+.2}{unit}"),
    })
}

/// The unit of a metric, or `values` where its name does not tell.
pub(super) fn unit_or_values(name: &str) -> &'static str {
    match metric::unit(name) {
        "" => "values",
        u => u,
    }
}

/// The caption's height in pixels: 13, smaller (down to [`TEXT_PX`]) for
/// a long name, so that it fits the plot's `width` (plotters centres a
/// caption and cuts what overflows at both ends).
fn caption_px(text: &str, width: u32) -> f64 {
    let chars = text.chars().count().max(1) as f64;
    // Sans-serif averages about 0.55 em a character.
    let fits = (f64::from(width) - 16.0) / (0.55 * chars);
    fits.floor().clamp(TEXT_PX, 13.0)
}

/// `text` as a caption of a plot `width` wide: whole when it fits at
/// [`TEXT_PX`], else its end behind an ellipsis (a metric's end names it;
/// the whole name is the plot's `<title>`).
fn fitted(text: &str, width: u32) -> String {
    let room = ((f64::from(width) - 16.0) / (0.55 * TEXT_PX)).floor() as usize;
    let chars = text.chars().count();
    if chars <= room {
        return text.to_string();
    }
    let tail: String = text.chars().skip(chars + 1 - room).collect();
    format!("…{tail}")
}

/// The base and patched colours, named, in the right margin of `root`
/// (outside the data) from pixel `(x, y)` down.
pub(super) fn side_legend(root: &DrawingArea<SVGBackend<'_>, Shift>, x: i32, y: i32) -> Option<()> {
    for (i, side) in [Side::Base, Side::Patched].into_iter().enumerate() {
        let colour = side_colour(side);
        let y = y + 18 * i as i32;
        root.draw(&PathElement::new(
            vec![(x, y), (x + 16, y)],
            colour.stroke_width(3),
        ))
        .ok()?;
        root.draw(&Text::new(
            side.as_str(),
            (x + 22, y),
            font(TEXT_PX)
                .color(&colour)
                .pos(Pos::new(HPos::Left, VPos::Center)),
        ))
        .ok()?;
    }
    Some(())
}

/// The builder of a report plot titled `title` on `root` (`width` wide):
/// the caption fitted to the width, the margins and the label areas all of
/// them share (`x_area` for the x labels), room for [`side_legend`] on the
/// right when `legend`.
pub(super) fn frame<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, Shift>,
    title: &str,
    width: u32,
    x_area: u32,
    legend: bool,
) -> ChartBuilder<'a, 'b, SVGBackend<'b>> {
    let mut builder = ChartBuilder::on(root);
    builder
        .caption(fitted(title, width), font(caption_px(title, width)))
        .margin(8)
        .x_label_area_size(x_area)
        .y_label_area_size(84);
    if legend {
        builder.margin_right(LEGEND_WIDTH);
    }
    builder
}

/// The right margin the base/patched legend takes, in pixels.
pub(super) const LEGEND_WIDTH: i32 = 90;

/// One nr_task of a scaling plot: both sides' means and δ in percent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScalingPoint {
    /// Tasks.
    pub nr_task: u32,
    /// The base kernel's mean.
    pub base: Option<f64>,
    /// The patched kernel's mean.
    pub patched: Option<f64>,
    /// δ of that report, in percent.
    pub delta_percent: f64,
}

/// Mean ops against nr_task for both kernels, when a comparison measured
/// several task counts, over a grey band of the base mean ± each report's
/// δ: where the patched curve leaves the band the change counts.
pub fn scaling_plot(name: &str, points: &[ScalingPoint]) -> Option<String> {
    if points.len() < 2 {
        return None;
    }
    // The task counts are categories, evenly spaced whatever their values
    // (1, 2, 4, 8 and not 0…8 with three points crowded at the left).
    let n = i32::try_from(points.len()).ok()?;
    let at = |i: usize| SegmentValue::CenterOf(i32::try_from(i).unwrap_or(i32::MAX));
    let tasks: Vec<u32> = points.iter().map(|p| p.nr_task).collect();
    let band: Vec<(SegmentValue<i32>, f64, f64)> = points
        .iter()
        .enumerate()
        .filter_map(|(i, p)| {
            let base = p.base?;
            let d = p.delta_percent / 100.0;
            let (a, b) = (base * (1.0 - d), base * (1.0 + d));
            (a.is_finite() && b.is_finite()).then_some((at(i), a, b))
        })
        .collect();
    let values = points.iter().flat_map(|p| [p.base, p.patched]).flatten();
    // No mean on either side: nothing to draw.
    values.clone().next()?;
    // From zero (below it only for negative values), so the curves show
    // how far from nothing they are.
    let (lo, hi) = axis(
        values
            .clone()
            .chain([0.0])
            .chain(band.iter().flat_map(|&(_, a, b)| [a, b])),
    )?;
    let lo = if values.clone().any(|v| v < 0.0) {
        lo
    } else {
        0.0
    };
    let (width, height) = (640, 300);
    let title = format!("{name} by nr_task");
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        root.fill(&WHITE).ok()?;
        let mut chart = frame(&root, &title, width, 36, true)
            .build_cartesian_2d((0..n).into_segmented(), lo..hi)
            .ok()?;
        chart
            .configure_mesh()
            .x_desc("nr_task")
            .x_labels(tasks.len())
            .x_label_formatter(&|v| match v {
                SegmentValue::CenterOf(i) => usize::try_from(*i)
                    .ok()
                    .and_then(|i| tasks.get(i))
                    .map_or_else(String::new, u32::to_string),
                _ => String::new(),
            })
            .y_desc(metric::unit(name))
            .light_line_style(TRANSPARENT)
            .y_label_formatter(&|v| short_number(*v))
            .label_style(font(TEXT_PX))
            .axis_desc_style(font(TEXT_PX))
            .draw()
            .ok()?;
        if band.len() >= 2 {
            // Upper edge left to right, lower edge back.
            let outline: Vec<(SegmentValue<i32>, f64)> = band
                .iter()
                .map(|(x, _, b)| (x.clone(), b.clamp(lo, hi)))
                .chain(
                    band.iter()
                        .rev()
                        .map(|(x, a, _)| (x.clone(), a.clamp(lo, hi))),
                )
                .collect();
            chart
                .draw_series(std::iter::once(Polygon::new(
                    outline,
                    BLACK.mix(0.08).filled(),
                )))
                .ok()?;
        }
        for (side, pick) in [(Side::Base, 0usize), (Side::Patched, 1usize)] {
            let colour = side_colour(side);
            let line: Vec<(SegmentValue<i32>, f64)> = points
                .iter()
                .enumerate()
                .filter_map(|(i, p)| {
                    let v = [p.base, p.patched][pick]?;
                    Some((at(i), on_axis(v, (lo, hi))?))
                })
                .collect();
            chart
                .draw_series(LineSeries::new(line.clone(), colour.stroke_width(2)))
                .ok()?;
            chart
                .draw_series(
                    line.into_iter()
                        .map(|xy| Circle::new(xy, 4, colour.filled())),
                )
                .ok()?;
        }
        side_legend(&root, width as i32 - LEGEND_WIDTH + 12, 40)?;
        root.present().ok()?;
    }
    let desc = format!(
        "{name} ({}), the mean of each side at each nr_task: {}{}",
        unit_or_values(name),
        points
            .iter()
            .map(|p| {
                let v = |m: Option<f64>| m.map_or("none".into(), short_number);
                format!(
                    "{} tasks base {} patched {} (δ {}%)",
                    p.nr_task,
                    v(p.base),
                    v(p.patched),
                    delta_text(p.delta_percent)
                )
            })
            .collect::<Vec<_>>()
            .join(", "),
        if band.len() >= 2 {
            "; the grey band is the base mean ± δ: a change inside it counts as none"
        } else {
            ""
        }
    );
    Some(described(svg, &title, &desc))
}

/// `svg` with `<title>` and `<desc>` as the first children of its root,
/// for screen readers and for a tooltip on the plot.
pub(crate) fn described(svg: String, title: &str, desc: &str) -> String {
    let Some(end) = svg
        .find("<svg")
        .and_then(|s| svg[s..].find('>').map(|e| s + e + 1))
    else {
        return svg;
    };
    format!(
        "{}\n<title>{}</title>\n<desc>{}</desc>{}",
        &svg[..end],
        escape(title),
        escape(desc),
        &svg[end..]
    )
}

/// Text as XML character data.
pub(crate) fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Axis labels: `3.4M`, `12k`, `0.93`.
pub(crate) fn short_number(v: f64) -> String {
    let a = v.abs();
    if a >= 1e9 {
        format!("{:.3}G", v / 1e9)
    } else if a >= 1e6 {
        format!("{:.3}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.1}k", v / 1e3)
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.3}")
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use patchperf_common::report::{Presence, SideStats};
    use patchperf_common::stats::{Verdict, mean};

    fn metric(name: &str, base: &[f64], patched: &[f64]) -> MetricComparison {
        let side = |v: &[f64]| SideStats {
            presence: Presence::Measured,
            values: v.to_vec(),
            mean: mean(v),
            stddev: None,
            stddev_percent: None,
        };
        MetricComparison {
            name: name.into(),
            direction: patchperf_common::metric::direction(name),
            unit: ChangeUnit::for_metric(name),
            base: side(base),
            patched: side(patched),
            change: Some(10.0),
            interval: Some(Interval::Bounded {
                low: 9.0,
                high: 11.0,
            }),
            welch: None,
            mann_whitney: None,
            q: None,
            zero_day: None,
            verdict: Verdict::Improvement,
            reason: String::new(),
            real_below_delta: false,
        }
    }

    fn policy() -> VerdictPolicy {
        VerdictPolicy::default()
    }

    fn point(nr_task: u32, base: Option<f64>, patched: Option<f64>) -> ScalingPoint {
        ScalingPoint {
            nr_task,
            base,
            patched,
            delta_percent: 1.0,
        }
    }

    /// The text of each `<text>` element, trimmed.
    pub(in super::super) fn texts(svg: &str) -> Vec<&str> {
        svg.split("<text")
            .skip(1)
            .filter_map(|t| Some(t.split_once('>')?.1.split_once("</text>")?.0.trim()))
            .collect()
    }

    #[test]
    fn runs_plot_draws_one_dot_per_run_and_escapes_the_name() {
        let m = metric(
            "will-it-scale.<script>alert(1)</script>",
            &[100.0, 101.0, 99.0],
            &[110.0, 111.0, 109.0],
        );
        let svg = runs_plot(&m, &policy()).unwrap();
        assert!(svg.starts_with("<svg"), "{svg}");
        assert_eq!(svg.matches("<circle").count(), 6);
        assert!(!svg.contains("<script>"));
        assert!(svg.contains("&lt;script&gt;"));
        assert!(svg.contains("base (3 runs)") && svg.contains("patched (3 runs)"));
        assert!(svg.contains("change +10.00%, 95% interval [+9.00, +11.00]"));
        assert!(svg.contains("<title>will-it-scale.&lt;script&gt;"), "{svg}");
        let m = metric("will-it-scale.per_process_ops", &[100.0, 101.0], &[110.0]);
        let svg = runs_plot(&m, &policy()).unwrap();
        assert!(
            texts(&svg).contains(&"ops/s per task"),
            "the unit on the axis: {svg}"
        );
        assert!(svg.contains("<desc>will-it-scale.per_process_ops (ops/s per task): base 2 runs"));
    }

    #[test]
    fn runs_plots_draw_delta_as_a_band_the_axis_takes_in() {
        // −1.7% with tight runs, δ 3.3%: the dots alone would fill the
        // plot and make it look dramatic; the band puts it in proportion.
        let mut m = metric(
            "will-it-scale.per_process_ops",
            &[1000.0, 1000.5, 999.5],
            &[983.0, 983.5, 982.5],
        );
        (m.change, m.interval) = (
            Some(-1.7),
            Some(Interval::Bounded {
                low: -1.8,
                high: -1.6,
            }),
        );
        let policy = VerdictPolicy {
            calibrated_percent: Some(3.3),
            ..VerdictPolicy::default()
        };
        let svg = runs_plot(&m, &policy).unwrap();
        assert!(texts(&svg).contains(&"±δ 3.3%"), "{svg}");
        assert!(
            svg.contains(
                "the grey band is the base mean ±δ 3.3%: a change inside it counts as none"
            ),
            "{svg}"
        );
        assert_eq!(svg.matches("opacity=\"0.08\"").count(), 1, "{svg}");
        // The axis reaches past both edges of the band (1000 ± 33).
        let labels: Vec<f64> = texts(&svg)
            .iter()
            .filter_map(|t| t.parse::<f64>().ok())
            .collect();
        let (min, max) = labels
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
                (a.min(v), b.max(v))
            });
        assert!(min <= 975.0 && max >= 1025.0, "{labels:?}");
        // Points: δ in points around the base mean.
        let mut share = metric("perf-profile.self.cycles-pp.dup", &[5.0], &[5.02]);
        share.change = Some(0.02);
        let svg = runs_plot(&share, &policy).unwrap();
        assert!(texts(&svg).contains(&"±δ 0.1 points"), "{svg}");
    }

    #[test]
    fn long_captions_shrink_then_keep_their_end() {
        assert_eq!(caption_px("will-it-scale.per_process_ops", 480), 13.0);
        let long = format!(
            "perf-profile.calltrace.cycles-pp.{}",
            "entry_SYSCALL_64.".repeat(6)
        );
        assert_eq!(caption_px(&long, 480), TEXT_PX);
        let shown = fitted(&long, 480);
        assert!(
            shown.starts_with('…') && long.ends_with(&shown[3..]),
            "{shown}"
        );
        assert!(shown.chars().count() <= 70, "{shown}");
        assert_eq!(fitted("dup1", 480), "dup1");
    }

    #[test]
    fn no_values_no_plot() {
        let m = metric("x", &[], &[]);
        assert!(runs_plot(&m, &policy()).is_none());
        assert!(scaling_plot("x", &[point(1, Some(1.0), Some(2.0))]).is_none());
    }

    #[test]
    fn scaling_plots_are_svg() {
        let svg = scaling_plot(
            "will-it-scale.per_process_ops",
            &[
                point(1, Some(100.0), Some(110.0)),
                point(2, Some(90.0), Some(105.0)),
            ],
        )
        .unwrap();
        assert_eq!(svg.matches("<circle").count(), 4);
        // The band of ±δ around the base curve, said in words too.
        assert_eq!(svg.matches("<polygon").count(), 1, "{svg}");
        assert!(svg.contains("1 tasks base 100 patched 110 (δ 1%)"), "{svg}");
        assert!(svg.contains("the grey band is the base mean ± δ"), "{svg}");
    }

    #[test]
    fn task_counts_are_categories_evenly_spaced() {
        let points: Vec<ScalingPoint> = [1, 2, 4, 8]
            .map(|n| point(n, Some(100.0 * f64::from(n)), Some(90.0 * f64::from(n))))
            .to_vec();
        let svg = scaling_plot("will-it-scale.per_process_ops", &points).unwrap();
        let shown = texts(&svg);
        for label in ["1", "2", "4", "8"] {
            assert!(shown.contains(&label), "{label}: {shown:?}");
        }
        assert!(!shown.contains(&"6") && !shown.contains(&"0"), "{shown:?}");
        // The base curve's dots: one step apart however far the counts are.
        let xs: Vec<f64> = svg
            .split("<circle")
            .skip(1)
            .filter_map(|c| c.split("cx=\"").nth(1)?.split('"').next()?.parse().ok())
            .take(4)
            .collect();
        assert_eq!(xs.len(), 4, "{svg}");
        let steps: Vec<f64> = xs.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(
            steps
                .iter()
                .all(|s| (s - steps[0]).abs() <= 1.0 && *s > 50.0),
            "{steps:?}"
        );
    }

    /// `plot()`'s answer, or a failure when it does not come within a few
    /// seconds (plotters would search for axis key points forever).
    pub(in super::super) fn within_seconds<T: Send + 'static>(
        plot: impl FnOnce() -> T + Send + 'static,
    ) -> T {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || tx.send(plot()));
        rx.recv_timeout(std::time::Duration::from_secs(10))
            .expect("plotting did not finish")
    }

    #[test]
    fn extreme_and_degenerate_values_are_plotted_promptly() {
        for (base, patched) in super::super::EXTREME_VALUES {
            let m = metric("will-it-scale.per_process_ops", base, patched);
            let svg = within_seconds(move || runs_plot(&m, &policy())).unwrap();
            assert!(svg.starts_with("<svg"), "{base:?} {patched:?}");
            let points = vec![
                point(1, base.first().copied(), patched.first().copied()),
                point(2, Some(0.0), None),
            ];
            let svg = within_seconds(move || scaling_plot("x", &points)).unwrap();
            assert!(svg.starts_with("<svg"));
        }
    }

    #[test]
    fn axes_are_finite_and_never_empty() {
        assert_eq!(axis([]), None);
        assert_eq!(axis([f64::NAN, f64::INFINITY]), None);
        let (lo, hi) = axis([0.0, 1.7e308]).unwrap();
        assert!(lo.is_finite() && hi.is_finite() && lo < 0.0 && hi > MAX_VALUE);
        let (lo, hi) = axis([1e15, 1e15 + 0.125]).unwrap();
        assert!(hi - lo >= 1e13, "{lo} {hi}");
        assert_eq!(axis([100.0, 200.0]), Some((85.0, 215.0)));
    }

    #[test]
    fn axis_numbers_are_short() {
        assert_eq!(short_number(3_436_082.0), "3.436M");
        assert_eq!(short_number(0.93), "0.930");
        assert_eq!(short_number(24_500.0), "24.5k");
    }
}
