//! The functions the server calls to read and change a config. The crate's
//! own run unguarded (a panic in a change hook aborts the server) and make
//! a C string of a string config's value (a NUL byte in `CONFIG SET`
//! aborts it at the next `CONFIG GET`). These are binary-safe, contain
//! every panic, and answer it as a refused `CONFIG SET`.

use super::load_args::LoadArgs;
use super::setting::Setting;
use crate::host::panic_guard::or_fallback;
use crate::host::{fault, module_string};
use redis_module::{raw, Context, RedisString};
use std::cell::RefCell;
use std::ffi::CString;
use std::os::raw::{c_char, c_int, c_longlong, c_void};
use std::sync::atomic::Ordering;

const OK: c_int = raw::REDISMODULE_OK as c_int;
const ERR: c_int = raw::REDISMODULE_ERR as c_int;

/// Registers `setting` with the server, its load argument (if given) as
/// its default.
pub fn register(ctx: &Context, setting: &'static Setting, given: &LoadArgs) -> Result<(), String> {
    let name = CString::new(setting.name()).map_err(|e| e.to_string())?;
    let privdata = (setting as *const Setting).cast_mut().cast::<c_void>();
    let flags = match *setting {
        Setting::Integer { memory: true, .. } => raw::REDISMODULE_CONFIG_MEMORY,
        Setting::Bool {
            immutable: true, ..
        } => raw::REDISMODULE_CONFIG_IMMUTABLE,
        _ => raw::REDISMODULE_CONFIG_DEFAULT,
    };
    let status = match *setting {
        Setting::Integer {
            name: key,
            default,
            min,
            max,
            ..
        } => {
            let register = crate::server_api!(RedisModule_RegisterNumericConfig)
                .ok_or("no numeric configs")?;
            let default = given.integer(key).unwrap_or(default);
            // SAFETY: the server's context during OnLoad; `privdata` is a
            // static; the callbacks are this file's.
            unsafe {
                register(
                    ctx.ctx,
                    name.as_ptr(),
                    default,
                    flags,
                    min,
                    max,
                    Some(get_integer),
                    Some(set_integer),
                    None,
                    privdata,
                )
            }
        }
        Setting::Bool {
            name: key, default, ..
        } => {
            let register =
                crate::server_api!(RedisModule_RegisterBoolConfig).ok_or("no bool configs")?;
            let default = given.bool(key).unwrap_or(default);
            // SAFETY: as above.
            unsafe {
                register(
                    ctx.ctx,
                    name.as_ptr(),
                    c_int::from(default),
                    flags,
                    Some(get_bool),
                    Some(set_bool),
                    None,
                    privdata,
                )
            }
        }
        Setting::Text {
            name: key,
            default,
            check,
            ..
        } => {
            let value = given.text(key).unwrap_or(default.as_bytes());
            if let Some(why) = check(value) {
                return Err(format!("{key}: {why}"));
            }
            let default =
                CString::new(value).map_err(|_| format!("{key} may not hold a NUL byte"))?;
            let register =
                crate::server_api!(RedisModule_RegisterStringConfig).ok_or("no string configs")?;
            // SAFETY: as above; the server copies the default.
            unsafe {
                register(
                    ctx.ctx,
                    name.as_ptr(),
                    default.as_ptr(),
                    flags,
                    Some(get_text),
                    Some(set_text),
                    None,
                    privdata,
                )
            }
        }
    };
    (status == OK)
        .then_some(())
        .ok_or_else(|| format!("the server refused the config {}", setting.name()))
}

/// # Safety
/// `privdata` is what [`register`] gave the server.
unsafe fn setting<'a>(privdata: *mut c_void) -> &'a Setting {
    // SAFETY: the caller's promise: a `&'static Setting` cast to a pointer.
    unsafe { &*privdata.cast::<Setting>() }
}

/// Writes `message` as the reason a change was refused (the server frees it).
///
/// # Safety
/// `err` is null or the server's out-pointer for the reason.
unsafe fn refuse(err: *mut *mut raw::RedisModuleString, message: &str) -> c_int {
    if !err.is_null() {
        let message = module_string::detached(message.as_bytes());
        // SAFETY: a valid out-pointer (the caller's promise).
        unsafe { *err = message.inner };
        std::mem::forget(message); // the server's to free now
    }
    ERR
}

/// Runs the setting's change hook, if any, guarded.
fn changed(setting: &Setting) -> bool {
    match setting.on_change() {
        Some(hook) => or_fallback("a config change", false, || {
            hook();
            true
        }),
        None => true,
    }
}

