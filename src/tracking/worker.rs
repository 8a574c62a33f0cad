//! Counting off the main thread. The command filter only copies each key
//! into a batch; full batches are queued for a worker thread that counts
//! them into the tracker, so a tracked command costs the server's main
//! thread a copy, not a sketch update. Handing a batch over is a push under
//! an uncontended lock, never a system call: the worker is not woken, it
//! looks at the queue every millisecond. When the queue is full (the worker
//! falls behind) the main thread counts the batch itself: nothing is ever
//! dropped. Readers first wait until everything queued so far is counted.

use heavykeeper_sketch::{KeyBatch, KeyTracker};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

/// Accesses per batch: large enough that handing one over is rare, small
/// enough that a batch is counted in microseconds.
pub const BATCH_ACCESSES: usize = 512;
/// Batches that may wait for the worker before the main thread helps.
const QUEUE: usize = 256;
/// How often the worker looks at the queue.
const POLL: Duration = Duration::from_millis(1);

#[derive(Default)]
struct Queue {
    waiting: Vec<KeyBatch>,
    /// Emptied batches, back for reuse.
    spares: Vec<KeyBatch>,
    /// Batches queued and batches counted, ever.
    queued: u64,
    counted: u64,
}

struct Shared {
    tracker: Mutex<KeyTracker>,
    queue: Mutex<Queue>,
    progress: Condvar,
    stop: AtomicBool,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
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
            progress: Condvar::new(),
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

    /// Queues `batch` for the worker (leaving an empty one in its place), or
    /// counts it here if the queue is full or there is no worker.
    pub fn submit(&mut self, batch: &mut KeyBatch) {
        if batch.is_empty() {
            return;
        }
        let running = self.running();
        let mut queue = lock(&self.shared.queue);
        let spare = queue.spares.pop().unwrap_or_default();
        let full = std::mem::replace(batch, spare);
        if running && queue.waiting.len() < QUEUE {
            queue.waiting.push(full);
            queue.queued += 1;
            return;
        }
        drop(queue);
        let mut full = full;
        full.apply_to(&mut lock(&self.shared.tracker));
        *batch = full;
    }

    /// The tracker with every access so far counted: queues `pending` and
    /// waits for the worker to count everything queued.
    pub fn synced(&mut self, pending: &mut KeyBatch) -> MutexGuard<'_, KeyTracker> {
        self.submit(pending);
        let mut queue = lock(&self.shared.queue);
        while queue.counted < queue.queued && self.running() {
            queue = self
                .shared
                .progress
                .wait_timeout(queue, POLL * 10)
                .map(|(q, _)| q)
                .unwrap_or_else(|p| p.into_inner().0);
        }
        // A worker that died left its batches: count them here.
        let left: Vec<KeyBatch> = queue.waiting.drain(..).collect();
        drop(queue);
        let mut tracker = lock(&self.shared.tracker);
        for mut batch in left {
            batch.apply_to(&mut tracker);
        }
        tracker
    }

    /// The tracker as counted so far, if no one else holds it right now.
    pub fn try_tracker(&self) -> Option<MutexGuard<'_, KeyTracker>> {
        self.shared.tracker.try_lock().ok()
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
        let batches: Vec<KeyBatch> = std::mem::take(&mut lock(&shared.queue).waiting);
        if batches.is_empty() {
            std::thread::park_timeout(POLL);
            continue;
        }
        let mut counted = Vec::with_capacity(batches.len());
        {
            let mut tracker = lock(&shared.tracker);
            for mut batch in batches {
                batch.apply_to(&mut tracker);
                counted.push(batch);
            }
        }
        let mut queue = lock(&shared.queue);
        queue.counted += counted.len() as u64;
        queue.spares.extend(counted.into_iter().take(QUEUE));
        shared.progress.notify_all();
    }
}
