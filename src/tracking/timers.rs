//! The tracker's clocks, on the main thread:
//! - the tick, every [`TICK_MS`]: what counting cost and so what share of
//!   time to count ([`heavykeeper_tracker::budget::cost_budget::CostBudget`]), who is let in, the
//!   `hot`/`cool` events;
//! - the slots, while time is sampled: the filter is registered for the
//!   counted slots only (which those are: [`heavykeeper_tracker::sampling::coverage::Coverage`]),
//!   and between them it is not there at all, so it costs nothing.
//!
//! **Slot edges are exact to the pass.** The server runs commands in passes
//! of its event loop, and its timers only between them, on a millisecond
//! grid and late by whatever pass was running. An edge made by a timer
//! lands where the traffic put it: a long pass (a pipeline of a key) delays
//! an opening, and a 1 ms slot opened half a millisecond late closed at
//! once (its closing timer rounded to no wait), so exactly the slots that
//! followed a key's pipelines were cut short: a key read in a pipeline every
//! 10 ms read 0.62-0.70 of its truth beside a saturating load (Redis 7.0,
//! 1 ms slots), where the node's total read true. So the slot timer wakes
//! two to three milliseconds before an edge (the server runs a module
//! timer up to two late: [`timer_ms`]), and the edge is made at the start
//! of the first pass that begins at or after its planned instant
//! ([`event_loop`]): a pass is counted exactly when its start falls in a
//! counted slot's planned span, with probability `1 / every` whatever it
//! holds, and each access counted stands for `every` (no allowance for
//! late timers); or when it is the first pass at or after a counted slot's
//! opening, begun after a pass longer than a slot, standing for one over
//! that chance (`super::time_slots`): so the passes heard before an edge
//! are timed, the last one's start kept ([`LAST_PASS`]). Passes are heard
//! only for those last milliseconds.
//!
//! A config change starts a new generation; a timer of an older one does
//! nothing and is not armed again. The crate runs timer callbacks
//! unguarded: nothing may unwind past them (a panic stops this
//! generation's timers; the log and `INFO`'s `panics_contained` say so; any
//! tracking config change restarts them).

use super::state::Tracking;
use super::{filter, notify, with_state};
use crate::host::event_loop;
use crate::host::panic_guard::or_fallback;
use crate::host::{module_context, publish};
use heavykeeper_tracker::budget::thread_clock::thread_cpu_ns;
use redis_module::Context;
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

pub const TICK_MS: u64 = 100;

static GENERATION: AtomicU64 = AtomicU64::new(0);
/// The slot timer of the current generation is armed.
static SLOTS_RUNNING: AtomicBool = AtomicBool::new(false);
/// The generation whose next slot edge the event loop's passes are heard
/// for (0: none).
static EDGE_AWAITED: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// When the last pass heard began, while passes have been heard without
    /// a break since: how long the pass before an edge's took.
    static LAST_PASS: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// Passes were not heard since the last one kept (or never): the pass
/// before the next one heard is unknown.
fn forget_last_pass() {
    LAST_PASS.with(|c| c.set(None));
}

/// Hears the event loop's passes (at load, once the module's context
/// exists); none is heard until a slot edge is near.
pub fn attach() -> Result<(), String> {
    event_loop::on_pass_begun(on_pass)
}

fn is_current(generation: u64) -> bool {
    GENERATION.load(Ordering::Relaxed) == generation
}

