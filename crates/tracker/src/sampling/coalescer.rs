//! Accesses coalesced per key before they reach the sketches.
//!
//! A sketch insert is the tracker's largest cost per access (the rows, the
//! decay coin, top-k churn on a long tail). Over a short horizon (a fraction
//! of the half-life, so that fading does not tell the accesses apart) every
//! access of one key is summed into one weighted insert, at the accesses'
//! mean time: a hot key costs one insert a horizon, however many its
//! accesses.
//!
//! Each key also keeps what its error bar needs: the variance its sum has
//! from the slots of time it was counted in (each slot's share of the sum
//! squared, see [`TimeSlot::variance_of`], and each kept access's coin,
//! [`TimeSlot::thinning_variance`]), how much of its sum sampled accesses
//! stand for (the rest, counted one by one, has no error: see
//! [`crate::bounds::error_bar`]), and how many accesses were seen (the sample's own
//! size, which is what HeavyKeeper's decay plays on).

use crate::access::Access;
use crate::sampling::time_slot::TimeSlot;
use hashbrown::HashTable;
use heavykeeper_sketch::ItemHash;

/// The distinct keys after which what is held is due to be counted.
///
/// Why not more: two coalescers (one filling, one draining) of 8,192 keys
/// (~90 bytes each, their table and their bytes) outgrew the worker's L2
/// cache, and beside a long tail, where nearly every key is new, taking an
/// access in was two cache misses: 44% of the worker's time (`perf`,
/// `redis-benchmark -P 16` over 100,000 keys, Redis 7.0). At 2,048, beside
/// the same load, the budget kept one access in 2 to 4 in the readings
/// measured, where it had kept one in 4 to 8 (native CPU time moves
/// ±10-20% between runs here, so no finer figure is claimed). The price:
/// a hot key is inserted once per 2,048 distinct keys
/// rather than per 8,192, and each coalescer's keys get at least
/// `MIN_INSERTS` inserts.
pub const MAX_KEYS: usize = 2048;
/// The most distinct keys held at all: a coalescer due while the one before
/// is still being counted goes on filling up to this.
pub const HARD_MAX_KEYS: usize = 2 * MAX_KEYS;

/// One key's accesses over a horizon, as handed to the sketches.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Coalesced<'a> {
    pub item: &'a [u8],
    pub hash: ItemHash,
    pub access: Access,
    /// The accesses they stand for (the sum of their weights).
    pub weight: u64,
    /// Of `weight`, what sampled accesses stand for (the rest were counted
    /// one by one).
    pub sampled: u64,
    /// The accesses seen (counted ones, each standing for its weight).
    pub seen: u64,
    /// The middle of the horizon they came in.
    pub time_ms: i64,
    /// The variance of `weight` as an estimate of the key's true accesses
    /// over the horizon (0 when every access was counted).
    pub variance: f64,
}

#[derive(Clone, Debug)]
struct Entry {
    hash: ItemHash,
    access: Access,
    weight: u64,
    sampled: u64,
    seen: u32,
    /// The slot of time the last accesses came in, and their weight there.
    slot: TimeSlot,
    in_slot: u64,
    /// The variance of the slots before it.
    variance: f64,
    /// The item's bytes in `arena`.
    start: u32,
    end: u32,
}

impl Entry {
    fn variance(&self) -> f64 {
        self.variance + self.slot.variance_of(self.in_slot as f64)
    }
}

#[derive(Clone, Debug)]
pub struct Coalescer {
    index: HashTable<u32>,
    entries: Vec<Entry>,
    arena: Vec<u8>,
    base_ms: Option<i64>,
    last_ms: i64,
    horizon_ms: i64,
}

impl Coalescer {
    /// Accesses coalesced over at most `horizon_ms`.
    pub fn new(horizon_ms: i64) -> Self {
        Self {
            index: HashTable::new(),
            entries: Vec::new(),
            arena: Vec::new(),
            base_ms: None,
            last_ms: 0,
            horizon_ms: horizon_ms.max(1),
        }
    }

