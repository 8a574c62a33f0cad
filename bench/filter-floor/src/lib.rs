//! The floor under any command filter, for `make bench`: what the server
//! charges a module that registers a filter and does nothing (`empty`), and
//! one that reads what a key counter must read and nothing more (`read`:
//! the argument count, the command's name and its first argument through
//! `RedisModule_StringPtrLen`, and the client id where the server has it).
//! The tracker's own cost per command is measured against these.
//!
//! `--loadmodule libhk_filter_floor.so [none|empty|read]`, and
//! `HKFLOOR.MODE none|empty|read` to switch between rounds. Never shipped.

use redis_module::raw;
use std::hint::black_box;
use std::os::raw::c_int;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicPtr, Ordering};

const OK: c_int = raw::REDISMODULE_OK as c_int;
const ERR: c_int = raw::REDISMODULE_ERR as c_int;

/// The module's own context (filters outlive a command's context).
static MODULE_CTX: AtomicPtr<raw::RedisModuleCtx> = AtomicPtr::new(null_mut());
static FILTER: AtomicPtr<raw::RedisModuleCommandFilter> = AtomicPtr::new(null_mut());

/// # Safety
/// Called by the server, with its context and the `loadmodule` arguments.
#[no_mangle]
pub unsafe extern "C" fn RedisModule_OnLoad(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    // SAFETY: the server's load context and arguments.
    unsafe {
        let init = raw::Export_RedisModule_Init(
            ctx,
            c"hkfloor".as_ptr(),
            1,
            raw::REDISMODULE_APIVER_1 as c_int,
        );
        if init == ERR {
            return ERR;
        }
        let Some(detach) = raw::RedisModule_GetDetachedThreadSafeContext else {
            return ERR;
        };
        MODULE_CTX.store(detach(ctx), Ordering::Relaxed);
        let Some(create) = raw::RedisModule_CreateCommand else {
            return ERR;
        };
        if create(
            ctx,
            c"hkfloor.mode".as_ptr(),
            Some(mode_command),
            c"fast".as_ptr(),
            0,
            0,
            0,
        ) == ERR
        {
            return ERR;
        }
        let mode = if argc >= 1 { bytes(*argv) } else { b"none" };
        if set_mode(mode) {
            OK
        } else {
            ERR
        }
    }
}

/// `HKFLOOR.MODE none|empty|read`.
unsafe extern "C" fn mode_command(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    // SAFETY: the command's context and arguments.
    unsafe {
        if argc == 2 && set_mode(bytes(*argv.add(1))) {
            raw::RedisModule_ReplyWithSimpleString.map_or(ERR, |ok| ok(ctx, c"OK".as_ptr()))
        } else {
            let error = c"ERR none, empty or read".as_ptr();
            raw::RedisModule_ReplyWithError.map_or(ERR, |reply| reply(ctx, error))
        }
    }
}

/// Unregisters the filter, then registers the one `mode` names.
unsafe fn set_mode(mode: &[u8]) -> bool {
    let callback: Option<unsafe extern "C" fn(_)> = match mode {
        b"none" => None,
        b"empty" => Some(on_command_empty),
        b"read" => Some(on_command_read),
        _ => return false,
    };
    let ctx = MODULE_CTX.load(Ordering::Relaxed);
    // SAFETY: main thread; the module's detached context and its filter.
    unsafe {
        let current = FILTER.swap(null_mut(), Ordering::Relaxed);
        if let (false, Some(unregister)) =
            (current.is_null(), raw::RedisModule_UnregisterCommandFilter)
        {
            unregister(ctx, current);
        }
        let (Some(callback), Some(register)) = (callback, raw::RedisModule_RegisterCommandFilter)
        else {
            return callback.is_none();
        };
        let filter = register(
            ctx,
            Some(callback),
            raw::REDISMODULE_CMDFILTER_NOSELF as c_int,
        );
        FILTER.store(filter, Ordering::Relaxed);
        !filter.is_null()
    }
}

unsafe extern "C" fn on_command_empty(fctx: *mut raw::RedisModuleCommandFilterCtx) {
    black_box(fctx);
}

unsafe extern "C" fn on_command_read(fctx: *mut raw::RedisModuleCommandFilterCtx) {
    // SAFETY: the live filter context of this call.
    unsafe {
        let argc = raw::RedisModule_CommandFilterArgsCount.map_or(0, |f| f(fctx));
        if let Some(client_id) = raw::RedisModule_CommandFilterGetClientId {
            black_box(client_id(fctx));
        }
        for i in 0..argc.min(2) {
            let arg = raw::RedisModule_CommandFilterArgGet.map_or(null_mut(), |f| f(fctx, i));
            black_box(bytes(arg));
        }
    }
}

/// # Safety
/// `s` is null or a string the server passed to the current call.
unsafe fn bytes<'a>(s: *const raw::RedisModuleString) -> &'a [u8] {
    let mut len = 0usize;
    // SAFETY: see above.
    unsafe {
        let ptr_len = raw::RedisModule_StringPtrLen.filter(|_| !s.is_null());
        match ptr_len.map(|f| f(s, &mut len)) {
            Some(ptr) if !ptr.is_null() => std::slice::from_raw_parts(ptr.cast(), len),
            _ => &[],
        }
    }
}
