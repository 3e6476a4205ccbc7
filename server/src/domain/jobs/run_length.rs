//! A run length left to the measurement mode (`params.seconds` or
//! `warmup_seconds` absent from a submission): 1 s after 1 s under
//! `tcg-icount`, 5 s after 2 s in wall-clock modes
//! ([`run_length_of`](patchperf_common::protocol::run_length_of)). Fixed
//! as soon as the mode is known: at submission when it names its mode or
//! its machine, else at the first claim, from the claiming machine's best
//! mode (the one its runner measures in when the comparison names none),
//! before an A/A calibration copies the comparison's parameters.

use patchperf_common::api::AskedParams;
use patchperf_common::protocol::WorkloadParams;
use patchperf_common::run::MeasurementMode;
use sqlx::PgConnection;

use crate::db::machines::MachineRow;
use crate::domain::machines;
use crate::{Error, db};

/// What a submission's parameters become when it is stored: the
/// parameters to store, and the asked ones when the length still waits
/// for a mode (`mode`: the one named, or the named machine's best).
pub fn at_submission(asked: &AskedParams, mode: Option<MeasurementMode>) -> (WorkloadParams, bool) {
    let waits = asked.leaves_run_length() && mode.is_none();
    (asked.resolve(mode), waits)
}

/// Fixes comparison `id`'s run length for `machine`, about to claim one
/// of its jobs, when it still waits for a mode; the parameters stored.
/// A step's parent is fixed with it: it runs on the same machine, and
/// when it takes its runs from its steps it may never claim a job itself.
/// Costs one statement at a claim with nothing to fix.
pub async fn settle(
    conn: &mut PgConnection,
    id: i64,
    machine: &MachineRow,
) -> Result<Option<WorkloadParams>, Error> {
    let Some(asked) = db::run_lengths::take(&mut *conn, id).await? else {
        return Ok(None);
    };
    let c = db::comparisons::find(&mut *conn, id).await?;
    let backend = c.as_ref().and_then(|c| c.asked.backend);
    let mode = machines::measures_in(Some(machine), backend.map(MeasurementMode::as_str));
    let params = asked.resolve(mode);
    db::comparisons::set_params(&mut *conn, id, &params).await?;
    if let Some(parent) = c.and_then(|c| c.parent_id) {
        if let Some(asked) = db::run_lengths::take(&mut *conn, parent).await? {
            db::comparisons::set_params(&mut *conn, parent, &asked.resolve(mode)).await?;
        }
    }
    Ok(Some(params))
}
