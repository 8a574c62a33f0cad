//! Threads kept for the process's life and reused, one job at a time.
//!
//! Why not a fresh thread for each worker: Redis 8's and Valkey 8+'s
//! allocators keep a memory counter for every thread that ever allocated,
//! and sum them all after every command (`call` → `zmalloc_used_memory`).
//! A worker started on a fresh thread (at each `HK.HOTKEYS RESET`, each
//! change of the sketches' shape, each time tracking is turned on) left one
//! more counter behind for good, up to the 20 Valkey keeps apart: the sum
//! costs 14 instructions with one thread, 28 with two and 64 with twenty
//! (Valkey 9.1's, two threads a step), so after twenty resets every
//! command of the server ran ~36 instructions more than after one, 0.8% of
//! a `GET`. (The module gives the worker's thread a heap of its own, so
//! that it never takes the one step from one counter to two either: see
//! [`ThreadPool::before_each_new_thread`].)

use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::thread::JoinHandle;

pub type Job = Box<dyn FnOnce() + Send>;

/// Threads waiting for a job.
pub struct ThreadPool {
    idle: Mutex<Vec<PoolThread>>,
    /// Run by the spawning thread right before each new thread starts.
    before_start: OnceLock<fn()>,
}

impl ThreadPool {
    pub const fn new() -> Self {
        Self {
            idle: Mutex::new(Vec::new()),
            before_start: OnceLock::new(),
        }
    }

    /// Runs `before_start` right before each new thread starts, on the
    /// thread that starts it (the first one set stays).
    pub fn before_each_new_thread(&self, before_start: fn()) {
        let _ = self.before_start.set(before_start);
    }

    /// Runs `job` on an idle thread, or on a new one named `name`.
    pub fn run(&'static self, name: &str, job: Job) -> Option<Running> {
        let before_start = self.before_start.get().copied();
        let thread = (self.idle().pop()).or_else(|| PoolThread::spawn(name, before_start))?;
        thread.jobs.send(job).ok()?;
        Some(Running {
            thread: Some(thread),
            pool: self,
        })
    }

    fn idle(&self) -> MutexGuard<'_, Vec<PoolThread>> {
        self.idle.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Default for ThreadPool {
    fn default() -> Self {
        Self::new()
    }
}

struct PoolThread {
    handle: JoinHandle<()>,
    jobs: Sender<Job>,
    /// A message each time a job has ended.
    ended: Receiver<()>,
}

impl PoolThread {
    fn spawn(name: &str, before_start: Option<fn()>) -> Option<Self> {
        let (jobs, inbox) = channel::<Job>();
        let (end, ended) = channel();
        let builder = std::thread::Builder::new().name(name.into());
        if let Some(before_start) = before_start {
            before_start();
        }
        let handle = builder
            .spawn(move || {
                for job in inbox {
                    job();
                    if end.send(()).is_err() {
                        return;
                    }
                }
            })
            .ok()?;
        Some(Self {
            handle,
            jobs,
            ended,
        })
    }
}

/// A job on a pool's thread. Dropping it waits for the job to end (tell
/// the job to end first), then gives the thread back to its pool.
pub struct Running {
    thread: Option<PoolThread>,
    pool: &'static ThreadPool,
}

impl Running {
    pub fn handle(&self) -> Option<&JoinHandle<()>> {
        self.thread.as_ref().map(|t| &t.handle)
    }

    /// The thread has ended (a job that panicked takes its thread with it).
    pub fn thread_ended(&self) -> bool {
        self.handle().is_none_or(JoinHandle::is_finished)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(thread) = self.thread.take() {
            if thread.ended.recv().is_ok() {
                self.pool.idle().push(thread);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::thread::ThreadId;

    /// Runs a job that sends its thread's id, and lets it end.
    fn thread_of(pool: &'static ThreadPool) -> ThreadId {
        let (id, got) = channel();
        let job = Box::new(move || id.send(std::thread::current().id()).unwrap());
        let running = pool.run("test", job).unwrap();
        let id = got.recv().unwrap();
        drop(running);
        id
    }

    #[test]
    fn a_thread_given_back_runs_the_next_job_and_two_jobs_at_once_run_apart() {
        static POOL: ThreadPool = ThreadPool::new();
        let first = thread_of(&POOL);
        assert_eq!(thread_of(&POOL), first);
        // A job that waits while another runs: the other gets a thread of
        // its own, and the first thread is the one a job finds after.
        let (release, wait) = channel::<()>();
        let held = POOL
            .run("test", Box::new(move || wait.recv().unwrap()))
            .unwrap();
        assert_ne!(thread_of(&POOL), first);
        release.send(()).unwrap();
        drop(held);
        let idle = POOL.idle();
        assert_eq!(idle.len(), 2);
        assert!(idle.iter().all(|t| !t.handle.is_finished()));
    }

    #[test]
    fn a_job_that_panics_takes_its_thread_and_the_pool_goes_on() {
        static POOL: ThreadPool = ThreadPool::new();
        let running = POOL.run("test", Box::new(|| panic!("job"))).unwrap();
        while !running.thread_ended() {
            std::thread::yield_now();
        }
        drop(running);
        assert!(POOL.idle().is_empty());
        thread_of(&POOL);
    }

    #[test]
    fn the_hook_runs_before_each_new_thread_and_not_for_a_reused_one() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static POOL: ThreadPool = ThreadPool::new();
        static STARTS: AtomicUsize = AtomicUsize::new(0);
        POOL.before_each_new_thread(|| {
            STARTS.fetch_add(1, Ordering::SeqCst);
        });
        thread_of(&POOL);
        assert_eq!(STARTS.load(Ordering::SeqCst), 1);
        thread_of(&POOL);
        assert_eq!(STARTS.load(Ordering::SeqCst), 1, "a reused thread");
        let (release, wait) = channel::<()>();
        let held = POOL
            .run("test", Box::new(move || wait.recv().unwrap()))
            .unwrap();
        thread_of(&POOL);
        assert_eq!(STARTS.load(Ordering::SeqCst), 2, "a second thread");
        release.send(()).unwrap();
        drop(held);
    }
}
