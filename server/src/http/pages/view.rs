//! What only pages show: a verdict's CSS class and letter, short commit
//! ids, times and memory sizes as the pages print them. Report numbers
//! come from `patchperf_common::report::format`, shared with the text
//! report.

use chrono::{DateTime, Utc};
use patchperf_common::comparison::OverallVerdict;
use patchperf_common::protocol::FailureReason;
use patchperf_common::stats::Verdict;

/// CSS class of a verdict: `no-change`.
pub fn verdict_class(v: Verdict) -> &'static str {
    match v {
        Verdict::Improvement => "improvement",
        Verdict::Regression => "regression",
        Verdict::Changed => "changed",
        Verdict::NoChange => "no-change",
        Verdict::Undecided => "undecided",
    }
}

/// One letter for a verdict, beside its colour: `I`, `R`, `C`, `N`, `U`.
pub fn verdict_letter(v: Verdict) -> char {
    match v {
        Verdict::Improvement => 'I',
        Verdict::Regression => 'R',
        Verdict::Changed => 'C',
        Verdict::NoChange => 'N',
        Verdict::Undecided => 'U',
    }
}

/// CSS class of an overall verdict: `no-change`.
pub fn overall_class(v: OverallVerdict) -> String {
    v.as_str().replace(' ', "-")
}

/// An overall verdict as the pages say it: a no change whose headline is
/// a real change smaller than δ is `no change (real, below δ)`, as its
/// report's own verdict says, so that the bold line and the listing do not
/// read as if nothing moved.
pub fn overall_words(v: OverallVerdict, real_below_delta: bool) -> String {
    match v {
        OverallVerdict::NoChange if real_below_delta => "no change (real, below δ)".into(),
        v => v.as_str().to_string(),
    }
}

/// A job's failure in words, with its detail: `build failed: make: …`.
pub fn failure_text(reason: FailureReason, detail: Option<&str>) -> String {
    match detail {
        Some(d) if !d.is_empty() => format!("{}: {d}", reason.as_str()),
        _ => reason.as_str().to_string(),
    }
}

/// A commit id as 0-day prints one: its first 10 characters.
pub fn short_commit(sha: &str) -> &str {
    sha.get(..10).unwrap_or(sha)
}

/// `GOOD..BAD` with short ids.
pub fn short_range(range: &str) -> String {
    match range.split_once("..") {
        Some((from, to)) => format!("{}..{}", short_commit(from), short_commit(to)),
        None => range.to_string(),
    }
}

/// `2026-01-05 14:03 UTC`.
pub fn time(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M UTC").to_string()
}

/// `09:41:07`: a log line's time; the day is in the page's first line.
pub fn clock(t: DateTime<Utc>) -> String {
    t.format("%H:%M:%S").to_string()
}

/// A machine's memory (see [`patchperf_common::report::format::memory`]).
pub fn memory(bytes: i64) -> String {
    patchperf_common::report::format::memory(u64::try_from(bytes).unwrap_or(0))
}

/// Percent-encodes all but RFC 3986's unreserved characters and `@`, so a
/// message-id can sit in a path (`/r/<id>`).
pub fn url_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~' | b'@') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `text` cut at its backticks into plain parts and `code` parts (true),
/// for a template to mark the code; with an unpaired backtick all is text.
pub fn code_spans(text: &str) -> Vec<(String, bool)> {
    let parts: Vec<&str> = text.split('`').collect();
    let paired = parts.len() % 2 == 1;
    parts
        .iter()
        .enumerate()
        .filter(|(_, p)| !p.is_empty())
        .map(|(i, p)| {
            let code = paired && i % 2 == 1;
            (p.to_string(), code)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_ids() {
        let a = "0123456789abcdef0123456789abcdef01234567";
        let b = "fedcba9876543210fedcba9876543210fedcba98";
        assert_eq!(short_commit(a), "0123456789");
        assert_eq!(short_range(&format!("{a}..{b}")), "0123456789..fedcba9876");
        assert_eq!(short_commit("v6.1"), "v6.1");
    }

    #[test]
    fn message_ids_keep_their_at_and_lose_their_slashes() {
        assert_eq!(
            url_encode("20230808-divers-verehren-02abcc37fe60@brauner"),
            "20230808-divers-verehren-02abcc37fe60@brauner"
        );
        assert_eq!(url_encode("a/b c+d@x"), "a%2Fb%20c%2Bd@x");
    }

    #[test]
    fn memory_in_gigabytes() {
        assert_eq!(memory(64 << 30), "64G");
        assert_eq!(memory(512 << 20), "512M");
    }

    #[test]
    fn backticks_mark_code() {
        assert_eq!(
            code_spans("a `f` gone"),
            [
                ("a ".to_string(), false),
                ("f".into(), true),
                (" gone".into(), false)
            ]
        );
        assert_eq!(
            code_spans("odd ` tick"),
            [("odd ".to_string(), false), (" tick".into(), false)]
        );
    }
}
