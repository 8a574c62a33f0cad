//! The rows a list picks out of many: told apart from the background's
//! noise, and bounded as picked.
//!
//! A sampled count is a sum of a few kept accesses, each standing for many.
//! Out of 100,000 keys read a hundred times each, a list of the hottest
//! picks exactly the keys whose accesses happened to be kept most often: a
//! key kept four times where its neighbours were kept once or not at all
//! reads tens of times its truth, and an error bar right for a key named in
//! advance is wrong for it (the winner's curse). Measured beside a
//! saturating load: 18 of 20 rows were such keys, and their bounds held the
//! truth in 10 of 60. Two rules make every listed row as true as a hot
//! key's:
//!
//! - **Told from the background, or not listed.** The stream a list picks
//!   from is known in outline ([`StreamMakeup`]): its sampled mass and how
//!   finely it was sampled, so how many independent kept events `S` it is
//!   made of, each standing for `U` accesses. A key whose truth is at most
//!   a third of a row's estimate (a phantom, as far as the row is read)
//!   needed the row's `x = s / U` events from a mean of
//!   `μ = (estimate / 3 − exact) / U`, which happens with probability
//!   `P(Pois(μ) ≥ x)`; at most `S / μ` keys of the stream can be that hot,
//!   and at most as many as it had keys (`M`). When
//!   `min(M, S / μ) · P(Pois(μ) ≥ x)` passes [`NOISE`], the background could
//!   have made the row by luck: it is not listed (a list may be shorter than
//!   asked). A count made of many kept accesses, a burst's (a few events of
//!   many accesses, each far above `U`) or one counted access by access
//!   (exact, no noise at all) is told apart at once.
//! - **Bounds as picked.** A listed row's lower bound is the least truth for
//!   which the keys that could have it (again `min(M, S / μ)`) would still
//!   put one at the row's count with probability 2.5%: the union over every
//!   key the list could have picked instead, not the chance of one key named
//!   in advance. Where the row's own spread is wider (a burst seen in a few
//!   counted slots), its own bound stands. The upper bound needs no change:
//!   picking favours rows that read high.
//!
//! The background's event `U` is the typical one of the stream (the
//! geometric mean, over its inserts, of each insert's variance over its
//! sampled weight: one kept access in a counted slot, or one key kept by the
//! worker's thinning), so a few hot keys with huge events do not move it.

use crate::error_bar::positive;
use crate::tally::Tally;

/// A row is left out when the background makes one like it by luck with at
/// least this probability.
pub const NOISE: f64 = 0.05;
/// A row is a phantom when it reads more than this many times its truth.
pub const PHANTOM_RATIO: f64 = 3.0;
/// The lower bound's tail: a 95% interval's lower end.
const LOW_TAIL: f64 = 0.025;
/// Past this many events a row's own bound is the background's too (the
/// adjustment is a few tenths of a percent, and the tail's series long).
const MANY_EVENTS: f64 = 20_000.0;

/// The stream a list picks from, in outline: what its noise can do.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Background {
    /// What one kept event of it typically stands for (`U`).
    pub unit: f64,
    /// Its sampled mass, in events (`S`).
    pub events: f64,
    /// How many keys it could have held at most (`M`).
    pub candidates: f64,
}

impl Background {
    /// Can the background not have made this row by luck?
    pub fn tells_apart(&self, tally: &Tally) -> bool {
        let (exact, sampled) = parts(tally);
        let phantom_truth = tally.count / PHANTOM_RATIO - exact;
        if phantom_truth <= 0.0 || sampled <= 0.0 || !self.is_known() {
            return true;
        }
        let mu = phantom_truth / self.unit;
        let x = sampled / self.unit;
        self.chance_one_reaches(mu, x) <= NOISE
    }

    /// The least truth of a row's sampled part `sampled` that the keys the
    /// list could have picked instead leave possible (see the module's
    /// text); `sampled` itself where nothing is known of them.
    pub fn lowest_truth(&self, sampled: f64) -> f64 {
        if sampled <= 0.0 || !self.is_known() {
            return sampled.max(0.0);
        }
        let x = sampled / self.unit;
        if x > MANY_EVENTS {
            return sampled;
        }
        // The chance grows with μ: bisect for where it reaches LOW_TAIL.
        let (mut low, mut high) = (0.0, x);
        if self.chance_one_reaches(high, x) < LOW_TAIL {
            return sampled;
        }
        for _ in 0..60 {
            let mid = 0.5 * (low + high);
            if self.chance_one_reaches(mid, x) < LOW_TAIL {
                low = mid;
            } else {
                high = mid;
            }
            if high - low < 1e-6 * x {
                break;
            }
        }
        low * self.unit
    }

    /// The chance that some key of the stream whose mean is `mu` events
    /// shows `x` or more (a union bound over the keys that can be that hot).
    fn chance_one_reaches(&self, mu: f64, x: f64) -> f64 {
        if mu <= 0.0 {
            return 0.0;
        }
        let keys = (self.events / mu).min(self.candidates).max(1.0);
        (keys * poisson_tail(mu, x)).min(1.0)
    }

