//! `patchperf-runner compare DIR_A DIR_B`: prints the 0-day style text
//! report for two local results directories, one report per
//! (workload, mode, nr_task) found in both, the most important first.
//!
//! A results directory holds `*.json` files (not recursive), each one
//! RunResult or a JSON array of them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use patchperf_common::report::importance::by_importance;
use patchperf_common::report::text::{TextOptions, render};
use patchperf_common::report::{ReportKey, build_comparison, group_by_report, header_from_runs};
use patchperf_common::run::RunResult;
use patchperf_common::stats::{Verdict, VerdictPolicy, calibration};

use crate::Error;
use crate::cli::compare::CompareArgs;

/// Runs grouped by what one report compares: (workload, mode, nr_task).
type Groups = BTreeMap<ReportKey, Vec<RunResult>>;

/// Runs `patchperf-runner compare`.
pub fn run(args: CompareArgs) -> Result<(), Error> {
    if let Some(floor) = args.noise_floor {
        if !(floor.is_finite() && floor >= 0.0) {
            return Err(Error::Usage(format!(
                "--noise-floor {floor}: must be a percentage of 0 or more"
            )));
        }
    }
    let compared = compare_dirs(
        &args.base_dir,
        &args.patched_dir,
        &args.machine,
        args.all,
        args.noise_floor,
    )?;
    print!("{}", compared.text);
    compared.ends(args.fail_on_regression)
}

/// What `compare` found: the reports as text, and which regressed.
#[derive(Debug)]
pub struct Compared {
    /// The reports, the most important first, and what was not compared.
    pub text: String,
    /// Each report whose headline verdict is a regression, named
    /// `workload/mode-nr_task` with its change.
    pub regressions: Vec<String>,
}

impl Compared {
    /// How a command that printed these reports ends: with a regression
    /// (exit 3, naming each) when `fail_on_regression` asks and one
    /// regressed.
    pub fn ends(&self, fail_on_regression: bool) -> Result<(), Error> {
        if !fail_on_regression || self.regressions.is_empty() {
            return Ok(());
        }
        Err(Error::Regression(format!(
            "a regression: {}",
            self.regressions.join("; ")
        )))
    }
}

/// The reports for two results directories, separated by blank lines,
/// each judged as the server judges it: δ from the runs' measurement mode
/// and the machine's `noise_floor` (an A/A comparison's ± bound in
/// percent), when one is given.
pub fn compare_dirs(
    base_dir: &Path,
    patched_dir: &Path,
    machine: &str,
    all_rows: bool,
    noise_floor: Option<f64>,
) -> Result<Compared, Error> {
    let base = group(read_results_dir(base_dir)?);
    let patched = group(read_results_dir(patched_dir)?);
    let mut reports = Vec::new();
    let mut only = Vec::new();
    for (key, base_runs) in &base {
        let Some(patched_runs) = patched.get(key) else {
            only.push(format!("{key} only in {}", base_dir.display()));
            continue;
        };
        let header = header_from_runs(machine, base_runs, patched_runs);
        let policy = calibration::judging(
            VerdictPolicy::default(),
            header.measurement,
            noise_floor,
            calibration::Look::ONLY,
        );
        let comparison = build_comparison(header, base_runs, patched_runs, &policy)
            .map_err(|e| Error::Usage(e.to_string()))?;
        reports.push(comparison);
    }
    for key in patched.keys().filter(|k| !base.contains_key(*k)) {
        only.push(format!("{key} only in {}", patched_dir.display()));
    }
    if reports.is_empty() {
        return Err(Error::Usage(format!(
            "{} and {} have no workload/mode/nr_task in common ({})",
            base_dir.display(),
            patched_dir.display(),
            only.join("; ")
        )));
    }
    // The most important report first, as the server's text has it.
    let mut out = by_importance(&reports, |c| c)
        .into_iter()
        .map(|c| render(c, &TextOptions { all_rows }))
        .collect::<Vec<_>>()
        .join("\n\n");
    for o in only {
        out.push_str(&format!("\nnot compared: {o}\n"));
    }
    let regressions = reports
        .iter()
        .filter_map(|c| {
            let m = c.headline_metric()?;
            let change = m.change.map(|x| format!(" {x:+.2}%")).unwrap_or_default();
            let key = ReportKey {
                workload: c.header.workload.clone(),
                mode: c.header.mode,
                nr_task: c.header.nr_task,
            };
            (m.verdict == Verdict::Regression).then(|| format!("{key}{change}"))
        })
        .collect();
    Ok(Compared {
        text: out,
        regressions,
    })
}

/// In key order, so the reports come out the same for any file order.
fn group(runs: Vec<RunResult>) -> Groups {
    group_by_report(runs, |r| r).into_iter().collect()
}

/// Every RunResult in the directory's `*.json` files, in file name order.
pub fn read_results_dir(dir: &Path) -> Result<Vec<RunResult>, Error> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| Error::Usage(format!("{}: {e}", dir.display())))?;
    let mut files: Vec<PathBuf> = Vec::new();
    for entry in entries {
        let path = entry
            .map_err(|e| Error::io(format!("reading {}", dir.display()), e))?
            .path();
        if path.extension().is_some_and(|e| e == "json") && path.is_file() {
            files.push(path);
        }
    }
    files.sort();
    if files.is_empty() {
        return Err(Error::Usage(format!(
            "{}: no *.json result files",
            dir.display()
        )));
    }
    let mut runs = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file)
            .map_err(|e| Error::Usage(format!("{}: {e}", file.display())))?;
        runs.extend(parse_results(&text).map_err(|e| {
            Error::Usage(format!(
                "{}: not a RunResult or a list of them: {e}",
                file.display()
            ))
        })?);
    }
    Ok(runs)
}

/// One RunResult or a JSON array of them.
fn parse_results(text: &str) -> Result<Vec<RunResult>, serde_json::Error> {
    // Decide by the top-level shape first, so a broken file gets serde's
    // precise message (field, type) rather than an untagged enum's "did not
    // match any variant".
    let value: serde_json::Value = serde_json::from_str(text)?;
    if value.is_array() {
        serde_json::from_value(value)
    } else {
        Ok(vec![serde_json::from_value(value)?])
    }
}
