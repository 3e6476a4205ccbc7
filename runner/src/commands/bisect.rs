//! `patchperf-runner submit --bisect`: starts a bisection on the server
//! (`POST /api/v1/bisections`) over a git range or a finished comparison's
//! series, and with `--wait` follows its probes until it has an answer,
//! which it prints in 0-day's words.

use std::collections::HashSet;

use patchperf_common::api::{
    BisectionCreateRequest, BisectionCreated, BisectionStatus, BisectionView, OutcomeKind,
};
use patchperf_common::protocol::BaseSource;

use super::measure::setup;
use super::patience::Patience;
use crate::Error;
use crate::agent::client::Client;
use crate::cli::submit::SubmitArgs;

/// Runs `submit --bisect`.
pub fn run(args: &SubmitArgs) -> Result<(), Error> {
    if args.measure.pool.is_some() {
        // A bisection's probes run where its comparison ran, or on the
        // machine named.
        return Err(Error::Usage(
            "--pool is not for --bisect; name a --machine or none".into(),
        ));
    }
    let body = request_body(args)?;
    let client = Client::new(&args.server, &args.token);
    let created: BisectionCreated =
        client
            .post_json("/api/v1/bisections", &body)?
            .ok_or_else(|| Error::Server {
                status: 204,
                message: "the server answered the bisection without a body".into(),
            })?;
    let page = if created.page_url.starts_with('/') {
        format!("{}{}", client.base(), created.page_url)
    } else {
        created.page_url.clone()
    };
    println!("bisection {} started", created.id);
    println!("page: {page}");
    if !args.wait {
        return Ok(());
    }
    let mut patience = Patience::new(args.poll, args.timeout, args.stall_timeout);
    let end = follow(&client, created.id, &mut patience)?;
    if let Some(outcome) = &end.outcome {
        println!("{}", outcome.summary);
    }
    match (end.status, end.outcome.map(|o| o.kind)) {
        (BisectionStatus::Done, _) => Ok(()),
        (status, kind) => Err(Error::ComparisonFailed(format!(
            "bisection {} ended {}{}",
            end.id,
            status.as_str(),
            if kind == Some(OutcomeKind::Failed) {
                " without an answer"
            } else {
                ""
            }
        ))),
    }
}

/// The bisection, built from the command line.
fn request_body(args: &SubmitArgs) -> Result<BisectionCreateRequest, Error> {
    let [workload] = args.measure.load.workloads.as_slice() else {
        return Err(Error::Usage(
            "--bisect follows the metric of one --workload".into(),
        ));
    };
    let (base, bad) = match (&args.comparison, &args.git, &args.range) {
        (Some(_), _, _) => (None, None),
        (None, Some(url), Some(range)) => {
            let (good, bad) = range
                .split_once("..")
                .ok_or_else(|| Error::Usage(format!("--range {range:?} is not GOOD..BAD")))?;
            let base = BaseSource::Git {
                url: url.clone(),
                commit: good.to_string(),
            };
            (Some(base), Some(bad.to_string()))
        }
        _ => {
            return Err(Error::Usage(
                "--bisect needs --git URL --range GOOD..BAD, or --comparison ID".into(),
            ));
        }
    };
    // A comparison's own parameters are the defaults; the command line's
    // only count when asked for by a non-default task list.
    let setup = setup(&args.measure)?;
    let params = match args.comparison {
        Some(_) if args.measure.load.nr_task == ["1"] => None,
        // A length left out is fixed by the server for every probe: the
        // named mode's, else the machine's, else a wall-clock one.
        _ => Some(setup.params.clone()),
    };
    Ok(BisectionCreateRequest {
        comparison: args.comparison,
        base,
        bad,
        workload: workload.clone(),
        metric: args.metric.clone(),
        params,
        order_seed: None,
        ..Default::default()
    }
    .measured_as(setup))
}

/// Polls the bisection, printing each probe as it is made and judged,
/// until it ends.
fn follow(client: &Client, id: i64, patience: &mut Patience) -> Result<BisectionView, Error> {
    let path = format!("/api/v1/bisections/{id}");
    let mut told = HashSet::new();
    loop {
        let view: BisectionView = match client.get_json(&path) {
            Ok(v) => v,
            Err(e) => {
                patience.failed(&format!("bisection {id}"), e)?;
                patience.pause();
                continue;
            }
        };
        for p in &view.probes {
            let said = (p.comparison_id, p.judgement.is_some());
            if told.insert(said) {
                let what = match (&p.judgement, p.change) {
                    (Some(j), Some(c)) => format!("{c:+.2}%: {j:?}").to_lowercase(),
                    (Some(j), None) => format!("{j:?}").to_lowercase(),
                    (None, _) => "probing".into(),
                };
                let commit = p
                    .commit
                    .commit
                    .as_deref()
                    .map_or(String::new(), |c| format!("[{}] ", &c[..c.len().min(10)]));
                println!(
                    "probe {}/{} {commit}{}: {what}",
                    p.position,
                    view.commits.len(),
                    p.commit.subject
                );
            }
        }
        if view.status != BisectionStatus::Running {
            return Ok(view);
        }
        // Each probe is a comparison with its own waiting note; the
        // bisection's view has none, so only --timeout applies.
        patience.answered(&format!("bisection {id}"), None)?;
        patience.pause();
    }
}
