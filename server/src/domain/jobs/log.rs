//! A job's log as its page and its `log.txt` show it: the job, every event
//! it stored in order, and how many jobs (blocks of boots) its comparison
//! has.

/// An event of a job's log.
pub use crate::db::events::EventRow;
use crate::db::jobs::JobRow;
use crate::domain::Context;
use crate::{Error, db};

/// Job `id` with its events, oldest first.
#[derive(Debug)]
pub struct JobLog {
    pub job: JobRow,
    pub events: Vec<EventRow>,
    /// The jobs of the job's comparison, this one among them.
    pub blocks: usize,
}

/// Job `id`'s log; `NotFound` when there is no such job.
pub async fn of_job(ctx: &Context, id: i64) -> Result<JobLog, Error> {
    let job = db::jobs::by_id(&ctx.db, id)
        .await?
        .ok_or_else(|| Error::NotFound(format!("no job {id}")))?;
    let events = db::events::for_job(&ctx.db, id).await?;
    let blocks = db::jobs::for_comparison(&ctx.db, job.comparison_id)
        .await?
        .len();
    Ok(JobLog {
        job,
        events,
        blocks,
    })
}
