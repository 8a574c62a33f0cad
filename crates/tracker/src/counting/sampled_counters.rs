//! Fading counters of sampled accesses, each with its variance: the node's
//! totals and each hash slot's load. Every access of a counted slot of time
//! is in them (they are exact per counter, not a sketch), so their only
//! error is which slots of time were counted.
//!
//! Each counted slot is the one slot counted in its block, so each counter
//! gets one estimate per block (its sum in the slot, each access standing
//! for the block): `e₁, e₂, …`. Their variance is estimated from successive
//! differences, `½ Σ (e_b − e_{b−1})²` (a block the counter was absent from
//! is a 0), the estimator systematic samples are given (Wolter): for a
//! counter with steady traffic the blocks agree and its bar is narrow, for
//! one with bursts the differences are the bursts and its bar is as wide as
//! they make it. (Horvitz-Thompson's `Σ (1 − 1/N) e_b²` would treat every
//! block as a coin of its own and give a steady node's total a bar ten
//! times too wide.) Every slot counted but accesses thinned, there are no
//! blocks: each kept access's coin is the variance. The variance fades at
//! twice the counts' rate: a second set of counters with half the
//! half-life.

use crate::counting::fading_counters::FadingCounters;
use crate::sampling::time_slot::TimeSlot;
use hashbrown::HashMap;

#[derive(Clone, Debug)]
pub struct SampledCounters {
    counts: FadingCounters,
    variance: FadingCounters,
    /// Each counter's last block estimate, and the block it was in.
    last: Vec<(u32, f32)>,
    /// The counted slot being gathered, when it began, and each counter's
    /// kept accesses in it so far.
    slot: TimeSlot,
    slot_ms: i64,
    in_slot: HashMap<usize, f64>,
    /// The latest counted slot closed.
    latest: Option<u32>,
}

/// A counter's faded count now and its variance.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Estimate {
    pub count: f64,
    pub variance: f64,
}

impl SampledCounters {
    pub fn new(len: usize, half_life_ms: f64, now_ms: i64) -> Self {
        Self {
            counts: FadingCounters::new(len, half_life_ms, now_ms),
            variance: FadingCounters::new(len, half_life_ms / 2.0, now_ms),
            last: vec![(0, 0.0); len],
            slot: TimeSlot::WHOLE,
            slot_ms: now_ms,
            in_slot: HashMap::new(),
            latest: None,
        }
    }

    /// Accesses of `slot` at `time_ms` are about to be added: a new slot
    /// closes the one before.
    pub fn begin(&mut self, slot: TimeSlot, time_ms: i64) {
        if slot != self.slot {
            self.close_time_slot();
            self.slot = slot;
            self.slot_ms = time_ms;
        }
    }

    /// [`FadingCounters::unit_at`]: for many additions at one time.
    pub fn unit_at(&mut self, time_ms: i64) -> f64 {
        self.counts.unit_at(time_ms)
    }

    /// Adds `accesses` kept accesses of the current slot to counter `i`,
    /// stored as `stored` (what they stand for times [`Self::unit_at`] the
    /// batch's time).
    #[inline]
    pub fn add(&mut self, i: usize, accesses: f64, stored: f64) {
        self.counts.add_units(i, stored);
        if self.slot.weight > 1 {
            *self.in_slot.entry(i).or_insert(0.0) += accesses;
        } else if self.slot.keep_one_in > 1 {
            // Every slot counted, accesses thinned: each kept one's coin.
            let coins = accesses * self.slot.thinning_variance();
            self.variance.add(i, coins, self.slot_ms);
        }
    }

    /// The closed slot's block estimates against each counter's last.
    fn close_time_slot(&mut self) {
        if self.slot.weight <= 1 {
            self.in_slot.clear();
            return;
        }
        let seq = self.slot.seq;
        let weight = self.slot.access_weight() as f64;
        for (&i, &accesses) in &self.in_slot {
            let estimate = accesses * weight;
            let Some(last) = self.last.get_mut(i) else {
                continue;
            };
            let term = difference(estimate, *last, seq, self.latest);
            *last = (seq, estimate as f32);
            self.variance.add(i, term / 2.0, self.slot_ms);
        }
        self.latest = Some(seq);
        self.in_slot.clear();
        if self.in_slot.capacity() > 4096 {
            self.in_slot.shrink_to(4096);
        }
    }

    /// Counter `i` now, with its variance (the open slot's part included).
    pub fn estimate(&self, i: usize, now_ms: i64) -> Estimate {
        Estimate {
            count: self.counts.count(i, now_ms),
            variance: self.variance_of(i, now_ms),
        }
    }

    fn variance_of(&self, i: usize, now_ms: i64) -> f64 {
        let closed = self.variance.count(i, now_ms);
        let Some(&last) = self.last.get(i) else {
            return closed;
        };
        // The open slot, not closed yet: its block against the last.
        let open = self.in_slot.get(&i).map_or(0.0, |&accesses| {
            let estimate = accesses * self.slot.access_weight() as f64;
            difference(estimate, last, self.slot.seq, self.latest)
        });
        // A counter absent from the latest slot closed has a 0 after its
        // last block (its half of that difference is not added yet).
        let after_last = if self.in_slot.contains_key(&i) {
            0.0
        } else {
            pending(self.latest, last)
        };
        let faded = (-((now_ms - self.slot_ms).max(0) as f64) / self.counts.half_life_ms()).exp2();
        closed + (open + after_last) / 2.0 * faded * faded
    }

