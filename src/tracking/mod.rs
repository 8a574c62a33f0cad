//! The server's own hot keys: a command filter counts every key a client
//! command touches into a [`KeyTracker`], with no change to the application.
//! Off by default (`heavykeeper.track yes` turns it on); turning it off
//! unregisters the filter, so that it then costs nothing per command.
//! Sampling (`track-sample N`) is by time: the filter is registered only in
//! windows covering one N-th of the time ([`windows`]), and costs nothing
//! in between.
//!
//! Everything here runs on the server's main thread (filters, commands,
//! config callbacks, INFO, timers), so the state is a main-thread cell:
//! reaching it from the filter costs no atomic operation and no
//! thread-local lookup. The counting itself happens on a worker thread (see
//! [`worker`]).

pub mod client_db;
pub mod command_table;
pub mod config;
pub mod filter;
pub mod info;
pub mod notify;
pub mod script_watch;
pub mod windows;
pub mod worker;

use crate::clock;
use client_db::ClientDbs;
use command_table::CommandTable;
use heavykeeper_sketch::{KeyBatch, KeyTracker, TrackerShape};
use script_watch::ScriptWatch;
use std::cell::{Cell, UnsafeCell};
use worker::Worker;

/// The tracker and its counters while tracking is on.
pub struct Tracking {
    shape: TrackerShape,
    /// `track-sample`: the share of the time counted is one in `sample`.
    pub sample: u64,
    /// The counting windows (`None` when every command is counted).
    pub window: Option<windows::Window>,
    /// The server's key specs, read when tracking started.
    pub commands: CommandTable,
    /// Commands that passed the filter, and those of them whose keys were
    /// looked at (all but a script's and a module's).
    pub commands_seen: u64,
    pub commands_sampled: u64,
    /// Accesses seen but not yet handed to the worker (counting every
    /// command; a window holds its own until its cycle ends).
    pub pending: KeyBatch,
    /// Accesses dropped because the worker had fallen behind.
    pub accesses_dropped: u64,
    /// Each client's database, as the server last said.
    pub client_dbs: ClientDbs,
    /// Redis 7.0: whether a script may be running.
    pub scripts: ScriptWatch,
    pub worker: Worker,
    /// Keys announced `hot` on the tracking channel and not yet `cool`.
    pub notified: std::collections::HashSet<(u16, Vec<u8>)>,
}

impl Tracking {
    pub fn shape(&self) -> TrackerShape {
        self.shape
    }

    /// Where the accesses of the command being counted go.
    #[inline]
    pub fn batch(&mut self) -> &mut KeyBatch {
        batch_of(&mut self.window, &mut self.pending)
    }

    /// Is this command one to count? Not once a window holds all it may.
    #[inline]
    pub fn counts_now(&self) -> bool {
        !self.window.as_ref().is_some_and(|w| w.full)
    }

    /// After a command's accesses: hands the pending ones to the worker once
    /// there are enough; a window that holds all it may stops counting.
    #[inline]
    pub fn flush_if_full(&mut self) {
        if let Some(window) = &mut self.window {
            window.stop_if_full();
            return;
        }
        if self.pending.len() >= worker::BATCH_ACCESSES
            || self.pending.key_bytes() >= worker::BATCH_KEY_BYTES
        {
            self.accesses_dropped += self.worker.submit(&mut self.pending);
        }
    }

    /// The tracker with every access so far counted, the current window's
    /// included.
    pub fn current(&mut self) -> std::sync::MutexGuard<'_, KeyTracker> {
        if let Some(window) = &mut self.window {
            let mut held = window.take_provisionally();
            // Counted with what was pending (nothing, between windows' ends).
            self.accesses_dropped += self.worker.submit(&mut held);
        }
        self.worker.current(&mut self.pending)
    }

    /// Heap bytes of everything tracking holds, if none of it is busy now:
    /// both sketches (keys included), the batches, the client table.
    pub fn try_memory_bytes(&self) -> Option<usize> {
        let tracker = self.worker.try_tracker()?.memory_bytes();
        let batches = self.worker.try_batch_bytes()?;
        let window = self.window.as_ref().map_or(0, |w| w.batch.heap_bytes());
        Some(tracker + batches + self.pending.heap_bytes() + window + self.client_dbs.heap_bytes())
    }
}

