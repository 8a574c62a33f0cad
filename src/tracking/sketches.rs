//! The sketches and the accesses on their way to them: the worker that
//! counts, what it counts with (the sketches' shape, each hash slot's load
//! too on a cluster node, where keys are cut into prefixes), the batch the
//! filter fills for it, and the node's rates as last read. Counting afresh
//! is a fresh worker.

use crate::host::{allocator, clock};
use heavykeeper_tracker::counting::prefixes::PrefixRule;
use heavykeeper_tracker::worker::{self, counting::Counting, key_batch::KeyBatch};
use heavykeeper_tracker::{KeyTracker, Tally, TrackerShape, Worker};
use std::sync::MutexGuard;

/// What is counted besides the keys.
#[derive(Clone, Copy)]
pub struct Besides {
    /// Each hash slot's load (in a cluster).
    pub hash_slots: bool,
    /// Who sends each member's accesses (where the server names clients).
    pub clients: bool,
}

impl Besides {
    pub fn new(hash_slots: bool, clients: bool) -> Self {
        Self {
            hash_slots,
            clients,
        }
    }
}

pub struct Sketches {
    worker: Worker,
    shape: TrackerShape,
    besides: Besides,
    /// Where keys are cut into prefixes (`None`: prefixes not counted).
    prefixes: Option<PrefixRule>,
    /// Accesses gathered for the worker.
    batch: KeyBatch,
    /// Accesses dropped: the worker's queue was full.
    dropped: u64,
    /// The node's reads and writes (all keys), as last read.
    rates: (Tally, Tally),
}

/// What the worker's own heap needs for sketches of `shape`: twice what
/// the worker grew of its state over a million keys read and written
/// (Redis unstable, clients counted, misses on or off: 1.76 MB at `track-k
/// 100`, 2.56-2.61 MB at 1000, 8.6 MB at 10,000), room for a table that
/// doubles as it grows.
fn worker_heap_bytes(shape: TrackerShape) -> usize {
    2 * ((1700 << 10) + 900 * shape.k as usize)
}

impl Sketches {
    pub fn new(shape: TrackerShape, besides: Besides) -> Self {
        // The worker allocates from a heap of its own, not the server's
        // (`host::thread_heap` says why).
        allocator::reserve_worker_heap(worker_heap_bytes(shape));
        worker::before_each_new_thread(allocator::give_next_thread_the_worker_heap);
        Self {
            worker: Worker::start(fresh_tracker(shape, besides)),
            shape,
            besides,
            prefixes: None,
            batch: KeyBatch::default(),
            dropped: 0,
            rates: Default::default(),
        }
    }

    /// Counts afresh in sketches of `shape`: every count forgotten, what
    /// was gathered too.
    pub fn restart(&mut self, shape: TrackerShape) {
        allocator::reserve_worker_heap(worker_heap_bytes(shape));
        self.shape = shape;
        self.worker.restart(fresh_tracker(shape, self.besides));
        self.worker.set_prefixes(self.prefixes.clone());
        self.batch.clear();
    }

    pub fn shape(&self) -> TrackerShape {
        self.shape
    }

    /// Keys cut by `prefixes` from now on (prefixes counted under an old
    /// rule fade like any other).
    pub fn set_prefixes(&mut self, prefixes: Option<PrefixRule>) {
        if prefixes != self.prefixes {
            self.worker.set_prefixes(prefixes.clone());
            self.prefixes = prefixes;
        }
    }

    pub fn worker(&self) -> &Worker {
        &self.worker
    }

    /// The batch the filter fills.
    #[inline]
    pub fn batch(&mut self) -> &mut KeyBatch {
        &mut self.batch
    }

    /// Is the batch large enough to hand over?
    #[inline]
    pub fn batch_full(&self) -> bool {
        self.batch.len() >= worker::BATCH_ACCESSES
            || self.batch.item_bytes() >= worker::BATCH_KEY_BYTES
    }

    /// The periodic tick: the node's rates refreshed, the worker's heap
    /// grown if it nearly filled.
    pub fn tick(&mut self) {
        self.rates(None);
        allocator::grow_worker_heap();
    }

    /// The batch goes to the worker (dropped if its queue is full).
    pub fn submit(&mut self) {
        self.batch.seal(clock::now_ms());
        self.dropped += self.worker.submit(&mut self.batch);
    }

    /// The sketches with every access so far counted, the batch's too
    /// unless `batch_too` is false (its slot may yet be discarded).
    pub fn current(&mut self, batch_too: bool) -> MutexGuard<'_, Counting> {
        if !batch_too {
            return self.worker.current(&KeyBatch::default());
        }
        let counting = self.worker.current(&self.batch);
        self.batch.clear();
        counting
    }

    /// The node's read and write rates now: with every access so far
    /// counted (`Some(batch_too)`, see [`Self::current`]); else if the
    /// worker does not hold the sketches this moment, or as last read.
    pub fn rates(&mut self, wait: Option<bool>) -> (Tally, Tally) {
        let now = clock::now_ms();
        if let Some(batch_too) = wait {
            let rates = self.current(batch_too).tracker().rates(now);
            self.rates = rates;
        } else if let Some(counting) = self.worker.try_counting() {
            self.rates = counting.tracker().rates(now);
        }
        self.rates
    }

    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Heap bytes of the sketches (keys included) and the batches, if none
    /// of them is busy now.
    pub fn try_memory_bytes(&self) -> Option<usize> {
        let counting = self.worker.try_counting()?.memory_bytes();
        Some(counting + self.worker.try_batch_bytes()? + self.batch.heap_bytes())
    }
}

/// Sketches of `shape` counting afresh, and what `besides` says.
fn fresh_tracker(shape: TrackerShape, besides: Besides) -> KeyTracker {
    let now = clock::now_ms();
    let mut tracker = KeyTracker::new(shape, rand::random(), now);
    if besides.hash_slots {
        tracker.count_hash_slots(now);
    }
    if besides.clients {
        tracker.count_clients(now);
    }
    tracker
}
