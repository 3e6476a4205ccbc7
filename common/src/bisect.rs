//! Bisection's search, apart from how probes are run: which commit to probe
//! next, and how a probe's verdict on the bisected metric counts. Commits
//! are numbered 1..=n along the series (commit k = patches 1..k on the good
//! end, 0); commit n is the bad end. As `git bisect`: the first bad commit
//! lies after the last good one below the first bad one; a commit that
//! could not be measured (it does not apply or build, its kernel does not
//! boot) is skipped, and when only skipped commits remain between the two,
//! the answer is "one of these".

use std::collections::BTreeMap;

use crate::stats::Verdict;

/// What a probe said about its commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "kebab-case")]
pub enum Judgement {
    /// The metric is where the good end has it.
    Good,
    /// The metric moved as between the ends.
    Bad,
    /// The commit could not be measured.
    Skip,
}

/// What to do next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// Probe commit k.
    Probe(usize),
    /// Commit k is the first bad one: k-1 is good (or the good end).
    Found(usize),
    /// The first bad commit is one of these (skipped commits and the first
    /// bad one after them), in order.
    OneOf(Vec<usize>),
}

/// The next step of a search over `n` commits given the judged ones (the
/// bad end, n, need not be among them: it is bad by definition once the
/// ends differ).
pub fn next(n: usize, judged: &BTreeMap<usize, Judgement>) -> Next {
    let (good, bad) = bounds(n, judged);
    let open = open(n, judged);
    if let Some(&k) = open.get(open.len() / 2) {
        return Next::Probe(k);
    }
    if bad == good + 1 {
        Next::Found(bad)
    } else {
        Next::OneOf((good + 1..=bad).collect())
    }
}

/// Where the first bad commit lies given the judged commits: after the
/// last good commit below the first bad one (0: the good end), at or
/// before that first bad one (n: the bad end).
pub fn bounds(n: usize, judged: &BTreeMap<usize, Judgement>) -> (usize, usize) {
    let bad = judged
        .iter()
        .filter(|&(&k, &j)| j == Judgement::Bad && (1..=n).contains(&k))
        .map(|(&k, _)| k)
        .min()
        .unwrap_or(n);
    let good = judged
        .iter()
        .filter(|&(&k, &j)| j == Judgement::Good && k < bad)
        .map(|(&k, _)| k)
        .max()
        .unwrap_or(0);
    (good, bad)
}

/// The commits strictly between the bounds not judged yet: the ones left
/// to probe (between the bounds only skipped commits can have been judged).
fn open(n: usize, judged: &BTreeMap<usize, Judgement>) -> Vec<usize> {
    let (good, bad) = bounds(n, judged);
    (good + 1..bad)
        .filter(|k| !judged.contains_key(k))
        .collect()
}

/// About how many more probes the search needs: log2 of the places the
/// first bad commit may still be (git bisect's "roughly N steps"; skipped
/// commits can make it more).
pub fn probes_left(n: usize, judged: &BTreeMap<usize, Judgement>) -> usize {
    let places = open(n, judged).len() + 1;
    (usize::BITS - (places - 1).leading_zeros()) as usize
}

/// A probe's reading of the bisected metric, from its report.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reading {
    /// The report's verdict on the metric.
    pub verdict: Verdict,
    /// %change against the good end (points for a percentage metric).
    pub change: Option<f64>,
}

/// Whether the ends differ: the bad end's verdict on the metric is a real
/// change. Otherwise there is nothing to look for ("not reproducible").
pub fn reproduced(end: Reading) -> bool {
    matches!(
        end.verdict,
        Verdict::Improvement | Verdict::Regression | Verdict::Changed
    ) && end.change.is_some_and(|c| c.is_finite() && c != 0.0)
}

/// How probe `probe` counts, given the bad end's change `end` (non-zero):
/// bad when its change is nearer the end's than zero and the report does
/// not call it "no change"; good otherwise, so a smaller change of its own
/// in the same direction does not take the blame. The flag says the probe
/// stayed undecided and was judged by its estimate alone.
pub fn judge(end: f64, probe: Reading) -> (Judgement, bool) {
    let Some(change) = probe.change.filter(|c| c.is_finite()) else {
        return (Judgement::Skip, false);
    };
    let nearer_bad = (change - end).abs() < change.abs();
    let judgement = match probe.verdict {
        Verdict::NoChange => Judgement::Good,
        _ if nearer_bad => Judgement::Bad,
        _ => Judgement::Good,
    };
    (judgement, probe.verdict == Verdict::Undecided)
}

#[cfg(test)]
mod tests {
    use super::*;
    use Judgement::{Bad, Good, Skip};

    fn judged(pairs: &[(usize, Judgement)]) -> BTreeMap<usize, Judgement> {
        pairs.iter().copied().collect()
    }

