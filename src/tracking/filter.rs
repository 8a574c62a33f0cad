//! The command filter: every command a client sends passes here before it
//! runs. Key positions and read/write flags come from the server's own
//! command table (`RedisModule_GetCommandKeysWithFlags`), never from a list
//! kept here, so `MGET`, `EVAL` numkeys, `XREAD ... STREAMS`, `ZUNIONSTORE`
//! numkeys, `SORT ... STORE` and `MIGRATE ... KEYS` all count as the server
//! itself sees them.
//!
//! What is skipped: commands of a running script (its `EVAL`/`FCALL` already
//! counted the keys it declared), and clients that do not exist as
//! connections (a module's `RM_Call`). On servers that tell a filter which
//! client sent the command (Redis 7.2+, Valkey) the key is counted in that
//! client's database; Redis 7.0 does not, and counts every key as database 0.

use super::client_db::{self, ClientDbs};
use super::command_table::CommandTable;
use super::script_watch::ScriptWatch;
use super::{batch_of, with_state, Tracking};
use crate::{clock, module_string};
use heavykeeper_sketch::Access;
use redis_module::{raw, Context};
use std::os::raw::{c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicPtr, Ordering};

/// The module's own context, detached from any client: filters are
/// registered and unregistered through it when a config changes.
static MODULE_CTX: AtomicPtr<raw::RedisModuleCtx> = AtomicPtr::new(null_mut());
static FILTER: AtomicPtr<raw::RedisModuleCommandFilter> = AtomicPtr::new(null_mut());

const WRITE_FLAGS: u32 =
    raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_OW | raw::REDISMODULE_CMD_KEY_RM;

/// Keeps the module's context for later config changes (called from init).
pub fn attach(ctx: &Context) {
    // SAFETY: called once at load, on the main thread, with the load context.
    let detached =
        unsafe { raw::RedisModule_GetDetachedThreadSafeContext.map_or(null_mut(), |f| f(ctx.ctx)) };
    MODULE_CTX.store(detached, Ordering::Relaxed);
    // SAFETY: the load context; the callback contains its panics.
    unsafe {
        if let Some(subscribe) = raw::RedisModule_SubscribeToServerEvent {
            let event = raw::RedisModuleEvent {
                id: raw::REDISMODULE_EVENT_CLIENT_CHANGE,
                dataver: 1,
            };
            subscribe(ctx.ctx, event, Some(on_client_change));
        }
    }
}

pub fn is_attached() -> bool {
    !MODULE_CTX.load(Ordering::Relaxed).is_null()
}

/// Registers the filter (`on`) or removes it (after [`attach`]).
pub fn set_registered(on: bool) {
    let ctx = MODULE_CTX.load(Ordering::Relaxed);
    if ctx.is_null() {
        return;
    }
    let current = FILTER.load(Ordering::Relaxed);
    // SAFETY: main thread; `ctx` is the module's detached context and
    // `current` a filter it registered.
    unsafe {
        if on && current.is_null() {
            if let Some(register) = raw::RedisModule_RegisterCommandFilter {
                let filter = register(
                    ctx,
                    Some(on_command),
                    raw::REDISMODULE_CMDFILTER_NOSELF as c_int,
                );
                FILTER.store(filter, Ordering::Relaxed);
            }
        } else if !on && !current.is_null() {
            if let Some(unregister) = raw::RedisModule_UnregisterCommandFilter {
                unregister(ctx, current);
            }
            FILTER.store(null_mut(), Ordering::Relaxed);
        }
    }
}

/// The module's own context, once attached (timers are created through it).
pub fn module_context() -> Option<Context> {
    let ctx = MODULE_CTX.load(Ordering::Relaxed);
    (!ctx.is_null()).then(|| Context::new(ctx))
}

/// The server's command table, read through the module's context.
pub fn command_table() -> CommandTable {
    module_context().map_or_else(CommandTable::default, |ctx| CommandTable::load(&ctx))
}

unsafe extern "C" fn on_command(fctx: *mut raw::RedisModuleCommandFilterCtx) {
    // A panic must not unwind into the server; a lost count is harmless.
    let _ = catch_unwind(AssertUnwindSafe(|| {
        with_state(|state| {
            if let Some(tracking) = state.as_mut() {
                tracking.commands_seen += 1;
                let client = client_id(fctx);
                let mut name = None;
                if let Some(id) = client {
                    // Every command, sampled or not: a missed SELECT would
                    // count the client's keys in the wrong database.
                    let first = arg_bytes(fctx, 0);
                    if client_db::may_change_db(first) {
                        tracking.client_dbs.forget(id);
                    }
                    name = Some(first);
                }
                let starts_script = client.is_none()
                    && tracking
                        .scripts
                        .starts_script(|| *name.insert(arg_bytes(fctx, 0)));
                if tracking.counts_now() {
                    tracking.commands_sampled += 1;
                    if let Some(window) = &mut tracking.window {
                        window.seen += 1;
                    }
                    count_keys(fctx, tracking, client, name);
                }
                if starts_script {
                    tracking.scripts.script_started();
                }
            }
        });
    }));
}

