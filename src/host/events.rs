//! The server's events as typed hooks: a feature hands a plain Rust
//! function to one of the `on_*` functions at load, and the `extern "C"`
//! callback the server calls lives here, guarded: a panic in a hook is
//! logged and counted ([`super::panic_guard`]), never unwound into the
//! server.
//!
//! Each event has one hook. The server keeps one callback per server event
//! and module, so a second feature on the same event would silently replace
//! the first: registering twice is refused instead.

use super::keyspace::selected_db;
use super::module_string;
use super::panic_guard::or_fallback;
use redis_module::{raw, Context};
use std::ffi::CStr;
use std::os::raw::{c_char, c_int, c_void};
use std::sync::OnceLock;

/// A client connection closed (its id; ids are never reused).
pub type ClientGone = fn(id: u64);
/// A read found no key: the key and the database it was looked up in.
pub type KeyMiss = fn(db: i32, key: &[u8]);
/// A config changed (`CONFIG SET`, by anyone).
pub type ConfigChanged = fn(ctx: &Context);
/// A generic keyspace event (`rename_to`, `copy_to`, ...) on a key of the
/// context's database.
pub type KeyEvent = fn(ctx: &Context, event: &[u8], key: &[u8]);
/// `FLUSHDB` (`Some(db)`) or `FLUSHALL` (`None`) is about to run.
pub type Flushed = fn(db: Option<i32>);
/// `SWAPDB a b` ran.
pub type Swapped = fn(a: i32, b: i32);

static CLIENT_GONE: OnceLock<ClientGone> = OnceLock::new();
static KEY_MISS: OnceLock<KeyMiss> = OnceLock::new();
static CONFIG_CHANGED: OnceLock<ConfigChanged> = OnceLock::new();
static KEY_EVENT: OnceLock<KeyEvent> = OnceLock::new();
static FLUSHED: OnceLock<Flushed> = OnceLock::new();
static SWAPPED: OnceLock<Swapped> = OnceLock::new();

/// Why a hook could not be registered.
pub type Refused = String;

fn set_once<T>(cell: &OnceLock<T>, hook: T, what: &str) -> Result<(), Refused> {
    cell.set(hook)
        .map_err(|_| format!("a second hook for {what}"))
}

/// `hook` hears of every client that disconnects.
pub fn on_client_gone(ctx: &Context, hook: ClientGone) -> Result<(), Refused> {
    set_once(&CLIENT_GONE, hook, "client events")?;
    subscribe_server(ctx, raw::REDISMODULE_EVENT_CLIENT_CHANGE, client_changed)
}

/// `hook` hears of every key miss.
pub fn on_key_miss(ctx: &Context, hook: KeyMiss) -> Result<(), Refused> {
    set_once(&KEY_MISS, hook, "key misses")?;
    subscribe_keyspace(ctx, raw::REDISMODULE_NOTIFY_KEY_MISS, key_missed)
}

/// `hook` hears of every config change.
pub fn on_config_change(ctx: &Context, hook: ConfigChanged) -> Result<(), Refused> {
    set_once(&CONFIG_CHANGED, hook, "config changes")?;
    subscribe_server(ctx, raw::REDISMODULE_EVENT_CONFIG, config_changed)
}

/// `hook` hears of every generic keyspace event.
pub fn on_key_event(ctx: &Context, hook: KeyEvent) -> Result<(), Refused> {
    set_once(&KEY_EVENT, hook, "keyspace events")?;
    subscribe_keyspace(ctx, raw::REDISMODULE_NOTIFY_GENERIC, key_event)
}

/// `flushed` hears of every flush as it starts, `swapped` of every swap.
pub fn on_flush_and_swap(ctx: &Context, flushed: Flushed, swapped: Swapped) -> Result<(), Refused> {
    set_once(&FLUSHED, flushed, "flushes")?;
    set_once(&SWAPPED, swapped, "database swaps")?;
    subscribe_server(ctx, raw::REDISMODULE_EVENT_FLUSHDB, flush_or_swap)?;
    subscribe_server(ctx, raw::REDISMODULE_EVENT_SWAPDB, flush_or_swap)
}

pub(super) type ServerCallback =
    unsafe extern "C" fn(*mut raw::RedisModuleCtx, raw::RedisModuleEvent, u64, *mut c_void);
