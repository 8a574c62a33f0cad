//! Redis 7.0 with a password: a counted slot of time in which some client
//! was refused for want of logging in is discarded whole (the server does
//! not say whose command was refused). The slots kept then stand for the
//! discarded ones: a discarded slot's weight is carried to the next slot
//! kept *of about its length*, which stands for both.
//!
//! Why this is unbiased where a share of slots kept is not: among slots of
//! one length, each kept with the same chance `p`, the weight a kept slot
//! gets is the number of slots since the last one kept, a geometric count
//! whose mean is exactly `1 / p` (inverse sampling), whatever `p` is and
//! however it moves. A share estimated from recent slots needs a start (it
//! began at "all kept" and read others' counts at 0.5-0.6 of the truth over
//! the first hundred slots) and its inverse is biased by its noise.
//!
//! Why by length: a longer slot is likelier to hold a refusal, and holds
//! more of a steady stream; carried across lengths, the shorter slots kept
//! would stand for longer ones discarded (0.74-0.92 of the truth beside a
//! client refused every 20 ms). Lengths are measured, not planned: a slot
//! the event loop closed late is longer, and was likelier discarded.
//!
//! Whether a slot is discarded depends on when the refused client sends,
//! not on what the others send, so their counts stay unbiased. What is
//! carried and not yet set on a kept slot is missing from the counts until
//! then (a few slots' worth per length class): the error bars' upper ends
//! allow for it ([`KeptTimeSlots::pending_seconds`]).

/// Lengths within this ratio of each other share a class. The spread of
/// lengths left within a class is what biases a count: beside a client
/// refused every 20 ms, under 1% for a steady key (the unit test below);
/// wider classes carry more at once (1.5: -1.1%).
const CLASS_RATIO: f64 = 1.25;
/// Classes, from the shortest slot up (the last takes every longer slot:
/// ~170 ms and more).
const CLASSES: usize = 30;
/// The first class's slots, ms: the shortest slots the tracker lays out
/// (0.25 ms) and shorter.
const FIRST_CLASS_MS: f64 = 0.25;
/// What a slot of unknown length is taken to last (the tracker's mean).
const USUAL_SLOT_MS: f64 = 10.0;
/// At most this many times its own weight is carried onto one kept slot:
/// where fewer than one slot in 16 is kept, counts fall short.
pub const MAX_STANDS_FOR: u32 = 16;

#[derive(Clone, Debug, Default)]
pub struct KeptTimeSlots {
    /// Per length class: the slots discarded since the last one kept.
    carried: [Carried; CLASSES],
}

/// Slots discarded and not yet stood for.
#[derive(Clone, Copy, Debug, Default)]
struct Carried {
    /// Their weight.
    weight: u32,
    /// The time they stand for, ms (each slot's length times its weight).
    ms: f64,
}

impl KeptTimeSlots {
    /// A counted slot of `length_ms`, standing for `weight` slots, closed:
    /// if `kept`, the weight it stands for now (its own and what was
    /// carried to it); if discarded, `None`, and its weight is carried.
    pub fn closed(&mut self, kept: bool, length_ms: f64, weight: u32) -> Option<u32> {
        let weight = weight.max(1);
        let Some(carried) = self.carried.get_mut(class_of(length_ms)) else {
            return kept.then_some(weight);
        };
        if kept {
            return Some(weight.saturating_add(std::mem::take(carried).weight));
        }
        if carried.weight < weight.saturating_mul(MAX_STANDS_FOR - 1) {
            carried.weight = carried.weight.saturating_add(weight);
            carried.ms += f64::from(weight) * known_length_ms(length_ms);
        }
        None
    }

    /// Weight carried and not yet set on a kept slot.
    pub fn pending(&self) -> u64 {
        self.carried.iter().map(|c| u64::from(c.weight)).sum()
    }

    /// The time carried and not yet stood for, in seconds: what the counts
    /// miss until it is (a key's rate times it, on average).
    pub fn pending_seconds(&self) -> f64 {
        self.carried.iter().map(|c| c.ms).sum::<f64>() / 1000.0
    }
}

/// A slot's length, or a usual one's if unknown.
fn known_length_ms(length_ms: f64) -> f64 {
    if length_ms.is_finite() && length_ms > 0.0 {
        length_ms
    } else {
        USUAL_SLOT_MS
    }
}

