//! The runner's duration flags, read as every flag of both programs reads
//! one (`patchperf_common::duration`): a bare number is seconds, or
//! minutes for `--stall-timeout`.

use std::time::Duration;

use patchperf_common::duration::{MINUTES_OR_NEVER, SECONDS, read};

/// `90m`, `2h`, `45s`, `1d` or a number of seconds; more than a week is
/// refused as a typo.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    read(text, SECONDS)
}

/// As [`parse_duration`], but a bare number is minutes and `0` is "for
/// ever" (`Duration::ZERO`): `--stall-timeout`'s spelling.
pub fn minutes_or_duration(text: &str) -> Result<Duration, String> {
    read(text, MINUTES_OR_NEVER)
}
