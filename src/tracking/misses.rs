//! Hot misses: reads of keys that do not exist (cache penetration: every
//! such request falls through to the database behind the cache), from the
//! server's own key-miss events, which it raises only after a command has
//! been let in and found nothing. A key that exists raises none, so the
//! cost of a hit is nothing at all; each miss costs the server a module
//! context and this callback (`make bench`: "misses").
//!
//! The server offers no way to unsubscribe (Redis 7.0, Valkey 9): the
//! subscription is made the first time `track-misses` is turned on, and
//! afterwards a miss with `track-misses no` costs the callback's first test.

use super::with_state;
use crate::host::module_string;
use crate::host::panic_guard::or_fallback;
use redis_module::{raw, Context};
use std::os::raw::{c_char, c_int};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

static SUBSCRIBED: AtomicBool = AtomicBool::new(false);

/// Subscribes to key-miss events, once.
pub fn subscribe(ctx: &Context) {
    if SUBSCRIBED.swap(true, Ordering::Relaxed) {
        return;
    }
    // SAFETY: a live context; the callback contains its panics.
    let subscribed = unsafe {
        raw::RedisModule_SubscribeToKeyspaceEvents.map(|subscribe| {
            subscribe(
                ctx.ctx,
                raw::REDISMODULE_NOTIFY_KEY_MISS as c_int,
                Some(on_key_miss),
            )
        })
    };
    if subscribed != Some(raw::REDISMODULE_OK as c_int) {
        ctx.log_warning(
            "heavykeeper: this server offers no key-miss events: HK.HOTKEYS MISSES stays empty",
        );
    }
}

unsafe extern "C" fn on_key_miss(
    ctx: *mut raw::RedisModuleCtx,
    _type: c_int,
    _event: *const c_char,
    key: *mut raw::RedisModuleString,
) -> c_int {
    or_fallback("a key-miss event", (), || {
        // SAFETY: the server's context and key for this event.
        let (db, key) = unsafe {
            let db = raw::RedisModule_GetSelectedDb.map_or(0, |f| f(ctx));
            (u16::try_from(db).unwrap_or(0), module_string::bytes(key))
        };
        crate::host::fault::on_event(key);
        with_state(|state| {
            let Some(t) = state.as_mut().filter(|t| t.misses()) else {
                return;
            };
            if t.meter().times_this_call() {
                let start = Instant::now();
                t.count_miss(db, key);
                t.meter().timed_call(start);
            } else {
                t.count_miss(db, key);
            }
        });
    });
    raw::REDISMODULE_OK as c_int
}
