//! Counting off the main thread. The command filter only copies each key
//! into a batch; full batches are queued for a worker thread that
//! coalesces them and counts them into the sketches ([`Counting`]), so a
//! tracked command costs the server's main thread a copy, not a sketch
//! update. Handing a batch over is a push under an uncontended lock and a
//! wake-up of the worker if it sleeps (one system call per batch of
//! hundreds of accesses); a worker polling on a timer would wake a thousand
//! times a second and cost more than the counting it does.
//!
//! The main thread never waits for the worker's work: when the queue is
//! full (the worker falls behind) a batch is dropped and its accesses
//! counted as dropped (`INFO`: `tracker_accesses_dropped`). A reader
//! (`HK.HOTKEYS`) counts whatever is still queued itself; the worker holds
//! the sketches for one step (a batch taken in, or [`counting::STEP`]
//! keys counted) at a time, so the reader waits for at most that.
//!
//! The worker keeps itself within a share of a core ([`Worker::set_cpu_share`]:
//! its part of the tracker's budget, or [`WORKER_CPU_SHARE`] where the
//! share of time counted is fixed), measured on its own CPU clock (so on any
//! machine, fast, slow or profiled): every access it is handed is taken in,
//! and what taking them in leaves of its share sets how many sketch inserts
//! a second it makes; past that, the keys that weigh least are thinned
//! without bias ([`crate::sampling::thinning`]) and the keys that matter
//! are inserted whole. A light load is never thinned.
//!
//! Memory is bounded whatever the keys: a batch holds at most
//! [`BATCH_ACCESSES`] accesses or about [`BATCH_KEY_BYTES`] of keys (a key
//! past 1 KiB is tracked under a 1 KiB name), the queue [`QUEUE`] batches,
//! the coalescers a bounded number of keys, and an emptied batch gives back
//! what it grew past those bounds.

pub mod counting;
pub mod key_batch;
pub mod member_runs;
pub mod thread_pool;

use crate::budget::insert_budget::{InsertBudget, PeriodCost};
use crate::budget::thread_clock::{thread_cpu_ns, ThreadClock};
use crate::counting::prefixes::PrefixRule;
use crate::KeyTracker;
use counting::Counting;
use key_batch::KeyBatch;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use thread_pool::{Running, ThreadPool};

/// Accesses per batch: large enough that handing one over is rare, small
/// enough that a batch is taken in within microseconds.
pub const BATCH_ACCESSES: usize = 512;
/// Key bytes after which a batch is handed over however few its accesses.
pub const BATCH_KEY_BYTES: usize = 16 * 1024;
/// Batches that may wait for the worker; past that, batches are dropped.
pub const QUEUE: usize = 64;
/// The longest the worker sleeps with nothing queued: coalesced keys are
/// counted once their horizon has passed, batch or no batch.
const IDLE_WAKE: Duration = Duration::from_millis(100);
/// The most of one core the worker takes before it thins, where the share
/// of time counted is fixed (`track-sample N`).
pub const WORKER_CPU_SHARE: f64 = 0.015;
/// How often the worker weighs its own CPU time.
const BRAKE_PERIOD: Duration = Duration::from_millis(50);

#[derive(Default)]
struct Queue {
    waiting: VecDeque<KeyBatch>,
    /// Emptied batches, back for reuse.
    spares: Vec<KeyBatch>,
}

