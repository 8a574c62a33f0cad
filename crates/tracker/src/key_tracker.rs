//! A server's own hot keys: every key access is an arrival in one of three
//! fading HeavyKeeper sketches (reads, writes, and reads that missed),
//! keyed by database and key. Nothing here knows how accesses are observed.

use crate::access::Access;
use heavykeeper_sketch::{HeavyKeeper, ItemHash, Params};
use std::collections::HashSet;

/// One kind of access to a key: its faded count and its rate now.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Tally {
    pub count: f64,
    pub per_second: f64,
}

/// One hot key as listed.
#[derive(Clone, Debug, PartialEq)]
pub struct HotKey {
    pub db: u16,
    pub key: Vec<u8>,
    pub reads: Tally,
    pub writes: Tally,
    /// Reads of the key while it did not exist (a subset of `reads`).
    pub misses: Tally,
}

impl HotKey {
    /// Reads and writes together.
    pub fn total(&self) -> Tally {
        Tally {
            count: self.reads.count + self.writes.count,
            per_second: self.reads.per_second + self.writes.per_second,
        }
    }

    /// What `ranking` ranks this key by.
    pub fn ranked(&self, ranking: Ranking) -> Tally {
        match ranking {
            Ranking::Reads => self.reads,
            Ranking::Writes => self.writes,
            Ranking::Total => self.total(),
            Ranking::Misses => self.misses,
        }
    }
}

/// What a listing ranks keys by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ranking {
    Reads,
    Writes,
    /// Reads plus writes.
    Total,
    Misses,
}

/// The tracker's shape: how many keys it keeps and how fast counts fade.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TrackerShape {
    pub k: u32,
    pub half_life_ms: f64,
}

#[derive(Clone, Debug)]
pub struct KeyTracker {
    shape: TrackerShape,
    reads: HeavyKeeper,
    writes: HeavyKeeper,
    misses: HeavyKeeper,
    seed: u64,
    keys_counted: u64,
}

/// The tracker's decay (`1/b`): a sampled access weighs up to thousands,
/// and a weighted arrival that meets a smaller bucket decrements it level by
/// level while its coins succeed: with b close to 1 (the sketches' default
/// 0.995) that is up to `ln(w) / ln(b)` levels, ~1,200 for w = 500, each a
/// pair of logarithms. At 0.9 it is ~60. Fading, not the decay, is what lets
/// a tracker's old keys go (`make bench`: "Tracking", precision at 0.9).
pub const TRACKER_DECAY: f64 = 0.9;

impl KeyTracker {
    pub const MAX_K: u32 = 10_000;

    pub fn new(shape: TrackerShape, seed: u64, now_ms: i64) -> Self {
        let params = Params {
            half_life_ms: Some(shape.half_life_ms),
            decay: TRACKER_DECAY,
            ..Params::for_k(shape.k.clamp(1, Self::MAX_K), seed)
        };
        Self {
            shape,
            reads: HeavyKeeper::new(params, now_ms),
            writes: HeavyKeeper::new(params, now_ms),
            misses: HeavyKeeper::new(params, now_ms),
            seed,
            keys_counted: 0,
        }
    }

    pub fn shape(&self) -> TrackerShape {
        self.shape
    }

    /// The seed of every sketch's hash.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The hash every sketch of this tracker gives `item` (its database
    /// then its key).
    #[inline]
    pub fn hash(&self, item: &[u8]) -> ItemHash {
        ItemHash::of(item, self.seed)
    }

    /// Counts `weight` accesses of `item` (database, then key) hashed by
    /// [`Self::hash`] at `time_ms`, from a stream in which each access seen
    /// stands for `scale` (1: every access seen).
    pub fn record_hashed(
        &mut self,
        item: &[u8],
        hash: ItemHash,
        access: Access,
        weight: u64,
        time_ms: i64,
        scale: u64,
    ) {
        let sketch = match access {
            Access::Read => &mut self.reads,
            Access::Write => &mut self.writes,
            Access::Miss => &mut self.misses,
        };
        sketch.add_sampled(item, hash, weight, time_ms, scale as f64);
        if access != Access::Miss {
            self.keys_counted = self.keys_counted.saturating_add(weight);
        }
    }

    /// Counts `weight` accesses of `key` in `db` at `time_ms`.
    pub fn record(&mut self, db: u16, key: &[u8], access: Access, weight: u64, time_ms: i64) {
        let item = item_of(db, key);
        let hash = self.hash(&item);
        self.record_hashed(&item, hash, access, weight, time_ms, weight);
    }

    /// Key accesses counted, reads and writes (sampled ones weighted).
    pub fn keys_counted(&self) -> u64 {
        self.keys_counted
    }