const INTERNAL: &str = "internal error in the heavykeeper module (a bug: please report it)";

/// Stores a new value (`store` says whether it could) and runs the change
/// hook, both guarded; anything that fails or panics refuses the change.
///
/// # Safety
/// `err` is the server's out-pointer for the reason.
unsafe fn apply(
    setting: &Setting,
    err: *mut *mut raw::RedisModuleString,
    store: impl FnOnce(&Setting) -> bool,
) -> c_int {
    let stored = or_fallback("changing a config", false, || store(setting));
    if stored && changed(setting) {
        OK
    } else {
        // SAFETY: the caller's out-pointer.
        unsafe { refuse(err, INTERNAL) }
    }
}

unsafe extern "C" fn get_integer(_name: *const c_char, privdata: *mut c_void) -> c_longlong {
    // SAFETY: `privdata` is what `register` gave the server.
    let setting = unsafe { setting(privdata) };
    or_fallback("reading a config", 0, || match setting {
        Setting::Integer { variable, .. } => variable.load(Ordering::Relaxed),
        _ => 0,
    })
}

unsafe extern "C" fn set_integer(
    _name: *const c_char,
    value: c_longlong,
    privdata: *mut c_void,
    err: *mut *mut raw::RedisModuleString,
) -> c_int {
    // SAFETY: `privdata` is what `register` gave the server; `err` its
    // out-pointer.
    unsafe {
        apply(setting(privdata), err, |setting| match setting {
            Setting::Integer { variable, .. } => {
                variable.store(value, Ordering::Relaxed);
                true
            }
            _ => false,
        })
    }
}

unsafe extern "C" fn get_bool(_name: *const c_char, privdata: *mut c_void) -> c_int {
    // SAFETY: `privdata` is what `register` gave the server.
    let setting = unsafe { setting(privdata) };
    or_fallback("reading a config", 0, || match setting {
        Setting::Bool { variable, .. } => c_int::from(variable.load(Ordering::Relaxed)),
        _ => 0,
    })
}

unsafe extern "C" fn set_bool(
    _name: *const c_char,
    value: c_int,
    privdata: *mut c_void,
    err: *mut *mut raw::RedisModuleString,
) -> c_int {
    // SAFETY: `privdata` is what `register` gave the server; `err` its
    // out-pointer.
    unsafe {
        apply(setting(privdata), err, |setting| match setting {
            Setting::Bool { variable, .. } => {
                variable.store(value != 0, Ordering::Relaxed);
                true
            }
            _ => false,
        })
    }
}

thread_local! {
    /// The last value handed to the server: it copies the string at once
    /// and leaves it to the module, which frees it at the next read.
    static LAST_READ: RefCell<Option<RedisString>> = const { RefCell::new(None) };
}

unsafe extern "C" fn get_text(
    _name: *const c_char,
    privdata: *mut c_void,
) -> *mut raw::RedisModuleString {
    // SAFETY: `privdata` is what `register` gave the server.
    let setting = unsafe { setting(privdata) };
    or_fallback("reading a config", std::ptr::null_mut(), || {
        let Setting::Text { variable, .. } = setting else {
            return std::ptr::null_mut();
        };
        let bytes = variable.lock().map(|v| v.clone()).unwrap_or_default();
        let string = module_string::detached(&bytes);
        let inner = string.inner;
        LAST_READ.with(|last| match last.try_borrow_mut() {
            Ok(mut last) => *last = Some(string),
            // Never freed under the server's feet: leaked instead.
            Err(_) => std::mem::forget(string),
        });
        inner
    })
}

unsafe extern "C" fn set_text(
    _name: *const c_char,
    value: *mut raw::RedisModuleString,
    privdata: *mut c_void,
    err: *mut *mut raw::RedisModuleString,
) -> c_int {
    // SAFETY: the server's string, alive through the call; `privdata` is
    // what `register` gave the server.
    let (bytes, setting) = unsafe { (module_string::bytes(value), setting(privdata)) };
    if let Setting::Text { check, .. } = setting {
        if let Some(why) = or_fallback("checking a config", Some(INTERNAL), || check(bytes)) {
            // SAFETY: the server's out-pointer.
            return unsafe { refuse(err, why) };
        }
    }
    let store = |setting: &Setting| {
        let Setting::Text { variable, .. } = setting else {
            return false;
        };
        fault::on_config(bytes);
        variable.lock().map(|mut v| *v = bytes.to_vec()).is_ok()
    };
    // SAFETY: the server's out-pointer.
    unsafe { apply(setting, err, store) }
}
