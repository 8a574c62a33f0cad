//! Telling applications when something gets hot: watched sketches publish
//! `enter`, `leave`, `hot` and `cool` events (see the sketch crate's
//! `watch` module for when). Arrival-driven events are published by the
//! command that caused them; fade-driven ones by a timer that visits the
//! watched keys every `heavykeeper.watch-interval-ms` and sweeps only the
//! sketches whose next crossing is due. Only a primary publishes: never a
//! replica re-running its primary's commands, never while loading.

pub mod config;
pub mod message;

use crate::{clock, sketch_key};
use heavykeeper_sketch::{HeavyKeeper, WatchEvent};
use redis_module::{raw, Context, ContextFlags, RedisString};
use std::cell::RefCell;
use std::collections::HashSet;
use std::os::raw::c_int;
use std::time::Duration;

/// A watched key: its database and name.
type WatchedKey = (i32, Vec<u8>);

thread_local! {
    /// Keys whose sketches are watched, for the timer. Kept loosely: a key
    /// that is gone or no longer watched is dropped when the timer finds it.
    static WATCHED: RefCell<HashSet<WatchedKey>> = RefCell::new(HashSet::new());
    static COUNTERS: RefCell<Counters> = const { RefCell::new(Counters { published: 0, dropped: 0 }) };
}

#[derive(Clone, Copy, Default)]
pub struct Counters {
    pub published: u64,
    pub dropped: u64,
}

pub fn counters() -> Counters {
    COUNTERS.with(|c| c.try_borrow().map(|c| *c).unwrap_or_default())
}

pub fn watched_keys() -> usize {
    WATCHED.with(|w| w.try_borrow().map_or(0, |w| w.len()))
}

/// Does this context publish? Only a primary's own commands and timers.
pub fn announces(ctx: &Context) -> bool {
    let flags = ctx.get_flags();
    flags.contains(ContextFlags::MASTER)
        && !flags.intersects(ContextFlags::REPLICATED | ContextFlags::LOADING)
}

fn selected_db(ctx: &Context) -> i32 {
    // SAFETY: a live context of the current command or timer.
    unsafe { raw::RedisModule_GetSelectedDb.map_or(0, |f| f(ctx.ctx)) }
}

/// Remembers that `key` (in the context's database) holds a watched sketch.
pub fn register(ctx: &Context, key: &RedisString) {
    register_in(selected_db(ctx), key.as_slice());
}

pub fn register_in(db: i32, key: &[u8]) {
    WATCHED.with(|w| {
        if let Ok(mut w) = w.try_borrow_mut() {
            if !w.contains(&(db, key.to_vec())) {
                w.insert((db, key.to_vec()));
            }
        }
    });
}

/// Publishes `events` of the sketch at `key` on its watch channel, within
/// the per-second budget; what the budget refuses is counted.
pub fn publish(ctx: &Context, key: &RedisString, sketch: &mut HeavyKeeper, events: &[WatchEvent]) {
    let Some(channel) = sketch.watch().map(|w| w.channel.clone()) else {
        return;
    };
    let budget = config::max_events_per_second();
    let channel = ctx.create_string(channel.as_slice());
    let shard = ctx.get_flags().contains(ContextFlags::CLUSTER);
    for event in events {
        let allowed = match sketch.watch_state() {
            Some(state) => state.take_budget(event.time_ms, budget),
            None => true,
        };
        if !allowed {
            COUNTERS.with(|c| c.borrow_mut().dropped += 1);
            continue;
        }
        publish_message(ctx, &channel, shard, &message::json(key.as_slice(), event));
        COUNTERS.with(|c| c.borrow_mut().published += 1);
    }
}

/// Publishes `text` on `channel`: a shard message in a cluster (`shard`),
/// a plain one otherwise.
pub fn publish_message(ctx: &Context, channel: &RedisString, shard: bool, text: &str) {
    let message = ctx.create_string(text.as_bytes());
    // SAFETY: live strings and context; both functions exist since Redis 7.0.
    unsafe {
        let publish = if shard {
            raw::RedisModule_PublishMessageShard
        } else {
            raw::RedisModule_PublishMessage
        };
        if let Some(publish) = publish {
            publish(ctx.ctx, channel.inner, message.inner);
        }
    }
}

/// Starts the timer that publishes fade-driven events (at load).
pub fn start_timer(ctx: &Context) {
    ctx.create_timer(config::interval(), tick, ());
}

fn tick(ctx: &Context, _: ()) {
    if announces(ctx) {
        sweep_due(ctx, clock::now_ms());
        crate::tracking::notify::tick(ctx);
    }
    ctx.create_timer(config::interval().max(Duration::from_millis(1)), tick, ());
}

/// Sweeps every watched sketch whose next crossing is due by `now_ms`.
fn sweep_due(ctx: &Context, now_ms: i64) {
    let keys: Vec<WatchedKey> = WATCHED.with(|w| {
        w.try_borrow()
            .map(|w| w.iter().cloned().collect())
            .unwrap_or_default()
    });
    let mut gone = Vec::new();
    for (db, name) in keys {
        // SAFETY: the timer's own context.
        if unsafe { raw::RedisModule_SelectDb.map_or(1, |f| f(ctx.ctx, db as c_int)) } != 0 {
            gone.push((db, name));
            continue;
        }
        let key_name = ctx.create_string(name.as_slice());
        let key = ctx.open_key_writable(&key_name);
        let Ok(mut sketch) = sketch_key::write(&key) else {
            gone.push((db, name));
            continue;
        };
        if sketch.watch().is_none() {
            gone.push((db, name));
            continue;
        }
        if sketch.watch_due(now_ms) {
            let mut events = Vec::new();
            sketch.sweep_watch(now_ms, &mut events);
            publish(ctx, &key_name, &mut sketch, &events);
        }
    }
    WATCHED.with(|w| {
        if let Ok(mut w) = w.try_borrow_mut() {
            for key in &gone {
                w.remove(key);
            }
        }
    });
}

/// `INFO heavykeeper` (section `heavykeeper_watch`).
pub fn add_info_section(ctx: &redis_module::InfoContext) {
    let counters = counters();
    let number = crate::module_stats::info_number;
    let _ = ctx
        .builder()
        .add_section("watch")
        .field("watched_keys", number(watched_keys() as u64))
        .and_then(|s| s.field("events_published", number(counters.published)))
        .and_then(|s| s.field("events_dropped", number(counters.dropped)))
        .and_then(|s| s.build_section())
        .and_then(|b| b.build_info());
}
