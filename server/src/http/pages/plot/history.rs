//! The SVG of one metric's history on a tracked tree: the tested commits
//! in order along x, each commit's mean with its 95% interval as an error
//! bar, the change points found in it marked where the new level
//! starts, and behind each level a grey band of its mean ± δ: a point
//! inside its level's band moved less than the smallest change that
//! counts, and a change point's new level lies outside the old one's. Drawn as the report's plots are (plotters' SVG backend into a
//! string, no system fonts), with a `<title>` and `<desc>` for screen
//! readers and a viewBox, so it scales to the width it is given.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::svg::{axis, described, escape, on_axis, short_number};

/// Colour of the points and their intervals.
const POINT: RGBColor = RGBColor(31, 119, 180);
/// Colour of a change point's marker.
const CHANGE: RGBColor = RGBColor(214, 39, 40);

/// Up to this many commits, each tick also shows the commit's date.
const DATED_TICKS: usize = 6;

/// One tested commit's point.
#[derive(Debug, Clone)]
pub struct PlotPoint {
    /// Its short commit id, the tick label.
    pub commit: String,
    /// Its date (`2026-01-05`), shown where there is room.
    pub date: Option<String>,
    /// The mean of its runs.
    pub mean: f64,
    /// 95% interval of the mean.
    pub interval: Option<(f64, f64)>,
    /// Where the point leads (its comparison's page).
    pub href: Option<String>,
    /// What hovering it says: the commit, its subject, the mean.
    pub tip: String,
}

/// A change point: the index (in the plotted points) of the first commit
/// of the new level, and what it says (`+50.0% [48.2%, 51.9%]`).
#[derive(Debug, Clone)]
pub struct PlotChange {
    /// Index of the first point of the new level.
    pub at: usize,
    /// Its label.
    pub label: String,
}

/// What a history plot shows.
#[derive(Debug, Clone)]
pub struct HistoryPlot {
    /// The caption, also the SVG's `<title>`.
    pub title: String,
    /// The y axis: the metric with its unit.
    pub y_label: String,
    /// The points, oldest commit first.
    pub points: Vec<PlotPoint>,
    /// The change points.
    pub changes: Vec<PlotChange>,
    /// δ in percent, the smallest change that counts on this history's
    /// machine and kind of run; no bands without it.
    pub delta_percent: Option<f64>,
}

/// The levels between change points: each one's first and last index and
/// its mean, oldest first.
fn levels(h: &HistoryPlot) -> Vec<(usize, usize, f64)> {
    let n = h.points.len();
    let mut starts: Vec<usize> = h.changes.iter().map(|c| c.at).filter(|&a| a < n).collect();
    starts.sort_unstable();
    starts.dedup();
    let mut bounds = vec![0];
    bounds.extend(starts.into_iter().filter(|&a| a > 0));
    bounds.push(n);
    bounds
        .windows(2)
        .filter(|w| w[1] > w[0])
        .map(|w| {
            let level = &h.points[w[0]..w[1]];
            let mean = level.iter().map(|p| p.mean).sum::<f64>() / level.len() as f64;
            (w[0], w[1] - 1, mean)
        })
        .filter(|l| l.2.is_finite())
        .collect()
}

/// `will-it-scale.per_process_ops (ops/s per task)`: the metric with its
/// unit ([`patchperf_common::metric::unit`]).
pub fn y_label(metric: &str) -> String {
    match patchperf_common::metric::unit(metric) {
        "" => metric.to_string(),
        u => format!("{metric} ({u})"),
    }
}

