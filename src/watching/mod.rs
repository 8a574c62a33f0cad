//! Telling applications when something gets hot: watched sketches publish
//! `enter`, `leave`, `hot` and `cool` events (see the sketch crate's
//! `watch` module for when). Arrival-driven events are published by the
//! command that caused them; fade-driven ones by a timer ([`timer`]) that
//! visits only the sketches whose next crossing is due ([`schedule`]).
//! Only a primary publishes: never a replica re-running its primary's
//! commands, never while loading. Every server follows where its watched
//! sketches are ([`follow`]), so that a replica promoted, a restart or a
//! key renamed goes on announcing with no arrival needed.

#![deny(unsafe_code)]

pub mod config;
pub mod follow;
pub mod message;
pub mod schedule;
pub mod timer;

use crate::host::module_string;
use heavykeeper_sketch::{HeavyKeeper, WatchEvent};
use redis_module::{Context, ContextFlags, RedisString};
use schedule::{Db, Schedule};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{LazyLock, Mutex};

/// Where the watched sketches are, and when each is due. Reached from the
/// main thread only (commands, timer, data-type and event callbacks); a
/// lock all the same, so that a callback on another thread could never
/// reach a second, empty copy.
static SCHEDULE: LazyLock<Mutex<Schedule>> = LazyLock::new(Mutex::default);

static PUBLISHED: AtomicU64 = AtomicU64::new(0);
static DROPPED: AtomicU64 = AtomicU64::new(0);

/// Runs `f` on the schedule (still usable after a panic elsewhere held it).
pub fn with_schedule<R>(f: impl FnOnce(&mut Schedule) -> R) -> R {
    let mut schedule = SCHEDULE.lock().unwrap_or_else(|e| e.into_inner());
    f(&mut schedule)
}

pub use crate::host::publish::{announces, publish_message};

pub use crate::host::keyspace::selected_db;

/// A watched sketch is at `key` of database `db` (watched, loaded, copied,
/// renamed or moved there): the timer looks at it as soon as it runs, and
/// derives what is hot from its counts, silently.
pub fn follow(db: Db, key: &[u8]) {
    with_schedule(|s| s.at(db, key, i64::MIN));
}

/// What the data type's callbacks tell the schedule: a watched sketch
/// loaded at a key, or gone from it.
pub const KEY_HOOKS: crate::data_type::lifecycle::WatchedKeyHooks =
    crate::data_type::lifecycle::WatchedKeyHooks {
        loaded: follow,
        unlinked: unfollow,
    };

/// [`follow`] `key` of the context's database.
pub fn follow_here(ctx: &Context, key: &RedisString) {
    follow(selected_db(ctx), key.as_slice());
}

/// The sketch at `key` is gone, or no longer watched.
pub fn unfollow(db: Db, key: &[u8]) {
    with_schedule(|s| s.remove(db, key));
}

/// Arrivals may have brought the sketch's next crossing forward.
pub fn arrived(ctx: &Context, key: &RedisString, sketch: &HeavyKeeper) {
    if let Some(at) = sketch.watch_next_check_ms() {
        let db = selected_db(ctx);
        with_schedule(|s| s.at(db, key.as_slice(), at));
    }
}

/// Publishes `events` of the sketch at `key` on its watch channel, within
/// the per-second budget; what the budget refuses is counted.
pub fn publish(ctx: &Context, key: &RedisString, sketch: &mut HeavyKeeper, events: &[WatchEvent]) {
    if events.is_empty() {
        return;
    }
    let Some(channel) = sketch.watch().map(|w| module_string::of(ctx, &w.channel)) else {
        return;
    };
    let budget = config::max_events_per_second();
    let shard = ctx.get_flags().contains(ContextFlags::CLUSTER);
    for event in events {
        let allowed = (sketch.watch_state()).is_none_or(|s| s.take_budget(event.time_ms, budget));
        if !allowed {
            DROPPED.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        publish_message(ctx, &channel, shard, &message::json(key.as_slice(), event));
        PUBLISHED.fetch_add(1, Ordering::Relaxed);
    }
}

/// `INFO heavykeeper` (section `heavykeeper_watch`).
pub fn add_info_section(ctx: &redis_module::InfoContext) {
    use crate::host::info::{add_section, number};
    let (watched, queued) = with_schedule(|s| (s.len(), s.queued()));
    let fields = [
        ("watched_keys", number(watched as u64)),
        ("watched_keys_timed", number(queued as u64)),
        (
            "events_published",
            number(PUBLISHED.load(Ordering::Relaxed)),
        ),
        ("events_dropped", number(DROPPED.load(Ordering::Relaxed))),
    ];
    add_section(ctx, "watch", "", fields);
}
