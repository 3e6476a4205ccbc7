//! Fuzz targets for what the runner parses, as proptest properties, one
//! module per parser: `perf_stat` (perf stat's CSV and its metrics),
//! `perf_script` (perf script's samples and the profile folded from them),
//! `jobfile` (`patchperf-runner job` files) and `guest_protocol` (what host
//! and guest write each other). Inputs are mostly real fixtures
//! (`tests/fixtures/perf/`) with lines or fields changed, so the parsers'
//! deep paths are reached, not only their first check.
//!
//! Each property runs proptest's default 256 cases in `cargo test`;
//! `PROPTEST_CASES` raises that (`bench/fuzz.sh` runs them long).

mod guest_protocol;
mod jobfile;
// Shared with common's fuzz targets; its helper for bodies without
// `PartialEq` has no use here.
#[allow(dead_code)]
#[path = "../../../common/tests/fuzz/json.rs"]
mod json;
mod perf_script;
mod perf_stat;

use proptest::prelude::*;
use proptest::sample::Index;

/// A fixture's text.
fn fixture(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/perf")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

/// One change to a text's lines: drop one, double one, replace one by a
/// line from the pool, or insert a line from the pool.
#[derive(Debug, Clone)]
enum LineEdit {
    Drop(Index),
    Double(Index),
    Replace(Index, String),
    Insert(Index, String),
}

/// Up to `max` line edits whose new lines come from `pool`.
fn line_edits(
    pool: impl Strategy<Value = String> + Clone,
    max: usize,
) -> impl Strategy<Value = Vec<LineEdit>> {
    let edit = prop_oneof![
        any::<Index>().prop_map(LineEdit::Drop),
        any::<Index>().prop_map(LineEdit::Double),
        (any::<Index>(), pool.clone()).prop_map(|(i, l)| LineEdit::Replace(i, l)),
        (any::<Index>(), pool).prop_map(|(i, l)| LineEdit::Insert(i, l)),
    ];
    proptest::collection::vec(edit, 1..=max)
}

/// `text` with `edits` applied, lines joined with `\n`.
fn apply_line_edits(text: &str, edits: &[LineEdit]) -> String {
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    for edit in edits {
        let len = lines.len();
        match edit {
            LineEdit::Drop(i) if len > 0 => {
                lines.remove(i.index(len));
            }
            LineEdit::Double(i) if len > 0 => {
                let line = lines[i.index(len)].clone();
                lines.insert(i.index(len), line);
            }
            LineEdit::Replace(i, line) if len > 0 => lines[i.index(len)] = line.clone(),
            LineEdit::Insert(i, line) | LineEdit::Replace(i, line) => {
                lines.insert(i.index(len + 1), line.clone());
            }
            LineEdit::Drop(_) | LineEdit::Double(_) => {}
        }
    }
    lines.join("\n")
}