/// The plot as an SVG document; `None` when there is no point to plot.
pub fn history_plot(h: &HistoryPlot) -> Option<String> {
    let n = h.points.len();
    let ends = h
        .points
        .iter()
        .flat_map(|p| {
            [
                Some(p.mean),
                p.interval.map(|i| i.0),
                p.interval.map(|i| i.1),
            ]
        })
        .flatten();
    let bands: Vec<(usize, usize, f64, f64)> = match h.delta_percent {
        Some(d) if d.is_finite() && d > 0.0 => levels(h)
            .into_iter()
            .map(|(from, to, mean)| {
                let half = mean.abs() * d / 100.0;
                (from, to, mean - half, mean + half)
            })
            .collect(),
        _ => Vec::new(),
    };
    let (lo, hi) = axis(ends.chain(bands.iter().flat_map(|b| [b.2, b.3])))?;
    let mut svg = String::new();
    let mut dots: Vec<(usize, (i32, i32))> = Vec::new();
    {
        let root = SVGBackend::with_string(&mut svg, (760, 340)).into_drawing_area();
        root.fill(&WHITE).ok()?;
        let mut chart = ChartBuilder::on(&root)
            .caption(&h.title, ("sans-serif", 13))
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(80)
            .build_cartesian_2d(-0.5f64..n as f64 - 0.5, lo..hi)
            .ok()?;
        let tick = |v: &f64| {
            let i = v.round();
            if (v - i).abs() > 1e-9 || i < 0.0 {
                return String::new();
            }
            match h.points.get(i as usize) {
                Some(p) => match (&p.date, n <= DATED_TICKS) {
                    (Some(d), true) => format!("{} {d}", p.commit),
                    _ => p.commit.clone(),
                },
                None => String::new(),
            }
        };
        chart
            .configure_mesh()
            .disable_x_mesh()
            .light_line_style(TRANSPARENT)
            .x_desc("tested commit, oldest first")
            .y_desc(&h.y_label)
            .x_labels(n.clamp(1, 10))
            .x_label_formatter(&tick)
            .y_labels(6)
            .y_label_formatter(&|v| short_number(*v))
            .draw()
            .ok()?;
        for &(from, to, a, b) in &bands {
            chart
                .draw_series([Rectangle::new(
                    [
                        (from as f64 - 0.4, a.clamp(lo, hi)),
                        (to as f64 + 0.4, b.clamp(lo, hi)),
                    ],
                    BLACK.mix(0.08).filled(),
                )])
                .ok()?;
        }
        let means: Vec<(f64, f64)> = h
            .points
            .iter()
            .enumerate()
            .filter_map(|(i, p)| Some((i as f64, on_axis(p.mean, (lo, hi))?)))
            .collect();
        chart
            .draw_series(LineSeries::new(
                means.clone(),
                POINT.mix(0.4).stroke_width(1),
            ))
            .ok()?;
        for (i, p) in h.points.iter().enumerate() {
            let Some((a, b)) = p.interval else { continue };
            let (a, b, x) = (a.clamp(lo, hi), b.clamp(lo, hi), i as f64);
            let cap = 0.08;
            chart
                .draw_series([
                    PathElement::new(vec![(x, a), (x, b)], POINT.stroke_width(2)),
                    PathElement::new(vec![(x - cap, a), (x + cap, a)], POINT.stroke_width(2)),
                    PathElement::new(vec![(x - cap, b), (x + cap, b)], POINT.stroke_width(2)),
                ])
                .ok()?;
        }
        // The points themselves are written after plotters' drawing, each
        // a link with a tooltip, which plotters' elements cannot carry.
        for &(x, y) in &means {
            dots.push((x as usize, chart.backend_coord(&(x, y))));
        }
        for c in h.changes.iter().filter(|c| c.at < n) {
            // A line between the last commit of the old level and the first
            // of the new one, labelled on the side with more room.
            let x = c.at as f64 - 0.5;
            let (anchor, nudge) = if c.at * 2 > n {
                (HPos::Right, -0.05)
            } else {
                (HPos::Left, 0.05)
            };
            chart
                .draw_series([PathElement::new(
                    vec![(x, lo), (x, hi)],
                    CHANGE.stroke_width(2),
                )])
                .ok()?;
            let style = ("sans-serif", 12)
                .into_font()
                .color(&CHANGE)
                .pos(Pos::new(anchor, VPos::Top));
            chart
                .draw_series([Text::new(c.label.clone(), (x + nudge, hi), style)])
                .ok()?;
            // A ring round the first commit of the new level.
            if let Some(&at) = means.iter().find(|m| m.0 == c.at as f64) {
                chart
                    .draw_series([Circle::new(at, 8, CHANGE.stroke_width(2))])
                    .ok()?;
            }
        }
        root.present().ok()?;
    }
    let end = svg.rfind("</svg>")?;
    let points: String = dots
        .iter()
        .map(|&(i, (x, y))| point_element(&h.points[i], x, y))
        .collect();
    svg.insert_str(end, &points);
    Some(described(svg, &h.title, &description(h)))
}

/// One point as SVG: a dot with its tooltip, inside a link when it has one.
fn point_element(p: &PlotPoint, x: i32, y: i32) -> String {
    let dot = format!(
        "<circle cx=\"{x}\" cy=\"{y}\" r=\"4\" fill=\"#{:02X}{:02X}{:02X}\"><title>{}</title></circle>",
        POINT.0,
        POINT.1,
        POINT.2,
        escape(&p.tip)
    );
    match &p.href {
        Some(href) => format!(
            "<a href=\"{}\">{dot}</a>\n",
            escape(href).replace('"', "&quot;")
        ),
        None => format!("{dot}\n"),
    }
}

