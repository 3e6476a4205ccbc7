//! `patchperf-runner submit`: what a CI job runs. Sends a patch series to the
//! server's `POST /api/v1/comparisons`, and with `--wait` follows the jobs
//! until the comparison ends, then prints the text report and the verdict.

use std::collections::HashMap;
use std::io::Read;

use patchperf_common::api::{
    ComparisonCreateRequest, ComparisonCreated, ComparisonView, JobView, VerdictSummary,
};
use patchperf_common::comparison::{ComparisonStatus, OverallVerdict};
use patchperf_common::protocol::{BaseSource, JobState};

use super::local_tree;
use super::measure::setup;
use super::outcome::{self, Outcome, say};
use super::patience::Patience;
use crate::Error;
use crate::agent::client::Client;
use crate::cli::submit::SubmitArgs;

/// Runs `patchperf-runner submit`.
pub fn run(args: SubmitArgs) -> Result<(), Error> {
    if args.bisect {
        return super::bisect::run(&args);
    }
    if !args.json {
        return submit(&args, &mut Outcome::default());
    }
    outcome::json_mode();
    let mut seen = Outcome::default();
    let result = submit(&args, &mut seen);
    seen.print(&result);
    result
}

fn submit(args: &SubmitArgs, seen: &mut Outcome) -> Result<(), Error> {
    let body = request_body(args)?;
    let client = Client::new(&args.server, &args.token);
    let created: ComparisonCreated =
        client
            .post_json("/api/v1/comparisons", &body)?
            .ok_or_else(|| Error::Server {
                status: 204,
                message: "the server answered the submission without a body".into(),
            })?;
    let report_url = absolute(&client, &created.report_url);
    seen.id = Some(created.id);
    seen.report_url = Some(report_url.clone());
    say!("comparison {} submitted", created.id);
    if args.measure.load.workloads.is_empty() && !created.workloads.is_empty() {
        say!(
            "measuring {}: the workload map's for the files the series touches",
            created.workloads.join(", ")
        );
    }
    say!("report: {report_url}");
    if !args.wait {
        return Ok(());
    }
    let mut patience = Patience::new(args.poll, args.timeout, args.stall_timeout);
    crate::proc::install_interrupt_handler()?;
    let end = follow(&client, created.id, &mut patience)
        .map_err(|e| left_behind(&client, created.id, args.cancel_on_signal, e))?;
    let result = conclude(&client, &end, &report_url, args.fail_on_regression);
    seen.end = Some(end);
    result
}

/// A report URL a person can open: a server without --public-url answers
/// relative ones.
pub fn absolute(client: &Client, url: &str) -> String {
    if url.starts_with('/') {
        format!("{}{url}", client.base())
    } else {
        url.to_string()
    }
}

/// A wait ended by SIGINT or SIGTERM (a CI job cancelled, Ctrl-C): the
/// comparison is cancelled with `cancel`, else it goes on and what was left
/// behind is said. Other errors pass through.
pub fn left_behind(client: &Client, id: i64, cancel: bool, e: Error) -> Error {
    if !matches!(e, Error::Interrupted) {
        return e;
    }
    if !cancel {
        eprintln!(
            "patchperf-runner: interrupted; comparison {id} goes on on the server \
             (patchperf-runner wait {id} follows it again, cancel {id} stops it)"
        );
        return e;
    }
    let path = format!("/api/v1/comparisons/{id}/cancel");
    match client.post_json::<_, serde_json::Value>(&path, &serde_json::json!({})) {
        Ok(_) => eprintln!("patchperf-runner: interrupted; comparison {id} cancelled"),
        Err(why) => eprintln!(
            "patchperf-runner: interrupted; cancelling comparison {id} failed: {why} \
             (patchperf-runner cancel {id})"
        ),
    }
    e
}

