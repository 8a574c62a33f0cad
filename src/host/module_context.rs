//! The module's own context, detached from any client: filters are
//! registered through it, timers created, the server asked questions
//! (`COMMAND`, `ACL GETUSER`, `INFO`) outside any command. One for the
//! whole module, made once at load.

use redis_module::{raw, Context};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicPtr, Ordering};

static MODULE_CTX: AtomicPtr<raw::RedisModuleCtx> = AtomicPtr::new(null_mut());

/// Makes the module's context from the load context (once, at load).
pub fn attach(ctx: &Context) {
    if !raw().is_null() {
        return;
    }
    // SAFETY: called at load, on the main thread, with the load context.
    let detached =
        unsafe { raw::RedisModule_GetDetachedThreadSafeContext.map_or(null_mut(), |f| f(ctx.ctx)) };
    MODULE_CTX.store(detached, Ordering::Relaxed);
}

/// The context, once attached.
pub fn get() -> Option<Context> {
    let ctx = raw();
    (!ctx.is_null()).then(|| Context::new(ctx))
}

/// The raw pointer (null before [`attach`]).
#[inline]
pub fn raw() -> *mut raw::RedisModuleCtx {
    MODULE_CTX.load(Ordering::Relaxed)
}
