//! Sampled slot rates, shrunk toward their primary's mean before the
//! planner picks among them (the winner's curse, with one reading).
//!
//! A tracker that counts a share of the time reads each slot's rate with
//! noise. The planner moves the slots measured hottest; where the slots are
//! really alike those are the ones whose noise ran high, and a move then
//! carries less than planned: counting 9% of a saturated node's time, a plan
//! to shed 0.20 of a cluster's reads shed 0.13 in truth. With slot
//! statistics the window is split instead (`SlotLoad::earlier`); the
//! tracker's rates come with their 95% bounds, which say how noisy each one
//! is, so one reading is enough.
//!
//! For each primary and rate (reads, writes) apart, the normal model of
//! empirical Bayes: a slot's measured rate `x` is its true rate plus noise
//! of variance `σ²` (from its bounds: their width over 2 × 1.96), and the
//! true rates of the primary's measured slots spread around their mean `m`
//! with a variance `τ²` (what the rates' spread has beyond the noise). The
//! best estimate of the slot's true rate, once it is picked for being high,
//! is `m + τ² / (τ² + σ²) · (x − m)`: all of `x` when it is exact, `m` when
//! the slots differ by no more than their noise. The primary's total is
//! kept as measured (the shrunk rates are scaled to it): shrinking moves
//! rate between slots, it does not invent or lose any.

use crate::load::{Bounds, Input, NodeSlots};

/// Fewer measured slots than this say nothing of their spread.
const FEWEST_SLOTS: usize = 3;
/// A 95% interval's width in standard deviations.
const WIDTH_IN_SIGMAS: f64 = 2.0 * 1.96;

/// The input with every sampled rate shrunk (exact rates are left alone).
pub fn shrink(input: &Input) -> Input {
    let mut out = input.clone();
    for node in &mut out.nodes {
        shrink_node(node);
    }
    out
}

fn shrink_node(node: &mut NodeSlots) {
    let reads: Vec<(f64, f64)> = (node.slots.iter())
        .map(|s| (s.reads_per_second, sigma(s.bounds.map(|b| b.reads))))
        .collect();
    let writes: Vec<(f64, f64)> = (node.slots.iter())
        .map(|s| (s.writes_per_second, sigma(s.bounds.map(|b| b.writes))))
        .collect();
    let (reads, writes) = (shrunk(&reads), shrunk(&writes));
    for ((slot, r), w) in node.slots.iter_mut().zip(reads).zip(writes) {
        slot.reads_per_second = r;
        slot.writes_per_second = w;
    }
}

/// The standard deviation a 95% interval stands for (0: exact or unknown).
fn sigma(bounds: Option<Bounds>) -> f64 {
    bounds.map_or(0.0, |b| ((b.high - b.low) / WIDTH_IN_SIGMAS).max(0.0))
}

