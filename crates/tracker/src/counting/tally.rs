//! What is known of one count: its faded value and rate, and what its
//! error bar is made of (the sampling's variance, HeavyKeeper's
//! undercount). Keys, hash slots and the node's totals all read as tallies.

use crate::bounds::error_bar::{bounds, positive, split, Bounds};

/// The 97.5% upper bound of a Poisson mean when none was seen.
const UNSEEN_95: f64 = 3.689;
use crate::bounds::noise_floor::{Grain, Outline};

/// One kind of access to a key (or a hash slot, or the node): its faded
/// count and its rate now, and what its error bar is made of.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Tally {
    pub count: f64,
    pub per_second: f64,
    /// Of `count`, what was sampled (the rest was counted access by access).
    pub sampled: f64,
    /// The sampled part's variance (0: every access counted).
    pub variance: f64,
    /// HeavyKeeper's undercount of it, at 95% (0 for exact counters).
    pub undercount: f64,
    /// What one kept access stood for at most, lately, where time or
    /// accesses were sampled (0: every access counted): a key may have had
    /// accesses in sampled time none of which was kept, and its upper
    /// bound allows for a few such accesses' worth, whatever it was seen
    /// to have.
    pub unseen_unit: f64,
    /// The variance of what a listed key's count held when it was listed,
    /// taken at the background's grain (see
    /// [`crate::counting::member_spread`]): its bar allows for it, the
    /// grain the noise floor reads does not.
    pub entered: f64,
    /// The size class of the insert a listed key entered on: the one insert
    /// of it in the background a list picks from.
    pub entered_class: Option<u8>,
    /// Where a list picked it out of a stream: what that stream could make
    /// of its grain, which lowers its lower bound for the keys it was
    /// picked from ([`crate::bounds::noise_floor`]). `None` for a count read by name.
    pub picked_from: Option<Outline>,
}

impl Tally {
    /// What the noise floor reads of this row.
    pub fn grain(&self) -> Grain {
        Grain {
            count: self.count,
            sampled: self.sampled,
            variance: self.variance,
            entered_class: self.entered_class,
        }
    }

    /// The rate's 95% interval ([`crate::bounds::error_bar`]).
    pub fn bounds(&self) -> Bounds {
        let mut count = bounds(self.count, self.sampled, self.variance, self.undercount);
        if positive(self.entered) {
            // As if the whole count were sampled, with the entered part's
            // variance too; the wider of the two bars.
            let variance = self.variance + self.entered;
            let wide = bounds(self.count, self.count, variance, self.undercount);
            count.low = count.low.min(wide.low);
            count.high = count.high.max(wide.high);
        }
        let (exact, sampled) = split(self.count, self.sampled);
        if let Some(outline) = self.picked_from {
            count.low = count.low.min(exact + outline.lowest_truth(sampled));
        }
        if positive(self.unseen_unit) {
            // None kept of a Poisson number of chances: at 97.5%, 3.69.
            let unseen = UNSEEN_95 * self.unseen_unit;
            count.high = count
                .high
                .max(self.count.max(0.0) + unseen + self.undercount.max(0.0));
        }
        if self.count > 0.0 {
            count.scaled(self.per_second / self.count)
        } else {
            Bounds::default()
        }
    }

    /// The same tally, its upper end also allowing for what `missed` says
    /// its count may lack.
    pub fn allowing_for(self, missed: Missed) -> Tally {
        let unset = self.per_second * missed.seconds;
        let slowed = missed.slowed_share();
        let (_, sampled) = split(self.count, self.sampled);
        let lost = sampled * slowed / (1.0 - slowed);
        let more = [unset, lost].into_iter().filter(|x| *x > 0.0).sum::<f64>();
        Tally {
            undercount: self.undercount + more,
            ..self
        }
    }

    /// The same tally, picked by a list out of a stream of `outline`.
    pub fn picked_from(self, outline: Option<Outline>) -> Tally {
        Tally {
            picked_from: outline,
            ..self
        }
    }