    /// Adds one access of `item` (hashed by the tracker) at `time_ms`,
    /// gathered in `slot`.
    pub fn add(
        &mut self,
        item: &[u8],
        hash: ItemHash,
        access: Access,
        slot: TimeSlot,
        time_ms: i64,
    ) {
        let weight = slot.access_weight();
        let sampled = if weight > 1 { weight } else { 0 };
        let coin = slot.thinning_variance();
        self.base_ms.get_or_insert(time_ms);
        self.last_ms = self.last_ms.max(time_ms);
        let key = keyed(hash, access);
        let entries = &mut self.entries;
        let key_of =
            |entries: &[Entry], i: u32| entries.get(i as usize).map(|e| keyed(e.hash, e.access));
        let found = self.index.find(key, |&i| key_of(entries, i) == Some(key));
        if let Some(entry) = found.and_then(|&i| entries.get_mut(i as usize)) {
            entry.weight = entry.weight.saturating_add(weight);
            entry.sampled = entry.sampled.saturating_add(sampled);
            entry.seen = entry.seen.saturating_add(1);
            if entry.slot.seq != slot.seq {
                entry.variance = entry.variance();
                entry.slot = slot;
                entry.in_slot = 0;
            }
            entry.in_slot = entry.in_slot.saturating_add(weight);
            entry.variance += coin;
            return;
        }
        let start = self.arena.len() as u32;
        self.arena.extend_from_slice(item);
        let index = entries.len() as u32;
        entries.push(Entry {
            hash,
            access,
            weight,
            sampled,
            seen: 1,
            slot,
            in_slot: weight,
            variance: coin,
            start,
            end: self.arena.len() as u32,
        });
        self.index
            .insert_unique(key, index, |&i| key_of(entries, i).unwrap_or(0));
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Distinct keys held.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Must what is held be counted before accesses at `now_ms` join it?
    pub fn is_due(&self, now_ms: i64) -> bool {
        self.entries.len() >= MAX_KEYS
            || self.arena.len() >= (u32::MAX / 4) as usize
            || self
                .base_ms
                .is_some_and(|base| now_ms - base >= self.horizon_ms)
    }

    /// Can it take no more keys (due long ago, and the one before still
    /// being counted)?
    pub fn is_full(&self) -> bool {
        self.entries.len() >= HARD_MAX_KEYS || self.arena.len() >= (u32::MAX / 2) as usize
    }

    /// The time of the last access held (ms).
    pub fn last_ms(&self) -> i64 {
        self.last_ms
    }

    /// The weight of each key held, in the order they first came.
    pub fn weights(&self) -> impl Iterator<Item = u64> + Clone + '_ {
        self.entries.iter().map(|e| e.weight)
    }

    /// Hands keys `from..from + n` (in the order they first came) to
    /// `insert`; returns where the next step starts ([`Self::len`] once all
    /// are handed). The caller clears it after.
    pub fn drain<'s>(
        &'s self,
        from: usize,
        n: usize,
        mut insert: impl FnMut(Coalesced<'s>),
    ) -> usize {
        let base = self.base_ms.unwrap_or(0);
        let time = base + (self.last_ms - base).max(0) / 2;
        let end = from.saturating_add(n).min(self.entries.len());
        for entry in self.entries.get(from..end).unwrap_or_default() {
            insert(Coalesced {
                item: self
                    .arena
                    .get(entry.start as usize..entry.end as usize)
                    .unwrap_or_default(),
                hash: entry.hash,
                access: entry.access,
                weight: entry.weight,
                sampled: entry.sampled,
                seen: u64::from(entry.seen),
                time_ms: time,
                variance: entry.variance(),
            });
        }
        end
    }

    /// Forgets everything held.
    pub fn clear(&mut self) {
        self.index.clear();
        self.entries.clear();
        self.arena.clear();
        self.base_ms = None;
        self.last_ms = 0;
        if self.arena.capacity() > 1 << 20 {
            self.arena.shrink_to(1 << 20);
        }
    }

