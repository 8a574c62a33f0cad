//! Redis 7.0 with a password: a counted slot of time in which some client
//! was refused for want of logging in is discarded whole (the server does
//! not say whose command was refused). The slots kept then stand for the
//! discarded ones too: a kept slot's weight is its coverage weight over the
//! share of counted *time* recently kept, rounded at random (up with the
//! probability of its fraction) so that it is right on average. Whether a
//! slot is discarded depends on when the refused client sends, not on what
//! the others send, so their counts stay unbiased. The share is of time,
//! not of slots: slots are of random lengths, and a longer one is likelier
//! to hold a refusal, so the slots kept are the shorter ones; counted by
//! slots, they stood for too little (others' counts read 0.74-0.92 of the
//! truth beside a client refused every 20 ms).

use crate::thinning::uniform;

/// How fast the kept share follows: a slot's weight in it (its noise
/// biases the weights up, by Jensen: ~1% at 1/64 where half the time is
/// discarded, 4% at 1/16).
const FOLLOW: f64 = 1.0 / 64.0;
/// Below this share a kept slot stands for no more (16 slots each).
const MIN_SHARE: f64 = 1.0 / 16.0;

/// A slot's usual length (ms): what one of unknown length counts as, and
/// what the running means start from (as if such a slot had been kept, so
/// that a first slot discarded does not make the next stand for 16).
const USUAL_SLOT_MS: f64 = 10.0;

#[derive(Clone, Debug)]
pub struct KeptTimeSlots {
    /// Running means of each counted slot's time kept and time counted
    /// (ms).
    kept: f64,
    counted: f64,
    rng: u64,
}

impl KeptTimeSlots {
    pub fn new(seed: u64) -> Self {
        Self {
            kept: USUAL_SLOT_MS,
            counted: USUAL_SLOT_MS,
            rng: seed | 1,
        }
    }

    /// A counted slot of `length_ms` (0 if unknown: a usual one) closed:
    /// kept, or discarded.
    pub fn closed(&mut self, kept: bool, length_ms: f64) {
        let length = if length_ms.is_finite() && length_ms > 0.0 {
            length_ms
        } else {
            USUAL_SLOT_MS
        };
        let kept_length = if kept { length } else { 0.0 };
        self.kept += FOLLOW * (kept_length - self.kept);
        self.counted += FOLLOW * (length - self.counted);
    }

    /// The share of counted time recently kept.
    pub fn share(&self) -> f64 {
        if self.counted > 0.0 {
            (self.kept / self.counted).clamp(0.0, 1.0)
        } else {
            1.0
        }
    }

    /// What each access of a counted slot stands for, given what coverage
    /// alone makes it stand for.
    pub fn weight(&mut self, coverage_weight: u32) -> u32 {
        let exact = f64::from(coverage_weight) / self.share().max(MIN_SHARE);
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
            kept.closed(keep, 10.0);
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
            clean.closed(true, 10.0);
            assert_eq!(clean.weight(4), 4);
        }
    }

    #[test]
    fn longer_slots_likelier_discarded_still_stand_right() {
        // Slots of 5-15 ms; a refused client sending every 20 ms lands in
        // one with a chance of its length over 20 ms; steady traffic puts
        // accesses in proportion to length. Counted by slots, the kept
        // (shorter) ones stood for too little.
        let mut kept = KeptTimeSlots::new(3);
        let mut rng = 5u64;
        let (mut counted, mut truth) = (0.0, 0.0);
        for _ in 0..400_000 {
            let length = 5.0 + 10.0 * uniform(&mut rng);
            let accesses = 10.0 * length;
            truth += accesses;
            let weight = kept.weight(1);
            let keep = uniform(&mut rng) > length / 20.0;
            kept.closed(keep, length);
            if keep {
                counted += accesses * f64::from(weight);
            }
        }
        let ratio = counted / truth;
        assert!((ratio - 1.0).abs() < 0.02, "{ratio}");
    }
}
