//! The coins that keep one access in `n` within counted time
//! ([`crate::sampling::access_thinning`] says which `n`).

/// The coins that keep one access in `n`: each access by a coin of its own
/// (xorshift bits), so that whether one is kept says nothing of the next.
/// (A gap drawn to the next kept access would spare the coin of each access
/// not kept, but its logarithm cost more than the coins it spared: measured
/// at ~31 instructions per command at 1 in 16, against ~15.)
#[derive(Clone, Debug)]
pub struct AccessCoins {
    /// xorshift state (never 0).
    rng: u64,
}

impl Default for AccessCoins {
    /// Fixed coins (seed them with [`AccessCoins::new`] where runs must
    /// differ).
    fn default() -> Self {
        Self::new(0x9e37_79b9_7f4a_7c15)
    }
}

impl AccessCoins {
    pub fn new(seed: u64) -> Self {
        Self { rng: seed | 1 }
    }

    /// Keep this access, one in `keep_one_in` (a power of two)?
    #[inline(always)]
    pub fn keep(&mut self, keep_one_in: u32) -> bool {
        if keep_one_in <= 1 {
            return true;
        }
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        (self.rng >> 40) & u64::from(keep_one_in - 1) == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coins_keep_one_in_n() {
        let mut coins = AccessCoins::new(0x1234_5678_9abc_def1);
        // A new `n` takes effect at once, up or down.
        for n in [2u32, 4, 16, 2] {
            let kept = (0..160_000).filter(|_| coins.keep(n)).count();
            let expected = 160_000.0 / f64::from(n);
            // Five standard deviations of a binomial count.
            let sd = (expected * (1.0 - 1.0 / f64::from(n))).sqrt();
            assert!((kept as f64 - expected).abs() < 5.0 * sd, "{n}: {kept}");
        }
        assert!((0..100).all(|_| coins.keep(1)));
    }

    #[test]
    fn each_access_is_kept_on_its_own() {
        // Independent coins: a kept access says nothing of the next (its
        // chance stays 1/n), and no position in a cycle is favoured.
        let mut coins = AccessCoins::new(7);
        let n = 4;
        let kept: Vec<bool> = (0..400_000).map(|_| coins.keep(n)).collect();
        let after_kept = kept.windows(2).filter(|w| w[0]).count();
        let both = kept.windows(2).filter(|w| w[0] && w[1]).count();
        let p = both as f64 / after_kept as f64;
        assert!((p - 0.25).abs() < 0.01, "{p}");
        for phase in 0..4 {
            let share = kept.iter().skip(phase).step_by(4).filter(|&&k| k).count() as f64
                / (kept.len() / 4) as f64;
            assert!((share - 0.25).abs() < 0.01, "phase {phase}: {share}");
        }
    }
}
