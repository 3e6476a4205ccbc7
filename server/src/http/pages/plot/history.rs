//! The SVG of one metric's history on a tracked tree: the tested commits
//! in order along x, each commit's mean with its 95% interval as an error
//! bar, the change points found in it marked where the new level starts
//! (in their verdict's colour, labelled above the plot in as many rows as
//! keep the labels apart), and behind each level a grey band of its mean
//! ± δ: a point inside its level's band moved less than the smallest
//! change that counts, and a change point's new level lies outside the
//! old one's. Drawn as the report's plots are (plotters' SVG backend into
//! a string, no system fonts), with a `<title>` and `<desc>` for screen
//! readers and a viewBox, so it scales to the width it is given.

use patchperf_common::api::ChangeVerdict;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::svg::{TEXT_PX, axis, described, escape, font, on_axis, short_number};

/// Colour of the points and their intervals.
const POINT: RGBColor = RGBColor(31, 119, 180);

/// The plot's width on a wide screen, and on a phone (390 px less the
/// page's margins), in pixels: each is drawn for its width, so that its
/// text is [`TEXT_PX`] where it is shown, not scaled down.
pub const WIDE: u32 = 760;
pub const NARROW: u32 = 360;
/// Its height without the rows of change labels.
const HEIGHT: u32 = 340;
/// Its margin, and the y labels' area, left of the plotting area.
const MARGIN: u32 = 10;
const Y_LABELS: u32 = 80;
/// One row of change labels.
const ROW: u32 = 16;
/// The caption's line.
const CAPTION: u32 = 22;
/// Room kept between two labels side by side.
const GAP: f64 = 10.0;

/// A change point's colour: its verdict's, as the pages colour verdicts.
fn verdict_colour(v: ChangeVerdict) -> RGBColor {
    match v {
        ChangeVerdict::Regression => RGBColor(176, 0, 32),
        ChangeVerdict::Improvement => RGBColor(17, 119, 45),
        ChangeVerdict::Changed => RGBColor(138, 90, 0),
    }
}

/// How wide `text` is drawn at [`TEXT_PX`], at most: sans-serif glyphs
/// average about 0.55 em, digits and capitals up to 0.65.
fn text_width(text: &str) -> f64 {
    text.chars().count() as f64 * 0.65 * TEXT_PX
}

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
/// of the new level, what it says (`+50.0% [48.2%, 51.9%]`) and its
/// verdict.
#[derive(Debug, Clone)]
pub struct PlotChange {
    /// Index of the first point of the new level.
    pub at: usize,
    /// Its label.
    pub label: String,
    /// Better, worse or neither: its colour.
    pub verdict: ChangeVerdict,
}

/// Where a change's label goes: its left end in pixels and its row (0
/// the top).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Placed {
    left: f64,
    row: u32,
}

/// The x pixel of `x` on a plot of `n` points (`-0.5..n - 0.5` across the
/// plotting area), as plotters maps it.
fn x_pixel(x: f64, n: usize, plot_width: u32) -> f64 {
    let left = f64::from(MARGIN + Y_LABELS);
    let width = f64::from(plot_width - 2 * MARGIN - Y_LABELS);
    left + (x + 0.5) / n.max(1) as f64 * width
}

/// Each change's label placed right of its line (left of it where the
/// plot ends first), in the first row, from the top, where it clears the
/// labels already there; in the order of `changes`.
fn place_labels(changes: &[&PlotChange], n: usize, plot_width: u32) -> Vec<Placed> {
    let right_end = f64::from(plot_width - MARGIN);
    let mut rows: Vec<f64> = Vec::new();
    changes
        .iter()
        .map(|c| {
            let line = x_pixel(c.at as f64 - 0.5, n, plot_width);
            let width = text_width(&c.label);
            let left = if line + 4.0 + width <= right_end {
                line + 4.0
            } else {
                (line - 4.0 - width).max(0.0)
            };
            let row = match rows.iter().position(|&end| end + GAP <= left) {
                Some(r) => r,
                None => {
                    rows.push(f64::NEG_INFINITY);
                    rows.len() - 1
                }
            };
            rows[row] = left + width;
            Placed {
                left,
                row: u32::try_from(row).unwrap_or(u32::MAX),
            }
        })
        .collect()
}

