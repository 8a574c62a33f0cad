//! A server's own hot keys: every key access is an arrival in one of two
//! fading HeavyKeeper sketches, reads and writes apart, keyed by database
//! and key. Nothing here knows how the accesses are observed.

use crate::heavykeeper::HeavyKeeper;
use crate::params::Params;
use std::collections::HashMap;

/// How a command used a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
}

/// One hot key as listed: its rates now, in requests per second, and its
/// faded counts.
#[derive(Clone, Debug, PartialEq)]
pub struct HotKey {
    pub db: u16,
    pub key: Vec<u8>,
    pub reads_per_second: f64,
    pub writes_per_second: f64,
    pub count: f64,
}

impl HotKey {
    pub fn rate(&self) -> f64 {
        self.reads_per_second + self.writes_per_second
    }
}

/// The tracker's shape: how many keys it keeps and how fast counts fade.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TrackerShape {
    pub k: u32,
    pub half_life_ms: f64,
}

/// Two fading top-k sketches, one for reads and one for writes.
#[derive(Clone, Debug)]
pub struct KeyTracker {
    shape: TrackerShape,
    reads: HeavyKeeper,
    writes: HeavyKeeper,
    /// `db` (2 bytes, big-endian) then the key: the item a sketch counts.
    item: Vec<u8>,
    keys_counted: u64,
}

impl KeyTracker {
    pub const MAX_K: u32 = 10_000;

    pub fn new(shape: TrackerShape, seed: u64, now_ms: i64) -> Self {
        let params = Params {
            half_life_ms: Some(shape.half_life_ms),
            ..Params::for_k(shape.k.clamp(1, Self::MAX_K), seed)
        };
        Self {
            shape,
            reads: HeavyKeeper::new(params, now_ms),
            writes: HeavyKeeper::new(params, now_ms),
            item: Vec::with_capacity(64),
            keys_counted: 0,
        }
    }

    pub fn shape(&self) -> TrackerShape {
        self.shape
    }

    /// Counts `weight` accesses of `key` in `db` at `now_ms`.
    #[inline]
    pub fn record(&mut self, db: u16, key: &[u8], access: Access, weight: u64, now_ms: i64) {
        self.item.clear();
        self.item.extend_from_slice(&db.to_be_bytes());
        self.item.extend_from_slice(key);
        let sketch = match access {
            Access::Read => &mut self.reads,
            Access::Write => &mut self.writes,
        };
        sketch.add(&self.item, weight, now_ms);
        self.keys_counted = self.keys_counted.saturating_add(weight);
    }

    /// Key accesses counted (sampled ones weighted).
    pub fn keys_counted(&self) -> u64 {
        self.keys_counted
    }

    /// The `count` hottest keys at `now_ms`, hottest first (ties by database
    /// and key): reads, writes, or both together (`None`), where a key's
    /// rate is its read rate plus its write rate.
    pub fn hottest(&self, only: Option<Access>, count: usize, now_ms: i64) -> Vec<HotKey> {
        let mut items: HashMap<&[u8], ()> = HashMap::new();
        if only != Some(Access::Write) {
            items.extend(self.reads.ranked(now_ms).into_iter().map(|r| (r.item, ())));
        }
        if only != Some(Access::Read) {
            items.extend(self.writes.ranked(now_ms).into_iter().map(|r| (r.item, ())));
        }
        let mut hot: Vec<HotKey> = items
            .into_keys()
            .filter_map(|item| self.hot_key(item, only, now_ms))
            .collect();
        hot.sort_by(|a, b| {
            let (ra, rb) = (Self::ranked_rate(a, only), Self::ranked_rate(b, only));
            rb.total_cmp(&ra)
                .then_with(|| a.db.cmp(&b.db))
                .then_with(|| a.key.cmp(&b.key))
        });
        hot.truncate(count);
        hot
    }

    /// One key's rates and count now, listed or not.
    pub fn key(&self, db: u16, key: &[u8], now_ms: i64) -> HotKey {
        let mut item = Vec::with_capacity(key.len() + 2);
        item.extend_from_slice(&db.to_be_bytes());
        item.extend_from_slice(key);
        self.hot_key(&item, None, now_ms).unwrap_or(HotKey {
            db,
            key: key.to_vec(),
            reads_per_second: 0.0,
            writes_per_second: 0.0,
            count: 0.0,
        })
    }

    fn ranked_rate(key: &HotKey, only: Option<Access>) -> f64 {
        match only {
            Some(Access::Read) => key.reads_per_second,
            Some(Access::Write) => key.writes_per_second,
            None => key.rate(),
        }
    }

    fn hot_key(&self, item: &[u8], only: Option<Access>, now_ms: i64) -> Option<HotKey> {
        let (db, key) = item.split_at_checked(2)?;
        let db = u16::from_be_bytes(db.try_into().ok()?);
        let reads = self.reads.count(item, now_ms);
        let writes = self.writes.count(item, now_ms);
        let count = match only {
            Some(Access::Read) => reads,
            Some(Access::Write) => writes,
            None => reads + writes,
        };
        Some(HotKey {
            db,
            key: key.to_vec(),
            reads_per_second: self.reads.rate(reads, now_ms),
            writes_per_second: self.writes.rate(writes, now_ms),
            count,
        })
    }

