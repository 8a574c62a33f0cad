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
//!
//! Why a new `every` waits for the block in progress to end: a block cut
//! short leaves its counted slot standing for slots that never passed, or
//! its slots for one that never came. Cut when the cost was last measured,
//! it is cut more often just after its counted slot (that is when counting
//! showed up as a cost), and the counts read high: beside a saturating
//! load on Valkey 9.1 (blocks of ~300 ms, cut at 100 ms ticks), three
//! shapes of key read +11% to +16% on average while blocks were cut.
//!
//! Why blocks of about 10 ms (slots of 0.25-10 ms): a key that comes in a
//! few large bursts is seen only in the counted slots its bursts overlap,
//! and a burst shorter than a block is missed whole when none of them is
//! counted. A block no longer than the burst holds a counted slot in it
//! whatever its phase. So the slots of a block last `BLOCK_MS / every` on
//! average, within [`SHORTEST_US`] and [`LONGEST_MEAN_MS`]: a block keeps
//! to 10 ms up to one slot in 20, and lasts ~12.5 ms at one in 40.
//!
//! How it came to 10 ms: with 10 ms slots at one in 20 (blocks of 200 ms) a
//! key read in three pipelines of 14,000 `GET`s (10-60 ms each), 1% of a
//! node's reads, was missing from two 8 s readings in three (Redis 7.0, a
//! 2-core VM, 1.4M `GET`/s); with blocks of 20 ms of whole-millisecond
//! slots it was seen in every one. But a pipeline of 1% of a saturated
//! node's 8 s is ~40,000 `GET`s, and the server takes one in 10-14 ms (it
//! reads a pipelining client's socket in large chunks): beside
//! `redis-benchmark -P 16` (1.4-1.7M `GET`/s, one slot in 9 to 28
//! counted) a key read in three such pipelines was in no sketch in 3 of 20
//! readings on Redis 7.0 and 5 of 20 on Valkey 9.1 (blocks of 20-28 ms).
//! With blocks of 10 ms and slots down to 0.25 ms: 20 of 20 and 20 of 20.
//! (Slots were whole milliseconds once, for the server's timers fire on a
//! millisecond grid; but an edge is made at the first pass of the event
//! loop at or after its planned instant, heard for the last milliseconds
//! before it, so a slot may be shorter. A slot shorter than a pass holds
//! its start or not: each pass is still counted with probability
//! `1 / every`.) The price is a timer's edge or two per block (about two
//! hundred a second, a few microseconds each, which the budget counts) and,
//! for a key read in a pipeline every 10 ms, a count made of more, smaller
//! parts (a short slot holds a pipeline or none), which its error bar
//! shows.
//!
//! The counting side does not wait out the uncounted slots one by one: it
//! asks for the next counted slot ([`Coverage::next_counted`]), how long
//! until it begins and how long it lasts, and sleeps until then.

/// The most slots one counted slot may stand for.
pub const MAX_EVERY: u32 = 4096;
/// A block's length, ms, where its slots can be shortened to keep to it: a
/// burst at least this long always overlaps a counted slot.
pub const BLOCK_MS: f64 = 10.0;
/// The slots' mean length, ms: at most...
pub const LONGEST_MEAN_MS: f64 = 10.0;
/// ... and at least, µs (a block keeps to [`BLOCK_MS`] up to one slot in
/// 20).
pub const SHORTEST_US: u64 = 250;

/// The next counted slot, from the end of the last one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CountedSlot {
    /// Uncounted time before it begins, µs (0: it begins at once).
    pub wait_us: u64,
    /// How long it lasts, µs.
    pub length_us: u64,
    /// One slot in `weight` is counted: each of its accesses stands for
    /// this many.
    pub weight: u32,
    /// Slots that pass uncounted before it.
    pub skipped: u32,
    /// Its place in its block (the block began `chosen · length_us`
    /// before it): where the block's other openings would have been.
    pub chosen: u32,
}

/// Which slots are counted, and what their accesses stand for.
#[derive(Clone, Debug)]
pub struct Coverage {
    /// One slot in `every` counted, from the next block on.
    every: u32,
    /// Uncounted slots left in the block in progress, after its counted one.
    rest: u32,
    /// The length of the block's slots, µs.
    block_us: u64,
    rng: u64,
}

impl Coverage {
    pub fn new(every: u32, seed: u64) -> Self {
        let every = every.clamp(1, MAX_EVERY);
        Self {
            every,
            rest: 0,
            block_us: 0,
            rng: seed | 1,
        }
    }

    /// One slot in `every` is counted (1: every slot), from the next
    /// block on.
    pub fn every(&self) -> u32 {
        self.every
    }

    /// From the next block on: the block in progress keeps its own.
    pub fn set_every(&mut self, every: u32) {
        self.every = every.clamp(1, MAX_EVERY);
    }

    /// Forgets the block in progress (counting begins afresh: every command
    /// was counted meanwhile, or tracking restarted).
    pub fn restart(&mut self) {
        self.rest = 0;
    }

