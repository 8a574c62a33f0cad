//! Ctrl-C and SIGTERM during a rebalance. A first signal asks the run to
//! stop between two slots (the slot in hand is finished, or given back);
//! a second one ends the process at once, as a shell user expects (what
//! that leaves half-way, the next run finishes: see `apply.rs`).
//!
//! The signals never reach the threads that talk to the servers: they are
//! blocked there and taken by one thread of their own that waits for
//! them. A signal handled in a thread blocked in `recv` would interrupt
//! the call, and with the socket timeouts set Linux does not restart it
//! (`EINTR` even with `SA_RESTART`, see signal(7)): a command would fail
//! half-way, not because of the server. The link retries `EINTR` too
//! (`link.rs`), for signals this cannot block.

use nix::sys::signal::{SigSet, Signal};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;

/// The flag a signal sets (its number): checked between two slots.
#[derive(Clone, Debug)]
pub struct Stop(Arc<AtomicI32>);

impl Stop {
    /// A flag no signal sets (for runs that take none, and for tests).
    pub fn never() -> Stop {
        Stop(Arc::new(AtomicI32::new(0)))
    }

    pub fn asked(&self) -> bool {
        self.0.load(Ordering::Relaxed) != 0
    }

    /// The signal that asked, if one did.
    pub fn signal(&self) -> Option<i32> {
        Some(self.0.load(Ordering::Relaxed)).filter(|&s| s != 0)
    }

    pub fn ask(&self, signal: i32) {
        self.0.store(signal, Ordering::Relaxed);
    }
}

/// Blocks SIGINT and SIGTERM in this thread (and so in every thread it
/// starts from now on) and starts the thread that takes them. Called once,
/// first thing, before any other thread is started.
pub fn on_signal_stop() -> Stop {
    let stop = Stop::never();
    let mut signals = SigSet::empty();
    signals.add(Signal::SIGINT);
    signals.add(Signal::SIGTERM);
    if signals.thread_block().is_err() {
        // Without the mask the signals come as they always did: the link's
        // retries still keep an interrupted call from failing the run.
        return stop;
    }
    let flag = stop.clone();
    let spawned = std::thread::Builder::new()
        .name("hk-top-signals".into())
        .spawn(move || wait_for_signals(signals, &flag));
    if spawned.is_err() {
        let _ = signals.thread_unblock();
    }
    stop
}

fn wait_for_signals(signals: SigSet, stop: &Stop) {
    loop {
        let Ok(signal) = signals.wait() else {
            continue;
        };
        if stop.asked() {
            // The second: at once, as a shell reports it.
            std::process::exit(128 + signal as i32);
        }
        stop.ask(signal as i32);
        eprintln!(
            "hk-top rebalance: {signal} received: stopping once the slot in hand is done (again to stop at once)"
        );
    }
}
