//! The boot order of a comparison: base and patched boots alternate in
//! randomly ordered blocks, so drift and warm-up of the machine hit both
//! sides alike.
//!
//! R runs a side make R blocks of two boots; each block is "base, patched"
//! or "patched, base" by a fair coin, giving orders like `A B B A B A …`
//! (A = base). One block is one job: a job is the smallest unit that keeps
//! the two sides balanced if the comparison stops half-way. Boots are
//! numbered across the whole comparison, jobs are claimed in that order.
//!
//! The coin is a seeded [`StdRng`]: the seed is stored with the comparison,
//! so the order can be re-derived and tests can fix it.

use patchperf_common::run::Side;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The planned boots of one comparison, one `[Side; 2]` block per job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BootPlan {
    /// Blocks in claim order.
    pub blocks: Vec<[Side; 2]>,
}

/// Plans `runs_per_side` blocks from `seed`.
pub fn plan(runs_per_side: u32, seed: u64) -> BootPlan {
    let mut rng = StdRng::seed_from_u64(seed);
    let blocks = (0..runs_per_side)
        .map(|_| {
            if rng.random_bool(0.5) {
                [Side::Base, Side::Patched]
            } else {
                [Side::Patched, Side::Base]
            }
        })
        .collect();
    BootPlan { blocks }
}

impl BootPlan {
    /// Every boot in order as (comparison-wide seq, block index, side).
    pub fn boots(&self) -> impl Iterator<Item = (u32, usize, Side)> + '_ {
        self.blocks.iter().enumerate().flat_map(|(block, sides)| {
            sides.iter().enumerate().map(move |(i, &side)| {
                let seq = u32::try_from(block * 2 + i).unwrap_or(u32::MAX);
                (seq, block, side)
            })
        })
    }
}

/// The order in the notation reports use: `A` for base, `B` for patched,
/// e.g. `ABBABA`.
pub fn notation(sides: impl IntoIterator<Item = Side>) -> String {
    sides.into_iter().map(Side::letter).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_block_has_one_boot_of_each_side() {
        for seed in 0..50 {
            let plan = plan(7, seed);
            assert_eq!(plan.blocks.len(), 7);
            for block in &plan.blocks {
                assert_ne!(block[0], block[1]);
            }
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_order_and_seeds_differ() {
        assert_eq!(plan(10, 42), plan(10, 42));
        let orders: std::collections::HashSet<String> = (0..20)
            .map(|seed| notation(plan(10, seed).boots().map(|(_, _, s)| s)))
            .collect();
        // 20 seeds over 2^10 possible orders: collisions are possible but
        // all 20 agreeing would mean the coin is not random.
        assert!(orders.len() > 10, "{orders:?}");
    }

    #[test]
    fn both_block_orders_occur() {
        let plan = plan(64, 7);
        let base_first = plan.blocks.iter().filter(|b| b[0] == Side::Base).count();
        assert!(base_first > 0 && base_first < 64, "{base_first} of 64");
    }

    #[test]
    fn boots_are_numbered_across_the_comparison() {
        let plan = BootPlan {
            blocks: vec![[Side::Base, Side::Patched], [Side::Patched, Side::Base]],
        };
        let boots: Vec<_> = plan.boots().collect();
        assert_eq!(
            boots,
            [
                (0, 0, Side::Base),
                (1, 0, Side::Patched),
                (2, 1, Side::Patched),
                (3, 1, Side::Base)
            ]
        );
        assert_eq!(notation(boots.iter().map(|b| b.2)), "ABBA");
    }
}