type KeyspaceCallback = unsafe extern "C" fn(
    *mut raw::RedisModuleCtx,
    c_int,
    *const c_char,
    *mut raw::RedisModuleString,
) -> c_int;

fn subscribe_server(ctx: &Context, id: u64, callback: ServerCallback) -> Result<(), Refused> {
    let subscribe = crate::server_api!(RedisModule_SubscribeToServerEvent)
        .ok_or("no RedisModule_SubscribeToServerEvent")?;
    let event = raw::RedisModuleEvent { id, dataver: 1 };
    // SAFETY: a live context on the main thread; the callback contains
    // every panic.
    let status = unsafe { subscribe(ctx.ctx, event, Some(callback)) };
    (status == raw::Status::Ok as c_int)
        .then_some(())
        .ok_or_else(|| format!("the server refused server event {id}"))
}

fn subscribe_keyspace(
    ctx: &Context,
    types: c_int,
    callback: KeyspaceCallback,
) -> Result<(), Refused> {
    let subscribe = crate::server_api!(RedisModule_SubscribeToKeyspaceEvents)
        .ok_or("no RedisModule_SubscribeToKeyspaceEvents")?;
    // SAFETY: as in `subscribe_server`.
    let status = unsafe { subscribe(ctx.ctx, types, Some(callback)) };
    (status == raw::Status::Ok as c_int)
        .then_some(())
        .ok_or_else(|| format!("the server refused keyspace events {types:#x}"))
}

unsafe extern "C" fn client_changed(
    _ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    subevent: u64,
    data: *mut c_void,
) {
    or_fallback("a client event", (), || {
        if subevent != raw::REDISMODULE_SUBEVENT_CLIENT_CHANGE_DISCONNECTED || data.is_null() {
            return;
        }
        // SAFETY: the server passes a client info for client events.
        let id = unsafe { (*data.cast::<raw::RedisModuleClientInfo>()).id };
        if let Some(hook) = CLIENT_GONE.get() {
            hook(id);
        }
    });
}

unsafe extern "C" fn key_missed(
    ctx: *mut raw::RedisModuleCtx,
    _type: c_int,
    _event: *const c_char,
    key: *mut raw::RedisModuleString,
) -> c_int {
    or_fallback("a key-miss event", (), || {
        let (Some(hook), false) = (KEY_MISS.get(), ctx.is_null() || key.is_null()) else {
            return;
        };
        let db = selected_db(&Context::new(ctx));
        // SAFETY: the server's key name, alive through the call.
        hook(db, unsafe { module_string::bytes(key) });
    });
    raw::REDISMODULE_OK as c_int
}

unsafe extern "C" fn config_changed(
    ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    _subevent: u64,
    _data: *mut c_void,
) {
    or_fallback("a config-change event", (), || {
        if let (Some(hook), false) = (CONFIG_CHANGED.get(), ctx.is_null()) {
            hook(&Context::new(ctx));
        }
    });
}

unsafe extern "C" fn key_event(
    ctx: *mut raw::RedisModuleCtx,
    _type: c_int,
    event: *const c_char,
    key: *mut raw::RedisModuleString,
) -> c_int {
    or_fallback("a keyspace event", (), || {
        let (Some(hook), false) = (
            KEY_EVENT.get(),
            ctx.is_null() || event.is_null() || key.is_null(),
        ) else {
            return;
        };
        // SAFETY: the server's NUL-terminated event name and its key name,
        // alive through the call.
        let (event, key) = unsafe { (CStr::from_ptr(event).to_bytes(), module_string::bytes(key)) };
        hook(&Context::new(ctx), event, key);
    });
    raw::Status::Ok as c_int
}

unsafe extern "C" fn flush_or_swap(
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
                if let Some(hook) = FLUSHED.get() {
                    hook((info.dbnum >= 0).then_some(info.dbnum));
                }
            }
            raw::REDISMODULE_EVENT_SWAPDB => {
                // SAFETY: a swap-db event's data is its `RedisModuleSwapDbInfo`.
                let info = unsafe { &*data.cast::<raw::RedisModuleSwapDbInfo>() };
                if let Some(hook) = SWAPPED.get() {
                    hook(info.dbnum_first, info.dbnum_second);
                }
            }
            _ => {}
        }
    });
}