struct Shared {
    counting: Mutex<Counting>,
    queue: Mutex<Queue>,
    stop: AtomicBool,
    /// The share of a core the worker keeps to (an `f64`'s bits).
    cpu_share: AtomicU64,
    /// Wall time the worker spent thinning, in ms.
    thinned_ms: AtomicU64,
    /// CPU time the worker spent taking accesses in (not inserting), ns.
    absorb_ns: AtomicU64,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// Empties `batch` for reuse, within the bounds.
fn recycle(batch: &mut KeyBatch) {
    batch.clear_within(2 * BATCH_KEY_BYTES, BATCH_ACCESSES);
}

/// The threads workers run on: one at a time in a server, reused by each
/// worker started after it (see [`thread_pool`] for why).
static WORKER_THREADS: ThreadPool = ThreadPool::new();

/// Runs `before_start` right before each new thread a worker will run on
/// starts, on the thread that starts it (the module readies the worker's
/// own heap there, before the new thread allocates anything).
pub fn before_each_new_thread(before_start: fn()) {
    WORKER_THREADS.before_each_new_thread(before_start);
}

pub struct Worker {
    shared: Arc<Shared>,
    running: Option<Running>,
    /// The worker thread's CPU clock, and its reading when this worker began.
    cpu_clock: Option<(ThreadClock, u64)>,
}

impl Worker {
    pub fn start(tracker: KeyTracker) -> Self {
        // Coalesce over a fiftieth of the half-life (10 ms to 1 s): fading
        // cannot tell those accesses apart (their weights differ by < 1.4%).
        let horizon = (tracker.shape().half_life_ms / 50.0).clamp(10.0, 1_000.0) as i64;
        let counting = Counting::new(tracker, horizon, rand::random());
        let shared = Arc::new(Shared {
            counting: Mutex::new(counting),
            queue: Mutex::new(Queue::default()),
            stop: AtomicBool::new(false),
            cpu_share: AtomicU64::new(WORKER_CPU_SHARE.to_bits()),
            thinned_ms: AtomicU64::new(0),
            absorb_ns: AtomicU64::new(0),
        });
        let worker_shared = Arc::clone(&shared);
        let job = Box::new(move || count_batches(&worker_shared));
        let running = WORKER_THREADS.run("hk-tracker", job);
        let clock = running.as_ref().and_then(|r| ThreadClock::of(r.handle()?));
        let cpu_clock = clock.and_then(|c| Some((c, c.now_ns()?)));
        Worker {
            shared,
            running,
            cpu_clock,
        }
    }

    /// Counts afresh with `tracker`, on the same thread: this worker's
    /// work ends first, and its thread takes the new work.
    pub fn restart(&mut self, tracker: KeyTracker) {
        self.stop();
        *self = Worker::start(tracker);
    }

    /// Ends the work, and gives the thread back once it has.
    fn stop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        self.wake();
        drop(self.running.take());
    }

    /// The share of one core the worker keeps to, thinning past it.
    pub fn set_cpu_share(&self, share: f64) {
        self.shared
            .cpu_share
            .store(share.clamp(1e-6, 1.0).to_bits(), Ordering::Relaxed);
    }

    /// How many seconds of its insert rate a burst may take at once (set
    /// when the settings change: it waits for the sketches).
    pub fn set_insert_burst(&self, seconds: f64) {
        lock(&self.shared.counting).set_insert_burst(seconds);
    }

    /// Counts key prefixes by `rule` from now on (`None`: not at all).
    pub fn set_prefixes(&self, rule: Option<PrefixRule>) {
        lock(&self.shared.counting).set_prefixes(rule);
    }

    fn running(&self) -> bool {
        self.running.as_ref().is_some_and(|r| !r.thread_ended())
    }

    fn wake(&self) {
        if let Some(handle) = self.running.as_ref().and_then(Running::handle) {
            handle.thread().unpark();
        }
    }

    /// Queues `batch` for the worker (leaving an empty one in its place).
    /// Returns the accesses dropped (weighted): all of the batch's if the
    /// queue is full or there is no worker, else none.
    pub fn submit(&mut self, batch: &mut KeyBatch) -> u64 {
        if batch.is_empty() {
            return 0;
        }
        let running = self.running();
        let mut queue = lock(&self.shared.queue);
        if running && queue.waiting.len() < QUEUE {
            let spare = queue.spares.pop().unwrap_or_default();
            queue.waiting.push_back(std::mem::replace(batch, spare));
            drop(queue);
            self.wake();
            return 0;
        }
        drop(queue);
        let dropped = batch.weighted_len();
        recycle(batch);
        dropped
    }

