//! The command filter: every command a client sends passes here before it
//! runs, while the tracker counts. Key positions and read/write flags come
//! from the server's own command table (`RedisModule_GetCommandKeysWithFlags`),
//! never from a list kept here, so `MGET`, `EVAL` numkeys, `XREAD ...
//! STREAMS`, `ZUNIONSTORE` numkeys, `SORT ... STORE` and `MIGRATE ... KEYS`
//! all count as the server itself sees them.
//!
//! What is skipped: commands the server will refuse before they run
//! (unknown, wrong arity, a client not let in: see [`super::auth`]),
//! commands of a running script (its `EVAL`/`FCALL` already counted the
//! keys it declared), and clients that do not exist as connections (a
//! module's `RM_Call`). On servers that tell a filter which client sent the
//! command (Redis 7.2+, Valkey) the key is counted in that client's
//! database; Redis 7.0 does not, and counts every key as database 0.
//!
//! This file is the FFI: reading the filter's arguments, registering the
//! filter, the client events. What a command does to the tracker is
//! [`super::state::Tracking::count_command`].

use super::client_table::Db;
use super::command_table::CommandTable;
use super::state::FilteredCommand;
use super::with_state;
use crate::host::module_context;
use heavykeeper_tracker::Access;
use redis_module::raw;
use std::os::raw::{c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::time::Instant;

static FILTER: AtomicPtr<raw::RedisModuleCommandFilter> = AtomicPtr::new(null_mut());

const WRITE_FLAGS: u32 =
    raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_OW | raw::REDISMODULE_CMD_KEY_RM;

/// Subscribes to client events (called from init, once the module's
/// context exists): a client that disconnects is forgotten.
pub fn attach(ctx: &redis_module::Context) {
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

/// Does the server's filter say which client sent a command (7.2+)?
pub fn names_clients() -> bool {
    // SAFETY: function pointers filled by the server at load.
    crate::server_api!(RedisModule_CommandFilterGetClientId).is_some()
}

/// Registers the filter (`on`) or removes it.
pub fn set_registered(on: bool) {
    let ctx = module_context::raw();
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

/// The server's command table, read through the module's context.
pub fn command_table() -> CommandTable {
    module_context::get().map_or_else(CommandTable::default, |ctx| CommandTable::load(&ctx))
}

/// The server functions the filter calls on every command, looked up once:
/// each `raw::RedisModule_*` is an `Option` in a mutable static, a load and
/// a test per use.
#[derive(Clone, Copy)]
struct FilterApi {
    args_count: unsafe extern "C" fn(*mut raw::RedisModuleCommandFilterCtx) -> c_int,
    arg_get: unsafe extern "C" fn(
        *mut raw::RedisModuleCommandFilterCtx,
        c_int,
    ) -> *mut raw::RedisModuleString,
    ptr_len: unsafe extern "C" fn(
        *const raw::RedisModuleString,
        *mut usize,
    ) -> *const std::os::raw::c_char,
    /// Redis 7.2+, Valkey.
    client_id: Option<unsafe extern "C" fn(*mut raw::RedisModuleCommandFilterCtx) -> u64>,
}

static API: std::sync::OnceLock<Option<FilterApi>> = std::sync::OnceLock::new();

fn api() -> Option<&'static FilterApi> {
    API.get_or_init(|| {
        // SAFETY: function pointers the server filled in at load, never
        // changed afterwards.
        unsafe {
            Some(FilterApi {
                args_count: raw::RedisModule_CommandFilterArgsCount?,
                arg_get: raw::RedisModule_CommandFilterArgGet?,
                ptr_len: raw::RedisModule_StringPtrLen?,
                client_id: raw::RedisModule_CommandFilterGetClientId,
            })
        }
    })
    .as_ref()
}

unsafe extern "C" fn on_command(fctx: *mut raw::RedisModuleCommandFilterCtx) {
    // A panic must not unwind into the server; a lost count is harmless.
    let _ = catch_unwind(AssertUnwindSafe(|| {
        let Some(api) = api() else {
            return;
        };
        with_state(|state| {
            let Some(tracking) = state.as_mut() else {
                return;
            };
            let command = Filtered { fctx, api };
            if tracking.meter().times_this_call() {
                timed(tracking, &command);
            } else {
                tracking.count_command(&command);
            }
        });
    }));
}

/// One call in ~32, timed for the cost meter: apart, so that the common
/// path stays small.
#[cold]
#[inline(never)]
fn timed(tracking: &mut super::state::Tracking, command: &Filtered) {
    let start = Instant::now();
    tracking.count_command(command);
    tracking.meter().timed_call(start);
}

/// The command in a filter call.
struct Filtered {
    fctx: *mut raw::RedisModuleCommandFilterCtx,
    api: &'static FilterApi,
}

impl FilteredCommand for Filtered {
    #[inline(always)]
    fn client(&self) -> Option<u64> {
        // SAFETY: the live filter context of this call.
        self.api.client_id.map(|f| unsafe { f(self.fctx) })
    }

    #[inline(always)]
    fn argc(&self) -> usize {
        // SAFETY: the live filter context of this call.
        let argc = unsafe { (self.api.args_count)(self.fctx) };
        usize::try_from(argc).unwrap_or(0)
    }

    #[inline(always)]
    fn arg(&self, i: usize) -> &[u8] {
        let arg = self.raw_arg(i);
        if arg.is_null() {
            return &[];
        }
        let mut len = 0usize;
        // SAFETY: a string of the live filter context of this call, valid
        // until the call returns (the slice does not outlive it).
        unsafe {
            let ptr = (self.api.ptr_len)(arg, &mut len);
            if ptr.is_null() {
                return &[];
            }
            std::slice::from_raw_parts(ptr.cast::<u8>(), len)
        }
    }

    fn server_keys(&self) -> Vec<(usize, Option<Access>)> {
        let argv: Vec<*mut raw::RedisModuleString> =
            (0..self.argc()).map(|i| self.raw_arg(i)).collect();
        CommandKeys::of(&argv).map_or_else(Vec::new, |keys| keys.iter().collect())
    }

    fn in_script(&self) -> bool {
        // SAFETY: the flags of the module's detached context; the script
        // flag is server-wide.
        let flags =
            unsafe { raw::RedisModule_GetContextFlags.map_or(0, |f| f(module_context::raw())) };
        flags as u32 & raw::REDISMODULE_CTX_FLAGS_LUA != 0
    }

    fn client_db(&self, id: u64) -> Option<Db> {
        ask_client_db(id)
    }

    fn key_exists(&self, db: u16, key: &[u8]) -> bool {
        module_context::get().is_some_and(|ctx| crate::host::keyspace::exists(&ctx, db, key))
    }
}

impl Filtered {
    #[inline(always)]
    fn raw_arg(&self, i: usize) -> *mut raw::RedisModuleString {
        let i = c_int::try_from(i).unwrap_or(c_int::MAX);
        // SAFETY: the live filter context of this call; the server checks
        // `i` against the argument count (null past it).
        unsafe { (self.api.arg_get)(self.fctx, i) }
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
        let ctx = module_context::raw();
        // SAFETY: a function pointer filled by the server at load.
        let get_keys = crate::server_api!(RedisModule_GetCommandKeysWithFlags)?;
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

    /// Each key's position, and its access where the server's flags say.
    fn iter(&self) -> impl Iterator<Item = (usize, Option<Access>)> + '_ {
        (0..self.count).map(|i| {
            // SAFETY: both arrays hold `count` entries (flags may be null).
            let (position, flags) = unsafe {
                let position = *self.positions.add(i);
                let flags = if self.flags.is_null() {
                    0
                } else {
                    *self.flags.add(i)
                };
                (position, flags as u32)
            };
            let access = if flags & (raw::REDISMODULE_CMD_KEY_RO | WRITE_FLAGS) == 0 {
                None // the server did not say: the key spec it came from does
            } else if flags & raw::REDISMODULE_CMD_KEY_RO != 0 && flags & WRITE_FLAGS == 0 {
                Some(Access::Read)
            } else {
                Some(Access::Write)
            };
            (usize::try_from(position).unwrap_or(usize::MAX), access)
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

/// What the server says of client `id`: `Some(Some(db))` for a connection,
/// `Some(None)` for none (a fake client), `None` if it cannot say. The
/// costly call (it also fills in the client's address): made once per
/// client and again after a `SELECT`, never per command.
fn ask_client_db(id: u64) -> Option<Db> {
    // SAFETY: a function pointer filled by the server; `info` is a
    // version-1 structure as the API requires.
    unsafe {
        let info_by_id = raw::RedisModule_GetClientInfoById?;
        let mut info: raw::RedisModuleClientInfo = std::mem::zeroed();
        info.version = 1;
        let found = info_by_id((&mut info as *mut raw::RedisModuleClientInfo).cast(), id);
        Some((found == raw::REDISMODULE_OK as c_int).then_some(info.db as u16))
    }
}

/// A client that disconnects is forgotten (ids are never reused).
unsafe extern "C" fn on_client_change(
    _ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    subevent: u64,
    data: *mut c_void,
) {
    crate::host::panic_guard::or_fallback("a client event", (), || {
        if subevent != raw::REDISMODULE_SUBEVENT_CLIENT_CHANGE_DISCONNECTED || data.is_null() {
            return;
        }
        // SAFETY: the server passes a client info for client events.
        let id = unsafe { (*data.cast::<raw::RedisModuleClientInfo>()).id };
        with_state(|state| {
            if let Some(t) = state.as_mut() {
                t.forget_client(id);
            }
        });
    });
}