    /// The background of a set of counters known one by one (a cluster
    /// node's hash slots), each as its sampled estimate and variance.
    pub fn among(counters: impl Iterator<Item = (f64, f64)>) -> Option<Background> {
        let mut makeup = StreamMakeup::new(f64::MAX, 0);
        for (sampled, variance) in counters {
            makeup.record(sampled, variance, 0);
        }
        makeup.background(0)
    }

    fn is_known(&self) -> bool {
        self.unit.is_finite() && self.unit > 0.0 && self.events.is_finite() && self.events > 0.0
    }
}

/// A tally's exact and sampled parts.
fn parts(tally: &Tally) -> (f64, f64) {
    let count = tally.count.max(0.0);
    let sampled = if tally.sampled.is_nan() {
        count
    } else {
        tally.sampled.clamp(0.0, count)
    };
    (count - sampled, sampled)
}

/// `P(Pois(mu) ≥ x)` for a real `x` (the regularized lower incomplete gamma
/// `P(x, mu)`, which is that for whole `x` and moves smoothly between).
pub fn poisson_tail(mu: f64, x: f64) -> f64 {
    if !positive(x) {
        return 1.0;
    }
    if !positive(mu) || !mu.is_finite() || !x.is_finite() {
        return if mu.is_infinite() && mu > 0.0 {
            1.0
        } else {
            0.0
        };
    }
    statrs::function::gamma::gamma_lr(x, mu).clamp(0.0, 1.0)
}

/// What a sketch's stream is made of, faded as its counts are: its sampled
/// mass, and each insert's event size (variance over sampled weight), for
/// the [`Background`] a list of it picks from.
#[derive(Clone, Debug)]
pub struct StreamMakeup {
    half_life_ms: f64,
    at_ms: i64,
    /// Faded to `at_ms`: the sampled mass, the inserts with a spread, and
    /// the sum of the logarithms of their event sizes.
    sampled: f64,
    inserts: f64,
    log_units: f64,
}

impl StreamMakeup {
    pub fn new(half_life_ms: f64, now_ms: i64) -> Self {
        Self {
            half_life_ms: half_life_ms.max(1.0),
            at_ms: now_ms,
            sampled: 0.0,
            inserts: 0.0,
            log_units: 0.0,
        }
    }

    /// One insert: `sampled` of its weight sampled, with `variance`.
    pub fn record(&mut self, sampled: f64, variance: f64, time_ms: i64) {
        if !positive(sampled) || !positive(variance) || !variance.is_finite() {
            return;
        }
        let factor = self.bring_to(time_ms);
        self.sampled += sampled * factor;
        self.inserts += factor;
        self.log_units += (variance / sampled).ln() * factor;
    }

    /// Moves the sums to `time_ms` if it is later; what an addition at
    /// `time_ms` weighs in them (less than 1 if it is earlier).
    fn bring_to(&mut self, time_ms: i64) -> f64 {
        if time_ms > self.at_ms {
            let fade = self.fade(time_ms - self.at_ms);
            self.sampled *= fade;
            self.inserts *= fade;
            self.log_units *= fade;
            self.at_ms = time_ms;
            1.0
        } else {
            self.fade(self.at_ms - time_ms)
        }
    }

    fn fade(&self, elapsed_ms: i64) -> f64 {
        (-(elapsed_ms as f64) / self.half_life_ms).exp2()
    }

    /// The background now (`None`: nothing sampled yet).
    pub fn background(&self, now_ms: i64) -> Option<Background> {
        self.plus_background(None, now_ms)
    }

    /// The background of this stream and `other` together (a list of reads
    /// and writes).
    pub fn plus_background(&self, other: Option<&StreamMakeup>, now_ms: i64) -> Option<Background> {
        let mut sums = self.sums_at(now_ms);
        if let Some(other) = other {
            let more = other.sums_at(now_ms);
            sums = (sums.0 + more.0, sums.1 + more.1, sums.2 + more.2);
        }
        let (sampled, inserts, log_units) = sums;
        if !positive(inserts) || !positive(sampled) {
            return None;
        }
        let unit = (log_units / inserts).exp();
        Some(Background {
            unit,
            events: sampled / unit,
            candidates: inserts,
        })
    }

