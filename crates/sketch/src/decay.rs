//! HeavyKeeper's exponential-weakening decay: the chance `b^-C` that a
//! colliding arrival knocks one unit off a bucket holding count `C`.
//!
//! `exp`, `ln` and `ln_1p` come from `libm`: a coin's outcome enters the
//! stored state, and the platform's C library picks CPU-specific variants
//! that may differ in the last bit between a primary and its replica.

use rand::Rng;

/// Beyond this exponent `b^-C` is below 2^-53: no 53-bit uniform draw can hit
/// it, so we answer 0 without spending a draw.
const NEGLIGIBLE_EXPONENT: f64 = 37.0;
/// Integer counts are answered from two small tables, `b^-C = low[C % STEP] *
/// high[C / STEP]`: at most ~800 bytes instead of one entry per count, and no
/// `exp` on the hot path. Fractional (faded) counts, and whole ones past the
/// table, use `exp`.
const STEP: usize = 32;
/// Entries of the `high` table: counts up to `STEP * HIGH_ENTRIES` (2,048).
/// A decay close to 1 reaches far (0.995: 7,400 levels, 232 entries, 1.9 KB
/// in every sketch); a bucket past 2,048 that is the smallest of an
/// arrival's buckets is rare, so `exp` there costs nothing that matters.
const HIGH_ENTRIES: usize = 64;

/// The decay probability as a function of a bucket's current count.
#[derive(Clone, Debug)]
pub struct DecayCurve {
    /// Counts above this have a negligible decay probability: a bucket can
    /// lose at most this many levels to one weighted arrival (plus one).
    reach: usize,
    /// `ln b`, where `b = 1 / decay` (RedisBloom's convention for `decay`).
    ln_base: f64,
    /// `b^-c` for `c` in `0..STEP`.
    low: Box<[f64]>,
    /// `b^-(STEP * j)` up to the negligible exponent.
    high: Box<[f64]>,
}

impl DecayCurve {
    /// `decay` is the probability base `1/b`, in `(0, 1]`.
    pub fn new(decay: f64) -> Self {
        let ln_base = -libm::log(decay);
        let p = |c: f64| libm::exp(-c * ln_base);
        let reach = if ln_base > 0.0 {
            (NEGLIGIBLE_EXPONENT / ln_base).ceil().min(1e6) as usize
        } else {
            0
        };
        Self {
            reach,
            ln_base,
            low: (0..STEP).map(|c| p(c as f64)).collect(),
            high: (0..=(reach / STEP + 1).min(HIGH_ENTRIES - 1))
                .map(|j| p((j * STEP) as f64))
                .collect(),
        }
    }

    /// `b^-count`; 1 for an empty or nearly empty bucket.
    #[inline]
    pub fn decay_probability(&self, count: f64) -> f64 {
        if count <= 0.0 {
            return 1.0;
        }
        let exponent = count * self.ln_base;
        if exponent > NEGLIGIBLE_EXPONENT {
            return 0.0;
        }
        let whole = count as usize;
        if whole as f64 == count {
            if let (Some(lo), Some(hi)) = (self.low.get(whole % STEP), self.high.get(whole / STEP))
            {
                return lo * hi;
            }
        }
        libm::exp(-exponent)
    }

    /// Most levels one weighted arrival can take off a bucket: every decay
    /// lowers the count by one, and above `reach` no coin can succeed.
    pub fn max_decays(&self) -> usize {
        self.reach + 1
    }

    pub fn table_bytes(&self) -> usize {
        (self.low.len() + self.high.len()) * std::mem::size_of::<f64>()
    }

    /// One Bernoulli trial with success probability `p` (a draw in [0, 1)
    /// is below any `p >= 1`; `p == 0` spends no draw).
    #[inline]
    pub fn coin<R: Rng>(p: f64, rng: &mut R) -> bool {
        p > 0.0 && rng.random::<f64>() < p
    }

    /// Number of arrivals up to and including the first successful decay,
    /// Geometric(p) on {1, 2, ...}, drawn by inversion with one uniform.
    /// Returns `f64::INFINITY` when `p` is 0.
    pub fn trials_until_decay<R: Rng>(p: f64, rng: &mut R) -> f64 {
        if p >= 1.0 {
            return 1.0;
        }
        if p.is_nan() || p <= 0.0 {
            return f64::INFINITY;
        }
        // 1 - u lies in (0, 1], so its log is finite.
        let u = 1.0 - rng.random::<f64>();
        let trials = (libm::log(u) / libm::log1p(-p)).ceil();
        // Not a number only if p was (it never should be): then never decay.
        if trials.is_nan() {
            f64::INFINITY
        } else {
            trials.max(1.0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    /// `b^-c` as the curve answers it, against `powi`, for every count in `counts`.
    fn assert_follows(curve: &DecayCurve, decay: f64, counts: impl Iterator<Item = i32>) {
        for c in counts {
            let exact = decay.powi(c);
            let p = curve.decay_probability(f64::from(c));
            assert!(
                (p - exact).abs() <= 1e-12 * exact.max(1e-300) || (exact < 2e-16 && p < 2e-16),
                "{c}: {p} vs {exact}"
            );
        }
    }

    #[test]
    fn probability_follows_the_base() {
        let curve = DecayCurve::new(0.9);
        assert_eq!(curve.decay_probability(0.0), 1.0);
        assert!((curve.decay_probability(1.0) - 0.9).abs() < 1e-12);
        assert!((curve.decay_probability(10.0) - 0.9f64.powi(10)).abs() < 1e-12);
        assert!((curve.decay_probability(2.5) - 0.9f64.powf(2.5)).abs() < 1e-12);
        assert_eq!(curve.decay_probability(1e6), 0.0);
        assert_follows(&curve, 0.9, 0..400);
    }

    #[test]
    fn a_decay_close_to_one_keeps_a_small_table_and_the_same_curve() {
        let curve = DecayCurve::new(0.995);
        assert!(curve.table_bytes() <= (STEP + HIGH_ENTRIES) * 8);
        // Past the table the curve goes on (by `exp`), down to the negligible.
        assert_follows(&curve, 0.995, (0..8_000).step_by(7));
        assert!(curve.decay_probability(2_100.0) > 0.0);
    }

    #[test]
    fn geometric_draws_have_the_right_mean() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for p in [0.5, 0.1, 0.01] {
            let n = 20_000;
            let sum: f64 = (0..n)
                .map(|_| DecayCurve::trials_until_decay(p, &mut rng))
                .sum();
            let mean = sum / n as f64;
            let expected = 1.0 / p;
            assert!(
                (mean - expected).abs() < 0.05 * expected,
                "p={p}: mean {mean}, expected {expected}"
            );
        }
    }
}
