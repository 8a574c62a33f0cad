//! What a counted pass of the event loop stands for, when a counted slot
//! counts the first pass at or after its planned opening as well as the
//! passes that begin within its span.
//!
//! Why the first pass: the server runs commands in passes of its event
//! loop, and a pipeline is read in a few long passes. A slot that counts
//! only the passes beginning within its span counts a pass with
//! probability `1 / every` however long it is, so a key read in a few
//! pipelines was counted or not by where its few pass starts fell: beside a
//! saturating load, a key read in three pipelines (1% of an 8 s reading)
//! was listed in 12 of 16 readings on Redis 7.0 and on Valkey 9.1. Counting
//! also the first pass at or after the planned opening, however late it
//! begins, counts a pass as often as the time before it makes likely, and
//! it was listed in 15 of 16 on each (2026-12-06).
//!
//! A block of `every` slots of `length` opens one of them, chosen at
//! random (`start + k · length`, `k` uniform). The slot opened at `a`
//! counts pass `i` (begun at `s`, the pass before it at `p`) when `s` lies
//! in its span (`a` in `(s − length, s]`), or when `s` is the first pass
//! start at or after `a` and `p` was heard: passes are heard only from a
//! timer armed to fire at least [`REACH_US`] before an opening, so the rule
//! holds for `a` in `(p, min(s, p + reach)]`, and a pass whose gap is
//! longer is counted by it only where the opening came within the reach
//! of the pass before. (Weighed by its whole gap, as first built, such a
//! pass stood for too little: a simulation of passes a few milliseconds
//! apart reads far low, below; and the six shapes of `make bench --only
//! bounds` at ~20,000 commands a second on Valkey 9.1, whose passes come
//! so, held the truth within their bounds in 29 readings of 36.) Each block's opening falls in the union of the two with
//! probability (its openings there) / `every`, and a pass two blocks could
//! open counts once for each. So a pass counted stands for one over the
//! sum of those chances, exactly (Horvitz-Thompson), whatever the passes
//! hold. The span is always part of it, so a pass's chance is never below
//! `1 / every` and its weight never above `every`: a pass right after
//! another stands for no more than the span rule made it.

use std::borrow::Borrow;
use std::time::{Duration, Instant};

/// One block's possible openings: `start + k · length` for `k` in
/// `0..every`, in µs on any common clock.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Block {
    pub start_us: f64,
    pub length_us: f64,
    pub every: u32,
}

impl Block {
    /// The chance that this block's opening falls in `(from, to]`.
    pub fn chance_in(&self, from_us: f64, to_us: f64) -> f64 {
        if self.every == 0 || self.length_us <= 0.0 || to_us <= from_us {
            return 0.0;
        }
        // Openings k with from < start + k·length <= to.
        let first = ((from_us - self.start_us) / self.length_us).floor() + 1.0;
        let last = ((to_us - self.start_us) / self.length_us).floor();
        let first = first.max(0.0);
        let last = last.min(f64::from(self.every) - 1.0);
        ((last - first + 1.0).max(0.0)) / f64::from(self.every)
    }

    /// The chance that this block's opening counts a pass begun at
    /// `start_us`, the one before it at `previous_us`, its first-pass rule
    /// reaching `reach_us` past it: the openings in its span and in
    /// `(previous, min(start, previous + reach)]`, once each.
    fn chance_to_count(&self, previous_us: f64, start_us: f64, reach_us: f64) -> f64 {
        let span_from = start_us - self.length_us;
        let first_to = start_us.min(previous_us + reach_us.max(0.0));
        if first_to >= span_from {
            self.chance_in(previous_us.min(span_from), start_us)
        } else {
            self.chance_in(previous_us, first_to) + self.chance_in(span_from, start_us)
        }
    }
}

/// How far past the pass before it an opening may fall and still count
/// the first pass after it, µs: the slot timer is armed to fire two to
/// three milliseconds before an edge (`tracking/timers.rs`), and passes
/// are heard from then on.
pub const REACH_US: f64 = 2_000.0;

/// What a counted pass begun at `start_us` (the pass before it at
/// `previous_us`) stands for, given the blocks whose openings could have
/// counted it (the block in progress and those before it that reach into
/// its region) and the first-pass rule's reach: one over the sum of their
/// chances. `None` if none could have (it was counted by mistake).
pub fn pass_weight<B: Borrow<Block>>(
    blocks: impl IntoIterator<Item = B>,
    previous_us: f64,
    start_us: f64,
    reach_us: f64,
) -> Option<f64> {
    let chance: f64 = (blocks.into_iter())
        .map(|b| b.borrow().chance_to_count(previous_us, start_us, reach_us))
        .sum();
    (chance > 0.0).then(|| 1.0 / chance)
}

