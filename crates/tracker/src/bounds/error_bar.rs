//! Each estimate's error bar: a 95% interval for what was truly there, from
//! what the sample itself holds.
//!
//! Two errors add up in a tracked count:
//! - **Sampling**: only some slots of time were counted, and thinned keys
//!   only some of their horizons. The estimate is unbiased and its variance
//!   is estimated from the sample as it is gathered (each counted slot's
//!   share squared, each thinned key's own term). The interval treats the
//!   estimate as a Poisson count of `n = estimate² / variance` equal
//!   parts (its effective sample size) and takes Byar's approximation of the
//!   exact Poisson interval: right-skewed as a sum of few large weights is,
//!   and conservative for small `n` (a key seen in one counted slot gets a
//!   wide bar, not a narrow normal one). Every access counted, the variance
//!   is 0 and the interval is the estimate itself. Where part of a count was
//!   counted access by access (every command counted for a while, time
//!   sampled for the rest), only the sampled part is taken as the Poisson
//!   count, and the exact part is added to both ends: taken whole, the exact
//!   part made `n` large and the parts small, and the bar narrow and
//!   symmetric. A bursty key seen in one or two counted slots of a short
//!   sampled spell read 5.3% under its truth with a bar of ±1.1% (CI, the
//!   debug build, half its slots counted for a few seconds of the reading);
//!   on its sampled part alone the upper end is as far as a burst or two
//!   missed puts it. What no bar can show is a spell in which none of a
//!   key's bursts fell in a counted slot: nothing of it was seen to vary.
//!   The budget keeps such spells rare and long (`crate::budget::cost_budget`).
//! - **HeavyKeeper's own undercount**: a count never overestimates, but a
//!   key may have lost arrivals to decay while it fought for its bucket. The
//!   journal version's Theorem 3 (Minimum insert) comes from the expected
//!   number of decays a key's bucket suffers from the arrivals that share
//!   it: at most `μ = N / (w n (b − 1))` for a stream of `N` arrivals, width
//!   `w`, decay base `b` and a key counted `n` (each level `L` the key
//!   climbs is decayed with probability `b^-L` per colliding arrival, and
//!   about `N / (w n)` colliding arrivals come while it sits at a level).
//!   The theorem turns that mean into `P(n − n̂ > εN) ≤ 1 / (ε w n (b − 1))`
//!   by Markov's inequality, 20 times `μ` at 95%; decays are rare
//!   independent events, so the bound here is the 95% quantile of a Poisson
//!   count of mean `μ` instead (0 for a key so hot that a decay is unlikely,
//!   about `μ + 1.645 √μ` otherwise). The decay plays on the sample, so `μ`
//!   is in the sample's units, and the stream's are that times what one
//!   access stands for. Before it holds a bucket, a key also spends
//!   arrivals decaying one held by another: the theorem assumes a key holds
//!   its bucket once in; here the cost of taking the cheapest of its buckets
//!   held by others now ([`heavykeeper_sketch::HeavyKeeper::claim_cost`],
//!   a sum of geometric waits) is added at its 95% level, the stand-in for
//!   what it paid when it took its own. Both raise the upper end only; they
//!   are small for hot keys and large near the tail, as they should be.
//!   `make test` checks on real HeavyKeeper sketches that they hold the
//!   truth (`crates/tracker/tests/unbiased.rs`).

/// The normal quantile of a two-sided 95% interval.
pub const Z_95: f64 = 1.959_963_984_540_054;

/// A 95% interval, in the units of the estimate.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Bounds {
    pub low: f64,
    pub high: f64,
}

impl Bounds {
    /// Both ends times `factor` (a count's bounds into a rate's).
    pub fn scaled(self, factor: f64) -> Self {
        Self {
            low: self.low * factor,
            high: self.high * factor,
        }
    }
}

/// The interval for an unbiased `estimate` of which `sampled` was sampled
/// with estimated `variance` (the rest counted access by access), whose
/// upper end also allows for `undercount` missed.
pub fn bounds(estimate: f64, sampled: f64, variance: f64, undercount: f64) -> Bounds {
    let (exact, sampled) = split(estimate, sampled);
    let part = sampled_bounds(sampled, variance, undercount);
    Bounds {
        low: exact + part.low,
        high: exact + part.high,
    }
}

