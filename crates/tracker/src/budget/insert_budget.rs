//! How many sketch inserts a second the worker can afford within its share
//! of a core, from what it measured itself: the CPU time it spent taking
//! accesses in (hashing and coalescing every one, which no budget cuts: the
//! share of time counted does) and the time per insert. What is left of the
//! share after taking accesses in goes to inserts (never less than a
//! quarter of it), and [`crate::worker::counting::Counting`] thins the keys that weigh least
//! when a horizon holds more keys than that.
//!
//! The costs are measured apart, never inferred from how the total moved:
//! a cost that does not shrink with thinning (taking accesses in) would
//! otherwise read as thinning that did not go far enough, and the
//! threshold would run away.

/// How much of each period's figures the running means take.
const FOLLOW: f64 = 0.3;
/// Inserts a period must hold before their cost is trusted.
const MIN_INSERTS: u64 = 32;
/// The least share of the worker's budget left for inserts.
const MIN_INSERT_SHARE: f64 = 0.25;

/// What the worker spent over one period, in ns of its own CPU.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PeriodCost {
    pub wall_ns: u64,
    pub absorb_ns: u64,
    pub insert_ns: u64,
    pub inserts: u64,
}

#[derive(Clone, Debug)]
pub struct InsertBudget {
    /// The worker's share of one core.
    share: f64,
    ns_per_insert: Option<f64>,
    /// The share of a core taking accesses in costs.
    absorb_share: f64,
}

impl InsertBudget {
    pub fn new(share: f64) -> Self {
        Self {
            share: share.clamp(1e-6, 1.0),
            ns_per_insert: None,
            absorb_share: 0.0,
        }
    }

    pub fn set_share(&mut self, share: f64) {
        self.share = share.clamp(1e-6, 1.0);
    }

    /// One period's costs in.
    pub fn observe(&mut self, period: PeriodCost) {
        if period.wall_ns == 0 {
            return;
        }
        let absorb = period.absorb_ns as f64 / period.wall_ns as f64;
        self.absorb_share += FOLLOW * (absorb - self.absorb_share);
        if period.inserts >= MIN_INSERTS {
            let each = period.insert_ns as f64 / period.inserts as f64;
            let mean = self.ns_per_insert.get_or_insert(each);
            *mean += FOLLOW * (each - *mean);
        }
    }

    /// Inserts a second that fit (`None` until their cost is known).
    pub fn inserts_per_second(&self) -> Option<f64> {
        let each = self.ns_per_insert?.max(1.0);
        let left = (self.share - self.absorb_share).max(MIN_INSERT_SHARE * self.share);
        Some(left * 1e9 / each)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inserts_get_what_taking_accesses_in_leaves() {
        let mut b = InsertBudget::new(0.01);
        assert_eq!(b.inserts_per_second(), None);
        // 1 ms of inserts a second, 500 of them: 2 µs each; absorbing is
        // free: 10 ms a second fit 5,000.
        let period = PeriodCost {
            wall_ns: 1_000_000_000,
            absorb_ns: 0,
            insert_ns: 1_000_000,
            inserts: 500,
        };
        b.observe(period);
        let rate = b.inserts_per_second().unwrap();
        assert!((rate - 5_000.0).abs() < 1.0, "{rate}");
        // Absorbing takes the whole share for good: a quarter is left.
        for _ in 0..50 {
            b.observe(PeriodCost {
                absorb_ns: 20_000_000,
                ..period
            });
        }
        let rate = b.inserts_per_second().unwrap();
        assert!((rate - 1_250.0).abs() < 1.0, "{rate}");
    }

    #[test]
    fn a_cost_that_thinning_cannot_cut_never_runs_the_budget_away() {
        // However long absorbing costs more than the share, the rate stays
        // at its floor (the old brake multiplied its threshold each period).
        let mut b = InsertBudget::new(0.003);
        let mut rates = Vec::new();
        for _ in 0..1_000 {
            b.observe(PeriodCost {
                wall_ns: 50_000_000,
                absorb_ns: 1_000_000,
                insert_ns: 30_000,
                inserts: 100,
            });
            rates.push(b.inserts_per_second().unwrap());
        }
        let last = rates[rates.len() - 1];
        assert!((last - 0.25 * 0.003 * 1e9 / 300.0).abs() < 1.0, "{last}");
        assert!(rates.iter().all(|&r| r >= last * 0.99));
    }
}