/// Does an opening at `opening` count the first pass at or after it, begun
/// `gap` after the pass before it, as a pass apart? Only where the pass
/// before lasted longer than a slot of `length` (else the span holds it)
/// and began within the reach before the opening.
pub fn counts_first_pass(
    opening: Instant,
    start: Instant,
    gap: Duration,
    length: Duration,
) -> bool {
    let previous = start.checked_sub(gap);
    gap > length && previous.is_some_and(|p| opening <= p + Duration::from_secs_f64(REACH_US / 1e6))
}

/// The blocks whose openings could count the next pass: the one in
/// progress and the one before it (a pass whose gap reaches further back
/// than a whole block began after a stall, and the block before that has
/// no opening left in its region that the two do not cover but its own).
#[derive(Clone, Copy, Debug, Default)]
pub struct RecentBlocks {
    /// Oldest first: start, slot length, slots in the block.
    blocks: [Option<(Instant, Duration, u32)>; 2],
}

impl RecentBlocks {
    /// A counted slot of `length` opened at `opening`, the `chosen`-th of
    /// a block of `every`: that block is the one in progress.
    pub fn opened(&mut self, opening: Instant, length: Duration, chosen: u32, every: u32) {
        let start = opening.checked_sub(length * chosen).unwrap_or(opening);
        if self.blocks[1].is_none_or(|(s, _, _)| s != start) {
            self.blocks = [self.blocks[1], Some((start, length, every))];
        }
    }

    /// The blocks planned so far no longer stand (counting began afresh):
    /// their openings left will not come.
    pub fn forget(&mut self) {
        self.blocks = [None, None];
    }

