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
use crate::host::events;
use redis_module::Context;
use std::sync::atomic::{AtomicBool, Ordering};

static SUBSCRIBED: AtomicBool = AtomicBool::new(false);

/// Subscribes to key-miss events, once.
pub fn subscribe(ctx: &Context) {
    if SUBSCRIBED.swap(true, Ordering::Relaxed) {
        return;
    }
    if let Err(why) = events::on_key_miss(ctx, on_key_miss) {
        ctx.log_warning(&format!(
            "heavykeeper: no key-miss events ({why}): HK.HOTKEYS MISSES stays empty"
        ));
    }
}

fn on_key_miss(db: i32, key: &[u8]) {
    crate::host::fault::on_event(key);
    let db = u16::try_from(db).unwrap_or(0);
    with_state(|state| {
        let Some(t) = state.as_mut().filter(|t| t.misses()) else {
            return;
        };
        t.metered(|t| t.count_miss(db, key));
    });
}
