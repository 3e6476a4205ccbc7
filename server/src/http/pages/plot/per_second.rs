//! The per-second plot of a report: one line per run of a per-second
//! series (will-it-scale's ops each measured second), coloured by side,
//! so that drift within a run or one slow boot shows at a glance; a run
//! of a single second (tcg-icount's default length) is a dot.

use patchperf_common::metric;
use patchperf_common::run::Side;
use plotters::prelude::*;

use super::svg::{
    LEGEND_WIDTH, TEXT_PX, axis, described, font, frame, on_axis, short_number, side_colour,
    side_legend, unit_or_values,
};

/// One line per run of a per-second series (will-it-scale ops each second),
/// coloured by side: drift or a slow boot shows at a glance.
pub fn series_plot(name: &str, runs: &[(Side, String, Vec<f64>)]) -> Option<String> {
    let (lo, hi) = axis(runs.iter().flat_map(|(_, _, p)| p.iter().copied()))?;
    let len = runs
        .iter()
        .map(|(_, _, p)| p.len())
        .max()
        .unwrap_or(1)
        .max(1);
    // One measured second (tcg-icount's default run) is one column, not
    // a second second that was never measured.
    let seconds = if len == 1 {
        -0.5..0.5
    } else {
        0.0..(len - 1) as f64
    };
    let (width, height) = (640, 280);
    let title = format!("{name} per second, each run");
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        root.fill(&WHITE).ok()?;
        let mut chart = frame(&root, &title, width, 36, true)
            .build_cartesian_2d(seconds, lo..hi)
            .ok()?;
        chart
            .configure_mesh()
            .x_desc("measured second")
            .y_desc(metric::unit(name))
            // Point i is second i + 1: label whole seconds, never 2.5.
            .x_labels(len.min(12))
            .x_label_formatter(&|v| {
                if (v.fract()).abs() < 1e-9 {
                    format!("{}", *v as i64 + 1)
                } else {
                    String::new()
                }
            })
            .light_line_style(TRANSPARENT)
            .y_label_formatter(&|v| short_number(*v))
            .label_style(font(TEXT_PX))
            .axis_desc_style(font(TEXT_PX))
            .draw()
            .ok()?;
        for (side, _, p) in runs {
            let colour = side_colour(*side);
            let points: Vec<(f64, f64)> = p
                .iter()
                .enumerate()
                .filter_map(|(i, &v)| Some((i as f64, on_axis(v, (lo, hi))?)))
                .collect();
            // A line needs two points: a run of one second is a dot.
            if let [only] = points[..] {
                chart
                    .draw_series(std::iter::once(Circle::new(only, 3, colour.filled())))
                    .ok()?;
            }
            chart
                .draw_series(LineSeries::new(points, colour.stroke_width(1)))
                .ok()?;
        }
        side_legend(&root, width as i32 - LEGEND_WIDTH + 12, 40)?;
        root.present().ok()?;
    }
    let count = |side: Side| runs.iter().filter(|r| r.0 == side).count();
    let desc = format!(
        "{name} ({}) each measured second of every run: {} base runs, {} patched runs ({})",
        unit_or_values(name),
        count(Side::Base),
        count(Side::Patched),
        runs.iter()
            .map(|r| r.1.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    Some(described(svg, &title, &desc))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::pages::plot::svg::tests::{texts, within_seconds};

    #[test]
    fn a_plot_has_one_line_a_run_and_one_legend_entry_a_side() {
        let svg = series_plot(
            "will-it-scale.per_process_ops",
            &[
                (Side::Base, "boot 0 base".into(), vec![1.0, 2.0, 3.0]),
                (Side::Patched, "boot 1 patched".into(), vec![2.0, 3.0, 4.0]),
            ],
        )
        .unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("boot 1 patched"));
        let shown = texts(&svg);
        assert!(shown.contains(&"ops/s per task") && svg.contains("<title>"));
        // The runs' lines, in their sides' colours; the legend's are 3 px
        // wide.
        let lines = ["#1F77B4", "#D62728"].map(|c| {
            svg.matches(&format!("stroke=\"{c}\" stroke-width=\"1\""))
                .count()
        });
        assert_eq!(lines, [1, 1], "{svg}");
        assert_eq!(svg.matches("<circle").count(), 0, "{svg}");
        assert_eq!(shown.iter().filter(|t| **t == "base").count(), 1, "{svg}");
        assert_eq!(shown.iter().filter(|t| **t == "patched").count(), 1);
        assert!(series_plot("x", &[]).is_none());
    }

    #[test]
    fn runs_of_one_second_are_dots_in_one_column() {
        let runs = [
            (Side::Base, "boot 0 base".into(), vec![100.0]),
            (Side::Patched, "boot 1 patched".into(), vec![110.0]),
            (Side::Base, "boot 2 base".into(), vec![101.0]),
        ];
        let svg = series_plot("will-it-scale.per_process_ops", &runs).unwrap();
        assert_eq!(svg.matches("<circle").count(), 3, "{svg}");
        // The one second measured, labelled, and no second one.
        let shown = texts(&svg);
        assert!(shown.contains(&"1") && !shown.contains(&"2"), "{shown:?}");
        let xs: Vec<&str> = svg
            .split("<circle")
            .skip(1)
            .filter_map(|c| c.split("cx=\"").nth(1)?.split('"').next())
            .collect();
        assert!(xs.iter().all(|x| *x == xs[0]), "{xs:?}");
    }

    #[test]
    fn extreme_values_are_plotted_promptly() {
        for (base, patched) in super::super::EXTREME_VALUES {
            let runs = vec![
                (Side::Base, "boot 0 base".to_string(), base.to_vec()),
                (
                    Side::Patched,
                    "boot 1 patched".to_string(),
                    patched.to_vec(),
                ),
            ];
            let svg = within_seconds(move || series_plot("x", &runs)).unwrap();
            assert!(svg.starts_with("<svg"), "{base:?} {patched:?}");
        }
    }
}
