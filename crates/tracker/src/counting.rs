//! The counting side: batches of accesses are coalesced, then inserted
//! into the tracker in short steps, so that a reader waiting for the
//! tracker waits for one step, never for a whole flush.
//!
//! Two coalescers take turns: one fills with new accesses while the other
//! drains into the sketches. A reader counts everything still held first
//! (exactly: a reader changes no estimate, only when accesses are counted).
//!
//! Thinning is a brake, not a habit: the caller sets a threshold (1 while
//! counting costs little, see the worker's CPU brake) and accesses below it
//! are thinned on the way in ([`Thinning`]), before they are even hashed:
//! the work is per access kept.

use crate::access::Access;
use crate::coalescer::Coalescer;
use crate::hash_slot::hash_slot;
use crate::key_batch::{split_item, BatchAccess, KeyBatch};
use crate::key_tracker::KeyTracker;
use crate::prefixes::PrefixRule;
use crate::thinning::Thinning;
use heavykeeper_sketch::ItemHash;

/// Keys inserted per step of a drain.
pub const STEP: usize = 256;

/// Where counted accesses go: the tracker's sketches (or, in tests, exact
/// sums).
pub trait Sink {
    /// The seed items are hashed with.
    fn seed(&self) -> u64;
    /// `weight` accesses of `item`, each access seen standing for `scale`.
    fn insert(
        &mut self,
        item: &[u8],
        hash: ItemHash,
        access: Access,
        weight: u64,
        time_ms: i64,
        scale: u64,
    );
    /// The accesses of one batch, as they are taken in (before they are
    /// coalesced): for loads counted exactly, per slot and in all.
    fn batch_loads(&mut self, _batch: &KeyBatch) {}
}

impl Sink for KeyTracker {
    fn seed(&self) -> u64 {
        KeyTracker::seed(self)
    }

    #[inline]
    fn insert(
        &mut self,
        item: &[u8],
        hash: ItemHash,
        access: Access,
        weight: u64,
        time_ms: i64,
        scale: u64,
    ) {
        self.record_hashed(item, hash, access, weight, time_ms, scale);
    }

    /// The node's totals, and each slot's load: every access of the batch
    /// (thinning here would only add noise; this is cheap), at the batch's
    /// middle time (one `exp2` a batch).
    fn batch_loads(&mut self, batch: &KeyBatch) {
        let (first, sealed) = batch.span_ms();
        let time = first + (sealed - first) / 2;
        let weight = f64::from(batch.weight());
        let (totals, slots) = self.loads(time);
        let unit = totals.unit_at(time) * weight;
        let (mut reads, mut writes) = (0.0, 0.0);
        let mut slots = slots.map(|s| {
            let unit = s.unit_at(time) * weight;
            (s, unit)
        });
        for access in batch.iter() {
            match access.access {
                Access::Read => reads += unit,
                Access::Write => writes += unit,
                Access::Miss | Access::Prefix => continue,
            }
            if let (Some((load, unit)), Some((_, key))) = (slots.as_mut(), split_item(access.item))
            {
                load.add_units(hash_slot(key), access.access, *unit);
            }
        }
        totals.add_units(0, reads);
        totals.add_units(1, writes);
    }
}

#[derive(Clone, Debug)]
pub struct Counting<S: Sink = KeyTracker> {
    tracker: S,
    filling: Coalescer,
    draining: Coalescer,
    /// Keys of `draining` already inserted.
    drained: usize,
    thinning: Thinning,
    /// Where keys are cut into prefixes (`None`: prefixes not counted).
    prefixes: Option<PrefixRule>,
    seed: u64,
}

impl<S: Sink> Counting<S> {
    /// Coalescing over `horizon_ms`, nothing thinned.
    pub fn new(tracker: S, horizon_ms: i64, seed: u64) -> Self {
        Self {
            seed: tracker.seed(),
            tracker,
            filling: Coalescer::new(horizon_ms),
            draining: Coalescer::new(horizon_ms),
            drained: 0,
            thinning: Thinning::new(1, seed),
            prefixes: None,
        }
    }

    /// Counts prefixes by `rule` from now on (`None`: not at all).
    pub fn set_prefixes(&mut self, rule: Option<PrefixRule>) {
        self.prefixes = rule;
    }

    /// Accesses standing for fewer than `threshold` are thinned from now
    /// on (1: none).
    pub fn set_threshold(&mut self, threshold: u64) {
        self.thinning.set_threshold(threshold);
    }

    pub fn threshold(&self) -> u64 {
        self.thinning.threshold()
    }

