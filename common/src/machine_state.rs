//! What an admin has said about a runner machine: whether it may take new
//! work, and the labels that put it in pools (a comparison may ask for a
//! pool instead of one machine). The server stores it and refuses claims by it; the runner reads it
//! from a registration or a claim's answer and says in its log why it is
//! idle. The words are those of a lab's queue (Slurm's `drain`, LAVA's
//! `retired`): draining finishes the job in hand and takes nothing new,
//! paused takes nothing until resumed, retired never takes work again but
//! keeps its history.

use serde::{Deserialize, Serialize};

/// A machine's admin state. Only [`MachineState::Active`] claims jobs; a
/// job already in hand finishes in every state (its lease, heartbeats,
/// uploads and finish go on as before).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum MachineState {
    /// Claims work (what every machine is when it first registers).
    #[default]
    Active,
    /// Finishes the job in hand and claims nothing new: the step before
    /// upgrading or rebooting a machine. Drained once no job is in hand;
    /// stays so until resumed.
    Draining,
    /// Claims nothing until resumed; a job in hand still finishes.
    Paused,
    /// Out of the fleet: claims nothing, is left out of the machine lists
    /// unless asked for, and a comparison may no longer name it; its
    /// comparisons, runs and noise floors are kept. Resuming brings it back.
    Retired,
}

impl MachineState {
    /// Every state, in the order a page lists them.
    pub const ALL: &'static [MachineState] = &[
        MachineState::Active,
        MachineState::Draining,
        MachineState::Paused,
        MachineState::Retired,
    ];

    /// The wire and storage spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            MachineState::Active => "active",
            MachineState::Draining => "draining",
            MachineState::Paused => "paused",
            MachineState::Retired => "retired",
        }
    }

    /// Parses [`MachineState::as_str`]'s output.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|m| m.as_str() == s)
    }

    /// Whether a machine in this state may claim a job.
    pub fn claims(self) -> bool {
        self == MachineState::Active
    }

    /// Why a machine in this state takes no work, for the runner's log and
    /// the pages; empty for an active machine.
    pub fn explain(self) -> &'static str {
        match self {
            MachineState::Active => "",
            MachineState::Draining => {
                "an admin is draining this machine: it finishes the job in hand and claims \
                 nothing new until an admin resumes it"
            }
            MachineState::Paused => {
                "an admin paused this machine: it claims nothing until an admin resumes it \
                 (a job in hand still finishes)"
            }
            MachineState::Retired => {
                "an admin retired this machine: it claims nothing again unless an admin \
                 resumes it"
            }
        }
    }
}

impl std::fmt::Display for MachineState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(feature = "sqlx")]
text_column!(MachineState, as_str, parse);

/// Most labels a machine carries.
pub const MAX_LABELS: usize = 16;

/// Fails unless a request names at most one of a machine and a pool, and
/// the pool is a plain word ([`check_label`]).
pub fn check_machine_or_pool(machine: Option<&str>, pool: Option<&str>) -> Result<(), String> {
    match (machine, pool) {
        (Some(_), Some(_)) => {
            Err("name a machine or a pool to run on, not both; leave out machine or pool".into())
        }
        (_, Some(pool)) => check_label(pool).map_err(|why| format!("pool: {why}")),
        _ => Ok(()),
    }
}

/// Fails unless `label` may name a pool: 1–32 characters of a–z, 0–9,
/// `-`, `_`, `.` (it appears in URLs, filters and pages, and is matched
/// exactly, so one spelling per pool).
pub fn check_label(label: &str) -> Result<(), String> {
    let ok = !label.is_empty()
        && label.len() <= 32
        && label
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "pool label {label:?} must be 1–32 characters of a–z, 0–9, '-', '_', '.'"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_active_machine_claims_and_every_other_state_says_why() {
        for &state in MachineState::ALL {
            assert_eq!(MachineState::parse(state.as_str()), Some(state));
            assert_eq!(
                serde_json::to_value(state).unwrap(),
                serde_json::Value::String(state.as_str().into())
            );
            assert_eq!(state.claims(), state == MachineState::Active);
            assert_eq!(state.explain().is_empty(), state.claims(), "{state}");
        }
        assert_eq!(MachineState::parse("drained"), None);
    }

    #[test]
    fn a_label_is_one_plain_lowercase_word() {
        for ok in ["x86", "fast-kvm", "rack_7.a", &"a".repeat(32)] {
            assert_eq!(check_label(ok), Ok(()), "{ok}");
        }
        for bad in ["", "Fast", "a b", "a/b", "ä", &"a".repeat(33)] {
            assert!(check_label(bad).is_err(), "{bad:?}");
        }
        assert_eq!(MachineState::default(), MachineState::Active);
    }
}