/// What the plot shows, in words, for its `<desc>`.
fn description(h: &HistoryPlot) -> String {
    let mut d = format!(
        "{} over {} tested commits, each commit's mean with its 95% interval",
        h.y_label,
        h.points.len()
    );
    for c in &h.changes {
        if let Some(p) = h.points.get(c.at) {
            d.push_str(&format!("; change point at {}: {}", p.commit, c.label));
        }
    }
    if let Some(delta) = h.delta_percent {
        d.push_str(&format!(
            "; the grey band behind each level is its mean ± δ {}%: a point inside it moved less than a change that counts",
            patchperf_common::stats::verdict::delta_text(delta)
        ));
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plot(n: usize, change_at: Option<usize>) -> HistoryPlot {
        HistoryPlot {
            title: "open1 · process · nr_task 1 <lab-1>".into(),
            y_label: y_label("will-it-scale.per_process_ops"),
            points: (0..n)
                .map(|i| {
                    let mean = if change_at.is_some_and(|c| i >= c) {
                        1500.0
                    } else {
                        1000.0
                    };
                    PlotPoint {
                        commit: format!("{i:07}abc"),
                        date: Some("2026-01-05".into()),
                        mean,
                        interval: Some((mean - 10.0, mean + 10.0)),
                        href: Some(format!("/comparisons/{i}")),
                        tip: format!("{i:07}abc fs: <step {i}>: {mean}"),
                    }
                })
                .collect(),
            changes: change_at
                .map(|at| PlotChange {
                    at,
                    label: "+50.0% [48.0%, 52.0%]".into(),
                })
                .into_iter()
                .collect(),
            delta_percent: None,
        }
    }

    #[test]
    fn each_level_has_a_band_of_its_mean_plus_minus_delta() {
        let mut h = plot(6, Some(3));
        let without = history_plot(&h).unwrap().matches("<rect").count();
        h.delta_percent = Some(2.0);
        let svg = history_plot(&h).unwrap();
        // Two bands more: 1000 ± 20 before the change, 1500 ± 30 after.
        assert_eq!(svg.matches("<rect").count(), without + 2, "{svg}");
        assert!(
            svg.contains("the grey band behind each level is its mean ± δ 2%"),
            "{svg}"
        );
        let levels = levels(&h);
        assert_eq!(levels, vec![(0, 2, 1000.0), (3, 5, 1500.0)]);
    }

    #[test]
    fn a_history_has_its_points_intervals_and_change_marked() {
        let svg = history_plot(&plot(5, Some(2))).unwrap();
        assert!(svg.starts_with("<svg"), "{svg}");
        assert!(svg.contains("viewBox=\"0 0 760 340\""), "{svg}");
        assert!(svg.contains("<title>open1 · process · nr_task 1 &lt;lab-1&gt;</title>"));
        assert!(svg.contains("change point at 0000002abc: +50.0% [48.0%, 52.0%]"));
        assert_eq!(svg.matches("<circle").count(), 6, "5 points, 1 ring");
        assert!(svg.contains("+50.0% [48.0%, 52.0%]"));
        assert!(svg.contains("0000004abc 2026-01-05"), "dated ticks: {svg}");
        assert!(svg.contains("will-it-scale.per_process_ops (ops/s per task)"));
    }

    #[test]
    fn each_point_links_its_comparison_and_says_what_it_is() {
        let svg = history_plot(&plot(3, None)).unwrap();
        for i in 0..3 {
            assert!(
                svg.contains(&format!("<a href=\"/comparisons/{i}\"><circle")),
                "{svg}"
            );
            assert!(
                svg.contains(&format!(
                    "<title>{i:07}abc fs: &lt;step {i}&gt;: 1000</title>"
                )),
                "{svg}"
            );
        }
    }

    #[test]
    fn long_histories_drop_the_dates_and_empty_ones_are_not_drawn() {
        let svg = history_plot(&plot(30, None)).unwrap();
        assert!(!svg.contains("2026-01-05"));
        assert!(history_plot(&plot(0, None)).is_none());
        let one = history_plot(&plot(1, None)).unwrap();
        assert_eq!(one.matches("<circle").count(), 1);
    }
}