/// After a config change (the state already in line): the filter as the
/// state wants it, and the timers of a new generation.
pub fn restart() {
    let generation = GENERATION.fetch_add(1, Ordering::Relaxed) + 1;
    SLOTS_RUNNING.store(false, Ordering::Relaxed);
    let on = with_state(|s| {
        s.as_ref()
            .map(|t| (t.is_counting(), t.wants_time_slots() || t.slots().in_use()))
    })
    .flatten();
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

/// Time is cut into slots from now, unless it already is (the schedule
/// in the state goes on): the slot timer of this generation is armed.
fn start_slots(ctx: &Context, generation: u64) {
    if SLOTS_RUNNING.swap(true, Ordering::Relaxed) {
        return;
    }
    forget_last_pass();
    let due = slot_edge(ctx, Tracking::begin_time_slots);
    after_slot_edge(ctx, generation, due);
}

/// The filter as the state wants it, and the slot timer armed for the
/// next edge (none: every command is counted, or tracking is off).
fn after_slot_edge(ctx: &Context, generation: u64, due: Option<(Option<Instant>, bool)>) {
    let Some((due, counting)) = due else {
        SLOTS_RUNNING.store(false, Ordering::Relaxed);
        return;
    };
    filter::set_registered(counting);
    match due {
        Some(at) => arm_slot_timer(ctx, generation, at),
        None => SLOTS_RUNNING.store(false, Ordering::Relaxed),
    }
}

/// The slot timer is armed to fire before `at` however late the server runs
/// it ([`timer_ms`]), and passes are heard from then on until one begins
/// at or after `at`.
fn arm_slot_timer(ctx: &Context, generation: u64, at: Instant) {
    let wait = at.saturating_duration_since(Instant::now());
    match timer_ms(wait) {
        0 => await_edge(ctx, generation),
        ms => {
            ctx.create_timer(Duration::from_millis(ms), on_slot, generation);
        }
    }
}

/// How late the server may run a module timer, in whole milliseconds: its
/// module timers are kept on a millisecond grid (a timer found early waits
/// for the next millisecond), and an idle server's wait for events is
/// rounded up to a whole millisecond too.
const TIMER_LATE_MS: u64 = 2;

/// The timer, in whole milliseconds, that fires before an edge `wait` away
/// even [`TIMER_LATE_MS`] late (0: hear the passes now). Armed at the last
/// whole millisecond before the edge, it fired after it about half the
/// time on an idle server, whose next pass then opened the slot late: at
/// ~14,000 commands a second and one slot in 8 counted, the counted slots
/// held 0.44-0.81 of their share, a key read once a millisecond read 0.36-
/// 0.40 of its truth and one read in a pipeline every 10 ms 0.37-0.67 (the
/// closing edges, under a millisecond after the openings, were heard at
/// once and made on time); armed 2 ms earlier, 1.02-1.12, 0.99-1.01 and
/// 0.95-1.22 over four runs (Redis 7.0, 2026-12-06).
fn timer_ms(wait: Duration) -> u64 {
    (wait.as_millis() as u64).saturating_sub(TIMER_LATE_MS)
}

/// The next slot edge is near: the passes that begin from now on are
/// heard until one begins at or after it.
fn await_edge(ctx: &Context, generation: u64) {
    EDGE_AWAITED.store(generation, Ordering::Relaxed);
    event_loop::hear_passes(ctx, true);
}

/// A pass of the event loop begins: every slot edge due by now is made
/// (a pass that begins after a counted slot's planned end is not counted,
/// however late the pass that would have opened it came), between two
/// passes (see the module's text).
fn on_pass(ctx: &Context) {
    let generation = EDGE_AWAITED.load(Ordering::Relaxed);
    if !is_current(generation) {
        event_loop::hear_passes(ctx, false);
        return;
    }
    let now = Instant::now();
    let previous = LAST_PASS.with(|c| c.replace(Some(now)));
    let due = || with_state(|s| s.as_ref().and_then(|t| t.slots().due())).flatten();
    if due().is_some_and(|at| now < at) {
        return;
    }
    with_state(|s| s.as_mut().map(|t| t.pass_began(previous, now)));
    EDGE_AWAITED.store(0, Ordering::Relaxed);
    event_loop::hear_passes(ctx, false);
    // What the last edge left: when the next is due, and whether the
    // filter is to be registered (`None`: no edge made, or tracking off).
    let mut next = None;
    for _ in 0..MOST_EDGES_AT_ONCE {
        if due().is_none_or(|at| at > now) {
            break;
        }
        next = slot_edge(ctx, Tracking::time_slot_due_now);
        if next.is_none_or(|(due, _)| due.is_none()) {
            // Tracking off, or every command counted from now: no more
            // edges.
            break;
        }
    }
    after_slot_edge(ctx, generation, next);
}

/// The most slot edges made in one pass: past that the rest wait for the
/// next (a server stalled this long re-plans its slots from now anyway).
const MOST_EDGES_AT_ONCE: usize = 64;

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
        Some(t.wants_time_slots())
    })
    .flatten()?;
    if publish::announces(ctx) {
        or_fallback("the tracker's notifications", (), || notify::tick(ctx));
    }
    with_state(|state| state.as_mut().map(|t| t.meter().timed_timer(started)));
    Some(slots)
}

fn on_slot(ctx: &Context, generation: u64) {
    if is_current(generation) {
        // Passes were not heard while the timer waited.
        forget_last_pass();
        await_edge(ctx, generation);
    }
}

/// A slot edge (`step`: slots begun, or a counted slot's edge come), timed
/// as the tracker's clocks: when the next is due, and whether the filter
/// is to be registered (`None`: tracking is off, or the step panicked).
fn slot_edge(
    ctx: &Context,
    step: fn(&mut Tracking, &Context) -> Option<Instant>,
) -> Option<(Option<Instant>, bool)> {
    or_fallback("a tracking slot", None, || {
        let started = thread_cpu_ns();
        with_state(|state| {
            let t = state.as_mut()?;
            let due = step(t, ctx);
            t.meter().timed_timer(started);
            Some((due, t.is_counting()))
        })
        .flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slot_timer_fires_before_its_edge_even_two_milliseconds_late() {
        let ms = |us: u64| timer_ms(Duration::from_micros(us));
        // Under three milliseconds away: the passes are heard at once.
        assert_eq!((ms(0), ms(1_250), ms(2_999)), (0, 0, 0));
        // Further: a whole number of milliseconds that, two late, still
        // fires before the edge.
        for wait_us in [3_000, 3_999, 8_750, 25_001] {
            let fired_by_us = ms(wait_us) * 1_000 + TIMER_LATE_MS * 1_000;
            assert!(ms(wait_us) > 0 && fired_by_us <= wait_us, "{wait_us}");
            assert!(wait_us - fired_by_us < 1_000, "{wait_us}: heard for long");
        }
    }
}
