//! The functions the server calls to read and change a config. The crate's
//! own run unguarded (a panic in a change hook aborts the server) and make
//! a C string of a string config's value (a NUL byte in `CONFIG SET`
//! aborts it at the next `CONFIG GET`). These are binary-safe, contain
//! every panic, and answer it as a refused `CONFIG SET`.

use crate::config::Setting;
use crate::panic_guard::or_fallback;
use crate::{fault, module_string};
use redis_module::{raw, Context, RedisString};
use std::cell::RefCell;
use std::ffi::CString;
use std::os::raw::{c_char, c_int, c_longlong, c_uint, c_void};
use std::sync::atomic::Ordering;

const OK: c_int = raw::REDISMODULE_OK as c_int;
const ERR: c_int = raw::REDISMODULE_ERR as c_int;

/// Registers `setting` with `value` as its default (the load argument, or
/// the built-in default). `flags` are `REDISMODULE_CONFIG_*` bits.
pub fn register(
    ctx: &Context,
    setting: &'static Setting,
    value: Value<'_>,
    flags: c_uint,
) -> Result<(), String> {
    let name = CString::new(setting.name()).map_err(|e| e.to_string())?;
    let privdata = (setting as *const Setting).cast_mut().cast::<c_void>();
    // SAFETY: the server's context during OnLoad; `privdata` is a static.
    let status = unsafe {
        match (setting, value) {
            (Setting::Integer { min, max, .. }, Value::Integer(default)) => {
                let register =
                    raw::RedisModule_RegisterNumericConfig.ok_or("no numeric configs")?;
                register(
                    ctx.ctx,
                    name.as_ptr(),
                    default,
                    flags,
                    *min,
                    *max,
                    Some(get_integer),
                    Some(set_integer),
                    None,
                    privdata,
                )
            }
            (Setting::Bool { .. }, Value::Bool(default)) => {
                let register = raw::RedisModule_RegisterBoolConfig.ok_or("no bool configs")?;
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
            (Setting::Text { .. }, Value::Text(default)) => {
                let default = CString::new(default)
                    .map_err(|_| format!("{} may not hold a NUL byte", setting.name()))?;
                let register = raw::RedisModule_RegisterStringConfig.ok_or("no string configs")?;
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
            _ => return Err(format!("{}: a value of the wrong kind", setting.name())),
        }
    };
    if status == OK {
        Ok(())
    } else {
        Err(format!("the server refused the config {}", setting.name()))
    }
}

/// A default as the server takes it.
pub enum Value<'a> {
    Integer(i64),
    Bool(bool),
    Text(&'a [u8]),
}

/// # Safety
/// `privdata` is what [`register`] gave the server.
unsafe fn setting<'a>(privdata: *mut c_void) -> &'a Setting {
    &*privdata.cast::<Setting>()
}

/// Writes `message` as the reason a change was refused (the server frees it).
unsafe fn refuse(err: *mut *mut raw::RedisModuleString, message: &str) -> c_int {
    if !err.is_null() {
        let message = module_string::detached(message.as_bytes());
        *err = message.inner;
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
        refuse(err, INTERNAL)
    }
}

unsafe extern "C" fn get_integer(_name: *const c_char, privdata: *mut c_void) -> c_longlong {
    or_fallback("reading a config", 0, || match setting(privdata) {
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
    apply(setting(privdata), err, |setting| match setting {
        Setting::Integer { variable, .. } => {
            variable.store(value, Ordering::Relaxed);
            true
        }
        _ => false,
    })
}

unsafe extern "C" fn get_bool(_name: *const c_char, privdata: *mut c_void) -> c_int {
    or_fallback("reading a config", 0, || match setting(privdata) {
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
    apply(setting(privdata), err, |setting| match setting {
        Setting::Bool { variable, .. } => {
            variable.store(value != 0, Ordering::Relaxed);
            true
        }
        _ => false,
    })
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
    or_fallback("reading a config", std::ptr::null_mut(), || {
        let Setting::Text { variable, .. } = setting(privdata) else {
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
    let bytes = module_string::bytes(value);
    let setting = setting(privdata);
    if let Setting::Text { check, .. } = setting {
        if let Some(why) = or_fallback("checking a config", Some(INTERNAL), || check(bytes)) {
            return refuse(err, why);
        }
    }
    apply(setting, err, |setting| {
        let Setting::Text { variable, .. } = setting else {
            return false;
        };
        fault::on_config(bytes);
        match variable.lock() {
            Ok(mut v) => {
                *v = bytes.to_vec();
                true
            }
            Err(_) => false,
        }
    })
}
