//! Counting one event in N without bias: the gaps between sampled events
//! are drawn from a geometric distribution of mean N, so no periodic
//! pattern in the stream (a client alternating two commands, say) can line
//! up with the sampling. Each sampled event then weighs N.

/// Decides, event by event, which ones to count.
#[derive(Clone, Debug)]
pub struct Sampler {
    every: u64,
    /// Events to skip before the next sampled one.
    skip: u64,
    state: u64,
}

impl Sampler {
    /// Samples one event in `every` on average (1: every event).
    pub fn new(every: u64, seed: u64) -> Self {
        let mut sampler = Self {
            every: every.max(1),
            skip: 0,
            state: seed | 1,
        };
        sampler.skip = sampler.next_gap();
        sampler
    }

    pub fn every(&self) -> u64 {
        self.every
    }

    /// Is this event one to count? Cheap for the events it skips: one
    /// comparison and a decrement.
    #[inline]
    pub fn take(&mut self) -> bool {
        if self.skip > 0 {
            self.skip -= 1;
            return false;
        }
        self.skip = self.next_gap();
        true
    }

    /// Events skipped before the next sampled one: Geometric(1/every) - 1.
    fn next_gap(&mut self) -> u64 {
        if self.every == 1 {
            return 0;
        }
        // xorshift64*: statistical quality is ample for spacing samples.
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        let bits = self.state.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11;
        let u = (bits as f64 + 1.0) / (1u64 << 53) as f64; // in (0, 1]
        let p = 1.0 / self.every as f64;
        let gap = (libm::log(u) / libm::log1p(-p)).floor();
        if gap.is_finite() && gap >= 0.0 {
            (gap as u64).min(self.every.saturating_mul(64))
        } else {
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_event_is_taken_without_sampling() {
        let mut s = Sampler::new(1, 7);
        assert!((0..1000).all(|_| s.take()));
    }

    #[test]
    fn one_in_n_on_average_and_not_periodic() {
        for every in [2u64, 16, 100] {
            let mut s = Sampler::new(every, 3);
            let n = 400_000u64;
            let taken: Vec<u64> = (0..n).filter(|_| s.take()).collect();
            let expected = n / every;
            let got = taken.len() as u64;
            assert!(
                got.abs_diff(expected) < expected / 20,
                "{every}: {got} vs {expected}"
            );
            // An alternating stream of two kinds of events: each kind is
            // sampled at the same rate (a periodic sampler would pick one).
            let even = taken.iter().filter(|&&i| i % 2 == 0).count() as f64;
            let share = even / got as f64;
            assert!((share - 0.5).abs() < 0.05, "{every}: even share {share}");
        }
    }
}
