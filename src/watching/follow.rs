//! Following watched sketches wherever a key goes, so that the timer finds
//! them: every server keeps the schedule (a replica too, ready for its
//! promotion), through every path a key can take.
//!
//! | path | how the schedule hears of it |
//! |---|---|
//! | `HK.WATCH`, `HK.LOADSTATE` (clients, AOF replay, replication) | the command |
//! | RDB load, replica sync, `RESTORE`, `DEBUG RELOAD` | the type's `rdb_load` |
//! | `DEL`, `UNLINK`, expiry, eviction, overwrite, the source of `RENAME`/`MOVE` | the type's `unlink2` |
//! | `RENAME`, `MOVE`, `COPY`, `RESTORE` (with `REPLACE` too) | the `rename_to`, `move_to`, `copy_to`, `restore` keyspace events |
//!
//! The events come after the value is in place: a `COPY` or `RESTORE` that
//! replaces a watched key first unlinks the old value (which unfollows the
//! name), then the event follows the new one.
//! | `SWAPDB` | the swap-db server event |
//! | `FLUSHDB`, `FLUSHALL` | the flush server event |

use super::schedule::Db;
use super::{follow, selected_db, with_schedule};
use crate::data_type::sketch_key::Quiet;
use crate::host::panic_guard::or_fallback;
use crate::host::{fault, module_string};
use redis_module::{raw, Context};
use std::ffi::CStr;
use std::os::raw::{c_char, c_int, c_void};

/// Subscribes to the events above (at load). Returns what the server refused.
pub fn subscribe(ctx: &Context) -> Result<(), String> {
    // SAFETY: the server's context, during OnLoad; the callbacks are
    // `extern "C"` functions that contain every panic.
    unsafe {
        let keyspace = raw::RedisModule_SubscribeToKeyspaceEvents
            .ok_or("no RedisModule_SubscribeToKeyspaceEvents")?;
        if keyspace(
            ctx.ctx,
            raw::REDISMODULE_NOTIFY_GENERIC,
            Some(on_keyspace_event),
        ) != raw::Status::Ok as c_int
        {
            return Err("the server refused a keyspace event subscription".into());
        }
        let server = raw::RedisModule_SubscribeToServerEvent
            .ok_or("no RedisModule_SubscribeToServerEvent")?;
        for id in [
            raw::REDISMODULE_EVENT_FLUSHDB,
            raw::REDISMODULE_EVENT_SWAPDB,
        ] {
            let event = raw::RedisModuleEvent { id, dataver: 1 };
            if server(ctx.ctx, event, Some(on_server_event)) != raw::Status::Ok as c_int {
                return Err(format!("the server refused server event {id}"));
            }
        }
    }
    Ok(())
}

/// `rename_to`, `move_to`, `copy_to` and `restore` name the key where a
/// value now is, in the database the context has selected; an old place
/// already left the schedule (`unlink2`).
unsafe extern "C" fn on_keyspace_event(
    ctx: *mut raw::RedisModuleCtx,
    _type: c_int,
    event: *const c_char,
    key: *mut raw::RedisModuleString,
) -> c_int {
    or_fallback("a keyspace event", (), || {
        if event.is_null() || key.is_null() {
            return;
        }
        // SAFETY: the server's NUL-terminated event name, alive through the call.
        let event = unsafe { CStr::from_ptr(event) }.to_bytes();
        if !matches!(event, b"rename_to" | b"move_to" | b"copy_to" | b"restore") {
            return;
        }
        let ctx = Context::new(ctx);
        // SAFETY: the server's key name, alive through the call.
        let name = unsafe { module_string::bytes(key) };
        fault::on_event(name);
        let name = module_string::of(&ctx, name);
        let watched = Quiet::open(&ctx, &name).is_some_and(|s| s.watch().is_some());
        if watched {
            follow(selected_db(&ctx), name.as_slice());
        }
    });
    raw::Status::Ok as c_int
}

unsafe extern "C" fn on_server_event(
    _ctx: *mut raw::RedisModuleCtx,
    event: raw::RedisModuleEvent,
    subevent: u64,
    data: *mut c_void,
) {
    or_fallback("a server event", (), || {
        if data.is_null() {
            return;
        }
        match event.id {
            raw::REDISMODULE_EVENT_FLUSHDB
                if subevent == raw::REDISMODULE_SUBEVENT_FLUSHDB_START =>
            {
                // SAFETY: a flush event's data is its `RedisModuleFlushInfo`.
                let info = unsafe { &*data.cast::<raw::RedisModuleFlushInfo>() };
                flushed((info.dbnum >= 0).then_some(info.dbnum));
            }
            raw::REDISMODULE_EVENT_SWAPDB => {
                // SAFETY: a swap-db event's data is its `RedisModuleSwapDbInfo`.
                let info = unsafe { &*data.cast::<raw::RedisModuleSwapDbInfo>() };
                swapped(info.dbnum_first, info.dbnum_second);
            }
            _ => {}
        }
    });
}

fn flushed(db: Option<Db>) {
    with_schedule(|s| {
        trip_on_fault_key(s);
        s.flush(db);
    });
}

fn swapped(a: Db, b: Db) {
    with_schedule(|s| {
        trip_on_fault_key(s);
        s.swap_dbs(a, b);
    });
}

/// Debug builds: a server event with the fault key among the watched ones
/// panics, to prove the handler's guard.
fn trip_on_fault_key(s: &super::schedule::Schedule) {
    if cfg!(debug_assertions) {
        for (_, key) in s.keys() {
            fault::on_event(key);
        }
    }
}
