//! Looking at the keyspace without touching it: whether a key exists in a
//! database, with no effect a client could see (no access time, no hit or
//! miss in the statistics, no key-miss event, no expiry) where the server
//! offers that (Redis 7.2+, Valkey: `NOEFFECTS`); Redis 7.0 looks the key
//! up as `EXISTS` would, not touching its access time.

use super::module_string;
use redis_module::{raw, Context, RedisString};
use std::os::raw::c_int;

/// The database the context has selected (0 where the server cannot say).
pub fn selected_db(ctx: &Context) -> i32 {
    // SAFETY: a function pointer filled by the server at load; the caller's
    // live context, on the main thread.
    crate::server_api!(RedisModule_GetSelectedDb).map_or(0, |f| unsafe { f(ctx.ctx) })
}

/// Selects database `db` for the context; false where the server refuses.
pub fn select_db(ctx: &Context, db: i32) -> bool {
    // SAFETY: as in `selected_db`.
    crate::server_api!(RedisModule_SelectDb)
        .is_some_and(|f| unsafe { f(ctx.ctx, db) } == raw::REDISMODULE_OK as c_int)
}

/// Does `key` exist in database `db`? The context's selected database is
/// put back before returning.
pub fn exists(ctx: &Context, db: u16, key: &[u8]) -> bool {
    let name = module_string::of(ctx, key);
    let db = i32::from(db);
    let own = selected_db(ctx);
    if own != db && !select_db(ctx, db) {
        return false;
    }
    let found = match quiet_mode() {
        Some(mode) => open_exists(ctx, &name, mode),
        None => crate::server_api!(RedisModule_KeyExists).is_some_and(|key_exists| {
            // SAFETY: a live context and string.
            unsafe { key_exists(ctx.ctx, name.inner) != 0 }
        }),
    };
    if own != db {
        select_db(ctx, own);
    }
    found
}

/// `READ | NOEFFECTS` where the server knows it.
fn quiet_mode() -> Option<c_int> {
    let modes = crate::server_api!(RedisModule_GetOpenKeyModesAll)?;
    // SAFETY: a plain query of the server (7.2+).
    let known = unsafe { modes() };
    let noeffects = raw::REDISMODULE_OPEN_KEY_NOEFFECTS as c_int;
    (known & noeffects != 0).then_some(raw::REDISMODULE_READ as c_int | noeffects)
}

/// Opened in `mode` and closed at once: does it hold anything?
fn open_exists(ctx: &Context, name: &RedisString, mode: c_int) -> bool {
    let (Some(open), Some(key_type), Some(close)) = (
        crate::server_api!(RedisModule_OpenKey),
        crate::server_api!(RedisModule_KeyType),
        crate::server_api!(RedisModule_CloseKey),
    ) else {
        return false;
    };
    // SAFETY: main thread, a live context and string; the key is closed
    // before returning and not used after.
    unsafe {
        let key = open(ctx.ctx, name.inner, mode);
        if key.is_null() {
            return false;
        }
        let found = key_type(key) != raw::REDISMODULE_KEYTYPE_EMPTY as c_int;
        close(key);
        found
    }
}
