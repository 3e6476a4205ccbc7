//! `patchperf-runner lists`: the mailing lists a server follows, one line
//! a list (`GET /api/v1/lists`), and a ci token's add (`POST`), read now
//! (`…/push`) and hand-in (`…/messages`), an admin's remove (`DELETE`).
//! A list is named by its id or its name.

use std::io::Read;

use serde_json::{Map, Value, json};

use crate::Error;
use crate::agent::client::{Client, unexpected_empty};
use crate::cli::lists::{AddList, HandIn, ListAction, ListsArgs};

/// Runs `patchperf-runner lists`.
pub fn run(args: ListsArgs) -> Result<(), Error> {
    let client = Client::new(&args.server, &args.token);
    match args.action.unwrap_or(ListAction::List) {
        ListAction::List => list(&client),
        ListAction::Add(add) => {
            let created: Value = client
                .post_json("/api/v1/lists", &request(&add))?
                .ok_or_else(|| unexpected_empty("POST /api/v1/lists"))?;
            let id = created["id"].as_i64().unwrap_or_default();
            let shown: Value = client.get_json(&format!("/api/v1/lists/{id}"))?;
            println!("{}", line(&shown));
            Ok(())
        }
        ListAction::Show(named) => {
            let id = id_of(&client, &named.list)?;
            let shown: Value = client.get_json(&format!("/api/v1/lists/{id}"))?;
            println!(
                "{}",
                serde_json::to_string_pretty(&shown).unwrap_or_default()
            );
            Ok(())
        }
        ListAction::Read(named) => {
            let id = id_of(&client, &named.list)?;
            let path = format!("/api/v1/lists/{id}/push");
            let read: Value = client
                .post_json(&path, &json!({}))?
                .ok_or_else(|| unexpected_empty(&path))?;
            let new = read["messages"].as_u64().unwrap_or_default();
            println!("{}: {new} new message(s) read from its archive", named.list);
            Ok(())
        }
        ListAction::HandIn(mail) => hand_in(&client, &mail),
        ListAction::Remove(named) => {
            let id = id_of(&client, &named.list)?;
            client.delete(&format!("/api/v1/lists/{id}"))?;
            println!("list {id} ({}) removed", named.list);
            Ok(())
        }
    }
}

fn list(client: &Client) -> Result<(), Error> {
    let all: Value = client.get_json("/api/v1/lists")?;
    let lists = all["lists"].as_array().cloned().unwrap_or_default();
    if lists.is_empty() {
        println!("no list is followed (lists add NAME --address … --archive-url …)");
    }
    for l in &lists {
        println!("{}", line(l));
    }
    Ok(())
}

/// `1  linux-fsdevel  <linux-fsdevel@vger.kernel.org>  archive
/// https://lore…  base vfs.all  1234 messages, read 2026-12-06 10:00`,
/// and the last read's error when there is one.
fn line(l: &Value) -> String {
    let text = |k: &str| l[k].as_str().unwrap_or_default().to_string();
    let source = match l["archive_url"].as_str() {
        Some(url) => format!("archive {url}"),
        None => "mail handed in".to_string(),
    };
    let mut out = format!(
        "{:<4} {:<20} <{}>  {source}  base {}  {} messages",
        l["id"].as_i64().unwrap_or_default(),
        text("name"),
        text("address"),
        text("base"),
        l["messages"].as_i64().unwrap_or_default(),
    );
    if let Some(at) = l["polled_at"].as_str() {
        out.push_str(&format!(", read {at}"));
    }
    if let Some(error) = l["poll_error"].as_str().filter(|e| !e.is_empty()) {
        out.push_str(&format!(" — {error:?}"));
    }
    out
}

/// The list `named` names: a number is its id, anything else its name.
fn id_of(client: &Client, named: &str) -> Result<i64, Error> {
    if let Ok(id) = named.parse::<i64>() {
        return Ok(id);
    }
    let all: Value = client.get_json("/api/v1/lists")?;
    all["lists"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|l| l["name"].as_str() == Some(named))
        .and_then(|l| l["id"].as_i64())
        .ok_or_else(|| Error::Usage(format!("the server follows no list named {named:?}")))
}

/// The body of `POST /api/v1/lists`: the flags given, nothing else, so
/// that the server's defaults apply to the rest.
fn request(add: &AddList) -> Value {
    let mut body = Map::new();
    body.insert("name".into(), json!(add.name));
    body.insert("address".into(), json!(add.address));
    let mut optional = |key: &str, value: Option<Value>| {
        if let Some(v) = value {
            body.insert(key.into(), v);
        }
    };
    optional("archive_url", add.archive_url.as_ref().map(|v| json!(v)));
    optional("read_history", add.read_history.then_some(json!(true)));
    optional("tree", add.tree.as_ref().map(|v| json!(v)));
    optional("base_url", add.base_url.as_ref().map(|v| json!(v)));
    optional("base_branch", add.base_branch.as_ref().map(|v| json!(v)));
    optional("paths", (!add.paths.is_empty()).then(|| json!(add.paths)));
    optional(
        "workloads",
        (!add.workloads.is_empty()).then(|| json!(add.workloads)),
    );
    optional("runs", add.runs.map(|v| json!(v)));
    optional("backend", add.measurement.map(|m| json!(m)));
    optional("machine", add.machine.as_ref().map(|v| json!(v)));
    optional("pool", add.pool.as_ref().map(|v| json!(v)));
    optional("cc_list", add.no_cc_list.then_some(json!(false)));
    optional("cc_thread", add.cc_thread.then_some(json!(true)));
    optional(
        "report_improvements",
        add.report_improvements.then_some(json!(true)),
    );
    Value::Object(body)
}

/// Hands in one message or an mbox (told apart by its first line, as
/// mbox files begin `From `).
fn hand_in(client: &Client, mail: &HandIn) -> Result<(), Error> {
    let mut bytes = Vec::new();
    let read = if mail.file.as_os_str() == "-" {
        std::io::stdin().read_to_end(&mut bytes)
    } else {
        std::fs::File::open(&mail.file).and_then(|mut f| f.read_to_end(&mut bytes))
    };
    read.map_err(|e| Error::Usage(format!("{}: {e}", mail.file.display())))?;
    if bytes.is_empty() {
        return Err(Error::Usage(format!(
            "{}: no mail in it",
            mail.file.display()
        )));
    }
    let kind = if bytes.starts_with(b"From ") {
        "application/mbox"
    } else {
        "message/rfc822"
    };
    let id = id_of(client, &mail.list)?;
    let taken: Value = client.post_bytes(&format!("/api/v1/lists/{id}/messages"), kind, &bytes)?;
    let count = |k: &str| taken[k].as_u64().unwrap_or_default();
    let refused = taken["refused"].as_array().cloned().unwrap_or_default();
    println!(
        "{}: taken {}, known {}, refused {}",
        mail.list,
        count("taken"),
        count("known"),
        refused.len()
    );
    for why in &refused {
        println!("refused: {}", why.as_str().unwrap_or_default());
    }
    Ok(())
}
