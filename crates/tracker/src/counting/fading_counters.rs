//! Counters that fade with a half-life, exactly (forward decay): each
//! addition at time `t` is stored as `weight · 2^((t − L) / H)` for a
//! landmark `L`, so fading never needs a pass over the counters; a count is
//! read back as the stored sum over `2^((now − L) / H)`. When the stored
//! values grow large the landmark moves, one pass, rarely.

/// Renormalise once the exponent passes this (2^400 is far from overflow).
const MAX_EXPONENT: f64 = 400.0;

#[derive(Clone, Debug)]
pub struct FadingCounters {
    half_life_ms: f64,
    landmark_ms: i64,
    sums: Vec<f64>,
}

impl FadingCounters {
    pub fn new(len: usize, half_life_ms: f64, now_ms: i64) -> Self {
        Self {
            half_life_ms: half_life_ms.max(1.0),
            landmark_ms: now_ms,
            sums: vec![0.0; len],
        }
    }

    pub fn half_life_ms(&self) -> f64 {
        self.half_life_ms
    }

    fn exponent(&self, time_ms: i64) -> f64 {
        time_ms.saturating_sub(self.landmark_ms) as f64 / self.half_life_ms
    }

    /// Adds `weight` to counter `i` at `time_ms`.
    pub fn add(&mut self, i: usize, weight: f64, time_ms: i64) {
        let unit = self.unit_at(time_ms);
        self.add_units(i, weight * unit);
    }

    /// What one unit of weight at `time_ms` is stored as (the landmark moved
    /// first if need be): for many additions at one time, one `exp2`.
    pub fn unit_at(&mut self, time_ms: i64) -> f64 {
        if self.exponent(time_ms) > MAX_EXPONENT {
            self.move_landmark(time_ms);
        }
        self.exponent(time_ms).exp2()
    }

    /// Adds a stored amount, from [`Self::unit_at`] times a weight.
    #[inline]
    pub fn add_units(&mut self, i: usize, stored: f64) {
        if let Some(sum) = self.sums.get_mut(i) {
            *sum += stored;
        }
    }

    fn move_landmark(&mut self, to_ms: i64) {
        let factor = (-self.exponent(to_ms)).exp2();
        for sum in &mut self.sums {
            *sum *= factor;
        }
        self.landmark_ms = to_ms;
    }

    /// Counter `i` faded to `now_ms`.
    pub fn count(&self, i: usize, now_ms: i64) -> f64 {
        let sum = self.sums.get(i).copied().unwrap_or(0.0);
        if sum == 0.0 {
            return 0.0;
        }
        sum * (-self.exponent(now_ms)).exp2()
    }

    /// Raises counter `i` to `weight` at `time_ms` if it is below: the
    /// largest value seen, fading as counts do.
    pub fn raise(&mut self, i: usize, weight: f64, time_ms: i64) {
        let stored = weight * self.unit_at(time_ms);
        if let Some(sum) = self.sums.get_mut(i) {
            *sum = sum.max(stored);
        }
    }

    /// The counters that ever counted anything: (index, count now).
    pub fn nonzero(&self, now_ms: i64) -> impl Iterator<Item = (usize, f64)> + '_ {
        let scale = (-self.exponent(now_ms)).exp2();
        self.sums
            .iter()
            .enumerate()
            .filter(|(_, &s)| s > 0.0)
            .map(move |(i, &s)| (i, s * scale))
    }

    pub fn heap_bytes(&self) -> usize {
        self.sums.capacity() * std::mem::size_of::<f64>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_halves_each_half_life_and_a_raised_counter_keeps_the_largest_value() {
        let mut c = FadingCounters::new(3, 1_000.0, 0);
        c.add(1, 8.0, 0);
        c.add(1, 8.0, 1_000);
        assert!((c.count(1, 1_000) - 12.0).abs() < 1e-9);
        assert!((c.count(1, 3_000) - 3.0).abs() < 1e-9);
        assert_eq!(c.count(0, 3_000), 0.0);
        assert_eq!(c.nonzero(3_000).map(|(i, _)| i).collect::<Vec<_>>(), [1]);
        // A raised counter keeps the largest value, and fades.
        let mut c = FadingCounters::new(1, 1_000.0, 0);
        c.raise(0, 8.0, 0);
        c.raise(0, 2.0, 0);
        assert!((c.count(0, 0) - 8.0).abs() < 1e-9);
        // A half-life later 8 reads 4: a 5 then is larger.
        c.raise(0, 5.0, 1_000);
        assert!((c.count(0, 1_000) - 5.0).abs() < 1e-9);
    }

    #[test]
    fn the_landmark_moves_without_changing_a_count() {
        let mut c = FadingCounters::new(1, 10.0, 0);
        c.add(0, 1.0, 0);
        // 500 half-lives later: without a move, 2^500 overflows nothing yet
        // but would soon; with it, counts read the same.
        c.add(0, 1.0, 5_000);
        assert!((c.count(0, 5_000) - 1.0).abs() < 1e-9);
        assert!(c.count(0, 5_000).is_finite());
    }
}
