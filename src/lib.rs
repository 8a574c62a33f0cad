//! The HeavyKeeper top-k data type for Redis and Valkey.
//!
//! This crate is the thin Redis layer over the sketch (`heavykeeper-sketch`)
//! and the tracker's counting (`heavykeeper-tracker`). docs/design.md draws
//! its layers.

// From the bottom up: the server's API, the data type, the features (beside
// each other, never calling each other), the commands, and the wiring.
pub mod commands;
pub mod config;
pub mod data_type;
pub mod host;
pub mod on_load;
pub mod tracking;
pub mod watching;

// Unit tests run without a server, so without its allocator.
#[cfg(not(test))]
#[global_allocator]
static ALLOCATOR: host::allocator::ServerAllocator = host::allocator::ServerAllocator;

/// The server calls this when it loads the module.
///
/// # Safety
/// Called by the server, with its context and the `loadmodule` arguments.
#[no_mangle]
pub unsafe extern "C" fn RedisModule_OnLoad(
    ctx: *mut redis_module::raw::RedisModuleCtx,
    argv: *mut *mut redis_module::raw::RedisModuleString,
    argc: std::os::raw::c_int,
) -> std::os::raw::c_int {
    // SAFETY: the server's own arguments, passed on as they came.
    unsafe { host::module_load::entry(ctx, argv, argc, on_load::load) }
}
