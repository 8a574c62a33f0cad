//! How much longer counted slots of time really last than planned, and so
//! what each stands for.
//!
//! A counted slot opens and closes when the server's timers fire, and they
//! fire late: on a millisecond grid, after the event loop's pass in
//! progress, and never sooner than a millisecond after they are set. Each
//! edge is due at a planned instant, so a late opening shortens its slot
//! as a late closing lengthens it, but the two do not cancel: the closing
//! falls in counted time, when every command passes the filter and the
//! loop's passes are longer, and a slot cannot last less than the timer's
//! own millisecond. Measured beside a saturating load with 1 ms slots
//! planned, counted slots lasted 2.2-2.9 ms on average, and counts read
//! 0.8 to 1.75 of the truth as the share of time counted drifted with them.
//!
//! What makes the weights right whatever the lateness: the blocks keep
//! their planned length (each edge is planned from the last plan, not from
//! when a timer fired), so an instant is counted with chance
//! `E[actual length] / (every · E[planned length])` = `stretch / every`
//! (renewal-reward: a ratio of means; the mean of each slot's ratio reads
//! short slots' lateness as more than it is, and counted 4.5% short in the
//! unit model), and an access of a counted slot stands for
//! `every / stretch`. The stretch is learnt from the slots counted before
//! the one it weighs (never from the slot itself, whose lateness its own
//! traffic may cause). A weight that is not whole is rounded up or down by
//! a coin, so its mean is exact. Where every slot is counted, each instant
//! is, however late the timers: the weight is then 1.

use crate::coverage::uniform;

/// The mean's memory, in counted slots.
const MEMORY_SLOTS: f64 = 64.0;
/// One slot may stretch the mean by at most this ratio (a server stalled
/// by a long command for a second holds no more traffic for it).
const MOST_STRETCH: f64 = 8.0;

#[derive(Clone, Debug)]
pub struct SlotStretch {
    /// Running means of the counted slots' actual and planned lengths, ms.
    actual_ms: f64,
    planned_ms: f64,
    /// Slots measured so far (the means' start counts less and less).
    slots: f64,
    rng: u64,
}

impl SlotStretch {
    pub fn new(seed: u64) -> Self {
        Self {
            actual_ms: 0.0,
            planned_ms: 0.0,
            slots: 0.0,
            rng: seed | 1,
        }
    }

    /// How many times their planned length counted slots last, on average.
    pub fn mean(&self) -> f64 {
        if self.planned_ms > 0.0 {
            self.actual_ms / self.planned_ms
        } else {
            1.0
        }
    }

    /// A counted slot planned to last `planned_ms` lasted `actual_ms`.
    pub fn observe(&mut self, planned_ms: f64, actual_ms: f64) {
        if !(planned_ms > 0.0 && actual_ms.is_finite() && actual_ms >= 0.0) {
            return;
        }
        let actual_ms = actual_ms.min(MOST_STRETCH * planned_ms);
        self.slots += 1.0;
        let alpha = 1.0 / self.slots.min(MEMORY_SLOTS);
        self.actual_ms += alpha * (actual_ms - self.actual_ms);
        self.planned_ms += alpha * (planned_ms - self.planned_ms);
    }

    /// What an access of the next counted slot stands for, one slot in
    /// `every` being planned: `every / stretch`, a whole number at least 1,
    /// rounded by a coin.
    pub fn weight(&mut self, every: u32) -> u32 {
        if every <= 1 {
            return 1;
        }
        let exact = (f64::from(every) / self.mean().max(1e-3)).max(1.0);
        let floor = exact.floor();
        let up = uniform(&mut self.rng) < exact - floor;
        (floor as u32).saturating_add(u32::from(up)).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_that_last_as_planned_weigh_their_share() {
        let mut s = SlotStretch::new(1);
        for _ in 0..100 {
            s.observe(2.0, 2.0);
        }
        assert_eq!(s.mean(), 1.0);
        assert!((0..100).all(|_| s.weight(35) == 35));
        assert_eq!(s.weight(0), 1);
    }

    #[test]
    fn slots_that_last_longer_weigh_less_exactly_on_average() {
        let mut s = SlotStretch::new(7);
        // Planned 1 or 2 ms, each lasting 1.5 ms more: 2.5 and 3.5 ms, and
        // counted time is 6 ms for 3 planned (not the ratios' mean, 2.125).
        for i in 0..10_000 {
            let planned = if i % 2 == 0 { 1.0 } else { 2.0 };
            s.observe(planned, planned + 1.5);
        }
        assert!((s.mean() - 2.0).abs() < 0.05, "{}", s.mean());
        let n = 100_000;
        let total: u64 = (0..n).map(|_| u64::from(s.weight(35))).sum();
        let mean = total as f64 / f64::from(n);
        let exact = 35.0 / s.mean();
        assert!((mean - exact).abs() < 0.05, "{mean} vs {exact}");
    }

    #[test]
    fn the_first_slots_count_fully_and_a_stall_is_capped() {
        let mut s = SlotStretch::new(3);
        s.observe(1.0, 2.0);
        assert_eq!(s.mean(), 2.0);
        s.observe(1.0, 1_000.0);
        assert_eq!(s.mean(), 5.0);
        s.observe(0.0, 3.0);
        s.observe(1.0, f64::NAN);
        assert_eq!(s.mean(), 5.0);
        assert_eq!(s.weight(1), 1);
        assert_eq!(s.weight(2), 1);
    }
}
