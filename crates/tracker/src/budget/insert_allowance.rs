//! The inserts the sketches may take now: a bucket refilled at the insert
//! budget's rate ([`crate::budget::insert_budget::InsertBudget`]) that holds at most
//! [`BURST_S`] seconds of it. The worker's share of a core is so kept over
//! seconds rather than every period: a burst shorter than the bucket (a
//! batch job's few hundred thousand reads, a spike that passes) is counted
//! whole, key by key, and only load that lasts is thinned, at the rate the
//! budget leaves.

/// Seconds of the insert rate the bucket holds unless told otherwise
/// ([`InsertAllowance::set_burst`]: where the worker's share is fixed, as
/// long as the accesses' own burst, so that a burst taken in whole is
/// inserted whole too).
pub const BURST_S: f64 = 1.5;

#[derive(Clone, Debug)]
pub struct InsertAllowance {
    /// Inserts a second (`None`: not known yet, every key is inserted).
    rate: Option<f64>,
    tokens: f64,
    /// The time (ms, of the accesses) it was last refilled at.
    last_ms: Option<i64>,
    /// Seconds of the rate the bucket holds.
    burst_s: f64,
}

impl Default for InsertAllowance {
    fn default() -> Self {
        Self {
            rate: None,
            tokens: 0.0,
            last_ms: None,
            burst_s: BURST_S,
        }
    }
}

impl InsertAllowance {
    /// How many seconds of the rate the bucket holds from now on.
    pub fn set_burst(&mut self, seconds: f64) {
        if seconds.is_finite() && seconds > 0.0 {
            self.burst_s = seconds;
        }
    }

    /// The rate from now on; the bucket starts full the first time.
    pub fn set_rate(&mut self, rate: Option<f64>) {
        let rate = rate.filter(|r| r.is_finite() && *r > 0.0);
        if self.rate.is_none() {
            self.tokens = rate.map_or(0.0, |r| r * self.burst_s);
        }
        self.rate = rate;
        if let Some(r) = rate {
            self.tokens = self.tokens.min(r * self.burst_s);
        }
    }

    /// The inserts that may be made at `now_ms` (`None`: any number).
    pub fn available(&mut self, now_ms: i64) -> Option<f64> {
        let rate = self.rate?;
        if let Some(last) = self.last_ms {
            let seconds = (now_ms - last).max(0) as f64 / 1000.0;
            self.tokens = (self.tokens + rate * seconds).min(rate * self.burst_s);
        }
        self.last_ms = Some(self.last_ms.map_or(now_ms, |l| l.max(now_ms)));
        Some(self.tokens)
    }

    /// `inserts` were made.
    pub fn spend(&mut self, inserts: u64) {
        if self.rate.is_some() {
            self.tokens = (self.tokens - inserts as f64).max(0.0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_uses_the_bucket_and_lasting_load_gets_the_rate() {
        let mut a = InsertAllowance::default();
        assert_eq!(a.available(0), None, "no rate yet: every key");
        a.set_rate(Some(1000.0));
        let full = 1000.0 * BURST_S;
        assert_eq!(a.available(0), Some(full), "full at first");
        a.spend(full as u64);
        assert_eq!(a.available(100), Some(100.0), "refilled at the rate");
        a.spend(100);
        let later = (1000.0 * (BURST_S + 1.0)) as i64;
        assert_eq!(a.available(later), Some(full), "never more than the burst");
        // A lower rate caps what is held.
        a.set_rate(Some(100.0));
        assert_eq!(a.available(later), Some(100.0 * BURST_S));
        // Time never runs back.
        a.spend((100.0 * BURST_S) as u64);
        assert_eq!(a.available(later / 2), Some(0.0));
    }
}
