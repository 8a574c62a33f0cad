//! Sampling by time, without bias for any traffic: time is cut into short
//! slots of random length, taken `every` at a time, and in each such block
//! one slot, chosen at random when the block begins, is counted. Every
//! access of a counted slot then stands for `every` accesses.
//!
//! Why a slot chosen at random, and not windows at a mean spacing weighed
//! by what they saw: the choice is made before the block's traffic exists,
//! so whether an access is counted is independent of everything about it
//! (its key, its burst, the load) and has probability exactly `1 / every`.
//! The weighted count of any key is then an unbiased estimate of its true
//! count (Horvitz-Thompson), for steady, bursty or on-off traffic alike, and
//! however often the counts are read. A weight measured from the traffic
//! (commands in the cycle per command seen) is correlated with it: a burst
//! that lands in a window makes that window's weight small, exactly when it
//! carries the burst.
//!
//! Why one slot per block rather than a coin per slot: the same chance for
//! every slot, but exactly one slot in `every` counted, never a few more or
//! fewer by luck (which alone would put a steady key's count off by several
//! percent over a minute). The slots of one block are of one length, drawn
//! at random for each block: a steady stream then puts the same share of
//! itself in each slot of a block, and the one counted stands for the block
//! exactly (with slots of different lengths, a long one counted would
//! overstate it and a short one understate it, a spread of ±30% a block).
//! The counted slot's place in its block and the blocks' lengths are
//! random, so nothing periodic in the traffic (a poller every 10 ms) can
//! beat in time with the counting.

/// Which slots are counted, and what their accesses stand for.
#[derive(Clone, Debug)]
pub struct Coverage {
    every: u32,
    /// The next slot's place in its block, and the block's counted one.
    place: u32,
    chosen: u32,
    /// The slots' length in the current block, ms (0: draw it).
    block_ms: u64,
    rng: u64,
}

/// The most slots one counted slot may stand for.
pub const MAX_EVERY: u32 = 4096;

impl Coverage {
    pub fn new(every: u32, seed: u64) -> Self {
        Self {
            every: every.clamp(1, MAX_EVERY),
            place: 0,
            chosen: 0,
            block_ms: 0,
            rng: seed | 1,
        }
    }

    /// One slot in `every` is counted (1: every slot).
    pub fn every(&self) -> u32 {
        self.every
    }

    /// From the next block on (the next slot begins one).
    pub fn set_every(&mut self, every: u32) {
        let every = every.clamp(1, MAX_EVERY);
        if every != self.every {
            self.every = every;
            self.place = 0;
        }
    }

    /// How long the slot that just began lasts, in ms: the length of its
    /// block, drawn when the block began at random between half and one and
    /// a half times `mean_ms`. Fixed lengths would beat in time with any
    /// client that sends on a period near theirs (a poller every 10 ms).
    pub fn time_slot_length_ms(&mut self, mean_ms: u64) -> u64 {
        if self.block_ms == 0 || self.place == 1 % self.every {
            let mean = mean_ms.max(2) as f64;
            self.block_ms = (mean * (0.5 + uniform(&mut self.rng))).round().max(1.0) as u64;
        }
        self.block_ms
    }

    /// A slot begins: `Some(weight)` if it is counted, each of its accesses
    /// standing for `weight`.
    pub fn next_time_slot(&mut self) -> Option<u32> {
        if self.place == 0 {
            self.chosen = (uniform(&mut self.rng) * f64::from(self.every)) as u32;
        }
        let counted = self.place == self.chosen;
        self.place = (self.place + 1) % self.every;
        counted.then_some(self.every)
    }
}

/// A uniform draw in [0, 1) (xorshift64*).
pub(crate) fn uniform(state: &mut u64) -> f64 {
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    (state.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exactly_one_slot_in_every_is_counted_with_that_weight() {
        for every in [1u32, 2, 16, 100] {
            let mut c = Coverage::new(every, 11);
            let blocks = 4_000;
            for _ in 0..blocks {
                let counted: Vec<u32> = (0..every).filter_map(|_| c.next_time_slot()).collect();
                assert_eq!(counted, [every], "one per block");
            }
        }
    }

    #[test]
    fn each_place_in_a_block_is_as_likely() {
        let mut c = Coverage::new(8, 5);
        let mut places = [0u32; 8];
        for _ in 0..80_000 {
            for place in &mut places {
                if c.next_time_slot().is_some() {
                    *place += 1;
                }
            }
        }
        assert!(
            places.iter().all(|&n| (9_500..10_500).contains(&n)),
            "{places:?}"
        );
    }

    #[test]
    fn the_slots_of_a_block_share_a_length_and_blocks_vary() {
        let mut c = Coverage::new(4, 3);
        let lengths: Vec<u64> = (0..10_000)
            .map(|_| {
                c.next_time_slot();
                c.time_slot_length_ms(10)
            })
            .collect();
        for block in lengths.chunks(4) {
            assert!(block.iter().all(|&l| l == block[0]), "{block:?}");
        }
        let lengths: Vec<u64> = lengths.chunks(4).map(|b| b[0]).collect();
        assert!(
            lengths.iter().all(|&l| (5..=15).contains(&l)),
            "{:?}",
            &lengths[..20]
        );
        let mean = lengths.iter().sum::<u64>() as f64 / lengths.len() as f64;
        assert!((mean - 10.0).abs() < 0.2, "{mean}");
        let distinct: std::collections::HashSet<u64> = lengths.into_iter().collect();
        assert_eq!(distinct.len(), 11);
    }

    #[test]
    fn the_share_is_bounded() {
        let mut c = Coverage::new(0, 1);
        assert_eq!(c.every(), 1);
        c.set_every(u32::MAX);
        assert_eq!(c.every(), MAX_EVERY);
    }
}
