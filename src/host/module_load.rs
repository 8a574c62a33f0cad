//! Loading the module, as the server sees it: the API initialised, the
//! arguments read, the module's own steps run under a guard (a panic while
//! loading refuses the load instead of taking the server down at start),
//! and each refusal one log line. What is registered, and in which order,
//! is the caller's (`on_load.rs`).

use redis_module::{raw, Context, InfoContext, RedisString};
use std::os::raw::c_int;
use std::sync::OnceLock;

/// The module's own loading: its context and the `loadmodule` arguments.
pub type Load = fn(&Context, &[&[u8]]) -> Result<(), String>;

/// What `RedisModule_OnLoad` returns to the server.
///
/// # Safety
/// Called from `RedisModule_OnLoad` with the server's own arguments.
pub unsafe fn entry(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
    load: Load,
) -> c_int {
    // SAFETY: the server's context; the name is a static C string, as no
    // allocation is possible before the API is known.
    let init = unsafe {
        raw::Export_RedisModule_Init(
            ctx,
            c"heavykeeper".as_ptr(),
            1,
            raw::REDISMODULE_APIVER_1 as c_int,
        )
    };
    if init == raw::Status::Err as c_int {
        return raw::Status::Err as c_int;
    }
    let context = Context::new(ctx);
    // Logging from other threads (the tracker's worker) goes through it.
    let _ = redis_module::MODULE_CONTEXT.set_context(&context);
    let loaded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let args: Vec<RedisString> = redis_module::decode_args(ctx, argv, argc);
        let bytes: Vec<&[u8]> = args.iter().map(RedisString::as_slice).collect();
        load(&context, &bytes)
    }))
    .unwrap_or_else(|_| Err("internal error while loading (a bug: please report it)".into()));
    match loaded {
        Ok(()) => raw::Status::Ok as c_int,
        Err(why) => {
            context.log_warning(&format!("heavykeeper: refusing to load: {why}"));
            raw::Status::Err as c_int
        }
    }
}

/// Applies redis.conf's lines for the configs registered so far
/// (`RM_LoadConfigs`, where the server has it); false if one is invalid.
pub fn load_configs(ctx: &Context) -> bool {
    crate::server_api!(RedisModule_LoadConfigs)
        // SAFETY: the server's context, during OnLoad.
        .is_none_or(|load_configs| unsafe { load_configs(ctx.ctx) } != raw::Status::Err as c_int)
}

/// Sets the module's option bits (the `redis-module` crate's and the
/// server's own, such as Valkey's).
pub fn set_module_options(ctx: &Context, options: c_int) {
    if let Some(set) = crate::server_api!(RedisModule_SetModuleOptions) {
        // SAFETY: the server's context, during OnLoad.
        unsafe { set(ctx.ctx, options) };
    }
}

/// Can commands be put in ACL categories here (Redis 7.2+, Valkey)?
pub fn has_acl_categories() -> bool {
    crate::server_api!(RedisModule_SetCommandACLCategories).is_some()
}

/// Adds the module's ACL category `name` (Redis 7.4+, Valkey): did the
/// server take it?
pub fn add_acl_category(ctx: &Context, name: &std::ffi::CStr) -> bool {
    crate::server_api!(RedisModule_AddACLCategory).is_some_and(|add| {
        // SAFETY: the server's context, during OnLoad; a C string.
        unsafe { add(ctx.ctx, name.as_ptr()) == raw::Status::Ok as c_int }
    })
}

/// Writes the module's `INFO` sections; told whether for a crash report.
pub type InfoHook = fn(&InfoContext, for_crash_report: bool);

static INFO_HOOK: OnceLock<InfoHook> = OnceLock::new();

/// The module's `INFO` sections come from `hook`.
pub fn register_info(ctx: &Context, hook: InfoHook) {
    if INFO_HOOK.set(hook).is_err() {
        return;
    }
    if let Some(register) = crate::server_api!(RedisModule_RegisterInfoFunc) {
        // SAFETY: the server's context, during OnLoad; the callback
        // contains every panic.
        unsafe { register(ctx.ctx, Some(info_callback)) };
    }
}

extern "C" fn info_callback(ctx: *mut raw::RedisModuleInfoCtx, for_crash_report: c_int) {
    let ctx = InfoContext::new(ctx);
    if let Some(hook) = INFO_HOOK.get() {
        super::panic_guard::or_fallback("INFO", (), || hook(&ctx, for_crash_report != 0));
    }
}