    pub fn heap_bytes(&self) -> usize {
        self.index.allocation_size()
            + self.entries.capacity() * std::mem::size_of::<Entry>()
            + self.arena.capacity()
    }
}

/// The table's key: the item's hash, told apart by access kind.
#[inline]
fn keyed(hash: ItemHash, access: Access) -> u64 {
    hash.value() ^ (u64::from(access.code()).wrapping_mul(0x9e37_79b9_7f4a_7c15))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drained(c: &Coalescer) -> Vec<Coalesced<'_>> {
        let mut out = Vec::new();
        c.drain(0, usize::MAX, |e| out.push(e));
        out
    }

    #[test]
    fn a_keys_accesses_become_one_insert_at_the_horizons_middle() {
        let mut c = Coalescer::new(1_000);
        let item = b"\0\0hot";
        let hash = ItemHash::of(item, 7);
        let slot = TimeSlot::new(1, 2);
        for time in [100, 200, 300] {
            c.add(item, hash, Access::Read, slot, time);
        }
        c.add(item, hash, Access::Write, slot, 150);
        assert_eq!(c.len(), 2, "reads and writes apart");
        let got = drained(&c);
        assert_eq!((got[0].weight, got[0].seen, got[0].time_ms), (6, 3, 200));
        assert_eq!((got[1].access, got[1].weight), (Access::Write, 2));
        c.clear();
        assert!(c.is_empty());
    }

    #[test]
    fn the_variance_is_each_slots_share_squared() {
        let mut c = Coalescer::new(1_000);
        let hash = ItemHash::of(b"k", 1);
        // Slot 1: three accesses at weight 4 (sum 12); slot 2: one (sum 4).
        for _ in 0..3 {
            c.add(b"k", hash, Access::Read, TimeSlot::new(1, 4), 0);
        }
        c.add(b"k", hash, Access::Read, TimeSlot::new(2, 4), 10);
        let got = drained(&c);
        let expected = 0.75 * (12.0f64 * 12.0 + 4.0 * 4.0);
        assert!((got[0].variance - expected).abs() < 1e-9, "{got:?}");
        // Every access counted: no variance at all.
        let mut whole = Coalescer::new(1_000);
        for t in 0..100 {
            whole.add(b"k", hash, Access::Read, TimeSlot::WHOLE, t);
        }
        assert_eq!(drained(&whole)[0].variance, 0.0);
    }

    #[test]
    fn what_sampled_accesses_stand_for_is_kept_apart_from_the_exact() {
        let mut c = Coalescer::new(1_000);
        let hash = ItemHash::of(b"k", 1);
        for t in 0..10 {
            c.add(b"k", hash, Access::Read, TimeSlot::WHOLE, t);
        }
        // Two accesses in a slot counted one in 4, one kept one in 2 of a
        // slot every one of which is counted.
        c.add(b"k", hash, Access::Read, TimeSlot::new(1, 4), 20);
        c.add(b"k", hash, Access::Read, TimeSlot::new(1, 4), 21);
        let thinned = TimeSlot::WHOLE.keeping_one_in(2);
        c.add(b"k", hash, Access::Read, thinned, 30);
        let got = drained(&c);
        assert_eq!((got.len(), got[0].weight, got[0].sampled), (1, 20, 10));
    }

    #[test]
    fn it_is_due_by_size_or_by_time() {
        let mut c = Coalescer::new(50);
        let hash = ItemHash::of(b"k", 1);
        assert!(!c.is_due(0));
        c.add(b"k", hash, Access::Read, TimeSlot::WHOLE, 10);
        assert!(!c.is_due(59));
        assert!(c.is_due(60));
        let mut c = Coalescer::new(1_000_000);
        for i in 0..MAX_KEYS as u64 {
            let item = i.to_be_bytes();
            let hash = ItemHash::of(&item, 1);
            c.add(&item, hash, Access::Read, TimeSlot::WHOLE, 0);
        }
        assert!(c.is_due(0));
    }
}
