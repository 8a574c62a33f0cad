//! The server's own hot keys: a command filter counts every key a client
//! command touches, with no change to the application. Off by default
//! (`heavykeeper.track yes` turns it on); turning it off unregisters the
//! filter, so that it then costs nothing per command.
//!
//! How much is counted follows what counting costs ([`timers`],
//! [`heavykeeper_tracker::budget::cost_budget::CostBudget`]): every command where that fits
//! within `track-cpu-millicores`, else slots of time chosen by a fresh coin
//! each ([`heavykeeper_tracker::sampling::coverage::Coverage`]), between which the filter is not
//! registered at all. Counts are unbiased either way.
//!
//! Everything here runs on the server's main thread (filters, key-miss
//! events, commands, config callbacks, INFO, timers), so the state is a
//! main-thread cell: reaching it from the filter costs no atomic operation
//! and no thread-local lookup. The counting itself happens on a worker
//! thread ([`heavykeeper_tracker::worker`]).

#![deny(unsafe_code)]

pub mod auth;
pub mod command_table;
pub mod config;
pub mod config_events;
pub mod cost;
pub mod filter;
pub mod info;
pub mod keys;
pub mod misses;
pub mod notify;
pub mod routing;
pub mod senders;
pub mod served;
pub mod sketches;
pub mod state;
pub mod time_slots;
pub mod timers;
pub mod who;

use crate::host::main_thread_cell::MainThreadCell;
use heavykeeper_tracker::counting::hash_slot_load::HashSlotRate;
use heavykeeper_tracker::{Access, HotKey, KeyTracker, Picked, Ranking};
use redis_module::ContextFlags;
use state::Tracking;

/// The tracking state (`None` while tracking is off).
static STATE: MainThreadCell<Option<Tracking>> = MainThreadCell::new(None);

/// Runs `f` on the tracking state (`None` while tracking is off). `None`
/// if the state is already in use further up the stack (never expected).
#[inline]
pub fn with_state<R>(f: impl FnOnce(&mut Option<Tracking>) -> R) -> Option<R> {
    STATE.with(f)
}

/// Brings the filter and the tracker in line with the configs: registers or
/// unregisters the filter, and starts counting afresh when the shape (k,
/// half-life) changed. Sampling, budget and misses apply from now on.
pub fn apply_configs() {
    let Some(ctx) = crate::host::module_context::get() else {
        return; // at load, before init: init applies them
    };
    let wanted = config::tracking_on();
    // Read before touching the state: the server runs a command for us.
    let starting = wanted && with_state(|s| s.is_none()).unwrap_or(false);
    let commands = starting.then(filter::command_table).unwrap_or_default();
    if wanted && config::misses_on() {
        misses::subscribe(&ctx);
    }
    with_state(|state| {
        if !wanted {
            *state = None;
            return;
        }
        let (shape, sampling) = (config::shape(), config::sampling());
        match state {
            Some(t) => t.reshape(shape),
            None => {
                *state = Some(Tracking::new(
                    shape,
                    sampling,
                    config::cpu_budget(),
                    commands,
                    filter::names_clients(),
                    ctx.get_flags().contains(ContextFlags::CLUSTER),
                ));
            }
        }
        if let Some(t) = state.as_mut() {
            t.configure(
                sampling,
                config::cpu_budget(),
                config::misses_on(),
                config::prefix_rule(),
            );
            t.refresh_users(&ctx);
            if !t.wants_time_slots() && !t.is_counting() {
                // Sampling ended between slots: every command is counted
                // from now (a counted slot open goes on to its end first).
                t.count_everything(&ctx);
            }
        }
    });
    timers::restart();
}

/// Forgets every count (`HK.HOTKEYS RESET`). False if tracking is off.
/// The slots and the share counted go on as they were: a reset is about
/// counts.
pub fn reset() -> bool {
    with_state(|state| state.as_mut().map(Tracking::reset).is_some()).unwrap_or(false)
}

/// The `count` hottest keys now by `ranking` (every access so far
/// counted), only those the noise of what the node serves could not have
/// made unless `noise` (then those too, marked); `None` while tracking is
/// off.
pub fn hottest(ranking: Ranking, count: usize, noise: bool) -> Option<Vec<Picked<HotKey>>> {
    let list = |k: &KeyTracker, now| Some(k.listed(ranking, count, now, noise));
    with_state(|state| state.as_mut()?.listed(list)).flatten()
}

/// The `count` hottest cluster slots now (by `by`, or reads and writes
/// together; see [`hottest`] for `noise`): `None` while tracking is off,
/// `Some(None)` outside a cluster.
pub fn hottest_hash_slots(
    by: Option<Access>,
    count: usize,
    noise: bool,
) -> Option<Option<Vec<Picked<HashSlotRate>>>> {
    let list = |k: &KeyTracker, now| k.hottest_hash_slots(by, count, now, noise);
    with_state(|state| state.as_mut().map(|t| t.listed(list))).flatten()
}

/// Whether the tracker is on (for `INFO`: a sampling tracker is on whether
/// or not a slot is counted now).
pub fn counting() -> bool {
    config::tracking_on() && with_state(|s| s.is_some()).unwrap_or(false)
}
