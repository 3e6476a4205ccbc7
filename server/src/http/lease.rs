//! The lease a job-scoped runner call claims to hold (machine and attempt,
//! from the protocol headers), and the check that it really holds it. Every
//! job call after the claim goes through [`held_job`].

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use patchperf_common::protocol::{ATTEMPT_HEADER, JobState, MACHINE_HEADER};
use sqlx::PgConnection;
use utoipa::IntoParams;

use crate::Error;
use crate::db::{self, jobs::JobRow, machines::MachineRow};
use crate::error::Result;

/// The machine and attempt a job-scoped call claims to hold, from the
/// protocol headers.
#[derive(Debug, Clone, Copy, IntoParams)]
#[into_params(parameter_in = Header)]
pub struct LeaseClaim {
    /// `patchperf-machine`: id of the machine holding the lease.
    #[param(rename = "patchperf-machine")]
    pub machine_id: i64,
    /// `patchperf-attempt`: the attempt (`JobSpec.attempt`) holding the
    /// lease.
    #[param(rename = "patchperf-attempt")]
    pub attempt: i32,
}

impl<S: Send + Sync> FromRequestParts<S> for LeaseClaim {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self> {
        let number = |name: &str| -> Result<i64> {
            let value = parts.headers.get(name).ok_or_else(|| {
                Error::Malformed(format!(
                    "missing `{name}` header: job calls must name the machine ({MACHINE_HEADER}) \
                     and the attempt ({ATTEMPT_HEADER}) holding the lease"
                ))
            })?;
            value
                .to_str()
                .ok()
                .and_then(|v| v.trim().parse().ok())
                .ok_or_else(|| Error::Malformed(format!("`{name}` header must be a number")))
        };
        Ok(LeaseClaim {
            machine_id: number(MACHINE_HEADER)?,
            attempt: i32::try_from(number(ATTEMPT_HEADER)?)
                .map_err(|_| Error::Malformed(format!("`{ATTEMPT_HEADER}` is out of range")))?,
        })
    }
}

/// Locks the job and checks that `lease` holds it. A lease past its expiry
/// that nobody has taken back yet still counts: only a requeue ends it.
pub(super) async fn held_job(
    conn: &mut PgConnection,
    machine: &MachineRow,
    job_id: i64,
    lease: LeaseClaim,
) -> Result<JobRow> {
    let job = db::jobs::lock(conn, job_id)
        .await?
        .ok_or_else(|| Error::NotFound(format!("no job {job_id}")))?;
    check_held(&job, machine, lease)?;
    Ok(job)
}

/// Checks that `lease` holds `job`, already locked by the caller.
pub(super) fn check_held(job: &JobRow, machine: &MachineRow, lease: LeaseClaim) -> Result<()> {
    if !job.state.is_leased() {
        // A queued job with no attempt yet was never claimed; one with
        // attempts was, and went back to the queue when its lease ran out.
        let why = match job.state {
            JobState::Queued if job.attempt == 0 => " (it was never claimed)",
            JobState::Queued => " (its lease ran out and it was queued again)",
            _ => "",
        };
        return Err(Error::WrongState(format!(
            "job {} is {}, not leased to anyone{why}",
            job.id, job.state
        )));
    }
    if job.machine_id != Some(machine.id) {
        return Err(Error::WrongState(format!(
            "job {} is leased to another machine, not to `{}`",
            job.id, machine.name
        )));
    }
    if job.attempt != lease.attempt {
        return Err(Error::WrongState(format!(
            "job {} is in attempt {}; the lease of attempt {} ran out",
            job.id, job.attempt, lease.attempt
        )));
    }
    Ok(())
}