/// After a wait: the text report, the headlines, each step's verdict and
/// the overall one, and the exit the end calls for (failed, a regression
/// with `fail_on_regression`).
pub fn conclude(
    client: &Client,
    end: &Progress,
    report_url: &str,
    fail_on_regression: bool,
) -> Result<(), Error> {
    let text = client.get_text(&format!("/api/v1/comparisons/{}/report.txt", end.id))?;
    say!();
    say!("{}", text.trim_end_matches('\n'));
    say!();
    for line in &end.verdict.headlines {
        say!("{line}");
    }
    for step in &end.steps {
        say!(
            "patch {}/{} {}: {} ({})",
            step.step,
            end.steps.len(),
            step.subject,
            step.overall,
            step.status
        );
    }
    say!("verdict: {}", end.verdict.overall);
    say!("report: {report_url}");
    match end.status {
        ComparisonStatus::Done => {}
        other => {
            return Err(Error::ComparisonFailed(format!(
                "comparison {} ended {other}{}",
                end.id,
                failure_summary(end)
            )));
        }
    }
    if fail_on_regression && end.verdict.overall == OverallVerdict::Regression {
        return Err(Error::Regression(format!(
            "comparison {}: the patch series causes a regression",
            end.id
        )));
    }
    Ok(())
}

/// The part of `GET /api/v1/comparisons/{id}` that `--wait` follows.
pub type Progress = ComparisonView<VerdictSummary>;

/// The submission, built from the command line.
fn request_body(args: &SubmitArgs) -> Result<ComparisonCreateRequest, Error> {
    let upstream = local_tree::BaseAt::Upstream(args.base_url.as_deref());
    let local = match (&args.git, &args.range, &args.commit) {
        (None, Some(r), _) => Some(local_tree::range(&cwd()?, r, upstream)?),
        (None, None, Some(c)) => Some(local_tree::commit(&cwd()?, c, upstream)?),
        _ => None,
    };
    if let Some(local) = local {
        say!("{}", local.summary());
        return submission(args, local.base, local.mbox, None);
    }
    let mbox = match (&args.mbox, &args.msgid) {
        (Some(path), _) => read_mbox(path)?,
        (None, Some(msgid)) => super::b4::am(msgid)?,
        (None, None) if args.git.is_some() && args.commit.is_some() => {
            return Err(Error::Usage(
                "--git with --commit names the base: the patches on it come with --mbox".into(),
            ));
        }
        (None, None) => String::new(),
    };
    // An mbox naming its base (`git format-patch --base`, b4) is built on
    // it when the upstream is named.
    let named_base = patchperf_common::mail::body::base_commit(&mbox);
    if let Some(url) = &args.base_url {
        let Some(commit) = named_base else {
            return Err(Error::Usage(
                "--base-url: the mbox has no base-commit: line to build on (git format-patch                  --base=<commit> writes one)"
                    .into(),
            ));
        };
        let base = BaseSource::Git {
            url: url.clone(),
            commit,
        };
        return submission(args, base, mbox, None);
    }
    if let (Some(commit), None) = (&named_base, &args.git) {
        eprintln!(
            "patchperf-runner: the mbox names base-commit {commit}; it is built on {} unless              --base-url names the upstream that has that commit",
            args.base
        );
    }
    // A range's base is its first end.
    let range_start = args
        .range
        .as_deref()
        .map(|r| r.split_once("..").map_or(r, |(from, _)| from));
    let base = match (&args.git, args.commit.as_deref().or(range_start)) {
        (Some(url), Some(commit)) => BaseSource::Git {
            url: url.clone(),
            commit: commit.to_string(),
        },
        (Some(_), None) => {
            return Err(Error::Usage(
                "--git needs --commit (the base) or --range A..B".into(),
            ));
        }
        _ => BaseSource::Tarball {
            name: args.base.clone(),
        },
    };
    submission(args, base, mbox, args.range.clone())
}

/// The request for `mbox` on `base` (`range`: the server reads a range of
/// a `--git` repository itself), measured as the command line says.
fn submission(
    args: &SubmitArgs,
    base: BaseSource,
    mbox: String,
    range: Option<String>,
) -> Result<ComparisonCreateRequest, Error> {
    Ok(ComparisonCreateRequest {
        base,
        // An A/A comparison boots the base kernel on both sides: no patch.
        mbox: if args.aa { String::new() } else { mbox },
        aa: args.aa,
        per_patch: args.per_patch,
        range,
        setup: setup(&args.measure)?,
        order_seed: None,
    })
}

