//! The `heavykeep` data type and its callbacks: RDB, AOF rewrite, memory,
//! digest, copy and free. Every byte format comes from the sketch crate's
//! `encoding` module; nothing here lays out bytes of its own.

use super::{lifecycle, limits, stats};
use crate::host::fault;
use crate::host::panic_guard::or_fallback;
use heavykeeper_sketch::{decode, encode, HeavyKeeper, ENCODING_VERSION};
use redis_module::logging::log_warning;
use redis_module::native_types::RedisType;
use redis_module::raw;
use std::os::raw::{c_char, c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Registered type name (exactly nine characters, as Redis requires).
pub const TYPE_NAME: &str = "heavykeep";

pub static HK_TYPE: RedisType = RedisType::new(
    TYPE_NAME,
    ENCODING_VERSION as i32,
    raw::RedisModuleTypeMethods {
        version: raw::REDISMODULE_TYPE_METHOD_VERSION as u64,
        rdb_load: Some(rdb_load),
        rdb_save: Some(rdb_save),
        aof_rewrite: Some(aof_rewrite),
        free: Some(free),
        mem_usage: Some(mem_usage),
        digest: Some(digest),
        aux_load: None,
        aux_save: None,
        aux_save2: None,
        aux_save_triggers: 0,
        free_effort: Some(free_effort),
        unlink: None,
        copy: None,
        defrag: None,
        copy2: Some(copy2),
        free_effort2: None,
        mem_usage2: None,
        unlink2: Some(unlink2),
    },
);

/// # Safety
/// `value` must be a pointer this module handed to Redis.
unsafe fn sketch<'a>(value: *const c_void) -> Option<&'a HeavyKeeper> {
    // SAFETY: null or a `Box<HeavyKeeper>` this module made (the caller's
    // promise), alive while the server holds the value.
    unsafe { value.cast::<HeavyKeeper>().as_ref() }
}

unsafe extern "C" fn rdb_load(rdb: *mut raw::RedisModuleIO, encver: c_int) -> *mut c_void {
    or_fallback("loading a sketch", std::ptr::null_mut(), || {
        if encver > c_int::from(ENCODING_VERSION) {
            log_warning(format!(
                "heavykeeper: RDB holds sketch encoding {encver}; this module reads up to {ENCODING_VERSION}: upgrade the module"
            ));
            return std::ptr::null_mut();
        }
        let Ok(buffer) = raw::load_string_buffer(rdb) else {
            return std::ptr::null_mut();
        };
        // The bytes are already in memory and bound every allocation; a
        // load never applies the RESERVE size cap (lowering the cap must not
        // make existing data unloadable), a client's RESTORE does.
        match decode(buffer.as_ref(), limits::max_restore_bytes()) {
            Ok(sketch) => {
                fault::in_callback(|m| sketch.contains(m, i64::MAX));
                if sketch.watch().is_some() {
                    // SAFETY: the server's IO handle, during this load.
                    unsafe { remember_watched(rdb) };
                }
                stats::sketch_created(sketch.memory_bytes());
                Box::into_raw(Box::new(sketch)).cast::<c_void>()
            }
            Err(e) => {
                log_warning(format!("heavykeeper: refusing to load a sketch: {e}"));
                std::ptr::null_mut()
            }
        }
    })
}

/// The bytes to save for a sketch, never nothing: a value missing from the
/// stream would corrupt the whole RDB (every key after it unreadable).
/// Encoding does not fail; should it panic all the same, the sketch is saved
/// empty with its shape, and the log says so.
fn encode_for_saving(sketch: Option<&HeavyKeeper>) -> Vec<u8> {
    let Some(sketch) = sketch else {
        log_warning(
            "heavykeeper: asked to save a missing sketch; saving a marker that will not load",
        );
        return vec![0];
    };
    catch_unwind(AssertUnwindSafe(|| {
        fault::on_encode(|m| sketch.contains(m, i64::MAX));
        encode(sketch)
    }))
    .unwrap_or_else(|_| {
        log_warning(
            "heavykeeper: a sketch could not be encoded (a bug: please report it); it is saved empty with its parameters",
        );
        catch_unwind(AssertUnwindSafe(|| encode(&HeavyKeeper::empty_like(sketch))))
            .unwrap_or_else(|_| vec![0])
    })
}

/// A loaded sketch is watched (RDB or AOF preamble, a replica's sync,
/// `RESTORE`, `DEBUG RELOAD`): whoever follows watched keys must know where
/// it is, so that its fade-driven events go out even if nobody writes to it.
///
/// # Safety
/// `rdb` is the server's IO handle of a value being loaded.
unsafe fn remember_watched(rdb: *mut raw::RedisModuleIO) {
    let (Some(key_name), Some(db_id)) = (
        crate::server_api!(RedisModule_GetKeyNameFromIO),
        crate::server_api!(RedisModule_GetDbIdFromIO),
    ) else {
        return;
    };
    // SAFETY: a live IO handle; the name it gives lives while the load does.
    unsafe {
        let name = key_name(rdb);
        if !name.is_null() {
            lifecycle::watched_loaded(db_id(rdb), crate::host::module_string::bytes(name));
        }
    }
}

unsafe extern "C" fn rdb_save(rdb: *mut raw::RedisModuleIO, value: *mut c_void) {
    // The stream needs a value whatever happens: `encode_for_saving`
    // always returns bytes, and a panic past it saves the marker.
    let bytes = or_fallback("saving a sketch", vec![0], || {
        // SAFETY: `value` is a sketch this module made.
        encode_for_saving(unsafe { sketch(value) })
    });
    raw::save_slice(rdb, &bytes);
}

unsafe extern "C" fn aof_rewrite(
    aof: *mut raw::RedisModuleIO,
    key: *mut raw::RedisModuleString,
    value: *mut c_void,
) {
    let Some(emit) = crate::server_api!(RedisModule_EmitAOF) else {
        return;
    };
    let bytes = or_fallback("rewriting a sketch to the AOF", vec![0], || {
        // SAFETY: `value` is a sketch this module made.
        encode_for_saving(unsafe { sketch(value) })
    });
    // SAFETY: the server's AOF handle and key; the format `sb` matches a
    // string and a pointer + length that live through the call.
    unsafe {
        emit(
            aof,
            c"HK.LOADSTATE".as_ptr(),
            c"sb".as_ptr(),
            key,
            bytes.as_ptr().cast::<c_char>(),
            bytes.len(),
        );
    }
}

unsafe extern "C" fn mem_usage(value: *const c_void) -> usize {
    or_fallback("MEMORY USAGE", 0, || {
        // SAFETY: `value` is a sketch this module made.
        unsafe { sketch(value) }.map_or(0, |s| {
            fault::in_callback(|m| s.contains(m, i64::MAX));
            s.memory_bytes()
        })
    })
}

unsafe extern "C" fn digest(md: *mut raw::RedisModuleDigest, value: *mut c_void) {
    let (Some(add), Some(end)) = (
        crate::server_api!(RedisModule_DigestAddStringBuffer),
        crate::server_api!(RedisModule_DigestEndSequence),
    ) else {
        return;
    };
    let bytes = or_fallback("a sketch's digest", vec![0], || {
        // SAFETY: `value` is a sketch this module made.
        encode_for_saving(unsafe { sketch(value) })
    });
    // SAFETY: the server's digest handle; the bytes live through the call.
    unsafe {
        add(md, bytes.as_ptr().cast::<c_char>(), bytes.len());
        end(md);
    }
}

/// May run on the lazy-free thread (see `free_effort`): it touches nothing
/// but the sketch and atomics.
unsafe extern "C" fn free(value: *mut c_void) {
    if !value.is_null() {
        // SAFETY: the server hands back, once, a value this module boxed.
        let sketch = unsafe { Box::from_raw(value.cast::<HeavyKeeper>()) };
        or_fallback("freeing a sketch", (), || {
            stats::sketch_freed(sketch.memory_bytes());
            drop(sketch);
        });
    }
}

/// A key holding a sketch is deleted, overwritten, expired, evicted, or
/// renamed or moved away (its new place is announced by a keyspace event):
/// a watched one leaves the timer's schedule.
unsafe extern "C" fn unlink2(ctx: *mut raw::RedisModuleKeyOptCtx, value: *const c_void) {
    or_fallback("unlinking a sketch", (), || {
        // SAFETY: `value` is a sketch this module made.
        let Some(sketch) = (unsafe { sketch(value) }) else {
            return;
        };
        fault::in_callback(|m| sketch.contains(m, i64::MAX));
        if sketch.watch().is_none() {
            return;
        }
        let (Some(name), Some(db)) = (
            crate::server_api!(RedisModule_GetKeyNameFromOptCtx),
            crate::server_api!(RedisModule_GetDbIdFromOptCtx),
        ) else {
            return;
        };
        // SAFETY: the server's key context for this unlink; the name lives
        // through the callback.
        unsafe {
            let name = name(ctx);
            if !name.is_null() {
                lifecycle::watched_unlinked(db(ctx), crate::host::module_string::bytes(name));
            }
        }
    });
}

/// Bytes of a large array that cost about as much to free as one small
/// allocation: unmapping pages is the cost of freeing a big sketch.
const BYTES_PER_FREE_UNIT: usize = 16 * 1024;

/// The server frees a value on its lazy-free thread (`UNLINK`, `FLUSHALL
/// ASYNC`, `lazyfree-lazy-*`) when this exceeds 64. A sketch is a handful of
/// allocations (buckets, top-k arrays, item arena) whatever its k, so the
/// effort is its size: one unit per 16 KiB. A large sketch (a 64 MB one
/// took ~15 ms to free) never stalls the main thread; a default one is freed
/// inline, cheaper than a hand-off.
unsafe extern "C" fn free_effort(_key: *mut raw::RedisModuleString, value: *const c_void) -> usize {
    or_fallback("a sketch's free effort", 1, || {
        // SAFETY: `value` is a sketch this module made.
        unsafe { sketch(value) }.map_or(1, |s| {
            fault::in_callback(|m| s.contains(m, i64::MAX));
            s.memory_bytes() / BYTES_PER_FREE_UNIT + 1
        })
    })
}

/// `COPY` (a copy of a watched sketch is watched too: the `copy_to` event
/// tells the watch timer where, once the copy is in place).
unsafe extern "C" fn copy2(
    _ctx: *mut raw::RedisModuleKeyOptCtx,
    value: *const c_void,
) -> *mut c_void {
    or_fallback("copying a sketch", std::ptr::null_mut(), || {
        // SAFETY: `value` is a sketch this module made.
        let Some(s) = (unsafe { sketch(value) }) else {
            return std::ptr::null_mut();
        };
        fault::in_callback(|m| s.contains(m, i64::MAX));
        // Not `clone`, which aborts the server where the copy cannot be
        // allocated: `COPY` fails instead. What the original announced is
        // not the copy's: it derives its own.
        let copy = match s.try_clone() {
            Ok(copy) if !fault::copy_fails(|m| s.contains(m, i64::MAX)) => copy,
            _ => return std::ptr::null_mut(),
        };
        stats::sketch_created(copy.memory_bytes());
        Box::into_raw(Box::new(copy)).cast::<c_void>()
    })
}
