//! The command filter as a port: a feature registers one hook (a type, so
//! that the server's call reaches it without a call through a pointer),
//! and the server calls it with every command a client sends, before it runs
//! (before ACL, arity, authentication and cluster redirection: the hook
//! must judge for itself what the server will refuse). The hook reads the
//! command through [`FilterCall`]; everything the server is asked on the
//! way (key positions, a client's database, whether a key exists, whether
//! a script runs) goes through it too, so the feature holds no pointer of
//! the server's.
//!
//! The filter runs on every command: the server functions it calls are
//! looked up once ([`FilterApi`]), and a panic in the hook is contained,
//! logged and counted like any other callback's.

use super::{keyspace, module_context, panic_guard};
use redis_module::raw;
use std::os::raw::{c_int, c_void};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::OnceLock;

/// What a command does to a key, as the server's key specs say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyUse {
    Read,
    Write,
    /// The server's flags do not say.
    Unsaid,
}

/// The hook: called with every command while the filter is registered.
pub trait Hook {
    fn on_command(command: &FilterCall);
}

/// The server functions a filter call uses (`None`: a server too old to
/// have them), looked up at the first registration.
static API: OnceLock<Option<FilterApi>> = OnceLock::new();
static FILTER: AtomicPtr<raw::RedisModuleCommandFilter> = AtomicPtr::new(null_mut());

const WRITE_FLAGS: u32 =
    raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_OW | raw::REDISMODULE_CMD_KEY_RM;

/// Does the server's filter say which client sent a command (7.2+)?
pub fn names_clients() -> bool {
    crate::server_api!(RedisModule_CommandFilterGetClientId).is_some()
}

/// Registers the filter calling `H` (`on`) or removes it. Registering is
/// the whole cost switch: while unregistered the server calls nothing per
/// command. One hook at a time: the module has one filter.
pub fn set_registered<H: Hook>(on: bool) {
    let ctx = module_context::raw();
    if ctx.is_null() || API.get_or_init(FilterApi::look_up).is_none() {
        return;
    }
    let current = FILTER.load(Ordering::Relaxed);
    if on && current.is_null() {
        if let Some(register) = crate::server_api!(RedisModule_RegisterCommandFilter) {
            let flags = raw::REDISMODULE_CMDFILTER_NOSELF as c_int;
            // SAFETY: main thread; `ctx` is the module's detached context.
            let filter = unsafe { register(ctx, Some(on_command::<H>), flags) };
            FILTER.store(filter, Ordering::Relaxed);
        }
    } else if !on && !current.is_null() {
        if let Some(unregister) = crate::server_api!(RedisModule_UnregisterCommandFilter) {
            // SAFETY: main thread; `current` is the filter registered above
            // through the same context.
            unsafe { unregister(ctx, current) };
        }
        FILTER.store(null_mut(), Ordering::Relaxed);
    }
}

/// The server functions a filter call uses on every command, looked up
/// once: each `raw::RedisModule_*` is an `Option` in a mutable static, a
/// load and a test per use.
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

impl FilterApi {
    fn look_up() -> Option<Self> {
        Some(FilterApi {
            args_count: crate::server_api!(RedisModule_CommandFilterArgsCount)?,
            arg_get: crate::server_api!(RedisModule_CommandFilterArgGet)?,
            ptr_len: crate::server_api!(RedisModule_StringPtrLen)?,
            client_id: crate::server_api!(RedisModule_CommandFilterGetClientId),
        })
    }
}

unsafe extern "C" fn on_command<H: Hook>(fctx: *mut raw::RedisModuleCommandFilterCtx) {
    // A panic must not unwind into the server; a lost count is harmless,
    // an unseen bug is not: it is logged and counted.
    panic_guard::or_fallback("the command filter", (), || {
        if let Some(Some(api)) = API.get() {
            H::on_command(&FilterCall { fctx, api });
        }
    });
}

/// The command in a filter call, valid for the call only.
pub struct FilterCall {
    fctx: *mut raw::RedisModuleCommandFilterCtx,
    api: &'static FilterApi,
}