    /// Bytes held by both sketches, keys included.
    pub fn memory_bytes(&self) -> usize {
        self.reads.memory_bytes() + self.writes.memory_bytes() + self.item.capacity()
    }
}

/// The longest key name the tracker keeps as it is. A longer one is counted
/// under its first bytes, a marker and a hash of the whole name, so that
/// neither the batches nor the tracker's top-k hold a client's megabyte
/// key, and two long keys that share a prefix stay apart.
pub const MAX_TRACKED_KEY_BYTES: usize = 1024;

/// What separates a long key's kept prefix from its hash.
const LONG_KEY_MARKER: &[u8] = b"...#";

/// The name a key is tracked under: the key itself, or for a key longer
/// than [`MAX_TRACKED_KEY_BYTES`], `prefix...#hash` of exactly that length.
pub fn tracked_name(key: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    if key.len() <= MAX_TRACKED_KEY_BYTES {
        return std::borrow::Cow::Borrowed(key);
    }
    let hash = format!("{:016x}", xxhash_rust::xxh3::xxh3_64(key));
    let keep = MAX_TRACKED_KEY_BYTES - LONG_KEY_MARKER.len() - hash.len();
    let mut name = Vec::with_capacity(MAX_TRACKED_KEY_BYTES);
    name.extend_from_slice(key.get(..keep).unwrap_or(key));
    name.extend_from_slice(LONG_KEY_MARKER);
    name.extend_from_slice(hash.as_bytes());
    std::borrow::Cow::Owned(name)
}

/// Key accesses waiting to be counted: gathered where the accesses are seen
/// (cheaply: one copy of the key), counted elsewhere in one go.
#[derive(Clone, Debug, Default)]
pub struct KeyBatch {
    keys: Vec<u8>,
    accesses: Vec<PendingAccess>,
}

#[derive(Clone, Copy, Debug)]
struct PendingAccess {
    db: u16,
    access: Access,
    weight: u64,
    time_ms: i64,
    end: usize,
}

impl KeyBatch {
    /// Adds one access; a key past [`MAX_TRACKED_KEY_BYTES`] under its
    /// [`tracked_name`].
    #[inline]
    pub fn push(&mut self, db: u16, key: &[u8], access: Access, weight: u64, time_ms: i64) {
        if key.len() > MAX_TRACKED_KEY_BYTES {
            return self.push_long(db, key, access, weight, time_ms);
        }
        self.push_name(db, key, access, weight, time_ms);
    }

    /// Apart, so that the common path stays small enough to inline.
    #[cold]
    #[inline(never)]
    fn push_long(&mut self, db: u16, key: &[u8], access: Access, weight: u64, time_ms: i64) {
        self.push_name(db, &tracked_name(key), access, weight, time_ms);
    }

    #[inline]
    fn push_name(&mut self, db: u16, key: &[u8], access: Access, weight: u64, time_ms: i64) {
        self.keys.extend_from_slice(key);
        self.accesses.push(PendingAccess {
            db,
            access,
            weight,
            time_ms,
            end: self.keys.len(),
        });
    }

    pub fn len(&self) -> usize {
        self.accesses.len()
    }

    pub fn is_empty(&self) -> bool {
        self.accesses.is_empty()
    }

    /// Makes every access in the batch weigh `weight`: a sample's weight
    /// known only once the sample is complete.
    pub fn reweight(&mut self, weight: u64) {
        for a in &mut self.accesses {
            a.weight = weight;
        }
    }

    /// Bytes of key held.
    pub fn key_bytes(&self) -> usize {
        self.keys.len()
    }

    /// Heap bytes held (what it holds now or held before it was emptied).
    pub fn heap_bytes(&self) -> usize {
        self.keys.capacity() + self.accesses.capacity() * std::mem::size_of::<PendingAccess>()
    }

    /// Empties the batch and gives back memory past `max_bytes` of keys
    /// and `max_accesses` accesses: one batch of huge keys must not keep
    /// its size for good.
    pub fn clear_within(&mut self, max_bytes: usize, max_accesses: usize) {
        self.keys.clear();
        self.accesses.clear();
        self.keys.shrink_to(max_bytes);
        self.accesses.shrink_to(max_accesses);
    }

    /// Counts every access into `tracker`, in the order they came, and
    /// empties the batch (keeping its memory).
    pub fn apply_to(&mut self, tracker: &mut KeyTracker) {
        self.apply_in_steps(usize::MAX, |each| each(tracker));
    }