/// The client that sent the command, where the server says (Redis 7.2+,
/// Valkey; never 0 for a real client).
#[inline]
fn client_id(fctx: *mut raw::RedisModuleCommandFilterCtx) -> Option<u64> {
    // SAFETY: `fctx` is the live filter context of this call.
    unsafe { raw::RedisModule_CommandFilterGetClientId.map(|f| f(fctx)) }
}

/// The bytes of argument `i` of the command (empty if there is none).
#[inline]
fn arg_bytes<'a>(fctx: *mut raw::RedisModuleCommandFilterCtx, i: c_int) -> &'a [u8] {
    // SAFETY: `fctx` is the live filter context of this call; the server
    // checks `i` against the argument count.
    unsafe {
        let arg = raw::RedisModule_CommandFilterArgGet.map_or(null_mut(), |f| f(fctx, i));
        module_string::bytes(arg)
    }
}

/// Counts every key of the command in `fctx` (weight 1: a window's
/// accesses are weighed when its cycle ends).
/// Arguments are read as the key specs ask for them: a `GET` reads two.
fn count_keys(
    fctx: *mut raw::RedisModuleCommandFilterCtx,
    tracking: &mut Tracking,
    client: Option<u64>,
    name: Option<&[u8]>,
) {
    // SAFETY: `fctx` is the live filter context of this call.
    let argc = unsafe { raw::RedisModule_CommandFilterArgsCount.map_or(0, |f| f(fctx)) };
    let argc = usize::try_from(argc).unwrap_or(0);
    if argc < 2 {
        return; // no room for a key: PING, INFO, MULTI...
    }
    // The name may have been read already; the rest as the specs ask.
    let name = name.unwrap_or_else(|| arg_bytes(fctx, 0));
    let args = |i: usize| match i {
        0 => Some(name),
        _ => (i < argc).then(|| arg_bytes(fctx, i as c_int)),
    };
    let key_use = tracking.commands.command_of(name, &args);
    if let Some(access) = key_use.single_key() {
        let Some(db) = counted_db(client, &mut tracking.client_dbs, &mut tracking.scripts) else {
            return;
        };
        tracking
            .batch()
            .push(db, arg_bytes(fctx, 1), access, 1, clock::cached_now_ms());
        tracking.flush_if_full();
        return;
    }
    if key_use.positions_known() {
        // The server's key specs, cached: no call into the server at all
        // for a command without keys.
        if !key_use.has_keys() {
            return;
        }
        let Some(db) = counted_db(client, &mut tracking.client_dbs, &mut tracking.scripts) else {
            return;
        };
        let now = clock::cached_now_ms();
        let batch = batch_of(&mut tracking.window, &mut tracking.pending);
        key_use.for_each_key(&args, argc, |position, access| {
            if let Some(key) = args(position) {
                batch.push(db, key, access, 1, now);
            }
        });
        tracking.flush_if_full();
        return;
    }
    // Specs that cannot say (SORT, MIGRATE...): the server finds the keys.
    let argv: Vec<*mut raw::RedisModuleString> = (0..argc)
        .map(|i| {
            // SAFETY: `i < argc`.
            unsafe {
                raw::RedisModule_CommandFilterArgGet.map_or(null_mut(), |f| f(fctx, i as c_int))
            }
        })
        .collect();
    let Some(keys) = CommandKeys::of(&argv) else {
        return;
    };
    let Some(db) = counted_db(client, &mut tracking.client_dbs, &mut tracking.scripts) else {
        return;
    };
    let now = clock::cached_now_ms();
    for (position, flags) in keys.iter() {
        let Some(key) = args(position) else {
            continue;
        };
        let access = if flags & (raw::REDISMODULE_CMD_KEY_RO | WRITE_FLAGS) == 0 {
            // The server did not say: the key spec it came from does.
            key_use.access(&args, position)
        } else if flags & raw::REDISMODULE_CMD_KEY_RO != 0 && flags & WRITE_FLAGS == 0 {
            Access::Read
        } else {
            Access::Write
        };
        batch_of(&mut tracking.window, &mut tracking.pending).push(db, key, access, 1, now);
    }
    tracking.flush_if_full();
}