    /// Two tallies of independent estimates, added (picked from the
    /// stream either was).
    pub fn plus(self, other: Tally) -> Tally {
        Tally {
            count: self.count + other.count,
            per_second: self.per_second + other.per_second,
            sampled: self.sampled + other.sampled,
            variance: self.variance + other.variance,
            undercount: self.undercount + other.undercount,
            unseen_unit: self.unseen_unit.max(other.unseen_unit),
            entered: self.entered + other.entered,
            entered_class: self.entered_class.max(other.entered_class),
            picked_from: self.picked_from.or(other.picked_from),
        }
    }
}

/// What counts read now may lack that no variance shows; their upper ends
/// allow for it ([`Tally::allowing_for`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Missed {
    /// Counted time whose weight is not set yet, s (Redis 7.0 with a
    /// password: [`crate::sampling::kept_time_slots::KeptTimeSlots::pending_seconds`]):
    /// a count lacks its rate times it.
    pub seconds: f64,
    /// The share of counted time the tracker's own filter took on the main
    /// thread. A server with no time to spare serves that much less in a
    /// counted slot than in another, and passes the rest to the uncounted
    /// time after it: a sampled count may lack that share of what it
    /// stands for (beside a saturating load, keys read from twenty
    /// connections read 0.95-0.97 of their truth, reading after reading).
    pub slowdown: f64,
}

impl Missed {
    /// The slowdown as a share that can be lost (at most half).
    fn slowed_share(self) -> f64 {
        if self.slowdown > 0.0 {
            self.slowdown.min(0.5)
        } else {
            0.0
        }
    }
}

/// A listed row, whose tallies' upper ends can also allow for what counts
/// may lack ([`Tally::allowing_for`]).
pub trait Row {
    fn allowing_for(self, missed: Missed) -> Self;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_not_yet_stood_for_raises_the_upper_end_by_the_rate_times_it() {
        let t = Tally {
            count: 1_000.0,
            per_second: 100.0,
            undercount: 5.0,
            ..Tally::default()
        };
        let seconds = |seconds| Missed {
            seconds,
            ..Missed::default()
        };
        let wider = t.allowing_for(seconds(0.5));
        assert_eq!(wider.undercount, 55.0);
        assert_eq!((wider.count, wider.variance), (t.count, t.variance));
        assert_eq!(t.allowing_for(seconds(0.0)), t);
        assert_eq!(t.allowing_for(seconds(f64::NAN)), t);
    }

    #[test]
    fn a_slowed_counted_time_raises_the_upper_end_of_the_sampled_part_only() {
        // 1,000 of which 800 sampled; counting took 20% of counted time.
        let t = Tally {
            count: 1_000.0,
            per_second: 100.0,
            sampled: 800.0,
            variance: 800.0 * 50.0,
            ..Tally::default()
        };
        let slowed = |slowdown| Missed {
            slowdown,
            ..Missed::default()
        };
        let wider = t.allowing_for(slowed(0.2));
        assert!((wider.undercount - 200.0).abs() < 1e-9, "{wider:?}");
        assert!(wider.bounds().high > t.bounds().high);
        assert_eq!(wider.bounds().low, t.bounds().low);
        // Counted access by access, nothing is lost to it.
        let exact = Tally {
            sampled: 0.0,
            variance: 0.0,
            ..t
        };
        assert_eq!(exact.allowing_for(slowed(0.2)), exact);
        // At most half is taken as lost; nothing for a nonsense share.
        assert!((t.allowing_for(slowed(0.9)).undercount - 800.0).abs() < 1e-9);
        assert_eq!(t.allowing_for(slowed(f64::NAN)), t);
        assert_eq!(t.allowing_for(slowed(-1.0)), t);
    }

    #[test]
    fn the_count_a_key_entered_with_widens_its_bar_only() {
        // 50 read as 25 counted one by one and 25 kept one in two; it
        // entered with 25 that events of 24 may have made.
        let t = Tally {
            count: 50.0,
            per_second: 50.0,
            sampled: 25.0,
            variance: 25.0,
            ..Tally::default()
        };
        let entered = Tally {
            entered: 25.0 * 24.0,
            ..t
        };
        let (narrow, wide) = (t.bounds(), entered.bounds());
        assert!(narrow.low > 30.0, "{narrow:?}");
        assert!(wide.low < 15.0 && wide.high > narrow.high, "{wide:?}");
        assert_eq!(entered.grain(), t.grain());
    }
}
