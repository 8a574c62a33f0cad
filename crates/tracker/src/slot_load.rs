//! Each cluster slot's load, reads and writes apart: exact per slot (16,384
//! fading counters, not a sketch), from the same accesses as the hot keys,
//! so sampled and thinned the same way and as unbiased.

use crate::access::Access;
use crate::fading_counters::FadingCounters;
use crate::hash_slot::SLOTS;

/// One slot's faded counts now.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SlotCounts {
    pub slot: u16,
    pub reads: f64,
    pub writes: f64,
}

impl SlotCounts {
    pub fn total(&self) -> f64 {
        self.reads + self.writes
    }
}

/// One slot's load now, as listed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SlotRate {
    pub slot: u16,
    pub reads_per_second: f64,
    pub writes_per_second: f64,
}

impl SlotRate {
    pub fn total(&self) -> f64 {
        self.reads_per_second + self.writes_per_second
    }
}

#[derive(Clone, Debug)]
pub struct SlotLoad {
    /// Counter `2 · slot` is its reads, `2 · slot + 1` its writes.
    counters: FadingCounters,
}

impl SlotLoad {
    pub fn new(half_life_ms: f64, now_ms: i64) -> Self {
        Self {
            counters: FadingCounters::new(2 * SLOTS, half_life_ms, now_ms),
        }
    }

    /// `weight` accesses of a key in `slot` (a miss is a read too, already
    /// counted as one).
    pub fn add(&mut self, slot: u16, access: Access, weight: u64, time_ms: i64) {
        let unit = self.unit_at(time_ms);
        self.add_units(slot, access, weight as f64 * unit);
    }

    /// [`FadingCounters::unit_at`]: for a batch of accesses at one time.
    pub fn unit_at(&mut self, time_ms: i64) -> f64 {
        self.counters.unit_at(time_ms)
    }

    #[inline]
    pub fn add_units(&mut self, slot: u16, access: Access, stored: f64) {
        let i = 2 * (usize::from(slot) % SLOTS);
        match access {
            Access::Read => self.counters.add_units(i, stored),
            Access::Write => self.counters.add_units(i + 1, stored),
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
                    reads: 0.0,
                    writes: 0.0,
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
            Some(Access::Read) => r.reads,
            Some(Access::Write) => r.writes,
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
        let mut load = SlotLoad::new(1e12, 0);
        load.add(7, Access::Read, 300, 0);
        load.add(7, Access::Write, 10, 0);
        load.add(16_383, Access::Write, 200, 0);
        load.add(0, Access::Read, 50, 0);
        load.add(0, Access::Miss, 50, 0);
        let all = load.hottest(None, 10, 0);
        assert_eq!(
            all.iter().map(|r| r.slot).collect::<Vec<_>>(),
            [7, 16_383, 0]
        );
        let writes = load.hottest(Some(Access::Write), 1, 0);
        assert_eq!(writes[0].slot, 16_383);
        assert!((all[0].reads - 300.0).abs() < 1e-9);
        assert!(
            (all[2].reads - 50.0).abs() < 1e-9,
            "a miss is not a second read"
        );
    }
}