    fn sums_at(&self, now_ms: i64) -> (f64, f64, f64) {
        let fade = self.fade(now_ms.saturating_sub(self.at_ms).max(0));
        (
            self.sampled * fade,
            self.inserts * fade,
            self.log_units * fade,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sampled(count: f64, variance: f64) -> Tally {
        Tally {
            count,
            per_second: count,
            sampled: count,
            variance,
            ..Tally::default()
        }
    }

    #[test]
    fn poisson_tails_are_exact() {
        // P(Pois(1) ≥ 1) = 1 − e^-1; P(Pois(2) ≥ 3) = 1 − 5e^-2.
        assert!((poisson_tail(1.0, 1.0) - (1.0 - (-1.0f64).exp())).abs() < 1e-12);
        assert!((poisson_tail(2.0, 3.0) - (1.0 - 5.0 * (-2.0f64).exp())).abs() < 1e-12);
        // Far tails stay relative: P(Pois(0.2) ≥ 10) ≈ 0.2^10/10! e^-0.2.
        let far = poisson_tail(0.2, 10.0);
        let lead = 0.2f64.powi(10) / 3_628_800.0 * (-0.2f64).exp();
        assert!((far / lead - 1.0).abs() < 0.03, "{far} vs {lead}");
        assert_eq!(poisson_tail(0.0, 3.0), 0.0);
        assert_eq!(poisson_tail(5.0, 0.0), 1.0);
        assert_eq!(poisson_tail(f64::NAN, 3.0), 0.0);
        assert_eq!(poisson_tail(3.0, f64::NAN), 1.0);
    }

    /// 100,000 keys, 100,000 events of 100 accesses each in the stream.
    fn wide_background() -> Background {
        Background {
            unit: 100.0,
            events: 100_000.0,
            candidates: 100_000.0,
        }
    }

    #[test]
    fn a_row_of_a_few_lucky_events_is_noise_and_a_hot_one_is_not() {
        let bg = wide_background();
        // Four events of 100 (each key's mean ~1): the luckiest of many.
        assert!(!bg.tells_apart(&sampled(400.0, 40_000.0)));
        // Fifteen: a key at five could reach it, and 20,000 keys can be.
        assert!(!bg.tells_apart(&sampled(1_500.0, 150_000.0)));
        // Forty events: no key at a third of that gets there.
        assert!(bg.tells_apart(&sampled(4_000.0, 400_000.0)));
        // A burst: three events of 5,000 accesses each (variance 3 · 5,000²)
        // is 150 of the background's events.
        assert!(bg.tells_apart(&sampled(15_000.0, 7.5e7)));
        // Counted access by access: no noise at all.
        let exact = Tally {
            count: 300.0,
            per_second: 300.0,
            ..Tally::default()
        };
        assert!(bg.tells_apart(&exact));
        // Nothing known of the stream: nothing to tell it from.
        let unknown = Background { unit: 0.0, ..bg };
        assert!(unknown.tells_apart(&sampled(400.0, 40_000.0)));
    }

    #[test]
    fn a_part_counted_exactly_keeps_a_row_within_three_times_its_truth() {
        let bg = wide_background();
        // 300 exact, 400 sampled in four events: the truth is at least 300,
        // a third of 700 is less, so the row cannot be a phantom.
        let mixed = Tally {
            count: 700.0,
            per_second: 700.0,
            sampled: 400.0,
            variance: 40_000.0,
            ..Tally::default()
        };
        assert!(bg.tells_apart(&mixed));
    }

    #[test]
    fn the_lower_bound_of_a_picked_row_allows_for_the_keys_it_was_picked_from() {
        let bg = wide_background();
        // 25 events: a key named in advance would have a lower bound of
        // ~16 events; picked out of 100,000 events' worth of keys, ~8.
        let low = bg.lowest_truth(2_500.0) / 100.0;
        assert!((6.0..11.0).contains(&low), "{low}");
        // Within it, the chance that a key at that truth gets there is
        // exactly the tail.
        let keys = (100_000.0 / low).min(100_000.0);
        let chance = keys * poisson_tail(low, 25.0);
        assert!((chance - LOW_TAIL).abs() < 1e-3, "{chance}");
        // A key with most of the stream: hardly any key could compete.
        let hot = bg.lowest_truth(5_000_000.0) / 5_000_000.0;
        assert!(hot > 0.98 && hot <= 1.0, "{hot}");
        // Nothing sampled: nothing below.
        assert_eq!(bg.lowest_truth(0.0), 0.0);
    }

    #[test]
    fn the_streams_typical_event_is_not_moved_by_a_few_huge_ones() {
        let mut makeup = StreamMakeup::new(1e12, 0);
        // 1,000 inserts of one kept access of 50 (variance 50²), and 5 of a
        // hot key's bursts of 10,000 (variance 10,000²).
        for _ in 0..1_000 {
            makeup.record(50.0, 2_500.0, 0);
        }
        for _ in 0..5 {
            makeup.record(10_000.0, 1e8, 0);
        }
        let bg = makeup.background(0).unwrap();
        assert!(bg.unit > 50.0 && bg.unit < 65.0, "{bg:?}");
        assert!((bg.events - (50_000.0 + 50_000.0) / bg.unit).abs() < 1e-6);
        assert!((bg.candidates - 1_005.0).abs() < 1e-9);
        // It fades as counts do, and nothing unsampled is recorded.
        let mut fading = StreamMakeup::new(1_000.0, 0);
        fading.record(10.0, 100.0, 0);
        fading.record(10.0, 0.0, 0);
        let later = fading.background(1_000).unwrap();
        assert!((later.candidates - 0.5).abs() < 1e-9 && (later.unit - 10.0).abs() < 1e-9);
        assert_eq!(StreamMakeup::new(1.0, 0).background(0), None);
        // Counters known one by one: the same outline.
        let among = Background::among([(50.0, 2_500.0), (50.0, 2_500.0)].into_iter()).unwrap();
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        assert!(
            close(among.unit, 50.0) && close(among.events, 2.0) && close(among.candidates, 2.0)
        );
    }
}
