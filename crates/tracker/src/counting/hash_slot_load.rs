//! Each cluster hash slot's load, reads and writes apart: exact per hash
//! slot (16,384 pairs of fading counters, not a sketch), from every access
//! counted, hot key or not, so sampled the same way as the hot keys and as
//! unbiased, each with its variance (its error bar).

use crate::access::Access;
use crate::counting::sampled_counters::{Estimate, SampledCounters};
use crate::counting::tally::{Missed, Row, Tally};
use crate::sampling::time_slot::TimeSlot;
use crate::server::hash_slot::SLOTS;

/// One hash slot's faded counts now.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SlotCounts {
    pub slot: u16,
    pub reads: Estimate,
    pub writes: Estimate,
}

impl SlotCounts {
    pub fn total(&self) -> f64 {
        self.reads.count + self.writes.count
    }
}

/// One hash slot's load now, as listed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HashSlotRate {
    pub slot: u16,
    pub reads: Tally,
    pub writes: Tally,
}

impl Row for HashSlotRate {
    fn allowing_for(self, missed: Missed) -> HashSlotRate {
        HashSlotRate {
            reads: self.reads.allowing_for(missed),
            writes: self.writes.allowing_for(missed),
            ..self
        }
    }
}

impl HashSlotRate {
    /// Requests a second, reads and writes together.
    pub fn total(&self) -> f64 {
        self.reads.per_second + self.writes.per_second
    }
}

#[derive(Clone, Debug)]
pub struct HashSlotLoad {
    /// Counter `2 · slot` is its reads, `2 · slot + 1` its writes.
    counters: SampledCounters,
}

impl HashSlotLoad {
    pub fn new(half_life_ms: f64, now_ms: i64) -> Self {
        Self {
            counters: SampledCounters::new(2 * SLOTS, half_life_ms, now_ms),
        }
    }

    /// Accesses gathered in `slot` at `time_ms` come next.
    pub fn begin(&mut self, slot: TimeSlot, time_ms: i64) {
        self.counters.begin(slot, time_ms);
    }

    /// [`SampledCounters::unit_at`]: for a batch of accesses at one time.
    pub fn unit_at(&mut self, time_ms: i64) -> f64 {
        self.counters.unit_at(time_ms)
    }

    /// `accesses` kept accesses of a key in `hash_slot`, stored as `stored`
    /// (a miss is a read too, already counted as one).
    #[inline]
    pub fn add(&mut self, hash_slot: u16, access: Access, accesses: f64, stored: f64) {
        let i = 2 * (usize::from(hash_slot) % SLOTS);
        match access {
            Access::Read => self.counters.add(i, accesses, stored),
            Access::Write => self.counters.add(i + 1, accesses, stored),
            Access::Miss | Access::Prefix => {}
        }
    }

    /// Every slot with traffic, hottest first by `by` (reads plus writes
    /// when `None`), at most `count`.
    pub fn hottest(&self, by: Option<Access>, count: usize, now_ms: i64) -> Vec<SlotCounts> {
        let mut rates: Vec<SlotCounts> = Vec::new();
        for (i, c) in self.counters.nonzero(now_ms) {
            let slot = (i / 2) as u16;
            if rates.last().is_none_or(|r| r.slot != slot) {
                rates.push(SlotCounts {
                    slot,
                    ..SlotCounts::default()
                });
            }
            if let Some(r) = rates.last_mut() {
                if i % 2 == 0 {
                    r.reads = c;
                } else {
                    r.writes = c;
                }
            }
        }
        let key = |r: &SlotCounts| match by {
            Some(Access::Read) => r.reads.count,
            Some(Access::Write) => r.writes.count,
            _ => r.total(),
        };
        rates.sort_by(|a, b| key(b).total_cmp(&key(a)).then(a.slot.cmp(&b.slot)));
        rates.truncate(count);
        rates
    }

    pub fn heap_bytes(&self) -> usize {
        self.counters.heap_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_rank_by_what_is_asked_and_rates_add_up() {
        let mut load = HashSlotLoad::new(1e12, 0);
        load.begin(TimeSlot::WHOLE, 0);
        for (slot, access, n) in [
            (7, Access::Read, 300.0),
            (7, Access::Write, 10.0),
            (16_383, Access::Write, 200.0),
            (0, Access::Read, 50.0),
            (0, Access::Miss, 50.0),
        ] {
            load.add(slot, access, n, n);
        }
        let all = load.hottest(None, 10, 0);
        assert_eq!(
            all.iter().map(|r| r.slot).collect::<Vec<_>>(),
            [7, 16_383, 0]
        );
        let writes = load.hottest(Some(Access::Write), 1, 0);
        assert_eq!(writes[0].slot, 16_383);
        assert!((all[0].reads.count - 300.0).abs() < 1e-9);
        assert!(
            (all[2].reads.count - 50.0).abs() < 1e-9,
            "a miss is not a second read"
        );
    }
}
