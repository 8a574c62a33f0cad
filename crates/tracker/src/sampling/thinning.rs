//! Thinning coalesced keys without bias when their inserts cost more than
//! the worker may spend (threshold sampling, Duffield, Lund and Thorup): a
//! key whose accesses over a horizon weigh `w`, below the threshold `τ`, is
//! inserted with probability `w / τ` and then weighs `τ`; a key at or above
//! `τ` is inserted as it is. Every expected weight is exactly `w`, so every
//! count stays unbiased, and the keys that matter are never thinned at all:
//! `τ` is chosen so that the inserts fit the budget, and a key with more
//! than a budget's share of the horizon's accesses weighs more than `τ`.
//!
//! Thinning keys, not accesses: each access thinned on its own would stand
//! for `τ` at random, and a key seen once could then outweigh one seen a
//! hundred times (a phantom row). Once coalesced, the tail that is thinned
//! is the tail that weighs little.

/// Picks which keys to insert, at random, from a seed.
#[derive(Clone, Debug)]
pub struct Thinning {
    rng: u64,
}

/// What one key's inserts weigh after thinning, and their variance.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Kept {
    pub weight: u64,
    pub variance: f64,
}

/// The threshold at which keys of these `weights` give `budget` inserts
/// on average (`None` when all of them fit: nothing is thinned).
pub fn threshold(weights: impl Iterator<Item = u64> + Clone, budget: usize) -> Option<u64> {
    let budget = budget.max(1);
    let (count, total) = weights
        .clone()
        .fold((0usize, 0f64), |(n, s), w| (n + 1, s + w as f64));
    if count <= budget {
        return None;
    }
    // Σ min(1, w / τ) = budget, by fixed-point iteration from above: at
    // τ = total / budget the sum is at most the budget; each step sets τ to
    // what the keys below it would need, and it falls monotonically to the
    // fixed point in a few steps.
    let mut tau = total / budget as f64;
    for _ in 0..32 {
        let (above, below) = weights.clone().fold((0usize, 0f64), |(a, b), w| {
            if w as f64 >= tau {
                (a + 1, b)
            } else {
                (a, b + w as f64)
            }
        });
        let room = budget.saturating_sub(above);
        if room == 0 || below == 0.0 {
            break;
        }
        let next = below / room as f64;
        if next >= tau * (1.0 - 1e-9) {
            break;
        }
        tau = next;
    }
    Some(tau.ceil().max(1.0) as u64)
}

impl Thinning {
    pub fn new(seed: u64) -> Self {
        Self { rng: seed | 1 }
    }

    /// Whether to insert a key weighing `weight` with `variance` at
    /// `threshold`, and what it then weighs. Kept below the threshold, its
    /// variance is estimated without bias too: the slots' part over the
    /// chance of keeping it, plus the thinning's own, `τ (τ − w)`.
    pub fn keep(&mut self, weight: u64, variance: f64, threshold: Option<u64>) -> Option<Kept> {
        let tau = match threshold {
            Some(tau) if weight < tau => tau,
            _ => return Some(Kept { weight, variance }),
        };
        let p = weight as f64 / tau as f64;
        (uniform(&mut self.rng) <= p).then(|| Kept {
            weight: tau,
            variance: variance / p + tau as f64 * (tau - weight) as f64,
        })
    }
}

/// A uniform draw in (0, 1]: [`crate::sampling::coverage`]'s, moved up by
/// its step (exact: both are multiples of 2^-53).
fn uniform(state: &mut u64) -> f64 {
    crate::sampling::coverage::uniform(state) + 1.0 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_threshold_gives_the_budget_and_spares_heavy_keys() {
        // 1,000 keys of weight 1 and 10 of weight 1,000: a budget of 110
        // keeps the heavy ones whole and one light key in ten.
        let weights = [vec![1u64; 1_000], vec![1_000; 10]].concat();
        let tau = threshold(weights.iter().copied(), 110).unwrap();
        assert_eq!(tau, 10);
        let expected: f64 = weights
            .iter()
            .map(|&w| (w as f64 / tau as f64).min(1.0))
            .sum();
        assert!((expected - 110.0).abs() < 1.0, "{expected}");
        assert_eq!(threshold(weights.iter().copied(), 2_000), None);
    }

    #[test]
    fn kept_keys_carry_the_weight_of_all_and_an_honest_variance() {
        let mut t = Thinning::new(5);
        let (weight, tau, runs) = (3u64, 16u64, 400_000);
        let (mut total, mut variance) = (0f64, 0f64);
        for _ in 0..runs {
            if let Some(k) = t.keep(weight, 0.0, Some(tau)) {
                total += k.weight as f64;
                variance += k.variance;
            }
        }
        let truth = (weight * runs) as f64;
        assert!((total / truth - 1.0).abs() < 0.02, "{total} vs {truth}");
        // The true variance of one key's estimate: w (τ − w).
        let per_key = variance / runs as f64;
        let exact = (weight * (tau - weight)) as f64;
        assert!((per_key / exact - 1.0).abs() < 0.05, "{per_key} vs {exact}");
        let at_threshold = t.keep(16, 2.0, Some(16));
        assert_eq!(
            at_threshold.map(|k| (k.weight, k.variance)),
            Some((16, 2.0))
        );
        assert_eq!(t.keep(1, 0.0, None).map(|k| k.weight), Some(1));
    }
}
