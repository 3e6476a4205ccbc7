//! One more A/A comparison on a busy machine, noisier than the one before,
//! so its noise floor changes verdicts: how long the first verdict listing
//! takes after it finishes, and from when on the listings show, for every
//! comparison of the machine, the verdict its own page computes.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::client::{Client, ms};
use crate::lab::{Finished, Item, Kind, Lab, Machine, Planned};

/// Longest the probe polls the listings, whatever `settle` says.
const MAX_POLL: Duration = Duration::from_secs(300);

/// What the probe found.
#[derive(Debug, Clone)]
pub struct Probe {
    pub machine: String,
    /// A/B comparisons on the machine.
    pub comparisons: usize,
    /// The first `?machine=…&verdict=regression` listing after the A/A
    /// finished: its own latency, and how long after the finish it answered.
    pub first_listing_ms: Option<f64>,
    pub first_listing_after_ms: Option<f64>,
    /// From the A/A's finish to the first poll whose listing matched every
    /// comparison's own verdict; `None` if none did.
    pub correct_after: Option<Duration>,
    /// Listing polls made.
    pub polls: usize,
    /// Verdicts the new noise floor changed (own verdict after ≠ listing
    /// before).
    pub changed: usize,
    /// Comparisons the last poll still listed with another verdict.
    pub stale_at_end: usize,
}

/// The listed verdict of every comparison of `machine` (`null` while a
/// final one has none stored).
fn listed(c: &Client<'_>, machine: &str) -> Option<HashMap<i64, Value>> {
    let mut out = HashMap::new();
    let mut before = None;
    loop {
        let mut path = format!("/api/v1/comparisons?machine={machine}&limit=500");
        if let Some(b) = before {
            path.push_str(&format!("&before={b}"));
        }
        let page: Value = serde_json::from_str(&c.get(&path).0?.body).ok()?;
        for s in page["comparisons"].as_array()? {
            out.insert(s["id"].as_i64()?, s["verdict"].clone());
        }
        before = page["next_before"].as_i64();
        if before.is_none() {
            return Some(out);
        }
    }
}

/// Runs the probe on `machines[machine]`; `n` seeds its runs, `noise_permille`
/// is its spread, `settle` how long the listings must stay unchanged
/// before polling stops.
pub fn run(
    lab: &Lab<'_>,
    machines: &[Machine],
    machine: usize,
    finished: &[Finished],
    n: u64,
    noise_permille: u32,
    settle: Duration,
) -> Probe {
    let name = machines[machine].name.clone();
    let ids: Vec<i64> = finished
        .iter()
        .filter(|f| f.machine == machine && !matches!(f.kind, Kind::Aa { .. }))
        .map(|f| f.id)
        .collect();
    let c = Client::new(lab.url, lab.errors, lab.timeout);
    let before = listed(&c, &name).unwrap_or_default();
    println!(
        "probe: A/A on {name} ({} comparisons), noise {noise_permille}‰",
        ids.len()
    );
    let probe = Planned {
        n,
        kind: Kind::Aa { noise_permille },
        machine,
    };
    if lab.run(machines, &[Item::Planned(probe)]).is_empty() {
        lab.errors
            .note("the probing A/A comparison did not finish".into());
    }
    let finish = lab
        .counts
        .last_done
        .lock()
        .map_or(None, |t| *t)
        .unwrap_or_else(Instant::now);
    let (first, took) = c.get(&format!(
        "/api/v1/comparisons?machine={name}&verdict=regression&limit=500"
    ));
    let answered = finish.elapsed();

    // Poll until the listings stay unchanged for `settle`.
    let mut polls: Vec<(Duration, HashMap<i64, Value>)> = Vec::new();
    let mut stable_since = Instant::now();
    while finish.elapsed() < MAX_POLL {
        let Some(now) = listed(&c, &name) else { break };
        let at = finish.elapsed();
        if polls.last().is_none_or(|(_, last)| *last != now) {
            stable_since = Instant::now();
        }
        polls.push((at, now));
        if stable_since.elapsed() >= settle {
            break;
        }
        std::thread::sleep(Duration::from_millis(250));
    }

    // What each comparison's own page says now.
    let truth: HashMap<i64, Value> = ids
        .iter()
        .filter_map(|&id| {
            let (a, _) = c.get(&format!("/api/v1/comparisons/{id}"));
            let v: Value = serde_json::from_str(&a?.body).ok()?;
            Some((id, v["verdict"]["overall"].clone()))
        })
        .collect();
    if truth.len() != ids.len() {
        lab.errors.note(format!(
            "{} of {} comparisons on {name} could not be read",
            ids.len() - truth.len(),
            ids.len()
        ));
    }
    let stale = |snap: &HashMap<i64, Value>| {
        truth
            .iter()
            .filter(|(id, v)| snap.get(id) != Some(*v))
            .count()
    };
    Probe {
        machine: name,
        comparisons: ids.len(),
        first_listing_ms: first.is_some().then(|| ms(took)),
        first_listing_after_ms: first.is_some().then(|| ms(answered)),
        correct_after: polls
            .iter()
            .find(|(_, snap)| stale(snap) == 0)
            .map(|(at, _)| *at),
        polls: polls.len(),
        changed: truth
            .iter()
            .filter(|(id, v)| before.get(id) != Some(*v))
            .count(),
        stale_at_end: polls.last().map_or(truth.len(), |(_, snap)| stale(snap)),
    }
}
