//! How long a slot moved stays where it was put: a slot moved is not moved
//! again within the cooldown, so that load shifting back and forth (or two
//! runs reading the same noise differently) never sends a slot back and
//! forth. The moves are remembered with the time they were made (the
//! caller keeps them on disk, so the cooldown outlives a run).

use crate::load::Slot;
use std::collections::{BTreeMap, BTreeSet};

/// A slot's last move, at a time in ms (any clock the caller keeps).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Moved {
    pub slot: Slot,
    pub at_ms: i64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cooldown {
    period_ms: i64,
    last_moved: BTreeMap<Slot, i64>,
}

impl Cooldown {
    /// A cooldown of `period_ms`, knowing the moves in `history`.
    pub fn new(period_ms: i64, history: impl IntoIterator<Item = Moved>) -> Self {
        let mut cooldown = Cooldown {
            period_ms: period_ms.max(0),
            last_moved: BTreeMap::new(),
        };
        history.into_iter().for_each(|moved| cooldown.record(moved));
        cooldown
    }

    pub fn record(&mut self, moved: Moved) {
        let last = self.last_moved.entry(moved.slot).or_insert(moved.at_ms);
        *last = (*last).max(moved.at_ms);
    }

    /// The slots that may not move at `now_ms`.
    pub fn frozen(&self, now_ms: i64) -> BTreeSet<Slot> {
        (self.last_moved.iter())
            .filter(|(_, &at)| now_ms - at < self.period_ms)
            .map(|(&slot, _)| slot)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_moved_stays_frozen_for_the_period_and_then_is_free() {
        let mut c = Cooldown::new(
            300_000,
            [Moved {
                slot: 7,
                at_ms: 1_000,
            }],
        );
        c.record(Moved {
            slot: 9,
            at_ms: 100_000,
        });
        assert_eq!(c.frozen(2_000), BTreeSet::from([7, 9]));
        assert_eq!(c.frozen(301_000), BTreeSet::from([9]));
        assert!(c.frozen(400_000).is_empty());
        // An older record never shortens a newer one.
        c.record(Moved { slot: 9, at_ms: 0 });
        assert_eq!(c.frozen(350_000), BTreeSet::from([9]));
    }
}
