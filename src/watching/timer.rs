//! The watch timer: every `heavykeeper.watch-interval-ms` it visits the
//! watched sketches whose next crossing is due, publishes what fading did
//! to them.
//!
//! A visit has no effect a client can see besides the events: the sketch
//! is opened quietly ([`Quiet`]), so no `WATCH` is aborted, no client-side
//! cache invalidated, no LRU/LFU clock refreshed. Its cost is the due
//! sketches only: idle watches are not looked at.

use super::{announces, publish, with_schedule};
use crate::data_type::sketch_key::Quiet;
use crate::host::panic_guard::or_fallback;
use crate::host::{clock, fault, module_string};
use redis_module::Context;
use std::time::Duration;

/// At most this many sketches a tick: a burst of due sketches (a restart
/// with many watches) is spread over ticks instead of one long pause.
const VISITS_PER_TICK: usize = 1000;

/// Starts the timer (at load).
pub fn start(ctx: &Context) {
    ctx.create_timer(super::config::interval(), tick, ());
}

fn tick(ctx: &Context, _: ()) {
    // The crate runs timer callbacks unguarded: nothing may unwind past here,
    // and the timer must be armed again whatever happened.
    or_fallback("the watch timer", (), || {
        if announces(ctx) {
            visit_due(ctx, clock::now_ms());
        }
    });
    let interval = super::config::interval().max(Duration::from_millis(1));
    ctx.create_timer(interval, tick, ());
}

fn visit_due(ctx: &Context, now_ms: i64) {
    let due = with_schedule(|s| s.take_due(now_ms, VISITS_PER_TICK));
    for (db, name) in due {
        // A sketch that panics is dropped from the schedule, not retried
        // every tick; its next write or load brings it back.
        let next = or_fallback("the watch timer", None, || visit(ctx, db, &name, now_ms));
        with_schedule(|s| match next {
            Some(at) => s.reschedule(db, &name, at),
            None => {
                s.remove(db, &name);
            }
        });
    }
}

/// Tends the watch of the sketch at `name`; when to come back, or `None`
/// if the key holds no watched sketch any more.
fn visit(ctx: &Context, db: i32, name: &[u8], now_ms: i64) -> Option<i64> {
    if !crate::host::keyspace::select_db(ctx, db) {
        return None;
    }
    let key_name = module_string::of(ctx, name);
    let mut sketch = Quiet::open(ctx, &key_name)?;
    fault::on_tick(&sketch.watch()?.channel);
    let mut events = Vec::new();
    let next = sketch.tend_watch(now_ms, &mut events)?;
    publish(ctx, &key_name, &mut sketch, &events);
    Some(next)
}