/// The length class of a slot of `length_ms` (an unknown length, 0 or not
/// finite, takes the first).
fn class_of(length_ms: f64) -> usize {
    if !(length_ms.is_finite() && length_ms > FIRST_CLASS_MS) {
        return 0;
    }
    let class = (length_ms / FIRST_CLASS_MS).ln() / CLASS_RATIO.ln();
    (class as usize).min(CLASSES - 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sampling::coverage::uniform;
    use proptest::prelude::*;

    /// Runs `slots` slots of random length (5-15 ms, as the tracker draws
    /// them) through the carry; `discard(length, rng)` says whether one is
    /// discarded, `accesses(length, rng)` what a key had in it. Returns the
    /// weighted count over the truth.
    fn counted_over_truth(
        slots: usize,
        seed: u64,
        discard: impl Fn(f64, &mut u64) -> bool,
        accesses: impl Fn(f64, &mut u64) -> f64,
    ) -> f64 {
        let mut kept = KeptTimeSlots::default();
        let mut rng = seed | 1;
        let (mut counted, mut truth) = (0.0, 0.0);
        for _ in 0..slots {
            let length = 5.0 + 10.0 * uniform(&mut rng);
            let n = accesses(length, &mut rng);
            truth += n;
            let gone = discard(length, &mut rng);
            if let Some(w) = kept.closed(!gone, length, 1) {
                counted += n * f64::from(w);
            }
        }
        counted / truth
    }

    #[test]
    fn kept_slots_stand_for_slots_discarded_at_random() {
        let ratio = counted_over_truth(
            200_000,
            7,
            |_, rng| uniform(rng) < 0.3,
            |length, _| 10.0 * length,
        );
        assert!((ratio - 1.0).abs() < 0.01, "{ratio}");
    }

    #[test]
    fn longer_slots_likelier_discarded_still_stand_right_for_steady_and_bursty_keys() {
        // A client refused every 20 ms lands in a slot with a chance of its
        // length over 20 ms. A steady key puts accesses in proportion to
        // length; a bursty one sends 200 in one slot in ten, whatever its
        // length.
        let refused_every_20_ms = |length: f64, rng: &mut u64| uniform(rng) < length / 20.0;
        let steady = counted_over_truth(400_000, 3, refused_every_20_ms, |l, _| 10.0 * l);
        assert!((steady - 1.0).abs() < 0.01, "steady {steady}");
        let bursty = counted_over_truth(400_000, 5, refused_every_20_ms, |_, rng| {
            if uniform(rng) < 0.1 {
                200.0
            } else {
                0.0
            }
        });
        assert!((bursty - 1.0).abs() < 0.03, "bursty {bursty}");
    }

    #[test]
    fn from_the_first_slots_on_counts_are_not_held_down() {
        // Half the slots discarded from the start: a hundred slots in, the
        // count is short by what is still carried, no more (the estimate
        // of a share began at "all kept" and read 0.5-0.6 here).
        let mut ratios = Vec::new();
        for seed in 0..400 {
            ratios.push(counted_over_truth(
                100,
                seed * 2 + 1,
                |_, rng| uniform(rng) < 0.5,
                |l, _| 10.0 * l,
            ));
        }
        let mean = ratios.iter().sum::<f64>() / ratios.len() as f64;
        // Five classes hold 5-15 ms, each carrying one slot on average.
        assert!(mean > 0.9 && mean < 1.02, "{mean}");
    }

    #[test]
    fn nothing_discarded_leaves_weights_as_they_were_and_a_kept_slot_stands_for_at_most_sixteen() {
        let mut kept = KeptTimeSlots::default();
        for i in 0..100 {
            assert_eq!(kept.closed(true, 5.0 + f64::from(i % 11), 4), Some(4));
        }
        assert_eq!(kept.pending(), 0);
        for _ in 0..1_000 {
            assert_eq!(kept.closed(false, 10.0, 2), None);
        }
        assert!((kept.pending_seconds() - 2.0 * 15.0 * 0.010).abs() < 1e-9);
        assert_eq!(kept.closed(true, 10.0, 2), Some(2 * MAX_STANDS_FOR));
        assert_eq!(kept.pending_seconds(), 0.0);
        // Another length's weight is not carried here.
        kept.closed(false, 5.0, 2);
        assert_eq!(kept.closed(true, 10.0, 2), Some(2));
        assert_eq!(kept.pending(), 2);
        assert!((kept.pending_seconds() - 0.010).abs() < 1e-9);
    }

    #[test]
    fn lengths_fall_in_classes_of_a_quarter() {
        assert_eq!(class_of(0.0), 0);
        assert_eq!(class_of(f64::NAN), 0);
        assert_eq!(class_of(f64::INFINITY), 0);
        assert_eq!(class_of(1e9), CLASSES - 1);
        assert_eq!(class_of(10.0), class_of(11.0));
        assert_ne!(class_of(10.0), class_of(12.6));
    }

    proptest! {
        /// Weight is neither made nor lost: what kept slots stand for, plus
        /// what is still carried, is every slot's own, unless more than the
        /// cap was discarded (then less).
        #[test]
        fn weight_is_conserved(
            slots in proptest::collection::vec(
                (proptest::bool::weighted(0.8), 0.0f64..60.0, 1u32..5),
                0..40,
            )
        ) {
            let mut kept = KeptTimeSlots::default();
            let (mut stood_for, mut total, mut discarded) = (0u64, 0u64, 0u64);
            for &(keep, length, weight) in &slots {
                total += u64::from(weight);
                match kept.closed(keep, length, weight) {
                    Some(w) => stood_for += u64::from(w),
                    None => discarded += u64::from(weight),
                }
            }
            prop_assert!(stood_for + kept.pending() <= total);
            if discarded < u64::from(MAX_STANDS_FOR) {
                prop_assert_eq!(stood_for + kept.pending(), total);
            }
        }
    }
}