/// A count's exact and sampled parts, `sampled` of it sampled (NaN: all of
/// it; never more than the count).
pub(crate) fn split(count: f64, sampled: f64) -> (f64, f64) {
    let count = count.max(0.0);
    let sampled = if sampled.is_nan() {
        count
    } else {
        sampled.clamp(0.0, count)
    };
    (count - sampled, sampled)
}

/// [`bounds`] of the sampled part alone.
fn sampled_bounds(estimate: f64, variance: f64, undercount: f64) -> Bounds {
    let undercount = undercount.max(0.0);
    if !positive(variance) || !variance.is_finite() {
        return Bounds {
            low: estimate,
            high: estimate + undercount,
        };
    }
    if estimate <= 0.0 {
        return Bounds {
            low: 0.0,
            high: Z_95 * variance.sqrt() + undercount,
        };
    }
    // Effective count and what each of its parts weighs.
    let n = estimate * estimate / variance;
    let part = variance / estimate;
    let low = n
        * (1.0 - 1.0 / (9.0 * n) - Z_95 / (3.0 * n.sqrt()))
            .max(0.0)
            .powi(3);
    let m = n + 1.0;
    let high = m * (1.0 - 1.0 / (9.0 * m) + Z_95 / (3.0 * m.sqrt())).powi(3);
    Bounds {
        low: (low * part).min(estimate),
        high: (high * part).max(estimate) + undercount,
    }
}

/// HeavyKeeper's undercount of a key counted `count`, at 95%: from a
/// stream of `stream` arrivals through `width` buckets a row with decay
/// base `b`, each access seen standing for `scale`, and what taking a
/// bucket costs (`claim`: the mean and variance of the arrivals it takes,
/// in the stream's units; see the module's text). At most the whole stream.
pub fn undercount(
    count: f64,
    stream: f64,
    width: u32,
    b: f64,
    scale: f64,
    claim: (f64, f64),
) -> f64 {
    if !positive(count) || !positive(stream) || !positive(b - 1.0) || width == 0 {
        return 0.0;
    }
    let scale = scale.max(1.0);
    // In the sample's units (N / s and n / s): the scale cancels out.
    let decays = stream / (f64::from(width) * count * (b - 1.0));
    let (claim_mean, claim_variance) = claim;
    let claiming = if claim_mean > 0.0 {
        claim_mean + Z_90 * claim_variance.max(0.0).sqrt()
    } else {
        0.0
    };
    (poisson_quantile_95(decays) * scale + claiming).min(stream)
}

/// The normal quantile of a one-sided 95% bound.
const Z_90: f64 = 1.644_853_626_951_472;

/// The smallest `k` with `P(X ≤ k) ≥ 0.95` for `X ~ Poisson(mean)`
/// (summed exactly up to a mean of 100, by the normal approximation with
/// its skew term past that).
fn poisson_quantile_95(mean: f64) -> f64 {
    if !positive(mean) {
        return 0.0;
    }
    if mean > 100.0 {
        return (mean + Z_90 * mean.sqrt() + (Z_90 * Z_90 - 1.0) / 6.0).ceil();
    }
    let (mut k, mut term) = (0.0, (-mean).exp());
    let mut cdf = term;
    while cdf < 0.95 && k < 1_000.0 {
        k += 1.0;
        term *= mean / k;
        cdf += term;
    }
    k
}

