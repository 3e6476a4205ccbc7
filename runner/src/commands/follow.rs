//! `patchperf-runner status`, `wait` and `cancel`: a comparison submitted
//! earlier, by id. A CI job that submitted without `--wait` (or whose wait
//! was cut short: a `--timeout`, a killed job) asks where it stands, waits
//! for it with the same output and exit status as `submit --wait`, or
//! cancels it.

use patchperf_common::api::CancelResponse;

use super::outcome::{self, Outcome};
use super::patience::Patience;
use super::submit::{Progress, absolute, conclude, follow, left_behind};
use crate::Error;
use crate::agent::client::Client;
use crate::cli::follow::FollowArgs;

/// The view of comparison `args.id`.
fn view(client: &Client, id: i64) -> Result<Progress, Error> {
    client.get_json(&format!("/api/v1/comparisons/{id}"))
}

/// `status ID`: its status, verdict and report URL (or the server's whole
/// view as JSON with `--json`).
pub fn status(args: &FollowArgs) -> Result<(), Error> {
    let client = Client::new(&args.server, &args.token);
    if args.json {
        let whole: serde_json::Value =
            client.get_json(&format!("/api/v1/comparisons/{}", args.id))?;
        let text = serde_json::to_string_pretty(&whole).map_err(|e| Error::Format {
            what: "the comparison's view".into(),
            message: e.to_string(),
        })?;
        println!("{text}");
        return Ok(());
    }
    let v = view(&client, args.id)?;
    println!("comparison {}: {}", v.id, v.status);
    if let Some(now) = &v.progress {
        println!("now: {now}");
    }
    if let Some(waiting) = &v.waiting {
        println!("waiting: {waiting}");
    }
    for line in &v.verdict.headlines {
        println!("{line}");
    }
    println!("verdict: {}", v.verdict.overall);
    println!("report: {}", absolute(&client, &v.report_url));
    Ok(())
}

/// `wait ID`: follows it to its end as `submit --wait` does.
pub fn wait(args: &FollowArgs) -> Result<(), Error> {
    let mut seen = Outcome {
        id: Some(args.id),
        ..Outcome::default()
    };
    if !args.json {
        return wait_for(args, &mut seen);
    }
    outcome::json_mode();
    let result = wait_for(args, &mut seen);
    seen.print(&result);
    result
}

fn wait_for(args: &FollowArgs, seen: &mut Outcome) -> Result<(), Error> {
    let client = Client::new(&args.server, &args.token);
    let mut patience = Patience::new(args.poll, args.timeout, args.stall_timeout);
    crate::proc::install_interrupt_handler()?;
    let end = follow(&client, args.id, &mut patience)
        .map_err(|e| left_behind(&client, args.id, args.cancel_on_signal, e))?;
    let report_url = absolute(&client, &end.report_url);
    seen.report_url = Some(report_url.clone());
    let result = conclude(&client, &end, &report_url, args.fail_on_regression);
    seen.end = Some(end);
    result
}

/// `cancel ID`.
pub fn cancel(args: &FollowArgs) -> Result<(), Error> {
    let client = Client::new(&args.server, &args.token);
    let done: Option<CancelResponse> = client.post_json(
        &format!("/api/v1/comparisons/{}/cancel", args.id),
        &serde_json::json!({}),
    )?;
    let status = done.map_or_else(|| "cancelled".to_string(), |d| d.status.to_string());
    println!("comparison {}: {status}", args.id);
    Ok(())
}