/// The window's batch if counting in windows, else `pending` (fields apart,
/// for callers that hold another field of the state).
#[inline]
pub fn batch_of<'a>(
    window: &'a mut Option<windows::Window>,
    pending: &'a mut KeyBatch,
) -> &'a mut KeyBatch {
    match window {
        Some(window) => &mut window.batch,
        None => pending,
    }
}

/// The tracking state. Not a thread-local: in a loaded module every access
/// to one is a call (`__tls_get_addr`), paid on every command the filter
/// sees. Everything that reaches it runs on the server's main thread.
struct MainThreadState {
    busy: Cell<bool>,
    value: UnsafeCell<Option<Tracking>>,
}

// SAFETY: reached only from the server's main thread (the filter, commands,
// config callbacks, INFO, the timer, server events); `busy` refuses a
// second, nested borrow.
unsafe impl Sync for MainThreadState {}

static STATE: MainThreadState = MainThreadState {
    busy: Cell::new(false),
    value: UnsafeCell::new(None),
};

/// Clears `busy` however the borrow ends, a panic included.
struct Borrowed;

impl Drop for Borrowed {
    fn drop(&mut self) {
        STATE.busy.set(false);
    }
}

/// Runs `f` on the tracking state (`None` while tracking is off). `None`
/// if the state is already in use further up the stack (never expected).
#[inline]
pub fn with_state<R>(f: impl FnOnce(&mut Option<Tracking>) -> R) -> Option<R> {
    if STATE.busy.replace(true) {
        return None;
    }
    let _borrowed = Borrowed;
    // SAFETY: the main thread only, and `busy` was clear: no other
    // reference to the value exists until `_borrowed` is dropped.
    Some(f(unsafe { &mut *STATE.value.get() }))
}

fn new_tracking(shape: TrackerShape, sample: u64, commands: CommandTable) -> Tracking {
    Tracking {
        shape,
        sample,
        window: windows::Window::for_sample(sample),
        worker: Worker::start(KeyTracker::new(shape, rand::random(), clock::now_ms())),
        pending: KeyBatch::default(),
        accesses_dropped: 0,
        client_dbs: ClientDbs::default(),
        scripts: ScriptWatch::default(),
        notified: Default::default(),
        commands,
        commands_seen: 0,
        commands_sampled: 0,
    }
}

/// Brings the filter and the tracker in line with the configs: registers or
/// unregisters the filter, and starts counting afresh when the shape (k,
/// half-life) changed. A new sampling rate applies from the next command.
pub fn apply_configs() {
    if !filter::is_attached() {
        return; // at load, before init: init applies them
    }
    let wanted = config::tracking_on();
    // Read before touching the state: the server runs a command for us.
    let starting = wanted && with_state(|s| s.is_none()).unwrap_or(false);
    let commands = if starting {
        filter::command_table()
    } else {
        CommandTable::default()
    };
    with_state(|state| {
        if !wanted {
            *state = None;
        } else {
            let shape = config::shape();
            let sample = config::sample();
            match state.as_mut() {
                Some(t) if t.shape() == shape => {
                    if t.sample != sample {
                        t.sample = sample;
                        // A window in progress is dropped: at most one
                        // window's accesses.
                        t.window = windows::Window::for_sample(sample);
                    }
                }
                Some(t) => {
                    let commands = std::mem::take(&mut t.commands);
                    *t = new_tracking(shape, sample, commands);
                }
                None => *state = Some(new_tracking(shape, sample, commands)),
            }
        }
    });
    windows::restart();
}

/// Forgets every count (`HK.HOTKEYS RESET`). False if tracking is off.
/// The counting windows go on as they were: a reset is about counts.
pub fn reset() -> bool {
    with_state(|state| match state.as_mut() {
        Some(t) => {
            let commands = std::mem::take(&mut t.commands);
            let mut fresh = new_tracking(t.shape(), t.sample, commands);
            if let Some(window) = t.window.take() {
                fresh.window = Some(window.emptied());
            }
            *t = fresh;
            true
        }
        None => false,
    })
    .unwrap_or(false)
}