    /// The next counted slot, from the end of the last one counted (or
    /// from a fresh start): the rest of the block in progress passes
    /// uncounted, then a block begins, at the `every` wanted now, its
    /// slots' length drawn, its counted slot chosen.
    pub fn next_counted(&mut self) -> CountedSlot {
        let rest = self.rest;
        let mut wait_us = u64::from(rest) * self.block_us;
        let every = self.every;
        self.block_us = self.draw_length_us(every);
        let chosen = ((uniform(&mut self.rng) * f64::from(every)) as u32).min(every - 1);
        wait_us += u64::from(chosen) * self.block_us;
        self.rest = every - 1 - chosen;
        CountedSlot {
            wait_us,
            length_us: self.block_us,
            weight: every,
            skipped: rest + chosen,
            chosen,
        }
    }

    /// A block's slot length: at random between half and one and a half
    /// times the mean for its `every` (whole µs, at least the shortest).
    fn draw_length_us(&mut self, every: u32) -> u64 {
        let mean = mean_length_ms(every) * 1e3;
        let low = (0.5 * mean).max(SHORTEST_US as f64);
        let us = low + uniform(&mut self.rng) * (1.5 * mean - low);
        (us.round() as u64).max(SHORTEST_US)
    }
}

/// The slots' mean length, ms, where one slot in `every` is counted: what
/// makes a block last [`BLOCK_MS`], within 0.25 ms and 10 ms.
pub fn mean_length_ms(every: u32) -> f64 {
    let shortest = SHORTEST_US as f64 / 1e3;
    (BLOCK_MS / f64::from(every.max(1))).clamp(shortest, LONGEST_MEAN_MS)
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

    /// The slots `coverage` lays out up to its `counted_slots`-th counted
    /// one: (length µs, counted with weight) for each, uncounted ones
    /// included (the rest of a block at its length, then the next block's
    /// slots before its counted one at theirs).
    fn laid_out(coverage: &mut Coverage, counted_slots: usize) -> Vec<(u64, Option<u32>)> {
        let mut slots = Vec::new();
        let (mut rest, mut block_us) = (0u32, 0u64);
        for _ in 0..counted_slots {
            let next = coverage.next_counted();
            let chosen = next.skipped - rest;
            assert_eq!(
                next.wait_us,
                u64::from(rest) * block_us + u64::from(chosen) * next.length_us
            );
            slots.extend((0..rest).map(|_| (block_us, None)));
            slots.extend((0..chosen).map(|_| (next.length_us, None)));
            slots.push((next.length_us, Some(next.weight)));
            rest = next.weight - 1 - chosen;
            block_us = next.length_us;
        }
        slots
    }

    #[test]
    fn exactly_one_slot_in_every_is_counted_with_that_weight() {
        for every in [1u32, 2, 16, 100] {
            let slots = laid_out(&mut Coverage::new(every, 11), 4_000);
            // Each block's slots hold exactly one counted slot.
            for block in slots.chunks(every as usize) {
                let counted: Vec<u32> = block.iter().filter_map(|s| s.1).collect();
                assert_eq!(counted, [every], "{every}");
            }
        }
    }

    #[test]
    fn each_place_in_a_block_is_as_likely() {
        let mut c = Coverage::new(8, 5);
        let mut places = [0u32; 8];
        let mut at = 0u32;
        for _ in 0..80_000 {
            let next = c.next_counted();
            at += next.skipped;
            places[(at % 8) as usize] += 1;
            at += 1;
        }
        assert_eq!(at % 8, 8 - c.rest % 8);
        assert!(
            places.iter().all(|&n| (9_500..10_500).contains(&n)),
            "{places:?}"
        );
    }

    #[test]
    fn the_slots_of_a_block_share_a_length_and_blocks_vary() {
        let mut c = Coverage::new(2, 3);
        let slots = laid_out(&mut c, 10_000);
        for block in slots.chunks(2) {
            assert!(block.iter().all(|s| s.0 == block[0].0), "{block:?}");
            assert_eq!(block.iter().filter(|s| s.1.is_some()).count(), 1);
        }
        let lengths: Vec<u64> = slots.chunks(2).map(|b| b[0].0).collect();
        // One slot in two: slots of 5 ms on average, 2.5 to 7.5.
        assert!(lengths.iter().all(|&l| (2_500..=7_500).contains(&l)));
        let mean = lengths.iter().sum::<u64>() as f64 / lengths.len() as f64;
        assert!((mean - 5_000.0).abs() < 100.0, "{mean}");
        let distinct: std::collections::HashSet<u64> = lengths.into_iter().collect();
        assert!(distinct.len() > 3_000, "{}", distinct.len());
    }

    #[test]
    fn slots_shorten_to_keep_a_block_within_10_ms_down_to_a_quarter_ms() {
        for (every, mean) in [
            (1, 10.0),
            (2, 5.0),
            (4, 2.5),
            (10, 1.0),
            (20, 0.5),
            (40, 0.25),
            (400, 0.25),
        ] {
            assert!((mean_length_ms(every) - mean).abs() < 1e-9, "{every}");
            let mut c = Coverage::new(every, 7);
            let slots = laid_out(&mut c, 400);
            let us: u64 = slots.iter().map(|s| s.0).sum();
            let measured = us as f64 / slots.len() as f64 / 1e3;
            // Drawn within [max(mean / 2, shortest), 1.5 mean]: at the
            // shortest, the mean is a little more than it.
            let slack = if mean <= 0.25 {
                0.3 * mean
            } else {
                0.05 * mean
            };
            assert!((measured - mean).abs() < slack, "{every}: {measured}");
            // A block keeps to 10 ms (on average) as long as it can, up to
            // one slot in 20; at one in 40 its slots are drawn from 0.25 ms
            // up and it lasts ~12.5 ms.
            let block = measured * f64::from(every);
            if (2..=20).contains(&every) {
                assert!(
                    (block - BLOCK_MS).abs() < 0.1 * BLOCK_MS,
                    "{every}: {block}"
                );
            } else if every == 40 {
                assert!((block - 12.5).abs() < 1.0, "{every}: {block}");
            }
        }
        assert_eq!(mean_length_ms(MAX_EVERY), 0.25);
    }

    #[test]
    fn a_new_share_waits_for_the_block_in_progress() {
        let mut c = Coverage::new(10, 9);
        let first = c.next_counted();
        let rest = 10 - 1 - (first.skipped);
        c.set_every(4);
        assert_eq!(c.every(), 4);
        let next = c.next_counted();
        assert_eq!(next.weight, 4);
        // The old block's slots after its counted one pass uncounted first,
        // at the old block's length.
        assert!(next.skipped >= rest, "{first:?} {next:?}");
        assert!(next.wait_us >= u64::from(rest) * first.length_us);
        // Restarted, nothing of it is left.
        let mut c = Coverage::new(10, 9);
        c.next_counted();
        c.restart();
        assert!(c.next_counted().skipped < 10);
    }

    /// Over `runs` stretches of `horizon_ms`, each 0.1 ms's weight when
    /// counted, summed: the share moves between blocks, from `every` to
    /// `a` or `b` (run by run), as the budget moves it.
    fn weight_at_each_instant(every: u32, (a, b): (u32, u32), runs: u32) -> Vec<f64> {
        const UNIT_US: u64 = 100;
        let horizon_us = 600_000u64;
        let mut c = Coverage::new(every, 21);
        let mut counted_weight = vec![0.0f64; (horizon_us / UNIT_US) as usize];
        for run in 0..runs {
            c.restart();
            c.set_every(every);
            let mut t = 0u64;
            while t < horizon_us {
                let next = c.next_counted();
                t += next.wait_us;
                let end = (t + next.length_us).min(horizon_us);
                for unit in t.div_ceil(UNIT_US)..end.div_ceil(UNIT_US) {
                    counted_weight[unit as usize] += f64::from(next.weight);
                }
                t += next.length_us;
                c.set_every(if run % 2 == 0 { a } else { b });
            }
        }
        counted_weight.iter().map(|w| w / f64::from(runs)).collect()
    }

    /// Every instant is counted with the same chance, `1 / every`: over
    /// many blocks, each 0.1 ms of a long stretch was in a counted slot
    /// about as often, however the share changed between blocks.
    #[test]
    fn every_instant_is_counted_with_its_blocks_chance() {
        let means = weight_at_each_instant(6, (3, 12), 20_000);
        // Past the first block, each instant's weighted count is 1 on average.
        for (unit, mean) in means.iter().enumerate().skip(2_000) {
            assert!((mean - 1.0).abs() < 0.1, "at {unit}: {mean}");
        }
    }

    /// ... and so with slots shorter than a millisecond (one in 40 to 160:
    /// slots of 0.25-0.75 ms).
    #[test]
    fn instants_within_slots_shorter_than_a_millisecond_are_counted_alike() {
        let means = weight_at_each_instant(40, (40, 160), 20_000);
        let past_first = &means[2_000..];
        let overall = past_first.iter().sum::<f64>() / past_first.len() as f64;
        assert!((overall - 1.0).abs() < 0.02, "{overall}");
        // Each millisecond (ten instants, counted together more often than
        // not) within its noise: one in 100 has a standard error of ~0.07.
        for (ms, chunk) in past_first.chunks(10).enumerate() {
            let mean = chunk.iter().sum::<f64>() / 10.0;
            assert!((mean - 1.0).abs() < 0.35, "ms {ms}: {mean}");
        }
    }

    #[test]
    fn the_share_is_bounded() {
        let mut c = Coverage::new(0, 1);
        assert_eq!(c.every(), 1);
        assert_eq!(c.next_counted().weight, 1);
        assert_eq!(c.next_counted().wait_us, 0);
        c.set_every(u32::MAX);
        assert_eq!(c.every(), MAX_EVERY);
        assert_eq!(c.next_counted().weight, MAX_EVERY);
    }
}
