//! Which kernels a comparison's jobs built and which the runner took from
//! its cache of built kernels. Only the runner's `building` events say so
//! (`building the patched kernel (3 patches, 3 files)`, `patched kernel
//! found in the cache`, written in `runner/src/kernel/pipeline/prepare.rs`):
//! a run's `kernel.build_seconds` is the time of the build that made the
//! kernel, also when a later job found it in the cache. The pristine kernel
//! leaves no event when it comes from the cache; it did when the job went on
//! to the patched kernel without building the pristine one.

use std::collections::HashMap;

use patchperf_common::run::Side;

use crate::{Error, db};

/// Where a job's kernel came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// A job of the comparison built it.
    Built,
    /// The runner had it built already.
    Cached,
}

/// Where a comparison's two kernels came from, as far as its jobs got.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KernelBuilds {
    /// The base side's kernel.
    pub base: Option<Origin>,
    /// The patched side's kernel.
    pub patched: Option<Origin>,
}

impl KernelBuilds {
    /// Reads the `building` messages of one comparison's jobs (any order,
    /// any attempt): a kernel any job built counts as built.
    pub fn read<'a>(messages: impl IntoIterator<Item = &'a str> + Clone) -> KernelBuilds {
        let side = |side: Side| {
            let building = format!("building the {} kernel (", side.as_str());
            let cached = format!("{} kernel found in the cache", side.as_str());
            let said = |m: &str| messages.clone().into_iter().any(|x| x.starts_with(m));
            if said(&building) {
                Some(Origin::Built)
            } else if said(&cached) {
                Some(Origin::Cached)
            } else {
                None
            }
        };
        let patched = side(Side::Patched);
        // A base side without patches is the pristine kernel, which says
        // only when it is built.
        let pristine_built = messages
            .clone()
            .into_iter()
            .any(|m| m == "building the base kernel");
        let base = side(Side::Base).or(if pristine_built {
            Some(Origin::Built)
        } else {
            patched.map(|_| Origin::Cached)
        });
        KernelBuilds { base, patched }
    }
}

/// Where each of these comparisons' kernels came from, by comparison id
/// (absent: no job got to its kernels).
pub async fn of_comparisons(
    db: &sqlx::PgPool,
    ids: &[i64],
) -> Result<HashMap<i64, KernelBuilds>, Error> {
    let messages = db::events::building_messages(db, ids).await?;
    Ok(ids
        .iter()
        .map(|&id| {
            let of_id = messages
                .iter()
                .filter(|m| m.comparison_id == id)
                .map(|m| m.message.as_str());
            (id, KernelBuilds::read(of_id))
        })
        .filter(|(_, k)| *k != KernelBuilds::default())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_cached_and_the_silent_pristine_kernel() {
        let read = |m: &[&str]| KernelBuilds::read(m.iter().copied());
        assert_eq!(read(&[]), KernelBuilds::default());
        // Cold: both built.
        let cold = read(&[
            "configuring the base kernel",
            "building the base kernel",
            "building the patched kernel (3 patches, 3 files)",
        ]);
        assert_eq!(cold.base, Some(Origin::Built));
        assert_eq!(cold.patched, Some(Origin::Built));
        // The pristine kernel from the cache says nothing.
        let warm = read(&["building the patched kernel (2 patches, 2 files)"]);
        assert_eq!(warm.base, Some(Origin::Cached));
        assert_eq!(warm.patched, Some(Origin::Built));
        // A later job of the same comparison finds what the first built.
        let later = read(&[
            "building the patched kernel (2 patches, 2 files)",
            "patched kernel found in the cache",
        ]);
        assert_eq!(later.patched, Some(Origin::Built));
        // A step's base side carries patches: it says where it came from,
        // apart from the pristine kernel under it.
        let step = read(&[
            "building the base kernel",
            "base kernel found in the cache",
            "patched kernel found in the cache",
        ]);
        assert_eq!(step.base, Some(Origin::Cached));
        assert_eq!(step.patched, Some(Origin::Cached));
        // Fetching or applying only: nothing known yet.
        assert_eq!(
            read(&["copying the base build tree"]),
            KernelBuilds::default()
        );
    }
}
