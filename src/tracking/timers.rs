//! The tracker's clocks, on the main thread:
//! - the tick, every [`TICK_MS`]: what counting cost and so what share of
//!   time to count ([`heavykeeper_tracker::CostBudget`]), who is let in, the
//!   `hot`/`cool` events;
//! - the slots, every [`SLOT_MS`] while time is sampled: a fresh coin per
//!   slot says whether the filter is registered for it
//!   ([`heavykeeper_tracker::Coverage`]). Between counted slots the filter is
//!   not there at all, so it costs nothing.
//!
//! A config change starts a new generation; a timer of an older one does
//! nothing and is not armed again. The crate runs timer callbacks
//! unguarded: nothing may unwind past them (a panic stops this
//! generation's timers; the log and `INFO`'s `panics_contained` say so; any
//! tracking config change restarts them).

use super::{filter, notify, with_state};
use crate::host::panic_guard::or_fallback;
use crate::host::{module_context, publish};
use heavykeeper_tracker::thread_clock::thread_cpu_ns;
use redis_module::Context;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

pub const TICK_MS: u64 = 100;
/// A slot's mean length: short enough that a burst is a few slots, not one,
/// and that a slot's share of the work stays small; each counted slot costs
/// a filter registration and, on 7.2+, one database question per client
/// seen in it. Each slot's own length is drawn around it (no beat with a
/// periodic client).
pub const SLOT_MS: u64 = 10;

static GENERATION: AtomicU64 = AtomicU64::new(0);
/// The slot timer of the current generation is armed.
static SLOTS_RUNNING: AtomicBool = AtomicBool::new(false);

fn is_current(generation: u64) -> bool {
    GENERATION.load(Ordering::Relaxed) == generation
}

/// After a config change (the state already in line): the filter as the
/// state wants it, and the timers of a new generation.
pub fn restart() {
    let generation = GENERATION.fetch_add(1, Ordering::Relaxed) + 1;
    SLOTS_RUNNING.store(false, Ordering::Relaxed);
    let on = with_state(|s| s.as_ref().map(|t| (t.is_counting(), t.uses_time_slots()))).flatten();
    let Some((counting, slots)) = on else {
        filter::set_registered(false);
        return;
    };
    filter::set_registered(counting);
    let Some(ctx) = module_context::get() else {
        return;
    };
    ctx.create_timer(
        Duration::from_millis(TICK_MS),
        on_tick,
        (generation, Instant::now()),
    );
    if slots {
        start_slots(&ctx, generation);
    }
}

fn start_slots(ctx: &Context, generation: u64) {
    if !SLOTS_RUNNING.swap(true, Ordering::Relaxed) {
        ctx.create_timer(Duration::from_millis(SLOT_MS), on_slot, generation);
    }
}

fn next_slot_length() -> Duration {
    let ms = with_state(|s| s.as_mut().map(|t| t.time_slot_length_ms(SLOT_MS)))
        .flatten()
        .unwrap_or(SLOT_MS);
    Duration::from_millis(ms)
}

fn on_tick(ctx: &Context, (generation, last): (u64, Instant)) {
    if !is_current(generation) {
        return;
    }
    let now = Instant::now();
    let slots = or_fallback("the tracker's tick", None, || {
        tick(ctx, now.duration_since(last))
    });
    let Some(slots) = slots else {
        return;
    };
    if slots {
        start_slots(ctx, generation);
    }
    ctx.create_timer(Duration::from_millis(TICK_MS), on_tick, (generation, now));
}

/// One tick; whether time is cut into slots now (`None`: tracking is off).
fn tick(ctx: &Context, elapsed: Duration) -> Option<bool> {
    let started = thread_cpu_ns();
    let slots = with_state(|state| {
        let t = state.as_mut()?;
        t.tick(ctx, elapsed.as_nanos() as u64);
        Some(t.uses_time_slots())
    })
    .flatten()?;
    if publish::announces(ctx) {
        or_fallback("the tracker's notifications", (), || notify::tick(ctx));
    }
    with_state(|state| state.as_mut().map(|t| t.meter().timed_timer(started)));
    Some(slots)
}

fn on_slot(ctx: &Context, generation: u64) {
    if !is_current(generation) {
        return;
    }
    let next = or_fallback("a tracking slot", None, || slot(ctx));
    match next {
        Some(true) => {
            ctx.create_timer(next_slot_length(), on_slot, generation);
        }
        Some(false) => SLOTS_RUNNING.store(false, Ordering::Relaxed),
        None => {}
    }
}

/// A slot boundary; whether slots go on (`None`: tracking is off).
fn slot(ctx: &Context) -> Option<bool> {
    let started = thread_cpu_ns();
    let (counting, slots) = with_state(|state| {
        let t = state.as_mut()?;
        if !t.uses_time_slots() {
            t.count_everything(ctx);
            return Some((true, false));
        }
        let counting = t.next_time_slot(ctx);
        t.meter().timed_timer(started);
        Some((counting, true))
    })
    .flatten()?;
    filter::set_registered(counting);
    Some(slots)
}