    /// As [`Self::apply_to`], `step` accesses at a time, each step counted
    /// into the tracker that `with_tracker` lends for it (a lock taken per
    /// step, so that a reader never waits for a whole batch).
    pub fn apply_in_steps(
        &mut self,
        step: usize,
        mut with_tracker: impl FnMut(&mut dyn FnMut(&mut KeyTracker)),
    ) {
        let mut start = 0;
        for chunk in self.accesses.chunks(step.max(1)) {
            with_tracker(&mut |tracker| {
                for a in chunk {
                    if let Some(key) = self.keys.get(start..a.end) {
                        tracker.record(a.db, key, a.access, a.weight, a.time_ms);
                    }
                    start = a.end;
                }
            });
        }
        self.keys.clear();
        self.accesses.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_keys_are_tracked_under_a_bounded_distinct_name() {
        let short = vec![b'k'; MAX_TRACKED_KEY_BYTES];
        assert_eq!(&*tracked_name(&short), short.as_slice());
        let mut a = vec![b'x'; 1 << 20];
        let b = a.clone();
        a[(1 << 20) - 1] = b'y';
        let (na, nb) = (tracked_name(&a), tracked_name(&b));
        assert_eq!(na.len(), MAX_TRACKED_KEY_BYTES);
        assert_ne!(na, nb, "two long keys with one prefix stay apart");
        assert!(na.starts_with(&a[..512]));
        let mut batch = KeyBatch::default();
        for _ in 0..10 {
            batch.push(0, &a, Access::Read, 1, 0);
        }
        assert_eq!(batch.key_bytes(), 10 * MAX_TRACKED_KEY_BYTES);
        batch.clear_within(4096, 16);
        assert!(batch.heap_bytes() <= 4096 + 16 * std::mem::size_of::<PendingAccess>());
    }

    #[test]
    fn counting_in_steps_counts_what_counting_at_once_does() {
        let shape = TrackerShape {
            k: 10,
            half_life_ms: 1000.0,
        };
        let (mut once, mut steps) = (KeyTracker::new(shape, 1, 0), KeyTracker::new(shape, 1, 0));
        let mut batch = KeyBatch::default();
        for i in 0..500u32 {
            let key = format!("k{}", i % 37);
            batch.push(
                (i % 3) as u16,
                key.as_bytes(),
                Access::Read,
                1,
                i64::from(i),
            );
        }
        let mut copy = batch.clone();
        batch.apply_to(&mut once);
        let mut lent = 0;
        copy.apply_in_steps(64, |each| {
            lent += 1;
            each(&mut steps);
        });
        assert_eq!(lent, 8);
        assert_eq!(once.hottest(None, 10, 500), steps.hottest(None, 10, 500));
        assert!(copy.is_empty());
    }

    #[test]
    fn a_batch_counts_exactly_what_direct_recording_counts() {
        let mut direct = tracker();
        let mut batched = direct.clone();
        let mut batch = KeyBatch::default();
        for i in 0..500u32 {
            let key = format!("k{}", i % 37).into_bytes();
            let access = if i % 3 == 0 {
                Access::Write
            } else {
                Access::Read
            };
            let (db, weight, time) = ((i % 2) as u16, 1 + u64::from(i % 4), i64::from(i));
            direct.record(db, &key, access, weight, time);
            batch.push(db, &key, access, weight, time);
        }
        assert_eq!(batch.len(), 500);
        batch.apply_to(&mut batched);
        assert!(batch.is_empty());
        assert_eq!(
            direct.hottest(None, 100, 500),
            batched.hottest(None, 100, 500)
        );
        assert_eq!(direct.keys_counted(), batched.keys_counted());
    }

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
    fn reads_and_writes_are_apart_and_databases_are_different_keys() {
        let mut t = tracker();
        for _ in 0..50 {
            t.record(0, b"user:1", Access::Read, 1, 0);
        }
        for _ in 0..20 {
            t.record(0, b"user:1", Access::Write, 1, 0);
            t.record(3, b"user:1", Access::Write, 1, 0);
        }
        let both = t.hottest(None, 10, 0);
        assert_eq!(both.len(), 2);
        assert_eq!((both[0].db, both[0].key.as_slice()), (0, &b"user:1"[..]));
        assert!((both[0].count - 70.0).abs() < 1e-6);
        let lambda = std::f64::consts::LN_2 / 10.0;
        assert!((both[0].reads_per_second - 50.0 * lambda).abs() < 1e-9);
        assert!((both[0].writes_per_second - 20.0 * lambda).abs() < 1e-9);
        assert_eq!((both[1].db, both[1].count.round()), (3, 20.0));
        let writes = t.hottest(Some(Access::Write), 10, 0);
        assert_eq!(writes.len(), 2);
        assert!(writes.iter().all(|h| (h.count - 20.0).abs() < 1e-6));
        let reads = t.hottest(Some(Access::Read), 10, 0);
        assert_eq!(reads.len(), 1);
        assert_eq!(t.hottest(None, 1, 0).len(), 1);
        assert_eq!(t.keys_counted(), 90);
    }

    #[test]
    fn sampled_weights_keep_rates_right_and_counts_fade() {
        let mut t = tracker();
        for _ in 0..10 {
            t.record(0, b"k", Access::Read, 16, 0);
        }
        assert!((t.hottest(None, 1, 0)[0].count - 160.0).abs() < 1e-6);
        // One half-life later, half.
        assert!((t.hottest(None, 1, 10_000)[0].count - 80.0).abs() < 1e-6);
    }
}
