//! The planner's settings, and the load no primary should serve more than.

use crate::load::{Measure, Slot};
use std::collections::BTreeSet;

#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// Which rate counts as load.
    pub measure: Measure,
    /// How far above the mean a primary may be before slots move away from
    /// it: the target is `mean × (1 + tolerance)` (the crate's docs say why
    /// 0.2).
    pub tolerance: f64,
    /// At most this many moves in one plan (`None`: as many as it takes);
    /// a plan cut short says so, and a later run goes on.
    pub max_moves: Option<usize>,
    /// The least cluster-wide load worth balancing, in the measure's unit:
    /// under it nothing moves (a cluster serving a few commands a second is
    /// balanced by noise, not by moves).
    pub min_total: f64,
    /// Slots that may not move now (moved within their cooldown, see
    /// [`crate::Cooldown`]).
    pub frozen: BTreeSet<Slot>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            measure: Measure::Total,
            tolerance: 0.2,
            max_moves: None,
            min_total: 0.0,
            frozen: BTreeSet::new(),
        }
    }
}

impl Options {
    /// The most a primary should serve, of a cluster serving `total` over
    /// `nodes` primaries.
    pub fn target(&self, total: f64, nodes: usize) -> f64 {
        if nodes == 0 {
            return 0.0;
        }
        total / nodes as f64 * (1.0 + self.tolerance.max(0.0))
    }
}

/// Loads are sums of floating-point rates: a node "over" its target by a
/// rounding error is not over it.
pub fn slack(total: f64) -> f64 {
    total * 1e-9
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_target_is_a_fifth_above_the_mean() {
        let o = Options::default();
        assert!((o.target(300.0, 3) - 120.0).abs() < 1e-9, "40% of three");
        assert!((o.target(1000.0, 10) - 120.0).abs() < 1e-9, "12% of ten");
        assert_eq!(o.target(5.0, 0), 0.0);
    }
}