impl FilterCall {
    /// The client that sent it (Redis 7.2+, Valkey).
    #[inline(always)]
    pub fn client(&self) -> Option<u64> {
        // SAFETY: the live filter context of this call.
        self.api.client_id.map(|f| unsafe { f(self.fctx) })
    }

    #[inline(always)]
    pub fn argc(&self) -> usize {
        // SAFETY: the live filter context of this call.
        let argc = unsafe { (self.api.args_count)(self.fctx) };
        usize::try_from(argc).unwrap_or(0)
    }

    /// Argument `i` (empty past the end).
    #[inline(always)]
    pub fn arg(&self, i: usize) -> &[u8] {
        let arg = self.raw_arg(i);
        if arg.is_null() {
            return &[];
        }
        let mut len = 0usize;
        // SAFETY: a string of the live filter context of this call, valid
        // until the call returns (the slice does not outlive `self`).
        unsafe {
            let ptr = (self.api.ptr_len)(arg, &mut len);
            if ptr.is_null() {
                return &[];
            }
            std::slice::from_raw_parts(ptr.cast::<u8>(), len)
        }
    }

    /// Each key's position and use, as the server's command table finds
    /// them in this command (empty for none, or an unknown command).
    pub fn server_keys(&self) -> Vec<(usize, KeyUse)> {
        let argv: Vec<*mut raw::RedisModuleString> =
            (0..self.argc()).map(|i| self.raw_arg(i)).collect();
        CommandKeys::of(&argv).map_or_else(Vec::new, |keys| keys.iter().collect())
    }

    /// Is a script running (Redis 7.0: its commands pass the filter too)?
    pub fn in_script(&self) -> bool {
        let ctx = module_context::raw();
        // SAFETY: the flags of the module's detached context (the script
        // flag is server-wide); a function pointer filled at load.
        let flags =
            crate::server_api!(RedisModule_GetContextFlags).map_or(0, |f| unsafe { f(ctx) });
        flags as u32 & raw::REDISMODULE_CTX_FLAGS_LUA != 0
    }

    /// The database of client `id` as the server says (`None` for a
    /// client that is no connection) and its host; `None` if it cannot
    /// say. A costly call.
    pub fn client_db(&self, id: u64) -> Option<(Option<u16>, Vec<u8>)> {
        super::client_info::database_and_host(id)
    }

    /// Does `key` exist in database `db` now (looked up without effects)?
    pub fn key_exists(&self, db: u16, key: &[u8]) -> bool {
        module_context::get().is_some_and(|ctx| keyspace::exists(&ctx, db, key))
    }

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
        let get_keys = crate::server_api!(RedisModule_GetCommandKeysWithFlags)?;
        let (mut count, mut flags): (c_int, *mut c_int) = (0, null_mut());
        let argc = c_int::try_from(argv.len()).ok()?;
        // SAFETY: `argv` holds the command's own argument strings; the
        // server only reads them.
        let positions = unsafe {
            get_keys(
                module_context::raw(),
                argv.as_ptr().cast_mut(),
                argc,
                &mut count,
                &mut flags,
            )
        };
        let keys = CommandKeys {
            positions,
            flags,
            count: usize::try_from(count).unwrap_or(0),
        };
        (!keys.positions.is_null() && keys.count > 0).then_some(keys)
    }

    fn iter(&self) -> impl Iterator<Item = (usize, KeyUse)> + '_ {
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
            let read_only = flags & raw::REDISMODULE_CMD_KEY_RO != 0;
            let written = flags & WRITE_FLAGS != 0;
            let used = match (read_only, written) {
                (false, false) => KeyUse::Unsaid,
                (true, false) => KeyUse::Read,
                _ => KeyUse::Write,
            };
            (usize::try_from(position).unwrap_or(usize::MAX), used)
        })
    }
}

impl Drop for CommandKeys {
    fn drop(&mut self) {
        let Some(free) = crate::server_api!(RedisModule_Free) else {
            return;
        };
        for ptr in [self.positions, self.flags] {
            if !ptr.is_null() {
                // SAFETY: allocated by the server for the module to free,
                // freed once.
                unsafe { free(ptr.cast::<c_void>()) };
            }
        }
    }
}