    /// Takes in the accesses of `batch` (thinned if they weigh less than
    /// the threshold), leaving it as it was: the caller recycles it. Due
    /// coalesced keys move to draining first.
    pub fn absorb(&mut self, batch: &KeyBatch) {
        self.tracker.batch_loads(batch);
        let weight = u64::from(batch.weight());
        match self.thinning.plan(weight) {
            None => {
                for access in batch.iter() {
                    self.take(access, weight);
                }
            }
            Some((each, p)) => {
                let mut i = self.thinning.skip(p);
                while let Some(access) = batch.get(i) {
                    self.take(access, each);
                    i += 1 + self.thinning.skip(p);
                }
            }
        }
    }

    #[inline]
    fn take(&mut self, access: BatchAccess<'_>, weight: u64) {
        if self.filling.is_due(access.time_ms) {
            self.rotate();
        }
        let hash = ItemHash::of(access.item, self.seed);
        self.filling
            .add(access.item, hash, access.access, weight, access.time_ms);
        if let (Some(rule), Access::Read | Access::Write) = (&self.prefixes, access.access) {
            let (filling, seed) = (&mut self.filling, self.seed);
            // The prefix of a key is the first bytes of its item (the
            // database, then the key): no copy.
            rule.each_prefix(access.item.get(2..).unwrap_or_default(), |prefix| {
                let item = &access.item[..2 + prefix.len()];
                filling.add(
                    item,
                    ItemHash::of(item, seed),
                    Access::Prefix,
                    weight,
                    access.time_ms,
                );
            });
        }
    }

    /// Moves the filled coalescer to draining (if draining is done, else
    /// drains it whole first).
    fn rotate(&mut self) {
        self.finish_draining();
        std::mem::swap(&mut self.filling, &mut self.draining);
    }

    /// Is there anything to drain, or held long enough to be?
    pub fn has_work(&self, now_ms: i64) -> bool {
        self.drained < self.draining.len() || self.filling.is_due(now_ms)
    }

    /// One step of draining (thinned, as the worker counts): at most
    /// [`STEP`] keys into the tracker. Held keys past their horizon at
    /// `now_ms` start draining.
    pub fn step(&mut self, now_ms: i64) {
        if self.drained >= self.draining.len() {
            self.draining.clear();
            self.drained = 0;
            if !self.filling.is_due(now_ms) {
                return;
            }
            std::mem::swap(&mut self.filling, &mut self.draining);
        }
        let tracker = &mut self.tracker;
        self.drained =
            self.draining
                .drain(self.drained, STEP, |item, hash, access, w, t, scale| {
                    tracker.insert(item, hash, access, w, t, scale);
                });
    }

    fn finish_draining(&mut self) {
        let tracker = &mut self.tracker;
        self.draining.drain(
            self.drained,
            usize::MAX,
            |item, hash, access, w, t, scale| {
                tracker.insert(item, hash, access, w, t, scale);
            },
        );
        self.draining.clear();
        self.drained = 0;
    }

    /// The tracker with every access taken in so far counted (what is
    /// still held, exactly).
    pub fn current(&mut self) -> &S {
        self.finish_draining();
        let tracker = &mut self.tracker;
        self.filling
            .drain(0, usize::MAX, |item, hash, access, w, t, scale| {
                tracker.insert(item, hash, access, w, t, scale);
            });
        self.filling.clear();
        &self.tracker
    }

    /// The tracker as counted so far (what is held not included).
    pub fn tracker(&self) -> &S {
        &self.tracker
    }

    /// Keys held, not yet in the tracker.
    pub fn held(&self) -> usize {
        self.filling.len() + self.draining.len() - self.drained
    }
}

