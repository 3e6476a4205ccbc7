//! What a comparison is and where it stands: its kind, its status (derived
//! from its jobs' states) and the overall verdict of its report. Each is
//! spelled as the API, the pages and the database spell it.

use std::fmt;

use serde::{Deserialize, Serialize};

/// What a comparison compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum ComparisonKind {
    /// Base against patched.
    Ab,
    /// Base against itself: measures the machine's noise floor.
    Aa,
}

impl ComparisonKind {
    /// `ab` / `aa`.
    pub fn as_str(self) -> &'static str {
        match self {
            ComparisonKind::Ab => "ab",
            ComparisonKind::Aa => "aa",
        }
    }

    /// Parses [`ComparisonKind::as_str`]'s output.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "ab" => Some(ComparisonKind::Ab),
            "aa" => Some(ComparisonKind::Aa),
            _ => None,
        }
    }
}

/// Overall status of a comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum ComparisonStatus {
    /// No job claimed yet.
    Queued,
    /// Some job claimed or finished, some still to do.
    Running,
    /// Every job done.
    Done,
    /// Every job final, at least one failed.
    Failed,
    /// Cancelled by CI or an admin.
    Cancelled,
}

impl ComparisonStatus {
    /// Every status, in the order a comparison goes through them.
    pub const ALL: &'static [ComparisonStatus] = &[
        ComparisonStatus::Queued,
        ComparisonStatus::Running,
        ComparisonStatus::Done,
        ComparisonStatus::Failed,
        ComparisonStatus::Cancelled,
    ];

    /// Lower-case name as stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            ComparisonStatus::Queued => "queued",
            ComparisonStatus::Running => "running",
            ComparisonStatus::Done => "done",
            ComparisonStatus::Failed => "failed",
            ComparisonStatus::Cancelled => "cancelled",
        }
    }

    /// Parses [`ComparisonStatus::as_str`]'s output.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|v| v.as_str() == s)
    }

    /// Whether a comparison in this status is over: its runs can no longer
    /// change (done, failed, cancelled).
    pub fn is_final(self) -> bool {
        !matches!(self, ComparisonStatus::Queued | ComparisonStatus::Running)
    }

    /// Whether every job of a comparison in this status is final too (done
    /// or failed), so that nothing but its report can change what is shown
    /// of it. A cancelled one may still have a job a runner holds.
    pub fn is_settled(self) -> bool {
        matches!(self, ComparisonStatus::Done | ComparisonStatus::Failed)
    }
}

impl fmt::Display for ComparisonStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The overall verdict of a comparison's report: the worst of its reports'
/// headline verdicts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum OverallVerdict {
    /// Some report's headline metric regressed.
    #[serde(rename = "regression")]
    Regression,
    /// Neither a regression nor every headline decided.
    #[serde(rename = "undecided")]
    Undecided,
    /// Some headline improved and none regressed.
    #[serde(rename = "improvement")]
    Improvement,
    /// Every headline shows no change.
    #[serde(rename = "no change")]
    NoChange,
    /// No run stored yet.
    #[serde(rename = "no results")]
    NoResults,
}

impl OverallVerdict {
    /// Every overall verdict, worst first (the dashboard's order).
    pub const ALL: &'static [OverallVerdict] = &[
        OverallVerdict::Regression,
        OverallVerdict::Undecided,
        OverallVerdict::Improvement,
        OverallVerdict::NoChange,
        OverallVerdict::NoResults,
    ];

    /// As shown and stored: `no change`.
    pub fn as_str(self) -> &'static str {
        match self {
            OverallVerdict::Regression => "regression",
            OverallVerdict::Undecided => "undecided",
            OverallVerdict::Improvement => "improvement",
            OverallVerdict::NoChange => "no change",
            OverallVerdict::NoResults => "no results",
        }
    }

    /// Parses [`OverallVerdict::as_str`]'s output.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|v| v.as_str() == s)
    }
}

impl fmt::Display for OverallVerdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(feature = "sqlx")]
text_column!(ComparisonKind, as_str, parse);
#[cfg(feature = "sqlx")]
text_column!(ComparisonStatus, as_str, parse);
#[cfg(feature = "sqlx")]
text_column!(OverallVerdict, as_str, parse);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_round_trip_and_match_serde() {
        for s in ComparisonStatus::ALL {
            assert_eq!(ComparisonStatus::parse(s.as_str()), Some(*s));
            assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
        }
        for v in OverallVerdict::ALL {
            assert_eq!(OverallVerdict::parse(v.as_str()), Some(*v));
            assert_eq!(serde_json::to_value(v).unwrap(), v.as_str());
        }
        for k in [ComparisonKind::Ab, ComparisonKind::Aa] {
            assert_eq!(ComparisonKind::parse(k.as_str()), Some(k));
            assert_eq!(serde_json::to_value(k).unwrap(), k.as_str());
        }
    }

    #[test]
    fn only_queued_and_running_are_live() {
        let live: Vec<_> = ComparisonStatus::ALL
            .iter()
            .filter(|s| !s.is_final())
            .collect();
        assert_eq!(
            live,
            [&ComparisonStatus::Queued, &ComparisonStatus::Running]
        );
    }

    #[test]
    fn settled_is_final_without_cancelled() {
        let settled: Vec<_> = ComparisonStatus::ALL
            .iter()
            .filter(|s| s.is_settled())
            .collect();
        assert_eq!(
            settled,
            [&ComparisonStatus::Done, &ComparisonStatus::Failed]
        );
        assert!(
            ComparisonStatus::ALL
                .iter()
                .all(|s| !s.is_settled() || s.is_final())
        );
    }
}