fn cwd() -> Result<std::path::PathBuf, Error> {
    std::env::current_dir().map_err(|e| Error::io("the current directory", e))
}

/// The mbox at `path`, `-` for standard input.
pub(super) fn read_mbox(path: &std::path::Path) -> Result<String, Error> {
    if path.as_os_str() == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| Error::io("reading the mbox from standard input", e))?;
        return Ok(text);
    }
    std::fs::read_to_string(path)
        .map_err(|e| Error::Usage(format!("cannot read mbox {}: {e}", path.display())))
}

/// Polls the comparison, printing each job's state and message when they
/// change, until the comparison is done, failed or cancelled.
pub fn follow(client: &Client, id: i64, patience: &mut Patience) -> Result<Progress, Error> {
    let path = format!("/api/v1/comparisons/{id}");
    let mut seen: HashMap<i64, (JobState, String, i32)> = HashMap::new();
    let mut last_lines: HashMap<i64, String> = HashMap::new();
    let mut waiting: Option<String> = None;
    let mut now: Option<String> = None;
    loop {
        if crate::proc::interrupted() {
            return Err(Error::Interrupted);
        }
        let progress: Progress = match client.get_json(&path) {
            Ok(p) => p,
            Err(e) => {
                patience.failed(&format!("comparison {id}"), e)?;
                patience.pause();
                continue;
            }
        };
        for job in &progress.jobs {
            let now = (job.state, job.message.clone(), job.attempt);
            if seen.get(&job.id) != Some(&now) {
                say!(
                    "job {} of {} [{}] {}{}",
                    job.seq + 1,
                    progress.jobs.len(),
                    boots(job),
                    job.state,
                    message(job)
                );
                seen.insert(job.id, now);
            }
            // The newest line of a long step (a compile, a boot) shows it is
            // moving; at most one line a poll keeps the output readable.
            if let Some(line) = job.log_tail.lines().rev().find(|l| !l.trim().is_empty()) {
                if last_lines.get(&job.id).map(String::as_str) != Some(line) {
                    say!("    {}", line.trim_end());
                    last_lines.insert(job.id, line.to_string());
                }
            }
        }
        // Said when it starts, not every poll: CI logs would fill with it.
        if let (Some(w), None) = (&progress.waiting, &waiting) {
            say!("waiting: {w}");
        }
        waiting = progress.waiting.clone();
        // What runs for it now (its machine's calibration, a step, a build
        // with the last one's time) and the time left, when that changes.
        if progress.progress != now {
            if let Some(p) = &progress.progress {
                say!("now: {p}");
            }
            now = progress.progress.clone();
        }
        if progress.status.is_final() {
            return Ok(progress);
        }
        patience.answered(&format!("comparison {id}"), waiting.as_deref())?;
        patience.pause();
    }
}

/// `boot 1 base, boot 2 patched`: counted from 1 as the runner's messages
/// count them (the API's `seq` counts from 0).
fn boots(job: &JobView) -> String {
    job.boots
        .iter()
        .map(|b| format!("boot {} {}", b.seq + 1, b.side.as_str()))
        .collect::<Vec<_>>()
        .join(", ")
}

fn message(job: &JobView) -> String {
    let mut out = String::new();
    if job.attempt > 1 {
        out.push_str(&format!(" (attempt {})", job.attempt));
    }
    if let Some(f) = &job.failure {
        out.push_str(&format!(": {}: {}", f.reason_text, f.detail));
    } else if !job.message.is_empty() {
        out.push_str(&format!(": {}", job.message));
    }
    out
}

fn failure_summary(progress: &Progress) -> String {
    progress
        .jobs
        .iter()
        .filter_map(|j| j.failure.as_ref().map(|f| (j.seq, f)))
        .map(|(seq, f)| format!("; job {}: {}: {}", seq + 1, f.reason_text, f.detail))
        .collect()
}