/// The database to count the command's keys in, or `None` when they are
/// not to be counted: from a client that is no connection (a script's: its
/// own command counted the keys it declared; a module's `RM_Call`).
///
/// Redis 7.0 does not say which client sent a command: every key counts in
/// database 0, except inside a script.
#[inline]
fn counted_db(
    client: Option<u64>,
    known: &mut ClientDbs,
    scripts: &mut ScriptWatch,
) -> Option<u16> {
    match client {
        Some(id) => known.get(id, || ask_client_db(id)),
        None if scripts.may_run() && in_script(MODULE_CTX.load(Ordering::Relaxed)) => None,
        None => {
            scripts.none_running();
            Some(0)
        }
    }
}

/// Key positions and flags the server found in a command, in memory the
/// server allocated (freed on drop).
struct CommandKeys {
    positions: *mut c_int,
    flags: *mut c_int,
    count: usize,
}

impl CommandKeys {
    /// `None` for a command without keys (or one the server does not know,
    /// or with the wrong arity).
    fn of(argv: &[*mut raw::RedisModuleString]) -> Option<Self> {
        let ctx = MODULE_CTX.load(Ordering::Relaxed);
        let get_keys = unsafe { raw::RedisModule_GetCommandKeysWithFlags }?;
        let (mut count, mut flags): (c_int, *mut c_int) = (0, null_mut());
        // SAFETY: `argv` holds the command's own argument strings; the
        // server only reads them.
        let positions = unsafe {
            get_keys(
                ctx,
                argv.as_ptr().cast_mut(),
                argv.len() as c_int,
                &mut count,
                &mut flags,
            )
        };
        let keys = CommandKeys {
            positions,
            flags,
            count: usize::try_from(count).unwrap_or(0),
        };
        if keys.positions.is_null() || keys.count == 0 {
            return None;
        }
        Some(keys)
    }

    fn iter(&self) -> impl Iterator<Item = (usize, u32)> + '_ {
        (0..self.count).map(|i| {
            // SAFETY: both arrays hold `count` entries (flags may be null).
            unsafe {
                let position = *self.positions.add(i);
                let flags = if self.flags.is_null() {
                    0
                } else {
                    *self.flags.add(i)
                };
                (
                    usize::try_from(position).unwrap_or(usize::MAX),
                    flags as u32,
                )
            }
        })
    }
}

impl Drop for CommandKeys {
    fn drop(&mut self) {
        // SAFETY: both were allocated by the server for the module to free.
        unsafe {
            if let Some(free) = raw::RedisModule_Free {
                for ptr in [self.positions, self.flags] {
                    if !ptr.is_null() {
                        free(ptr.cast::<c_void>());
                    }
                }
            }
        }
    }
}

/// Is a script running? Its commands pass the filter too, but the script's
/// own command already counted the keys it declared.
fn in_script(ctx: *mut raw::RedisModuleCtx) -> bool {
    // SAFETY: the flags of the module's detached context; the script flag is
    // server-wide.
    let flags = unsafe { raw::RedisModule_GetContextFlags.map_or(0, |f| f(ctx)) };
    flags as u32 & raw::REDISMODULE_CTX_FLAGS_LUA != 0
}

/// What the server says of client `id`: `Some(Some(db))` for a connection,
/// `Some(None)` for none (a fake client), `None` if it cannot say. The
/// costly call (it also fills in the client's address): made once per
/// client and again after a `SELECT`, never per command.
fn ask_client_db(id: u64) -> Option<Option<u16>> {
    // SAFETY: a function pointer filled by the server; `info` is a
    // version-1 structure as the API requires.
    unsafe {
        let info_by_id = raw::RedisModule_GetClientInfoById?;
        let mut info: raw::RedisModuleClientInfo = std::mem::zeroed();
        info.version = 1;
        let found = info_by_id((&mut info as *mut raw::RedisModuleClientInfo).cast(), id);
        Some((found == raw::REDISMODULE_OK as c_int).then_some(info.db))
    }
}

/// A client that disconnects is forgotten (ids are never reused).
unsafe extern "C" fn on_client_change(
    _ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    subevent: u64,
    data: *mut c_void,
) {
    crate::panic_guard::or_fallback("a client event", (), || {
        if subevent != raw::REDISMODULE_SUBEVENT_CLIENT_CHANGE_DISCONNECTED || data.is_null() {
            return;
        }
        let id = (*data.cast::<raw::RedisModuleClientInfo>()).id;
        with_state(|state| {
            if let Some(t) = state.as_mut() {
                t.client_dbs.forget(id);
            }
        });
    });
}