/// Each `(rate, σ)` shrunk toward the rates' mean, their sum kept.
fn shrunk(rates: &[(f64, f64)]) -> Vec<f64> {
    let unchanged = || rates.iter().map(|r| r.0).collect();
    let n = rates.len();
    if n < FEWEST_SLOTS || rates.iter().all(|r| r.1 == 0.0) {
        return unchanged();
    }
    let count = n as f64;
    let sum: f64 = rates.iter().map(|r| r.0).sum();
    let mean = sum / count;
    let spread = rates.iter().map(|r| (r.0 - mean).powi(2)).sum::<f64>() / count;
    let noise = rates.iter().map(|r| r.1 * r.1).sum::<f64>() / count;
    let tau2 = (spread - noise).max(0.0);
    let mut out: Vec<f64> = (rates.iter())
        .map(|&(x, s)| {
            let keep = if tau2 + s * s > 0.0 {
                tau2 / (tau2 + s * s)
            } else {
                1.0
            };
            mean + keep * (x - mean)
        })
        .collect();
    let shrunk_sum: f64 = out.iter().sum();
    if shrunk_sum > 0.0 && sum.is_finite() {
        let scale = sum / shrunk_sum;
        out.iter_mut().for_each(|x| *x *= scale);
    }
    if out.iter().all(|x| x.is_finite()) {
        out
    } else {
        unchanged()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::{LoadBounds, SlotLoad};

    fn slot(slot: u16, reads: f64, half_width: f64) -> SlotLoad {
        SlotLoad {
            slot,
            reads_per_second: reads,
            bounds: Some(LoadBounds {
                reads: Bounds {
                    low: (reads - half_width).max(0.0),
                    high: reads + half_width,
                },
                writes: Bounds::default(),
            }),
            ..SlotLoad::default()
        }
    }

    fn reads_of(input: &Input) -> Vec<f64> {
        input.nodes[0]
            .slots
            .iter()
            .map(|s| s.reads_per_second)
            .collect()
    }

    fn one_node(slots: Vec<SlotLoad>) -> Input {
        Input {
            nodes: vec![NodeSlots {
                node: "a".into(),
                slots,
                measured: None,
            }],
            hot_keys: Vec::new(),
        }
    }

    #[test]
    fn slots_alike_within_their_noise_are_all_taken_at_the_mean() {
        let input = one_node(vec![
            slot(1, 8.0, 20.0),
            slot(2, 12.0, 20.0),
            slot(3, 10.0, 20.0),
        ]);
        for r in reads_of(&shrink(&input)) {
            assert!((r - 10.0).abs() < 1e-9, "{r}");
        }
    }

    #[test]
    fn exact_rates_and_lone_slots_are_left_as_measured() {
        let exact = one_node(vec![
            slot(1, 8.0, 0.0),
            slot(2, 12.0, 0.0),
            slot(3, 1.0, 0.0),
        ]);
        assert_eq!(shrink(&exact), exact);
        let two = one_node(vec![slot(1, 8.0, 5.0), slot(2, 12.0, 5.0)]);
        assert_eq!(shrink(&two), two);
    }

    #[test]
    fn a_slot_hot_beyond_its_noise_stays_the_hottest_and_the_total_holds() {
        let mut slots: Vec<SlotLoad> = (0..20)
            .map(|i| slot(i, 10.0 + f64::from(i % 3), 4.0))
            .collect();
        slots.push(slot(99, 400.0, 40.0));
        let input = one_node(slots);
        let out = reads_of(&shrink(&input));
        let before: f64 = reads_of(&input).iter().sum();
        assert!((out.iter().sum::<f64>() - before).abs() < 1e-6);
        let hot = out[20];
        assert!(hot > 350.0, "{hot}");
        assert!(out[..20].iter().all(|&r| r < hot / 10.0), "{out:?}");
    }

    #[test]
    fn picking_the_highest_shrunk_rates_carries_what_they_are_accounted_at() {
        // 300 slots of one true rate, read with Poisson noise: the top
        // third raw reads ~30% over the truth, shrunk within a few percent.
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let mut uniform = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            (rng >> 11) as f64 / (1u64 << 53) as f64
        };
        let (truth, weight) = (16.0, 4.0);
        let slots: Vec<SlotLoad> = (0..300)
            .map(|i| {
                // A Poisson count of mean truth/weight, by inversion.
                let (mean, mut k, mut p, u): (f64, f64, f64, f64) =
                    (truth / weight, 0.0, 0.0, uniform());
                let mut term = (-mean).exp();
                while p + term < u {
                    p += term;
                    k += 1.0;
                    term *= mean / k;
                }
                let rate = k * weight;
                slot(i, rate, 1.96 * weight * k.max(1.0).sqrt())
            })
            .collect();
        let input = one_node(slots);
        let top = |reads: Vec<f64>| {
            let mut sorted = reads.clone();
            sorted.sort_by(|a, b| b.total_cmp(a));
            sorted[..100].iter().sum::<f64>() / 100.0
        };
        let raw = top(reads_of(&input));
        let shrunk = top(reads_of(&shrink(&input)));
        assert!(raw > truth * 1.2, "raw {raw}");
        assert!((shrunk - truth).abs() < truth * 0.1, "shrunk {shrunk}");
    }
}