    /// Every counter that ever counted anything, with its estimate now.
    pub fn nonzero(&self, now_ms: i64) -> impl Iterator<Item = (usize, Estimate)> + '_ {
        self.counts
            .nonzero(now_ms)
            .map(move |(i, _)| (i, self.estimate(i, now_ms)))
    }

    pub fn heap_bytes(&self) -> usize {
        self.counts.heap_bytes()
            + self.variance.heap_bytes()
            + self.last.capacity() * std::mem::size_of::<(u32, f32)>()
            + self.in_slot.capacity() * 2 * std::mem::size_of::<(usize, f64)>()
    }
}

/// The squared difference of a counter's `estimate` in block `seq` with
/// the block before, its `last` block estimate, given the `latest` closed.
fn difference(estimate: f64, last: (u32, f32), seq: u32, latest: Option<u32>) -> f64 {
    let (last_seq, last_estimate) = (last.0, f64::from(last.1));
    if last_estimate > 0.0 && last_seq == seq.wrapping_sub(1) {
        (estimate - last_estimate).powi(2)
    } else if latest.is_none() {
        // The first block counted at all: nothing before it to differ from.
        0.0
    } else {
        // Blocks of nothing between: this block against the 0 before it
        // (the last one's 0 after it was added when it was seen to be the
        // last).
        estimate * estimate + pending(latest, last)
    }
}

/// A counter's last block estimate squared, if a block without it came
/// after (the difference with that block's 0): not yet in the variance.
fn pending(latest: Option<u32>, (last_seq, last_estimate): (u32, f32)) -> f64 {
    let estimate = f64::from(last_estimate);
    match latest {
        Some(latest) if estimate > 0.0 && latest != last_seq => estimate * estimate,
        _ => 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gather(c: &mut SampledCounters, slots: &[(u32, u32, f64)], i: usize) {
        for &(seq, weight, accesses) in slots {
            c.begin(TimeSlot::new(seq, weight), 10);
            let unit = c.unit_at(10);
            c.add(i, accesses, accesses * f64::from(weight) * unit);
        }
    }

    #[test]
    fn every_slot_counted_has_no_variance_but_the_coins_of_accesses_thinned() {
        // Ten accesses kept, every one or one in 4 (a coin each: 4 · 3).
        for (keep_one_in, count, variance) in [(1, 10.0, 0.0), (4, 40.0, 10.0 * 4.0 * 3.0)] {
            let mut c = SampledCounters::new(2, 1e12, 0);
            c.begin(TimeSlot::WHOLE.keeping_one_in(keep_one_in), 0);
            let unit = c.unit_at(0);
            for _ in 0..10 {
                c.add(0, 1.0, f64::from(keep_one_in) * unit);
            }
            let e = c.estimate(0, 0);
            assert_eq!((e.count, e.variance), (count, variance));
        }
    }

    #[test]
    fn steady_blocks_agree_and_bursts_do_not() {
        // A steady counter: 5 accesses in each of 40 blocks, 1 in 4 counted.
        let steady: Vec<(u32, u32, f64)> = (1..=40).map(|seq| (seq, 4, 5.0)).collect();
        let mut c = SampledCounters::new(2, 1e12, 0);
        gather(&mut c, &steady, 0);
        let e = c.estimate(0, 10);
        assert!((e.count - 800.0).abs() < 1e-9);
        assert_eq!(e.variance, 0.0, "{e:?}");
        // A burst of 200 in one block of 40: its difference with the 0s on
        // either side, half each: (800² + 800²) / 2.
        let mut c = SampledCounters::new(2, 1e12, 0);
        for seq in 1..=40 {
            c.begin(TimeSlot::new(seq, 4), 10);
            if seq == 20 {
                c.add(1, 200.0, 800.0);
            }
        }
        let e = c.estimate(1, 10);
        assert!((e.variance - 640_000.0).abs() < 1e-6, "{e:?}");
        // Read while the burst's block is still open: only its difference
        // with the block before is known yet.
        let mut c = SampledCounters::new(2, 1e12, 0);
        for seq in 1..=20 {
            c.begin(TimeSlot::new(seq, 4), 10);
        }
        c.add(1, 200.0, 800.0);
        assert!((c.estimate(1, 10).variance - 320_000.0).abs() < 1e-6);
    }

    #[test]
    fn alternating_blocks_give_their_differences() {
        // 2, 6, 2, 6 accesses at weight 4: estimates 8, 24, 8, 24; three
        // differences of 16, halved and squared: 3 * 128; the last block is
        // the latest, so nothing after it.
        let mut c = SampledCounters::new(1, 1e12, 0);
        gather(
            &mut c,
            &[(1, 4, 2.0), (2, 4, 6.0), (3, 4, 2.0), (4, 4, 6.0)],
            0,
        );
        let e = c.estimate(0, 10);
        assert!((e.variance - 384.0).abs() < 1e-6, "{e:?}");
        // One more block without it: its last 24 against that 0.
        c.begin(TimeSlot::new(5, 4), 10);
        c.begin(TimeSlot::new(6, 4), 10);
        assert!((c.estimate(0, 10).variance - (384.0 + 288.0)).abs() < 1e-6);
    }
}