    /// Runs a whole search where `first_bad` is the culprit and `skipped`
    /// cannot be measured; the probes made and the answer.
    fn search(n: usize, first_bad: usize, skipped: &[usize]) -> (Vec<usize>, Next) {
        let mut seen = BTreeMap::new();
        let mut probes = Vec::new();
        loop {
            match next(n, &seen) {
                Next::Probe(k) => {
                    assert!(!seen.contains_key(&k), "probed {k} twice");
                    probes.push(k);
                    let j = if skipped.contains(&k) {
                        Skip
                    } else if k >= first_bad {
                        Bad
                    } else {
                        Good
                    };
                    seen.insert(k, j);
                }
                done => return (probes, done),
            }
        }
    }

    #[test]
    fn three_commits_take_two_probes_after_the_ends() {
        assert_eq!(next(3, &judged(&[])), Next::Probe(2));
        assert_eq!(search(3, 2, &[]), (vec![2, 1], Next::Found(2)));
        assert_eq!(search(3, 1, &[]), (vec![2, 1], Next::Found(1)));
        assert_eq!(search(3, 3, &[]), (vec![2], Next::Found(3)));
        assert_eq!(search(1, 1, &[]), (vec![], Next::Found(1)));
    }

    #[test]
    fn the_number_of_probes_grows_with_the_logarithm() {
        for n in [2usize, 7, 64, 200] {
            let bound = (usize::BITS - n.leading_zeros()) as usize;
            for first_bad in 1..=n {
                let (probes, answer) = search(n, first_bad, &[]);
                assert_eq!(answer, Next::Found(first_bad));
                assert!(probes.len() <= bound, "n {n}, bad {first_bad}: {probes:?}");
            }
        }
    }

    #[test]
    fn the_probes_left_are_about_log2_of_the_places_left() {
        assert_eq!(bounds(7, &judged(&[])), (0, 7));
        assert_eq!(probes_left(7, &judged(&[])), 3);
        assert_eq!(probes_left(8, &judged(&[])), 3);
        assert_eq!(probes_left(9, &judged(&[])), 4);
        assert_eq!(probes_left(1, &judged(&[])), 0);
        let seen = judged(&[(4, Bad), (2, Good), (3, Skip)]);
        assert_eq!(bounds(7, &seen), (2, 4));
        assert_eq!(probes_left(7, &seen), 0);
        // The bound is what a search takes at most.
        for n in [2usize, 7, 64, 200] {
            for first_bad in 1..=n {
                let (probes, _) = search(n, first_bad, &[]);
                assert!(probes.len() <= probes_left(n, &judged(&[])));
            }
        }
    }

    #[test]
    fn skipped_commits_are_stepped_around_or_named() {
        // The culprit is found past a skipped neighbour.
        let (probes, answer) = search(8, 6, &[4]);
        assert_eq!(answer, Next::Found(6), "{probes:?}");
        // A skipped commit right before the culprit leaves both candidates.
        let (_, answer) = search(8, 5, &[4]);
        assert_eq!(answer, Next::OneOf(vec![4, 5]));
        // The culprit itself cannot be built: it and the first bad one.
        let (_, answer) = search(3, 2, &[2]);
        assert_eq!(answer, Next::OneOf(vec![2, 3]));
    }

    #[test]
    fn a_probe_counts_bad_when_it_carries_the_change() {
        let r = |verdict, change| Reading {
            verdict,
            change: Some(change),
        };
        assert_eq!(judge(100.0, r(Verdict::Improvement, 98.0)), (Bad, false));
        assert_eq!(judge(-3.0, r(Verdict::Regression, -2.9)), (Bad, false));
        // A small change of its own does not take the blame.
        assert_eq!(judge(100.0, r(Verdict::Improvement, 1.5)), (Good, false));
        assert_eq!(judge(100.0, r(Verdict::NoChange, 0.01)), (Good, false));
        // The opposite direction is not the change looked for.
        assert_eq!(judge(5.0, r(Verdict::Regression, -5.0)), (Good, false));
        // Undecided after every run: by the estimate, and said so.
        assert_eq!(judge(4.0, r(Verdict::Undecided, 3.1)), (Bad, true));
        assert_eq!(judge(4.0, r(Verdict::Undecided, 0.4)), (Good, true));
        let nothing = Reading {
            verdict: Verdict::Undecided,
            change: None,
        };
        assert_eq!(judge(4.0, nothing), (Skip, false));
    }

    #[test]
    fn the_ends_must_differ() {
        let r = |verdict, change| Reading {
            verdict,
            change: Some(change),
        };
        assert!(reproduced(r(Verdict::Improvement, 99.0)));
        assert!(reproduced(r(Verdict::Changed, -1.0)));
        assert!(!reproduced(r(Verdict::NoChange, 0.2)));
        assert!(!reproduced(r(Verdict::Undecided, 3.0)));
        assert!(!reproduced(Reading {
            verdict: Verdict::Regression,
            change: None
        }));
    }
}