impl Counting<KeyTracker> {
    /// Heap bytes: the sketches and what is held.
    pub fn memory_bytes(&self) -> usize {
        self.tracker.memory_bytes() + self.filling.heap_bytes() + self.draining.heap_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key_tracker::TrackerShape;

    fn counting() -> Counting {
        let shape = TrackerShape {
            k: 20,
            half_life_ms: 1e12,
        };
        Counting::new(KeyTracker::new(shape, 3, 0), 100, 9)
    }

    fn batch(keys: &[&str], weight: u32, at: i64) -> KeyBatch {
        let mut b = KeyBatch::default();
        for k in keys {
            b.push(0, k.as_bytes(), Access::Read, weight, || at);
        }
        b.seal(at);
        b
    }

    #[test]
    fn a_reader_sees_every_access_taken_in() {
        let mut c = counting();
        c.absorb(&batch(&["a", "a", "b"], 4, 10));
        assert_eq!(c.tracker().key(0, b"a", 10).reads.count, 0.0);
        let now = c.current();
        assert!((now.key(0, b"a", 10).reads.count - 8.0).abs() < 1e-6);
        assert!((now.key(0, b"b", 10).reads.count - 4.0).abs() < 1e-6);
    }

    #[test]
    fn the_worker_drains_in_steps_of_bounded_size() {
        let mut c = counting();
        let keys: Vec<String> = (0..1_000).map(|i| format!("k{i}")).collect();
        let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
        c.absorb(&batch(&refs, 1, 0));
        assert!(!c.has_work(50), "held within its horizon");
        assert!(c.has_work(100));
        let mut steps = 0;
        while c.has_work(100) {
            let before = c.held();
            c.step(100);
            assert!(before - c.held() <= STEP);
            steps += 1;
        }
        assert_eq!((steps, c.held()), (1_000usize.div_ceil(STEP), 0));
        assert_eq!(c.tracker().keys_counted(), 1_000);
    }

    #[test]
    fn a_tenant_spread_over_many_keys_is_one_hot_prefix() {
        let mut c = counting();
        c.set_prefixes(PrefixRule::new(b":", &[2]));
        let keys: Vec<String> = (0..2_000)
            .map(|i| {
                if i % 10 < 3 {
                    format!("tenant:7:cart:{i}")
                } else {
                    format!("tenant:u{i}:cart:1")
                }
            })
            .collect();
        let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
        c.absorb(&batch(&refs, 1, 0));
        let top = c
            .current()
            .hottest(crate::key_tracker::Ranking::Prefixes, 3, 0);
        assert_eq!(top[0].key, b"tenant:7:".to_vec());
        assert!((top[0].under.count - 600.0).abs() < 1e-6, "{:?}", top[0]);
        // No single key of the tenant is hot.
        let keys_top = c
            .current()
            .hottest(crate::key_tracker::Ranking::Reads, 1, 0);
        assert!(keys_top[0].reads.count <= 1.0 + 1e-9);
    }

    #[test]
    fn every_slot_and_the_totals_count_every_access_exactly() {
        let mut t = KeyTracker::new(
            TrackerShape {
                k: 20,
                half_life_ms: 1e12,
            },
            3,
            0,
        );
        t.count_slots(0);
        let mut c = Counting::new(t, 100, 9);
        c.set_threshold(8);
        let mut b = KeyBatch::default();
        for i in 0..300 {
            b.push(0, format!("k{}", i % 3).as_bytes(), Access::Read, 2, || 0);
            b.push(0, b"{k0}w", Access::Write, 2, || 0);
        }
        b.seal(0);
        c.absorb(&b);
        // Read 10 s on (the counts do not fade in a 1e12 ms half-life):
        // rates are the counts over those 10 s.
        let close = |rate: f64, count: f64| (rate * 10.0 / count - 1.0).abs() < 1e-6;
        let (reads, writes) = c.tracker().rates(10_000);
        assert!(
            close(reads, 600.0) && close(writes, 600.0),
            "{reads} {writes}"
        );
        let slots = c.tracker().hottest_slots(None, 10, 10_000).unwrap();
        let k0 = hash_slot(b"k0");
        let top = slots.iter().find(|s| s.slot == k0).unwrap();
        // k0's reads (100 × 2) and the {k0} writes (300 × 2) share its slot.
        assert!(close(top.reads_per_second, 200.0) && close(top.writes_per_second, 600.0));
        assert!(close(slots.iter().map(|s| s.total()).sum::<f64>(), 1_200.0));
    }

    #[test]
    fn thinned_accesses_keep_their_expected_count() {
        let mut c = counting();
        c.set_threshold(8);
        let keys: Vec<String> = (0..4_000).map(|i| format!("k{}", i % 4)).collect();
        let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
        c.absorb(&batch(&refs, 1, 0));
        let now = c.current();
        let total: f64 = (0..4)
            .map(|i| now.key(0, format!("k{i}").as_bytes(), 0).reads.count)
            .sum();
        // ~500 kept of 4,000, each standing for 8: within a few percent.
        assert!((total / 4_000.0 - 1.0).abs() < 0.15, "{total}");
        assert_eq!(total % 8.0, 0.0, "each kept access stands for 8");
        // Accesses that weigh the threshold already are all kept.
        let mut c = counting();
        c.set_threshold(8);
        c.absorb(&batch(&refs, 8, 0));
        assert_eq!(c.current().keys_counted(), 32_000);
    }
}
