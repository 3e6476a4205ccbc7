//! How long a run measures, and warms up before, when nobody said: one
//! table for every default the server and the runner apply, so that a
//! reader finds the numbers in one place and a change moves all of them.
//!
//! | who asks | tcg-icount | wall clock (kvm, tcg, kexec, host) | mode not known |
//! |---|---|---|---|
//! | a comparison (API, `submit`, a tree, a bisection, a job file) | 1 s after 1 s | 5 s after 2 s | 5 s after 2 s |
//! | a followed list's series | 5 s after 1 s | 5 s after 1 s | 5 s after 1 s |
//! | `patchperf-runner bench` on its own | 10 s after 5 s | 10 s after 5 s | 10 s after 5 s |
//!
//! Why: under `tcg-icount` guest time counts instructions, and BENCHMARKS'
//! "How long a tcg-icount run needs to be" found seed 002's and seed 004's
//! changes at 1 s / 1 s within 0.004 points of 5 s / 2 s, at less than half
//! the wall time a boot. On wall clock a longer run averages noise out. A
//! list's default is what a list bot can afford per boot for every series
//! posted (a second of warm-up less); `bench` keeps will-it-scale's own
//! 10 s measured after dropping its first 5.

use crate::run::MeasurementMode;

/// Measured and warm-up seconds of one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunLength {
    pub seconds: u32,
    pub warmup_seconds: u32,
}

/// Who leaves the run length to its default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asker {
    /// A comparison, however it was asked for.
    Comparison,
    /// A followed mailing list, for its series.
    ListSeries,
    /// `patchperf-runner bench`, outside any comparison.
    Bench,
}

/// The run length `asker` gets in measurement mode `mode` (`None`: not
/// known yet).
pub const fn default_for(asker: Asker, mode: Option<MeasurementMode>) -> RunLength {
    let (seconds, warmup_seconds) = match (asker, mode) {
        (Asker::Comparison, Some(MeasurementMode::TcgIcount)) => (1, 1),
        (Asker::Comparison, _) => (5, 2),
        (Asker::ListSeries, _) => (5, 1),
        (Asker::Bench, _) => (10, 5),
    };
    RunLength {
        seconds,
        warmup_seconds,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_as_the_module_documents_it() {
        let icount = Some(MeasurementMode::TcgIcount);
        let rows = [
            (Asker::Comparison, icount, (1, 1)),
            (Asker::Comparison, Some(MeasurementMode::Kvm), (5, 2)),
            (Asker::Comparison, Some(MeasurementMode::Kexec), (5, 2)),
            (Asker::Comparison, None, (5, 2)),
            (Asker::ListSeries, icount, (5, 1)),
            (Asker::ListSeries, None, (5, 1)),
            (Asker::Bench, None, (10, 5)),
        ];
        for (asker, mode, (seconds, warmup_seconds)) in rows {
            assert_eq!(
                default_for(asker, mode),
                RunLength {
                    seconds,
                    warmup_seconds
                },
                "{asker:?} {mode:?}"
            );
        }
    }
}
