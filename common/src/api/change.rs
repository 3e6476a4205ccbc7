//! A change point of a tracked tree's history as the API, the pages and
//! the database spell it: what it is (its verdict) and what people said of
//! it (its state).

use std::fmt;

use serde::{Deserialize, Serialize};

/// Which way a change point moved its metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum ChangeVerdict {
    /// For the worse.
    Regression,
    /// For the better.
    Improvement,
    /// A metric with no better direction moved.
    Changed,
}

impl ChangeVerdict {
    /// `regression`, `improvement`, `changed`.
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeVerdict::Regression => "regression",
            ChangeVerdict::Improvement => "improvement",
            ChangeVerdict::Changed => "changed",
        }
    }

    /// Parses [`ChangeVerdict::as_str`]'s output.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "regression" => Some(ChangeVerdict::Regression),
            "improvement" => Some(ChangeVerdict::Improvement),
            "changed" => Some(ChangeVerdict::Changed),
            _ => None,
        }
    }
}

/// What people said of a change point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum ChangeState {
    /// Nobody has yet.
    Open,
    /// Seen, being handled.
    Acknowledged,
    /// The change was meant; not a regression to chase.
    Expected,
}

impl ChangeState {
    /// Every state, open first.
    pub const ALL: &'static [ChangeState] = &[
        ChangeState::Open,
        ChangeState::Acknowledged,
        ChangeState::Expected,
    ];

    /// `open`, `acknowledged`, `expected`.
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeState::Open => "open",
            ChangeState::Acknowledged => "acknowledged",
            ChangeState::Expected => "expected",
        }
    }

    /// Parses [`ChangeState::as_str`]'s output.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|c| c.as_str() == s)
    }
}

impl fmt::Display for ChangeVerdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for ChangeState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(feature = "sqlx")]
text_column!(ChangeVerdict, as_str, parse);
#[cfg(feature = "sqlx")]
text_column!(ChangeState, as_str, parse);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_spelling_reads_back() {
        for s in ChangeState::ALL {
            assert_eq!(ChangeState::parse(s.as_str()), Some(*s));
        }
        for v in [
            ChangeVerdict::Regression,
            ChangeVerdict::Improvement,
            ChangeVerdict::Changed,
        ] {
            assert_eq!(ChangeVerdict::parse(v.as_str()), Some(v));
        }
        assert_eq!(ChangeState::parse("closed"), None);
    }
}