/// How many ticks of `n` commits fit and whether they carry their dates:
/// dated when every commit's tick fits so, else as many commit ids as fit
/// side by side.
fn ticks(h: &HistoryPlot) -> (usize, bool) {
    let n = h.points.len().max(1);
    let room = f64::from(h.drawn_width() - 2 * MARGIN - Y_LABELS);
    let widest = |dated: bool| {
        h.points
            .iter()
            .map(|p| match (&p.date, dated) {
                (Some(d), true) => text_width(&format!("{} {d}", p.commit)),
                _ => text_width(&p.commit),
            })
            .fold(0.0, f64::max)
    };
    let fit = |dated: bool| (room / (widest(dated) + GAP)).floor() as usize;
    if fit(true) >= n {
        (n, true)
    } else {
        (fit(false).clamp(1, n), false)
    }
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
    /// The width it is drawn for, in pixels: [`WIDE`] or [`NARROW`].
    pub width: u32,
}

impl HistoryPlot {
    /// The width asked for, within what the layout can draw.
    fn drawn_width(&self) -> u32 {
        self.width.clamp(NARROW, 4 * WIDE)
    }
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
    let changes: Vec<&PlotChange> = {
        let mut shown: Vec<&PlotChange> = h.changes.iter().filter(|c| c.at < n).collect();
        shown.sort_by_key(|c| c.at);
        shown
    };
    let width = h.drawn_width();
    let placed = place_labels(&changes, n, width);
    // A caption wider than the plot is left to the page's heading (and
    // the SVG's <title>) rather than cut at both ends.
    let caption = text_width(&h.title) <= f64::from(width - 2 * MARGIN);
    let rows = placed.iter().map(|p| p.row + 1).max().unwrap_or(0);
    let (shown_ticks, dated) = ticks(h);
    let mut svg = String::new();
    let mut dots: Vec<(usize, (i32, i32))> = Vec::new();
    {
        let size = (width, HEIGHT + rows * ROW);
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        root.fill(&WHITE).ok()?;
        // The caption, then the change points' labels in their rows, above
        // the data they would cover.
        if caption {
            root.draw(&Text::new(
                h.title.clone(),
                (
                    i32::try_from(width / 2).unwrap_or(0),
                    i32::try_from(MARGIN).unwrap_or(0),
                ),
                font(13.0)
                    .color(&BLACK)
                    .pos(Pos::new(HPos::Center, VPos::Top)),
            ))
            .ok()?;
        }
        let caption_room = if caption { CAPTION } else { 0 };
        let mut chart = ChartBuilder::on(&root)
            .margin(MARGIN)
            .margin_top(MARGIN + caption_room + rows * ROW)
            .x_label_area_size(40)
            .y_label_area_size(Y_LABELS)
            .build_cartesian_2d(-0.5f64..n as f64 - 0.5, lo..hi)
            .ok()?;
        let tick = |v: &f64| {
            let i = v.round();
            if (v - i).abs() > 1e-9 || i < 0.0 {
                return String::new();
            }
            match h.points.get(i as usize) {
                Some(p) => match (&p.date, dated) {
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
            .x_labels(shown_ticks)
            .x_label_formatter(&tick)
            .y_labels(6)
            .y_label_formatter(&|v| short_number(*v))
            .label_style(font(TEXT_PX))
            .axis_desc_style(font(TEXT_PX))
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
        let top = chart.backend_coord(&(0.0, hi)).1;
        for (c, place) in changes.iter().zip(&placed) {
            // A line between the last commit of the old level and the first
            // of the new one, its label in its row above the plot.
            let x = c.at as f64 - 0.5;
            let colour = verdict_colour(c.verdict);
            chart
                .draw_series([PathElement::new(
                    vec![(x, lo), (x, hi)],
                    colour.stroke_width(2),
                )])
                .ok()?;
            let y = top - i32::try_from((rows - place.row) * ROW).unwrap_or(0);
            let style = font(TEXT_PX)
                .color(&colour)
                .pos(Pos::new(HPos::Left, VPos::Top));
            root.draw(&Text::new(c.label.clone(), (place.left as i32, y), style))
                .ok()?;
            // A ring round the first commit of the new level.
            if let Some(&at) = means.iter().find(|m| m.0 == c.at as f64) {
                chart
                    .draw_series([Circle::new(at, 8, colour.stroke_width(2))])
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
            width: WIDE,
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
                    verdict: ChangeVerdict::Improvement,
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
        // One row of change labels above the plot.
        assert!(svg.contains("viewBox=\"0 0 760 356\""), "{svg}");
        assert!(svg.contains("<title>open1 · process · nr_task 1 &lt;lab-1&gt;</title>"));
        assert!(svg.contains("change point at 0000002abc: +50.0% [48.0%, 52.0%]"));
        assert_eq!(svg.matches("<circle").count(), 6, "5 points, 1 ring");
        assert!(svg.contains("+50.0% [48.0%, 52.0%]"));
        // An improvement in green, not red.
        assert!(svg.contains("fill=\"#11772D\""), "{svg}");
        assert!(
            !svg.contains("#B00020") && !svg.contains("#D62728"),
            "{svg}"
        );
        // Five commits' ticks with their dates do not fit side by side.
        assert!(svg.contains(">\n0000004abc\n<"), "{svg}");
        assert!(!svg.contains("2026-01-05"), "{svg}");
        assert!(
            history_plot(&plot(3, None))
                .unwrap()
                .contains("0000002abc 2026-01-05")
        );
        assert!(svg.contains("will-it-scale.per_process_ops (ops/s per task)"));
    }

    /// Drawn for a phone, the plot is as wide as the phone's page and
    /// keeps its text size: fewer ticks, and a caption too wide for it
    /// left to the page's heading.
    #[test]
    fn drawn_for_a_phone_it_keeps_its_text_size() {
        let wide = plot(30, Some(12));
        let narrow = HistoryPlot {
            width: NARROW,
            title: "open1 · process · nr_task 1 · will-it-scale.per_process_ops · lab-1 tcg-icount"
                .into(),
            ..wide.clone()
        };
        let (w, n) = (ticks(&wide).0, ticks(&narrow).0);
        assert!(n < w, "{n} ticks on a phone, {w} wide");
        let svg = history_plot(&narrow).unwrap();
        assert!(svg.contains("viewBox=\"0 0 360 "), "{svg}");
        assert!(svg.contains("font-size=\"12\""), "{svg}");
        assert!(!svg.contains(">\nopen1 · process"), "no cut caption: {svg}");
        assert!(svg.contains("<title>open1 · process"), "{svg}");
        let change = PlotChange {
            at: 28,
            label: "improvement +50.0% [+48.0%, +52.0%]".into(),
            verdict: ChangeVerdict::Improvement,
        };
        let placed = place_labels(&[&change], 30, NARROW);
        assert!(placed[0].left + text_width(&change.label) <= f64::from(NARROW));
    }

    #[test]
    fn change_labels_side_by_side_take_rows_and_ticks_fit() {
        let change = |at: usize| PlotChange {
            at,
            label: "improvement +50.0% [+48.0%, +52.0%]".into(),
            verdict: ChangeVerdict::Regression,
        };
        let (a, b, c) = (change(2), change(3), change(28));
        let placed = place_labels(&[&a, &b, &c], 30, WIDE);
        // The second would run into the first: a row lower; the third is
        // far enough from both to share the first row.
        assert_eq!(placed.iter().map(|p| p.row).collect::<Vec<_>>(), [0, 1, 0]);
        // The last one, near the right end, is written left of its line.
        assert!(placed[2].left < x_pixel(27.5, 30, WIDE), "{placed:?}");
        let svg = history_plot(&HistoryPlot {
            changes: vec![a, b],
            ..plot(30, None)
        })
        .unwrap();
        assert!(svg.contains("viewBox=\"0 0 760 372\""), "two rows: {svg}");
        assert_eq!(svg.matches("fill=\"#B00020\"").count(), 2, "{svg}");
        // 30 commits: as many ids as fit, not one a commit.
        let (shown, dated) = ticks(&plot(30, None));
        assert!(!dated && (2..30).contains(&shown), "{shown}");
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
