//! The lease a job-scoped runner call claims to hold (machine and attempt),
//! read from the protocol headers; `domain::jobs` checks that it really
//! holds it. [`JobCall`] is all a job endpoint reads before its body.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use patchperf_common::protocol::{ATTEMPT_HEADER, MACHINE_HEADER};
use utoipa::IntoParams;

use crate::db::machines::MachineRow;
use crate::domain::jobs::Lease;
use crate::domain::machines;
use crate::error::Result;
use crate::http::auth::RunnerAuth;
use crate::http::extract::Path;
use crate::{AppState, Error};

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

impl From<LeaseClaim> for Lease {
    fn from(claim: LeaseClaim) -> Lease {
        Lease {
            machine_id: claim.machine_id,
            attempt: claim.attempt,
        }
    }
}

/// A job-scoped runner call: a runner (or admin) token, the job in the
/// path (`/api/v1/jobs/{id}/…`), the lease claimed in the headers, and the
/// registered machine the token may act for.
#[derive(Debug)]
pub struct JobCall {
    /// The job.
    pub job_id: i64,
    /// The lease claimed.
    pub lease: Lease,
    /// The machine claiming it.
    pub machine: MachineRow,
}

impl FromRequestParts<AppState> for JobCall {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self> {
        let auth = RunnerAuth::from_request_parts(parts, state).await?;
        let claim = LeaseClaim::from_request_parts(parts, state).await?;
        let Path(job_id) = Path::<i64>::from_request_parts(parts, state).await?;
        let machine = machines::machine_for(state, &auth.caller, claim.machine_id).await?;
        Ok(JobCall {
            job_id,
            lease: claim.into(),
            machine,
        })
    }
}
