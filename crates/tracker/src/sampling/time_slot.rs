//! A slot of time as the counting side sees it: which counted slot an
//! access was gathered in, what the slot stands for, and how thinly its
//! accesses were kept.
//!
//! (A *time* slot, of a few milliseconds, in which the command filter is
//! registered or not; not a cluster's hash slot, see [`crate::server::hash_slot`].)
//!
//! Slots are the sampling units: whether one is counted is decided before
//! its traffic exists, with probability `1 / weight`, and all of its
//! accesses come with it. Within a counted slot the gatherer may keep one
//! access in `keep_one_in`, each by its own coin, when taking every one in
//! would cost the counting side more than its share. So a key's spread
//! (its error bar) comes from how its accesses are shared out among slots
//! and from those coins, and the counting side needs to know which accesses
//! were counted together.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimeSlot {
    /// The counted slot's number (it wraps; only a change matters).
    pub seq: u32,
    /// What the slot stands for: one slot in `weight` is counted.
    pub weight: u32,
    /// One access in this many is kept (by a coin each), standing for
    /// that many more.
    pub keep_one_in: u32,
}

/// What some accesses kept together stand for: their weight, the sampling
/// variance that adds, and what one of them stands for (the grain: a
/// sender whose accesses were all missed may have sent up to a few grains
/// unseen).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Counted {
    pub weight: f64,
    pub variance: f64,
    pub grain: f64,
}

impl Default for TimeSlot {
    fn default() -> Self {
        Self::WHOLE
    }
}

impl TimeSlot {
    /// Every command counted: each access stands for itself.
    pub const WHOLE: TimeSlot = TimeSlot {
        seq: 0,
        weight: 1,
        keep_one_in: 1,
    };

    /// A counted slot standing for `weight` slots, every access kept.
    pub fn new(seq: u32, weight: u32) -> Self {
        Self {
            seq,
            weight: weight.max(1),
            keep_one_in: 1,
        }
    }

    /// The same slot with one access in `n` kept.
    pub fn keeping_one_in(self, n: u32) -> Self {
        Self {
            keep_one_in: n.max(1),
            ..self
        }
    }

    /// The same slot standing for `weight` slots.
    pub fn standing_for(self, weight: u32) -> Self {
        Self {
            weight: weight.max(1),
            ..self
        }
    }

    /// What one access kept stands for.
    pub fn access_weight(self) -> u64 {
        u64::from(self.weight.max(1)) * u64::from(self.keep_one_in.max(1))
    }

    /// The variance a slot's sum `sum` (its kept accesses times their
    /// weight) adds to the estimate of a total: the slot was counted with
    /// probability `1 / weight`, so Horvitz-Thompson's `(1 − π) / π² · y²`
    /// with `y = sum / weight` is `(1 − 1 / weight) · sum²`. (For one slot
    /// chosen per block of `weight` this overstates the variance a little:
    /// the bounds are on the safe side.)
    pub fn variance_of(self, sum: f64) -> f64 {
        (1.0 - 1.0 / f64::from(self.weight.max(1))) * sum * sum
    }

    /// What `kept` accesses counted together in this slot (one client's
    /// pipeline, its accesses of one key) stand for, and its variance: the
    /// slot's share squared ([`Self::variance_of`]) and each access's coin
    /// ([`Self::thinning_variance`]). They were counted together or not at
    /// all: taken access by access, `w (w − 1)` each, the variance of a
    /// cluster of `m` is about `m` times too small.
    pub fn cluster(self, kept: u32) -> (f64, f64) {
        let weight = f64::from(kept) * self.access_weight() as f64;
        let coins = f64::from(kept) * self.thinning_variance();
        (weight, self.variance_of(weight) + coins)
    }

    /// [`Self::cluster`], with the grain.
    pub fn counted(self, kept: u32) -> Counted {
        let (weight, variance) = self.cluster(kept);
        Counted {
            weight,
            variance,
            grain: self.access_weight() as f64,
        }
    }

    /// What the coin of one access kept adds to the variance: standing for
    /// `w = weight · keep_one_in`, kept with probability `1 / keep_one_in`
    /// in a slot counted with `1 / weight`, `w (w − weight)` (two-stage
    /// Horvitz-Thompson). 0 when every access is kept.
    pub fn thinning_variance(self) -> f64 {
        let w = self.access_weight() as f64;
        w * (w - f64::from(self.weight.max(1)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_counted_for_sure_adds_no_variance_and_an_access_kept_one_in_n_stands_for_n_more() {
        assert_eq!(TimeSlot::WHOLE.variance_of(1_000.0), 0.0);
        assert_eq!(TimeSlot::WHOLE.thinning_variance(), 0.0);
        assert_eq!(TimeSlot::new(3, 0), TimeSlot::new(3, 1));
        // One slot in 4: (1 - 1/4) * 40^2.
        assert!((TimeSlot::new(1, 4).variance_of(40.0) - 1_200.0).abs() < 1e-9);
        assert_eq!(TimeSlot::new(1, 4).thinning_variance(), 0.0);
        // An access kept one in `n` stands for `n` more.
        let slot = TimeSlot::new(1, 4).keeping_one_in(8);
        assert_eq!(slot.access_weight(), 32);
        assert_eq!(slot.standing_for(12).access_weight(), 96);
        assert_eq!(slot.thinning_variance(), 32.0 * 28.0);
        // Every slot counted, one access in 8 kept: Bernoulli's w (w - 1).
        assert_eq!(
            TimeSlot::WHOLE.keeping_one_in(8).thinning_variance(),
            8.0 * 7.0
        );
        // Three kept together: one cluster of 96 in a slot counted one in
        // 4, and three coins; counted whole and kept, exact.
        let (weight, variance) = slot.cluster(3);
        assert_eq!(weight, 96.0);
        let expected = 0.75 * 96.0 * 96.0 + 3.0 * 32.0 * 28.0;
        assert!((variance - expected).abs() < 1e-9, "{variance}");
        assert_eq!(TimeSlot::WHOLE.cluster(5), (5.0, 0.0));
    }
}
