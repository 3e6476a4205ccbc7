//! Tests of the perf collectors: the parsers and the metric arithmetic
//! against fixtures (`tests/fixtures/perf/`, see its README for where each
//! came from), and the collectors against the real perf of this machine.

mod env;
mod profile;
mod real_perf;
mod stat;

/// A fixture's text.
fn fixture(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/perf")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

/// The value of a metric, panicking with the names present when it is absent.
fn value(metrics: &[patchperf_common::run::MetricValue], name: &str) -> f64 {
    metrics
        .iter()
        .find(|m| m.name == name)
        .map(|m| m.value)
        .unwrap_or_else(|| {
            let names: Vec<&str> = metrics.iter().map(|m| m.name.as_str()).collect();
            panic!("no metric {name}; have {names:?}")
        })
}

/// Asserts `actual` is `expected` up to rounding in the last digits.
#[track_caller]
fn assert_close(actual: f64, expected: f64) {
    let tolerance = 1e-9 * expected.abs().max(1.0);
    assert!(
        (actual - expected).abs() <= tolerance,
        "expected {expected}, got {actual}"
    );
}
