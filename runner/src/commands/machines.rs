//! `patchperf-runner machines`: the fleet as `GET /api/v1/machines` shows
//! it, one line a machine, and an admin's drain, pause, resume and retire
//! (`POST /api/v1/machines/{name}/{action}`), each answered with the
//! machine's line as it is now.

use serde_json::Value;

use crate::Error;
use crate::agent::client::Client;
use crate::cli::machines::{MachineAction, MachinesArgs, Steer};

/// Runs `patchperf-runner machines`.
pub fn run(args: MachinesArgs) -> Result<(), Error> {
    let client = Client::new(&args.server, &args.token);
    let (verb, steer) = match args.action {
        None => return list(&client, false),
        Some(MachineAction::List { retired }) => return list(&client, retired),
        Some(MachineAction::Drain(s)) => ("drain", s),
        Some(MachineAction::Pause(s)) => ("pause", s),
        Some(MachineAction::Resume(s)) => ("resume", s),
        Some(MachineAction::Retire(s)) => ("retire", s),
    };
    let machine = steered(&client, verb, &steer)?;
    println!("{}", line(&machine));
    Ok(())
}

fn list(client: &Client, retired: bool) -> Result<(), Error> {
    let path = if retired {
        "/api/v1/machines?retired=true"
    } else {
        "/api/v1/machines"
    };
    let fleet: Value = client.get_json(path)?;
    let machines = fleet["machines"].as_array().cloned().unwrap_or_default();
    if machines.is_empty() && retired {
        println!("no machine has registered");
    } else if machines.is_empty() {
        println!("no machine in service (retired ones: machines list --retired)");
    }
    for m in &machines {
        println!("{}", line(m));
    }
    if let Some(n) = fleet["queued_any"].as_i64().filter(|n| *n > 0) {
        println!("{n} queued job(s) any machine may take");
    }
    Ok(())
}

/// `POST`s `verb` for the machine `steer` names; the machine as it is now.
fn steered(client: &Client, verb: &str, steer: &Steer) -> Result<Value, Error> {
    let mut path = format!("/api/v1/machines/{}/{verb}", encoded(&steer.name));
    if let Some(note) = &steer.note {
        path.push_str("?note=");
        path.push_str(&encoded(note));
    }
    let answer: Option<Value> = client.post_json(&path, &Value::Null)?;
    answer.ok_or_else(|| Error::Server {
        status: 204,
        message: format!("POST {path}: no machine in the answer"),
    })
}

/// `lab-1  draining (drained)  0 jobs in hand, 2 queued for it only,
/// heard 3 s ago  — "kernel upgrade"`.
fn line(m: &Value) -> String {
    let name = m["name"].as_str().unwrap_or("?");
    let mut state = m["state"].as_str().unwrap_or("?").to_string();
    if m["drained"].as_bool() == Some(true) && state == "draining" {
        state.push_str(" (drained)");
    }
    let held = m["jobs"].as_array().map_or(0, Vec::len);
    let queued = m["queued"].as_i64().unwrap_or(0);
    let mut text =
        format!("{name:<20} {state:<20} {held} job(s) in hand, {queued} queued for it only");
    if let Some(s) = m["heard_seconds_ago"].as_i64() {
        text.push_str(&format!(", heard {s} s ago"));
    }
    if let Some(note) = m["state_note"].as_str().filter(|n| !n.is_empty()) {
        text.push_str(&format!(" — {note:?}"));
    }
    text
}

/// `text` as a URL path segment or query value: unreserved bytes as they
/// are, every other byte as `%XX`.
fn encoded(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_note_is_encoded_for_the_query() {
        assert_eq!(encoded("lab-1"), "lab-1");
        assert_eq!(
            encoded("kernel upgrade & co/é"),
            "kernel%20upgrade%20%26%20co%2F%C3%A9"
        );
    }

    #[test]
    fn a_line_says_state_jobs_queue_and_note() {
        let m = serde_json::json!({
            "name": "lab-1", "state": "draining", "drained": true, "jobs": [],
            "queued": 2, "heard_seconds_ago": 3, "state_note": "kernel upgrade",
        });
        let l = line(&m);
        assert!(l.starts_with("lab-1"), "{l}");
        assert!(l.contains("draining (drained)"), "{l}");
        assert!(
            l.contains("0 job(s) in hand, 2 queued for it only, heard 3 s ago"),
            "{l}"
        );
        assert!(l.ends_with("— \"kernel upgrade\""), "{l}");
    }
}
