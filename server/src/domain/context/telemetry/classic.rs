//! The exposition in Prometheus' classic text format (0.0.4), for what
//! asks for `text/plain` rather than OpenMetrics: `promtool check
//! metrics`, older scrapers, a person with curl. The two formats differ
//! where a classic parser would go wrong: a counter's `# TYPE` and
//! `# HELP` name its samples (`…_total`), not the family, and an info's
//! (`…_info`) is a gauge; there is no `# UNIT` and no `# EOF`; `unknown`
//! is `untyped`. Without this a classic parser sees every counter as
//! untyped.

/// The media type of [`classic`]'s text.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// `openmetrics` (as [`super::scrape::exposition`] writes it) in the
/// classic text format.
pub fn classic(openmetrics: &str) -> String {
    let mut counters: Vec<&str> = Vec::new();
    let mut infos: Vec<&str> = Vec::new();
    for line in openmetrics.lines() {
        match line.strip_prefix("# TYPE ").and_then(|l| l.split_once(' ')) {
            Some((name, "counter")) => counters.push(name),
            Some((name, "info")) => infos.push(name),
            _ => {}
        }
    }
    let is_counter = |name: &str| counters.contains(&name);
    let is_info = |name: &str| infos.contains(&name);
    let mut out = String::with_capacity(openmetrics.len());
    for line in openmetrics.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        let described = ["# TYPE ", "# HELP "]
            .into_iter()
            .find_map(|p| line.strip_prefix(p).map(|rest| (p, rest)));
        if let Some((prefix, rest)) = described {
            let (name, tail) = rest.split_once(' ').unwrap_or((rest, ""));
            let (name, tail) = if is_counter(name) && !name.ends_with("_total") {
                (format!("{name}_total"), tail)
            } else if is_info(name) {
                let tail = if prefix == "# TYPE " { "gauge" } else { tail };
                (format!("{name}_info"), tail)
            } else {
                (name.to_string(), tail)
            };
            let tail = if prefix == "# TYPE " && tail == "unknown" {
                "untyped"
            } else {
                tail
            };
            out.push_str(&format!("{prefix}{name} {tail}\n"));
            continue;
        }
        // A counter's creation time is OpenMetrics' only.
        let sample = line.split(['{', ' ']).next().unwrap_or("");
        if sample.strip_suffix("_created").is_some_and(&is_counter) {
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_are_described_by_their_samples_and_openmetrics_only_lines_go() {
        let om = "# HELP p_requests Requests.\n# TYPE p_requests counter\n\
                  p_requests_total{route=\"/x\"} 3\np_requests_created{route=\"/x\"} 1.7e9\n\
                  # HELP p_seen_seconds Seen.\n# TYPE p_seen_seconds gauge\n# UNIT p_seen_seconds seconds\n\
                  p_seen_seconds 5\n# TYPE p_odd unknown\np_odd 1\n\
                  # HELP p_build The build.\n# TYPE p_build info\np_build_info{version=\"1\"} 1\n# EOF\n";
        assert_eq!(
            classic(om),
            "# HELP p_requests_total Requests.\n# TYPE p_requests_total counter\n\
             p_requests_total{route=\"/x\"} 3\n# HELP p_seen_seconds Seen.\n\
             # TYPE p_seen_seconds gauge\np_seen_seconds 5\n# TYPE p_odd untyped\np_odd 1\n\
             # HELP p_build_info The build.\n# TYPE p_build_info gauge\np_build_info{version=\"1\"} 1\n"
        );
    }
}
