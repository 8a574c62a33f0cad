//! Accesses coalesced per key before they reach the sketches.
//!
//! A sketch insert is the tracker's largest cost per access (hashing, the
//! rows, the decay coin, top-k churn on a long tail). Over a short horizon
//! (a fraction of the half-life, so that fading does not tell the accesses
//! apart) every access of one key is summed into one weighted insert, at the
//! accesses' mean time: a hot key costs one insert a horizon, however many
//! its accesses.

use crate::access::Access;
use crate::key_tracker::KeyTracker;
use hashbrown::HashTable;
use heavykeeper_sketch::ItemHash;

/// The most distinct keys held before they must be counted.
pub const MAX_KEYS: usize = 8192;

#[derive(Clone, Debug)]
struct Entry {
    hash: ItemHash,
    access: Access,
    weight: u64,
    /// What one of its accesses stands for (the first one's).
    scale: u64,
    /// Sum of weight × (time − `base_ms`), for the mean time.
    weighted_time: f64,
    /// The item's bytes in `arena`.
    start: u32,
    end: u32,
}

#[derive(Clone, Debug)]
pub struct Coalescer {
    index: HashTable<u32>,
    entries: Vec<Entry>,
    arena: Vec<u8>,
    base_ms: Option<i64>,
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
            horizon_ms: horizon_ms.max(1),
        }
    }

    /// Adds one access of `item` (hashed by the tracker) at `time_ms`,
    /// standing for `weight` accesses.
    pub fn add(&mut self, item: &[u8], hash: ItemHash, access: Access, weight: u64, time_ms: i64) {
        let base = *self.base_ms.get_or_insert(time_ms);
        let offset = (time_ms - base) as f64 * weight as f64;
        let key = keyed(hash, access);
        let entries = &mut self.entries;
        if let Some(&i) = self.index.find(key, |&i| {
            keyed(entries[i as usize].hash, entries[i as usize].access) == key
        }) {
            let entry = &mut entries[i as usize];
            entry.weight = entry.weight.saturating_add(weight);
            entry.weighted_time += offset;
            return;
        }
        let start = self.arena.len() as u32;
        self.arena.extend_from_slice(item);
        let index = entries.len() as u32;
        entries.push(Entry {
            hash,
            access,
            weight,
            scale: weight,
            weighted_time: offset,
            start,
            end: self.arena.len() as u32,
        });
        self.index.insert_unique(key, index, |&i| {
            keyed(entries[i as usize].hash, entries[i as usize].access)
        });
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
            || self.arena.len() >= (u32::MAX / 2) as usize
            || self
                .base_ms
                .is_some_and(|base| now_ms - base >= self.horizon_ms)
    }

    /// Counts everything held into `tracker` (keys in the order they first
    /// came) and empties itself.
    pub fn flush_into(&mut self, tracker: &mut KeyTracker) {
        self.flush(|item, hash, access, weight, time, scale| {
            tracker.record_hashed(item, hash, access, weight, time, scale);
        });
    }

    /// Hands every key held to `insert(item, hash, access, weight, mean
    /// time, scale)` in the order the keys first came, and empties itself.
    pub fn flush(&mut self, insert: impl FnMut(&[u8], ItemHash, Access, u64, i64, u64)) {
        self.drain(0, usize::MAX, insert);
        self.clear();
    }

    /// Hands keys `from..from + n` (in the order they first came) to
    /// `insert`; returns where the next step starts ([`Self::len`] once all
    /// are handed). The caller clears it after.
    pub fn drain(
        &mut self,
        from: usize,
        n: usize,
        mut insert: impl FnMut(&[u8], ItemHash, Access, u64, i64, u64),
    ) -> usize {
        let base = self.base_ms.unwrap_or(0);
        let end = from.saturating_add(n).min(self.entries.len());
        for entry in self.entries.get(from..end).unwrap_or_default() {
            let time = base + (entry.weighted_time / entry.weight.max(1) as f64).round() as i64;
            let item = &self.arena[entry.start as usize..entry.end as usize];
            insert(
                item,
                entry.hash,
                entry.access,
                entry.weight,
                time,
                entry.scale,
            );
        }
        end
    }

    /// Forgets everything held.
    pub fn clear(&mut self) {
        self.index.clear();
        self.entries.clear();
        self.arena.clear();
        self.base_ms = None;
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
    use crate::key_tracker::TrackerShape;

    fn tracker() -> KeyTracker {
        KeyTracker::new(
            TrackerShape {
                k: 50,
                half_life_ms: 1e12,
            },
            7,
            0,
        )
    }

    #[test]
    fn a_keys_accesses_become_one_insert_at_their_mean_time() {
        let mut t = tracker();
        let mut c = Coalescer::new(1_000);
        let item = b"\0\0hot";
        let hash = t.hash(item);
        for time in [100, 200, 300] {
            c.add(item, hash, Access::Read, 2, time);
        }
        c.add(item, hash, Access::Write, 1, 150);
        assert_eq!(c.len(), 2, "reads and writes apart");
        c.flush_into(&mut t);
        assert!(c.is_empty());
        let hot = t.key(0, b"hot", 300);
        assert!(
            (hot.reads.count - 6.0).abs() < 1e-6 && (hot.writes.count - 1.0).abs() < 1e-6,
            "{hot:?}"
        );
    }

    #[test]
    fn it_is_due_by_size_or_by_time() {
        let mut c = Coalescer::new(50);
        let hash = ItemHash::of(b"k", 1);
        assert!(!c.is_due(0));
        c.add(b"k", hash, Access::Read, 1, 10);
        assert!(!c.is_due(59));
        assert!(c.is_due(60));
        let mut c = Coalescer::new(1_000_000);
        for i in 0..MAX_KEYS as u64 {
            let item = i.to_be_bytes();
            c.add(&item, ItemHash::of(&item, 1), Access::Read, 1, 0);
        }
        assert!(c.is_due(0));
    }
}
