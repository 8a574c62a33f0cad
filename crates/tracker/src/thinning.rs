//! Thinning accesses without bias: an access that stands for `w` accesses,
//! below the threshold `τ`, is kept with probability `w / τ` and then
//! stands for `τ` (threshold sampling). Its expected weight is exactly `w`,
//! so every count stays unbiased; hot keys keep most of their accesses'
//! weight in few inserts, and a long tail of keys seen once costs one
//! insert in `τ / w`.

#[derive(Clone, Debug)]
pub struct Thinning {
    threshold: u64,
    rng: u64,
}

impl Thinning {
    pub fn new(threshold: u64, seed: u64) -> Self {
        Self {
            threshold: threshold.max(1),
            rng: seed | 1,
        }
    }

    /// 1: nothing is thinned.
    pub fn threshold(&self) -> u64 {
        self.threshold
    }

    pub fn set_threshold(&mut self, threshold: u64) {
        self.threshold = threshold.max(1);
    }

    /// Of accesses each standing for `weight`, which to keep: `None` when
    /// all are kept as they are, else the weight each kept one stands for
    /// and the probability of keeping one.
    pub fn plan(&self, weight: u64) -> Option<(u64, f64)> {
        (weight < self.threshold).then(|| (self.threshold, weight as f64 / self.threshold as f64))
    }

    /// How many accesses to pass over before the next kept one, when each
    /// is kept with probability `p` (a geometric draw: the work is per kept
    /// access, not per access).
    pub fn skip(&mut self, p: f64) -> usize {
        if p >= 1.0 {
            return 0;
        }
        let u = uniform(&mut self.rng);
        (u.ln() / (1.0 - p).ln()).floor().clamp(0.0, 1e15) as usize
    }
}

/// A uniform draw in (0, 1] (xorshift64*).
pub(crate) fn uniform(state: &mut u64) -> f64 {
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    ((state.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) + 1) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_accesses_carry_the_weight_of_all() {
        for (weight, threshold) in [(1u64, 16u64), (3, 16), (7, 10), (1, 2)] {
            let mut t = Thinning::new(threshold, 5);
            let (each, p) = t.plan(weight).unwrap();
            let accesses = 400_000usize;
            let (mut i, mut kept) = (t.skip(p), 0u64);
            while i < accesses {
                kept += 1;
                i += 1 + t.skip(p);
            }
            let total = kept * each;
            let truth = accesses as u64 * weight;
            assert!(
                (total as f64 / truth as f64 - 1.0).abs() < 0.02,
                "{weight}/{threshold}: {total} vs {truth}"
            );
        }
        assert_eq!(Thinning::new(16, 1).plan(16), None);
        assert_eq!(Thinning::new(1, 1).plan(1), None);
    }
}
