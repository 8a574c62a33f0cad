//! Redis 7.0 with a password: a counted slot of time in which some client
//! was refused for want of logging in is discarded whole (the server does
//! not say whose command was refused). The slots kept then stand for the
//! discarded ones too: a kept slot's weight is its coverage weight over the
//! share of counted slots recently kept, rounded at random (up with the
//! probability of its fraction) so that it is right on average. Whether a
//! slot is discarded depends on when the refused client sends, not on what
//! the others send, so their counts stay unbiased.

use crate::thinning::uniform;

/// How fast the kept share follows: a slot's weight in it.
const FOLLOW: f64 = 1.0 / 16.0;
/// Below this share a kept slot stands for no more (16 slots each).
const MIN_SHARE: f64 = 1.0 / 16.0;

#[derive(Clone, Debug)]
pub struct KeptTimeSlots {
    share: f64,
    rng: u64,
}

impl KeptTimeSlots {
    pub fn new(seed: u64) -> Self {
        Self {
            share: 1.0,
            rng: seed | 1,
        }
    }

    /// A counted slot closed: kept, or discarded.
    pub fn closed(&mut self, kept: bool) {
        self.share += FOLLOW * (f64::from(u8::from(kept)) - self.share);
    }

    /// The share of counted slots recently kept.
    pub fn share(&self) -> f64 {
        self.share
    }

    /// What each access of a counted slot stands for, given what coverage
    /// alone makes it stand for.
    pub fn weight(&mut self, coverage_weight: u32) -> u32 {
        let exact = f64::from(coverage_weight) / self.share.max(MIN_SHARE);
        let floor = exact.floor();
        let up = uniform(&mut self.rng) <= exact - floor;
        (floor as u32 + u32::from(up)).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_slots_stand_for_the_discarded_ones_on_average() {
        // Three slots in ten discarded, at random, whatever they held.
        let mut kept = KeptTimeSlots::new(7);
        let mut rng = 99u64;
        let (mut counted, mut truth) = (0u64, 0u64);
        for _ in 0..200_000 {
            let accesses = 10;
            truth += accesses;
            let weight = kept.weight(1);
            let keep = uniform(&mut rng) > 0.3;
            kept.closed(keep);
            if keep {
                counted += accesses * u64::from(weight);
            }
        }
        let ratio = counted as f64 / truth as f64;
        assert!((ratio - 1.0).abs() < 0.02, "{ratio}");
        assert!((kept.share() - 0.7).abs() < 0.1, "{}", kept.share());
        // Nothing discarded: weights are the coverage's own.
        let mut clean = KeptTimeSlots::new(1);
        for _ in 0..100 {
            clean.closed(true);
            assert_eq!(clean.weight(4), 4);
        }
    }
}
