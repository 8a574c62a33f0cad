//! Counting off the main thread. The command filter only copies each key
//! into a batch; full batches are queued for a worker thread that counts
//! them into the tracker, so a tracked command costs the server's main
//! thread a copy, not a sketch update. Handing a batch over is a push under
//! an uncontended lock, never a system call: the worker is not woken, it
//! looks at the queue every millisecond.
//!
//! The main thread never waits for the worker. When the queue is full (the
//! worker falls behind) a batch is dropped and its accesses counted as
//! dropped (`INFO`: `tracker_accesses_dropped`): the tracker samples, a
//! lost batch is a lower count, never a stalled server. A reader
//! (`HK.HOTKEYS`) counts whatever is still queued itself; the worker holds
//! the tracker for one step of 64 accesses at a time, so the reader's lock
//! waits for at most that.
//!
//! Memory is bounded whatever the keys: a batch holds at most
//! [`BATCH_ACCESSES`] accesses or about [`BATCH_KEY_BYTES`] of keys (a key
//! past 1 KiB is tracked under a 1 KiB name), the queue [`QUEUE`] batches,
//! and an emptied batch gives back what it grew past those bounds.

use heavykeeper_sketch::{KeyBatch, KeyTracker};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

/// Accesses per batch: large enough that handing one over is rare, small
/// enough that a batch is counted in microseconds.
pub const BATCH_ACCESSES: usize = 512;
/// Key bytes after which a batch is handed over however few its accesses.
pub const BATCH_KEY_BYTES: usize = 16 * 1024;
/// Batches that may wait for the worker; past that, batches are dropped.
pub const QUEUE: usize = 64;
/// Accesses the worker counts per hold of the tracker.
const STEP: usize = 64;
/// How often the worker looks at the queue.
const POLL: Duration = Duration::from_millis(1);

#[derive(Default)]
struct Queue {
    waiting: VecDeque<KeyBatch>,
    /// Emptied batches, back for reuse.
    spares: Vec<KeyBatch>,
}

struct Shared {
    tracker: Mutex<KeyTracker>,
    queue: Mutex<Queue>,
    stop: AtomicBool,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// Empties `batch` for reuse, within the bounds.
fn recycle(batch: &mut KeyBatch) {
    batch.clear_within(2 * BATCH_KEY_BYTES, BATCH_ACCESSES);
}

pub struct Worker {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl Worker {
    pub fn start(tracker: KeyTracker) -> Self {
        let shared = Arc::new(Shared {
            tracker: Mutex::new(tracker),
            queue: Mutex::new(Queue::default()),
            stop: AtomicBool::new(false),
        });
        let worker_shared = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("hk-tracker".into())
            .spawn(move || count_batches(&worker_shared))
            .ok();
        Worker { shared, thread }
    }

    fn running(&self) -> bool {
        self.thread.as_ref().is_some_and(|t| !t.is_finished())
    }

    /// Queues `batch` for the worker (leaving an empty one in its place).
    /// Returns the accesses dropped: all of the batch's if the queue is full
    /// or there is no worker, else none.
    pub fn submit(&mut self, batch: &mut KeyBatch) -> u64 {
        if batch.is_empty() {
            return 0;
        }
        let running = self.running();
        let mut queue = lock(&self.shared.queue);
        if running && queue.waiting.len() < QUEUE {
            let spare = queue.spares.pop().unwrap_or_default();
            queue.waiting.push_back(std::mem::replace(batch, spare));
            return 0;
        }
        drop(queue);
        let dropped = batch.len() as u64;
        recycle(batch);
        dropped
    }

    /// The tracker with every access so far counted: what is still queued
    /// (and `pending`) is counted here, not waited for.
    pub fn current(&mut self, pending: &mut KeyBatch) -> MutexGuard<'_, KeyTracker> {
        let mut left: Vec<KeyBatch> = lock(&self.shared.queue).waiting.drain(..).collect();
        let mut tracker = lock(&self.shared.tracker);
        pending.apply_to(&mut tracker);
        for batch in &mut left {
            batch.apply_to(&mut tracker);
            recycle(batch);
        }
        let mut queue = lock(&self.shared.queue);
        let room = QUEUE.saturating_sub(queue.spares.len());
        queue.spares.extend(left.into_iter().take(room));
        tracker
    }

    /// The tracker as counted so far, if no one else holds it right now.
    pub fn try_tracker(&self) -> Option<MutexGuard<'_, KeyTracker>> {
        self.shared.tracker.try_lock().ok()
    }

    /// Heap bytes of the queued and spare batches, if the queue is free now.
    pub fn try_batch_bytes(&self) -> Option<usize> {
        let queue = self.shared.queue.try_lock().ok()?;
        Some(
            queue
                .waiting
                .iter()
                .chain(&queue.spares)
                .map(KeyBatch::heap_bytes)
                .sum(),
        )
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            thread.thread().unpark();
            let _ = thread.join();
        }
    }
}

fn count_batches(shared: &Shared) {
    while !shared.stop.load(Ordering::Relaxed) {
        let next = lock(&shared.queue).waiting.pop_front();
        let Some(mut batch) = next else {
            std::thread::park_timeout(POLL);
            continue;
        };
        batch.apply_in_steps(STEP, |each| each(&mut lock(&shared.tracker)));
        recycle(&mut batch);
        let mut queue = lock(&shared.queue);
        if queue.spares.len() < QUEUE {
            queue.spares.push(batch);
        }
    }
}