    /// The sketches with every access so far counted: what is still
    /// queued (and `pending`) is counted here, not waited for.
    pub fn current(&mut self, pending: &KeyBatch) -> MutexGuard<'_, Counting> {
        let mut left: Vec<KeyBatch> = lock(&self.shared.queue).waiting.drain(..).collect();
        let mut counting = lock(&self.shared.counting);
        for batch in &mut left {
            counting.absorb(batch);
            recycle(batch);
        }
        counting.absorb(pending);
        counting.current();
        let mut queue = lock(&self.shared.queue);
        let room = QUEUE.saturating_sub(queue.spares.len());
        queue.spares.extend(left.into_iter().take(room));
        counting
    }

    /// The sketches as counted so far, if no one else holds them right now.
    pub fn try_counting(&self) -> Option<MutexGuard<'_, Counting>> {
        self.shared.counting.try_lock().ok()
    }

    /// Heap bytes of the queued and spare batches, if the queue is free now.
    pub fn try_batch_bytes(&self) -> Option<usize> {
        let queue = self.shared.queue.try_lock().ok()?;
        let batches = queue.waiting.iter().chain(&queue.spares);
        Some(batches.map(KeyBatch::heap_bytes).sum())
    }

    /// How long the worker has thinned keys so far (ms): 0 means every key
    /// it took in was inserted as it came.
    pub fn thinned_ms(&self) -> u64 {
        self.shared.thinned_ms.load(Ordering::Relaxed)
    }

    /// Of [`Self::cpu_ns`], what taking accesses in took (the part that
    /// grows with the accesses handed over; inserts are the rest).
    pub fn absorb_ns(&self) -> u64 {
        self.shared.absorb_ns.load(Ordering::Relaxed)
    }

    /// The worker thread's CPU time since this worker began, in ns.
    pub fn cpu_ns(&self) -> Option<u64> {
        let (clock, began) = self.cpu_clock.filter(|_| self.running())?;
        Some(clock.now_ns()?.saturating_sub(began))
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.stop();
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

fn count_batches(shared: &Shared) {
    let mut brake = Brake::new();
    while !shared.stop.load(Ordering::Relaxed) {
        let target = f64::from_bits(shared.cpu_share.load(Ordering::Relaxed));
        if let Some(thinned_ms) = brake.weigh(target, &mut lock(&shared.counting)) {
            shared.thinned_ms.fetch_add(thinned_ms, Ordering::Relaxed);
        }
        // A batch taken in, then a step of inserts: neither waits for the
        // other, so what is held never falls far behind.
        let next = lock(&shared.queue).waiting.pop_front();
        let took = next.is_some();
        if let Some(mut batch) = next {
            let started = thread_cpu_ns();
            lock(&shared.counting).make_room(&batch);
            let made_room = thread_cpu_ns();
            brake.period.insert_ns += made_room.saturating_sub(started);
            lock(&shared.counting).absorb(&batch);
            let spent = thread_cpu_ns().saturating_sub(made_room);
            brake.period.absorb_ns += spent;
            shared.absorb_ns.fetch_add(spent, Ordering::Relaxed);
            recycle(&mut batch);
            let mut queue = lock(&shared.queue);
            if queue.spares.len() < QUEUE {
                queue.spares.push(batch);
            }
        }
        let now = now_ms();
        if lock(&shared.counting).has_work(now) {
            let started = thread_cpu_ns();
            lock(&shared.counting).step(now);
            brake.period.insert_ns += thread_cpu_ns().saturating_sub(started);
            continue;
        }
        if !took {
            std::thread::park_timeout(IDLE_WAKE);
        }
    }
}

/// The worker's own costs, measured apart (taking accesses in, inserting
/// keys), and the insert rate they leave room for
/// ([`crate::budget::insert_budget::InsertBudget`]).
struct Brake {
    since: Instant,
    period: PeriodCost,
    budget: InsertBudget,
}

impl Brake {
    fn new() -> Self {
        Self {
            since: Instant::now(),
            period: PeriodCost::default(),
            budget: InsertBudget::new(WORKER_CPU_SHARE),
        }
    }

    /// Every [`BRAKE_PERIOD`]: the period's costs into the budget, the
    /// insert rate that fits into `counting`; how long (ms) the period
    /// thinned keys (`None` between periods).
    fn weigh(&mut self, target: f64, counting: &mut Counting) -> Option<u64> {
        let wall = self.since.elapsed();
        if wall < BRAKE_PERIOD {
            return None;
        }
        self.since = Instant::now();
        let work = counting.take_work();
        let period = PeriodCost {
            wall_ns: wall.as_nanos() as u64,
            inserts: work.inserts,
            ..std::mem::take(&mut self.period)
        };
        self.budget.set_share(target);
        self.budget.observe(period);
        counting.set_insert_rate(self.budget.inserts_per_second());
        Some(if work.thinned > 0 {
            wall.as_millis() as u64
        } else {
            0
        })
    }
}
