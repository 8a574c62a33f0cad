//! The server's own hot keys: a command filter counts every key a client
//! command touches into a [`KeyTracker`], with no change to the application.
//! Off by default (`heavykeeper.track yes` turns it on); turning it off
//! unregisters the filter, so that it then costs nothing per command.
//!
//! Everything here runs on the server's main thread (filters, commands,
//! config callbacks, INFO), so the state is a thread-local: reaching it
//! from the filter costs no atomic operation. The counting itself happens
//! on a worker thread (see [`worker`]).

pub mod client_db;
pub mod command_table;
pub mod config;
pub mod filter;
pub mod info;
pub mod notify;
pub mod script_watch;
pub mod worker;

use crate::clock;
use client_db::ClientDbs;
use command_table::CommandTable;
use heavykeeper_sketch::{KeyBatch, KeyTracker, Sampler, TrackerShape};
use script_watch::ScriptWatch;
use std::cell::{Cell, UnsafeCell};
use worker::Worker;

/// The tracker and its counters while tracking is on.
pub struct Tracking {
    shape: TrackerShape,
    pub sampler: Sampler,
    /// The server's key specs, read when tracking started.
    pub commands: CommandTable,
    /// Commands that passed the filter, and those of them that were sampled.
    pub commands_seen: u64,
    pub commands_sampled: u64,
    /// Accesses seen but not yet handed to the worker.
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

    /// Hands the pending accesses to the worker once there are enough.
    #[inline]
    pub fn flush_if_full(&mut self) {
        if self.pending.len() >= worker::BATCH_ACCESSES
            || self.pending.key_bytes() >= worker::BATCH_KEY_BYTES
        {
            self.accesses_dropped += self.worker.submit(&mut self.pending);
        }
    }

    /// Heap bytes of everything tracking holds, if none of it is busy now:
    /// both sketches (keys included), the batches, the client table.
    pub fn try_memory_bytes(&self) -> Option<usize> {
        let tracker = self.worker.try_tracker()?.memory_bytes();
        let batches = self.worker.try_batch_bytes()?;
        Some(tracker + batches + self.pending.heap_bytes() + self.client_dbs.heap_bytes())
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
        worker: Worker::start(KeyTracker::new(shape, rand::random(), clock::now_ms())),
        pending: KeyBatch::default(),
        accesses_dropped: 0,
        client_dbs: ClientDbs::default(),
        scripts: ScriptWatch::new(sample),
        notified: Default::default(),
        sampler: Sampler::new(sample, rand::random()),
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
                    if t.sampler.every() != sample {
                        t.sampler = Sampler::new(sample, rand::random());
                        t.scripts = ScriptWatch::new(sample);
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
    filter::set_registered(wanted);
}

/// Forgets every count (`HK.HOTKEYS RESET`). False if tracking is off.
pub fn reset() -> bool {
    with_state(|state| match state.as_mut() {
        Some(t) => {
            let commands = std::mem::take(&mut t.commands);
            *t = new_tracking(t.shape(), t.sampler.every(), commands);
            true
        }
        None => false,
    })
    .unwrap_or(false)
}
