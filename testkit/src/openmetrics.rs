//! A `/metrics` answer read by Prometheus' own client library: Debian's
//! `python3-prometheus-client`, whose OpenMetrics parser is strict (it
//! refuses a missing `# EOF`, a counter sample without `_total`, a bad
//! label or number), so a test that reads the server's exposition through
//! it checks the format as a scraper would, not as we think it is.

use std::collections::BTreeMap;
use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::Value;

/// One sample as the parser gave it.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Its family's name (`patchperf_jobs`).
    pub family: String,
    /// The family's type (`gauge`, `counter`, `histogram`).
    pub kind: String,
    /// The sample's own name (`patchperf_http_requests_total`).
    pub name: String,
    /// Its labels.
    pub labels: BTreeMap<String, String>,
    /// Its value.
    pub value: f64,
}

const PARSE: &str = r#"
import json, sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families
samples = []
for family in text_string_to_metric_families(sys.stdin.read()):
    for s in family.samples:
        samples.append({"family": family.name, "kind": family.type,
                        "name": s.name, "labels": s.labels, "value": s.value})
json.dump(samples, sys.stdout)
"#;

/// `text` parsed; panics with the parser's words when it refuses it.
pub fn parse(text: &str) -> Vec<Sample> {
    let mut child = Command::new("/usr/bin/python3")
        .args(["-c", PARSE])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3-prometheus-client (apt-get install python3-prometheus-client)");
    let mut stdin = child.stdin.take().expect("piped");
    stdin
        .write_all(text.as_bytes())
        .expect("writing to the parser");
    drop(stdin);
    let out = child.wait_with_output().expect("the parser ran");
    assert!(
        out.status.success(),
        "Prometheus' parser refused the exposition: {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    let samples: Vec<Value> = serde_json::from_slice(&out.stdout).expect("the parser's JSON");
    samples
        .into_iter()
        .map(|s| Sample {
            family: s["family"].as_str().unwrap_or_default().to_string(),
            kind: s["kind"].as_str().unwrap_or_default().to_string(),
            name: s["name"].as_str().unwrap_or_default().to_string(),
            labels: s["labels"]
                .as_object()
                .map(|l| {
                    l.iter()
                        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                        .collect()
                })
                .unwrap_or_default(),
            value: s["value"].as_f64().unwrap_or(f64::NAN),
        })
        .collect()
}

/// The value of sample `name` whose labels include every one of `labels`;
/// `None` when there is none.
pub fn value(samples: &[Sample], name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    samples
        .iter()
        .find(|s| {
            s.name == name
                && labels
                    .iter()
                    .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
        })
        .map(|s| s.value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parser_refuses_what_a_scraper_would() {
        let good = "# TYPE x counter\nx_total{a=\"b\"} 3\n# EOF\n";
        let samples = parse(good);
        assert_eq!(value(&samples, "x_total", &[("a", "b")]), Some(3.0));
        // Without `# EOF` an OpenMetrics scrape is cut short.
        let cut = std::panic::catch_unwind(|| parse("# TYPE x counter\nx_total 3\n"));
        assert!(cut.is_err());
    }
}