/// Greater than 0 (and not NaN): what a count, a variance or a rate must be
/// to be divided by.
pub(crate) fn positive(x: f64) -> bool {
    x > 0.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_sample_is_near_the_normal_interval_and_a_small_one_skewed_like_the_exact_poisson() {
        // 10,000 parts of 1: ±1.96 %.
        let b = bounds(10_000.0, 10_000.0, 10_000.0, 0.0);
        assert!((b.low - (10_000.0 - 196.0)).abs() < 3.0, "{b:?}");
        assert!((b.high - (10_000.0 + 196.0)).abs() < 3.0, "{b:?}");
        // One part of 10 seen: the exact 95% interval of a Poisson count of
        // 1 is [0.025, 5.57]; Byar's upper end is within 0.1 %.
        let b = bounds(10.0, 10.0, 100.0, 0.0);
        assert!((b.high / 10.0 - 5.572).abs() < 0.01, "{b:?}");
        assert!(b.low >= 0.0 && b.low < 0.3, "{b:?}");
        // Five parts: [1.62, 11.67] exactly.
        let b = bounds(5.0, 5.0, 5.0, 0.0);
        assert!(
            (b.low - 1.62).abs() < 0.05 && (b.high - 11.67).abs() < 0.05,
            "{b:?}"
        );
    }

    #[test]
    fn every_access_counted_gives_the_estimate_and_a_part_counted_adds_to_the_sampled_parts_bar() {
        let b = bounds(120.0, 120.0, 0.0, 0.0);
        assert_eq!((b.low, b.high), (120.0, 120.0));
        assert_eq!(bounds(120.0, 120.0, 0.0, 5.0).high, 125.0);
        assert_eq!(bounds(120.0, 0.0, 0.0, 5.0).high, 125.0);
        // 18,000 counted exactly, one burst of 450 seen in a slot counted
        // one in 2 (900, variance 405,000): the sampled part is two parts
        // of 450, [0.24, 7.22] of them.
        let b = bounds(18_900.0, 900.0, 405_000.0, 0.0);
        let sampled = bounds(900.0, 900.0, 405_000.0, 0.0);
        assert!((b.low - 18_000.0 - sampled.low).abs() < 1e-6, "{b:?}");
        assert!((b.high - 18_000.0 - sampled.high).abs() < 1e-6, "{b:?}");
        assert!((sampled.high / 450.0 - 7.22).abs() < 0.02, "{sampled:?}");
        // Taken whole it would be ±1.96σ: 1,247 above, less than the 3,600
        // that eight bursts missed of ten put the truth at.
        let whole = bounds(18_900.0, 18_900.0, 405_000.0, 0.0);
        assert!(whole.high - 18_900.0 < 1_300.0, "{whole:?}");
        assert!(b.high - 18_900.0 > 2_300.0, "{b:?}");
        // A sampled part past the estimate (the sketch undercounts) is the
        // whole estimate; an unknown one too.
        assert_eq!(
            bounds(100.0, 300.0, 400.0, 0.0),
            bounds(100.0, 100.0, 400.0, 0.0)
        );
        assert_eq!(
            bounds(100.0, f64::NAN, 400.0, 0.0),
            bounds(100.0, 100.0, 400.0, 0.0)
        );
    }

    #[test]
    fn the_undercount_is_none_for_hot_keys_and_grows_toward_the_tail() {
        // 300,000 arrivals, width 750, b = 1/0.9: a key counted 30,000
        // expects 0.12 decays (1 at 95%), one counted 3,000,000 none; one
        // counted 300 expects 12.
        let b = 1.0 / 0.9;
        // Every access seen, no bucket to take first.
        let plain = |count, stream, width, b| undercount(count, stream, width, b, 1.0, (0.0, 0.0));
        assert_eq!(plain(30_000.0, 300_000.0, 750, b), 1.0);
        assert_eq!(plain(3_000_000.0, 300_000.0, 750, b), 0.0);
        let tail = plain(300.0, 300_000.0, 750, b);
        assert!((17.0..=20.0).contains(&tail), "{tail}");
        assert_eq!(plain(1.0, 10.0, 1, 1.01), 10.0);
        assert_eq!(plain(0.0, 10.0, 750, 1.1), 0.0);
        // Sampled 1 in 8: the same bound in the sample's units, times 8.
        let sampled = undercount(300.0, 300_000.0, 750, b, 8.0, (0.0, 0.0));
        assert!((sampled / tail - 8.0).abs() < 1e-9);
        // A bucket to take first: its cost at 95% on top.
        let claiming = undercount(300.0, 300_000.0, 750, b, 1.0, (15.0, 25.0));
        assert!((claiming - tail - (15.0 + 5.0 * Z_90)).abs() < 1e-9);
    }

    #[test]
    fn poisson_quantiles_are_exact() {
        // Known 95% quantiles: Poisson(1) 3, Poisson(10) 15, Poisson(0.05) 0.
        assert_eq!(poisson_quantile_95(1.0), 3.0);
        assert_eq!(poisson_quantile_95(10.0), 15.0);
        assert_eq!(poisson_quantile_95(0.05), 0.0);
        let big = poisson_quantile_95(400.0);
        assert!((432.0..=435.0).contains(&big), "{big}");
    }
}
