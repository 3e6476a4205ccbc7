//! The lease a job-scoped runner call claims to hold (machine and attempt),
//! read from the protocol headers; `domain::jobs` checks that it really
//! holds it.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use patchperf_common::protocol::{ATTEMPT_HEADER, MACHINE_HEADER};
use utoipa::IntoParams;

use crate::Error;
use crate::domain::jobs::Lease;
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

impl From<LeaseClaim> for Lease {
    fn from(claim: LeaseClaim) -> Lease {
        Lease {
            machine_id: claim.machine_id,
            attempt: claim.attempt,
        }
    }
}