    /// What a pass begun at `start`, `gap` after the one before it, stands
    /// for ([`pass_weight`]).
    pub fn weight(&self, start: Instant, gap: Duration) -> Option<f64> {
        let us_before = |t: Instant| -(start.saturating_duration_since(t).as_secs_f64() * 1e6);
        // Weighed as a counted slot opens, on the main thread: no
        // allocation, the two blocks read in place.
        let blocks = (self.blocks.iter().flatten()).map(|&(block_start, length, every)| Block {
            start_us: us_before(block_start),
            length_us: length.as_secs_f64() * 1e6,
            every,
        });
        pass_weight(blocks, -(gap.as_secs_f64() * 1e6), 0.0, REACH_US)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_pass_stands_for_every_a_long_one_for_the_block_over_its_gap() {
        let block = Block {
            start_us: 0.0,
            length_us: 100.0,
            every: 40,
        };
        // A pass 30 µs after the one before it: the span's one opening.
        assert_eq!(pass_weight([block], 1_000.0, 1_030.0, REACH_US), Some(40.0));
        // A pass 1 ms after the one before it: ten openings of forty.
        assert_eq!(pass_weight([block], 1_000.0, 2_000.0, REACH_US), Some(4.0));
        // Its gap reaching before the block: only the block's openings
        // (0, 100, ... 500: six of forty).
        assert_eq!(
            pass_weight([block], -500.0, 500.0, REACH_US),
            Some(40.0 / 6.0)
        );
        // Past the block's end: none.
        assert_eq!(pass_weight([block], 5_000.0, 5_030.0, REACH_US), None);
    }

    #[test]
    fn a_gap_longer_than_the_reach_counts_by_its_first_stretch_and_the_span() {
        let block = Block {
            start_us: 0.0,
            length_us: 100.0,
            every: 100,
        };
        // A pass at 8 ms, 6 ms after the one before: openings in (2, 4] ms
        // (twenty) and the span (7.9, 8] ms (one), of a hundred.
        let w = pass_weight([block], 2_000.0, 8_000.0, REACH_US).unwrap();
        assert!((w - 100.0 / 21.0).abs() < 1e-9, "{w}");
        // Unbounded, the whole gap (sixty).
        let w = pass_weight([block], 2_000.0, 8_000.0, f64::INFINITY).unwrap();
        assert!((w - 100.0 / 60.0).abs() < 1e-9, "{w}");
    }

    #[test]
    fn the_first_pass_is_counted_apart_after_a_long_pass_within_the_reach() {
        let t0 = Instant::now();
        let us = Duration::from_micros;
        let slot = us(250);
        // 600 µs after the pass before, opened 400 µs after it: yes.
        assert!(counts_first_pass(t0 + us(400), t0 + us(600), us(600), slot));
        // A short gap: the span holds it.
        assert!(!counts_first_pass(
            t0 + us(400),
            t0 + us(600),
            us(200),
            slot
        ));
        // Opened 3 ms after the pass before: past the reach.
        assert!(!counts_first_pass(
            t0 + us(3_000),
            t0 + us(5_000),
            us(5_000),
            slot
        ));
        assert!(counts_first_pass(
            t0 + us(1_900),
            t0 + us(5_000),
            us(5_000),
            slot
        ));
    }

    #[test]
    fn two_blocks_that_could_count_a_pass_add_their_chances() {
        let before = Block {
            start_us: 0.0,
            length_us: 100.0,
            every: 10,
        };
        let now = Block {
            start_us: 1_000.0,
            length_us: 50.0,
            every: 20,
        };
        // (800, 1200]: the first block's opening at 900 (one of ten), the
        // second's at 1000 to 1200 (five of twenty).
        let w = pass_weight([before, now], 800.0, 1_200.0, REACH_US).unwrap();
        assert!((w - 1.0 / (1.0 / 10.0 + 5.0 / 20.0)).abs() < 1e-9, "{w}");
    }

    #[test]
    fn recent_blocks_weigh_a_pass_by_the_blocks_they_remember() {
        let t0 = Instant::now();
        let us = Duration::from_micros;
        let mut recent = RecentBlocks::default();
        // A block of 40 slots of 100 µs from t0, its 3rd slot opened.
        recent.opened(t0 + us(300), us(100), 3, 40);
        // A pass at 2 ms, 1 ms after the one before: ten openings of forty.
        let w = recent.weight(t0 + us(2_000), us(1_000)).unwrap();
        assert!((w - 4.0).abs() < 1e-9, "{w}");
        // The same block again (a continuation) changes nothing.
        recent.opened(t0 + us(300), us(100), 3, 40);
        assert!((recent.weight(t0 + us(2_000), us(1_000)).unwrap() - 4.0).abs() < 1e-9);
        // The next block (20 slots of 50 µs from 4 ms): a pass at 4.2 ms,
        // 400 µs after the one before, could be opened by the first block
        // (3.9 ms: one of forty) and the second (4.0-4.2 ms: five of twenty).
        recent.opened(t0 + us(4_100), us(50), 2, 20);
        let w = recent.weight(t0 + us(4_200), us(400)).unwrap();
        assert!((w - 1.0 / (1.0 / 40.0 + 5.0 / 20.0)).abs() < 1e-9, "{w}");
        // Forgotten: no block could have counted it.
        recent.forget();
        assert_eq!(recent.weight(t0 + us(4_200), us(400)), None);
    }

    /// Passes of random lengths (short ones, now and then an idle wait
    /// longer than the reach, and a pipeline read in long passes), each
    /// holding commands in proportion to its length; blocks of random
    /// slot lengths; each block opens one slot at random, which counts the
    /// first pass at or after its opening (within the reach of the pass
    /// before) and those that begin within its span; a pass two openings
    /// count is counted twice. The weighted sum of the commands counted, over many
    /// runs, is the truth within five standard errors, for all passes and
    /// for the pipeline's alone; and a pipeline is missed far less often
    /// than by the span alone.
    #[test]
    fn counting_the_first_pass_weighed_so_is_unbiased_and_catches_long_passes() {
        let mut rng = 0x9e37_79b9_7f4a_7c15_u64;
        let mut uniform = || crate::sampling::coverage::uniform(&mut rng);
        let runs = 3_000;
        let (mut all, mut piped, mut missed_span, mut missed_rule) = (vec![], vec![], 0, 0);
        let (mut truth_all, mut truth_piped) = (0.0, 0.0);
        for _ in 0..runs {
            // ~20 ms of passes: 26 µs on average, and one pipeline of 40
            // passes of ~500 µs somewhere.
            let mut passes = vec![]; // (start, commands, piped)
            let mut t = 0.0;
            let pipe_at = uniform() * 15_000.0;
            let mut piped_left = 40;
            while t < 25_000.0 {
                let in_pipe = t >= pipe_at && piped_left > 0;
                let length = if in_pipe {
                    piped_left -= 1;
                    350.0 + uniform() * 300.0
                } else if uniform() < 0.01 {
                    // Now and then an idle wait longer than the reach.
                    2_000.0 + uniform() * 4_000.0
                } else {
                    5.0 + uniform() * 42.0
                };
                passes.push((t, length, in_pipe));
                t += length;
            }
            // Blocks from a random phase before the passes.
            let mut blocks = vec![];
            let mut b = -uniform() * 10_000.0;
            while b < t {
                let every = 60;
                let length_us = 60.0 + uniform() * 110.0;
                blocks.push(Block {
                    start_us: b,
                    length_us,
                    every,
                });
                b += length_us * f64::from(every);
            }
            let (mut est_all, mut est_piped) = (0.0, 0.0);
            let (mut span_seen, mut rule_seen) = (false, false);
            for block in &blocks {
                let k = (uniform() * f64::from(block.every)).floor();
                let a = block.start_us + k * block.length_us;
                for (i, &(s, length, in_pipe)) in passes.iter().enumerate().skip(1) {
                    let p = passes[i - 1].0;
                    let first = p < a && a <= s && a <= p + REACH_US;
                    let in_span = a <= s && s < a + block.length_us;
                    if !(first || in_span) {
                        continue;
                    }
                    rule_seen |= in_pipe;
                    span_seen |= in_pipe && in_span;
                    let near: Vec<Block> = blocks
                        .iter()
                        .copied()
                        .filter(|o| {
                            o.start_us <= s
                                && o.start_us + o.length_us * f64::from(o.every)
                                    > p.min(s - o.length_us)
                        })
                        .collect();
                    let w =
                        pass_weight(&near, p, s, REACH_US).expect("a counted pass has a chance");
                    est_all += w * length;
                    if in_pipe {
                        est_piped += w * length;
                    }
                }
            }
            let skip_first = passes.iter().skip(1);
            truth_all += skip_first.clone().map(|p| p.1).sum::<f64>() / runs as f64;
            truth_piped += skip_first.filter(|p| p.2).map(|p| p.1).sum::<f64>() / runs as f64;
            all.push(est_all);
            piped.push(est_piped);
            missed_span += usize::from(!span_seen);
            missed_rule += usize::from(!rule_seen);
        }
        for (name, est, truth) in [("all", &all, truth_all), ("piped", &piped, truth_piped)] {
            let mean = est.iter().sum::<f64>() / est.len() as f64;
            let var = est.iter().map(|e| (e - mean).powi(2)).sum::<f64>() / (est.len() - 1) as f64;
            let se = (var / est.len() as f64).sqrt();
            assert!(
                (mean - truth).abs() < 5.0 * se,
                "{name}: mean {mean} truth {truth} se {se}"
            );
        }
        assert!(
            missed_rule * 10 < missed_span,
            "pipelines missed: {missed_rule} with the rule, {missed_span} by spans alone"
        );
    }

    /// A light load: passes a few milliseconds apart (longer than the
    /// reach), each holding what arrived since the one before. Counted by
    /// the rule with its reach and weighed with it, the weighted sum is
    /// the truth within five standard errors; weighed by the whole gap, as
    /// if every opening in it had counted the pass, it reads far low.
    #[test]
    fn passes_further_apart_than_the_reach_are_weighed_by_what_it_reaches() {
        let mut rng = 0x2545_f491_4f6c_dd1d_u64;
        let mut uniform = || crate::sampling::coverage::uniform(&mut rng);
        let runs = 3_000;
        let (mut reach, mut whole, mut truth) = (vec![], vec![], 0.0);
        for _ in 0..runs {
            let mut passes = vec![]; // (start, commands)
            let mut t = 0.0;
            while t < 40_000.0 {
                let gap = 500.0 + uniform() * 5_500.0;
                t += gap;
                passes.push((t, gap));
            }
            let mut blocks = vec![];
            let mut b = -uniform() * 10_000.0;
            while b < t {
                let length_us = 800.0 + uniform() * 400.0;
                blocks.push(Block {
                    start_us: b,
                    length_us,
                    every: 10,
                });
                b += length_us * 10.0;
            }
            let (mut by_reach, mut by_whole) = (0.0, 0.0);
            for block in &blocks {
                let k = (uniform() * 10.0).floor();
                let a = block.start_us + k * block.length_us;
                for (i, &(s, commands)) in passes.iter().enumerate().skip(1) {
                    let p = passes[i - 1].0;
                    let first = p < a && a <= s && a <= p + REACH_US;
                    let in_span = a <= s && s < a + block.length_us;
                    if first || in_span {
                        by_reach += commands * pass_weight(&blocks, p, s, REACH_US).unwrap();
                        by_whole += commands * pass_weight(&blocks, p, s, f64::INFINITY).unwrap();
                    }
                }
            }
            truth += passes.iter().skip(1).map(|p| p.1).sum::<f64>() / runs as f64;
            reach.push(by_reach);
            whole.push(by_whole);
        }
        let stats = |est: &[f64]| {
            let mean = est.iter().sum::<f64>() / est.len() as f64;
            let var = est.iter().map(|e| (e - mean).powi(2)).sum::<f64>() / (est.len() - 1) as f64;
            (mean, (var / est.len() as f64).sqrt())
        };
        let (mean, se) = stats(&reach);
        assert!(
            (mean - truth).abs() < 5.0 * se,
            "reach: mean {mean} truth {truth} se {se}"
        );
        let (mean, se) = stats(&whole);
        assert!(
            truth - mean > 5.0 * se,
            "whole gap: mean {mean} truth {truth} se {se}"
        );
    }
}