    /// The `count` hottest keys at `now_ms` by `ranking`, hottest first
    /// (ties by database and key).
    pub fn hottest(&self, ranking: Ranking, count: usize, now_ms: i64) -> Vec<HotKey> {
        let sketches: &[&HeavyKeeper] = match ranking {
            Ranking::Reads => &[&self.reads],
            Ranking::Writes => &[&self.writes],
            Ranking::Total => &[&self.reads, &self.writes],
            Ranking::Misses => &[&self.misses],
        };
        let items: HashSet<&[u8]> = sketches
            .iter()
            .flat_map(|s| s.ranked(now_ms).into_iter().map(|r| r.item))
            .collect();
        let mut hot: Vec<HotKey> = items
            .into_iter()
            .filter_map(|item| self.hot_key(item, now_ms))
            .collect();
        hot.sort_by(|a, b| {
            b.ranked(ranking)
                .count
                .total_cmp(&a.ranked(ranking).count)
                .then_with(|| a.db.cmp(&b.db))
                .then_with(|| a.key.cmp(&b.key))
        });
        hot.truncate(count);
        hot
    }

    /// One key's tallies now, listed or not.
    pub fn key(&self, db: u16, key: &[u8], now_ms: i64) -> HotKey {
        let item = item_of(db, key);
        self.hot_key(&item, now_ms).unwrap_or(HotKey {
            db,
            key: key.to_vec(),
            reads: Tally::default(),
            writes: Tally::default(),
            misses: Tally::default(),
        })
    }

    fn hot_key(&self, item: &[u8], now_ms: i64) -> Option<HotKey> {
        let (db, key) = crate::key_batch::split_item(item)?;
        let tally = |sketch: &HeavyKeeper| {
            let count = sketch.count(item, now_ms);
            Tally {
                count,
                per_second: sketch.rate(count, now_ms),
            }
        };
        Some(HotKey {
            db,
            key: key.to_vec(),
            reads: tally(&self.reads),
            writes: tally(&self.writes),
            misses: tally(&self.misses),
        })
    }

    /// Bytes held by the sketches, keys included.
    pub fn memory_bytes(&self) -> usize {
        self.reads.memory_bytes() + self.writes.memory_bytes() + self.misses.memory_bytes()
    }
}

/// A tracker item: `db` (2 bytes, big-endian), then the key.
pub fn item_of(db: u16, key: &[u8]) -> Vec<u8> {
    let mut item = Vec::with_capacity(key.len() + 2);
    item.extend_from_slice(&db.to_be_bytes());
    item.extend_from_slice(key);
    item
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tracker() -> KeyTracker {
        KeyTracker::new(
            TrackerShape {
                k: 10,
                half_life_ms: 10_000.0,
            },
            1,
            0,
        )
    }

    #[test]
    fn reads_writes_and_misses_are_apart_and_databases_are_different_keys() {
        let mut t = tracker();
        for _ in 0..50 {
            t.record(0, b"user:1", Access::Read, 1, 0);
        }
        for _ in 0..20 {
            t.record(0, b"user:1", Access::Write, 1, 0);
            t.record(3, b"user:1", Access::Write, 1, 0);
        }
        for _ in 0..5 {
            t.record(2, b"gone", Access::Miss, 1, 0);
        }
        let both = t.hottest(Ranking::Total, 10, 0);
        assert_eq!(both.len(), 2, "misses are not in the total ranking");
        assert_eq!((both[0].db, both[0].key.as_slice()), (0, &b"user:1"[..]));
        assert!((both[0].total().count - 70.0).abs() < 1e-6);
        let lambda = std::f64::consts::LN_2 / 10.0;
        assert!((both[0].reads.per_second - 50.0 * lambda).abs() < 1e-9);
        assert!((both[0].writes.per_second - 20.0 * lambda).abs() < 1e-9);
        assert_eq!((both[1].db, both[1].total().count.round()), (3, 20.0));
        let writes = t.hottest(Ranking::Writes, 10, 0);
        assert_eq!(writes.len(), 2);
        assert_eq!(t.hottest(Ranking::Reads, 10, 0).len(), 1);
        let misses = t.hottest(Ranking::Misses, 10, 0);
        assert_eq!((misses.len(), misses[0].db), (1, 2));
        assert!((misses[0].misses.count - 5.0).abs() < 1e-6);
        assert_eq!(t.hottest(Ranking::Total, 1, 0).len(), 1);
        assert_eq!(t.keys_counted(), 90);
    }

    #[test]
    fn sampled_weights_keep_rates_right_and_counts_fade() {
        let mut t = tracker();
        for _ in 0..10 {
            t.record(0, b"k", Access::Read, 16, 0);
        }
        assert!((t.key(0, b"k", 0).reads.count - 160.0).abs() < 1e-6);
        // One half-life later, half.
        assert!((t.key(0, b"k", 10_000).reads.count - 80.0).abs() < 1e-6);
    }
}
