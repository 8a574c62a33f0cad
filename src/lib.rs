//! The HeavyKeeper top-k data type for Redis and Valkey.
//!
//! This crate is the thin Redis layer: argument parsing, key access, replies
//! and data-type callbacks. The sketch itself lives in `heavykeeper-sketch`.

pub mod allocator;
pub mod args;
pub mod argv;
pub mod channel_permission;
pub mod clock;
pub mod command_spec;
pub mod commands;
pub mod config;
pub mod config_callbacks;
pub mod data_type;
pub mod fault;
pub mod host;
pub mod keyspace_event;
pub mod limits;
pub mod load_args;
pub mod module_stats;
pub mod module_string;
pub mod on_load;
pub mod panic_guard;
pub mod reply;
pub mod sketch_key;
pub mod tracking;
pub mod watching;

// Unit tests run without a server, so without its allocator.
#[cfg(not(test))]
#[global_allocator]
static ALLOCATOR: allocator::ServerAllocator = allocator::ServerAllocator;

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
    on_load::on_load(ctx, argv, argc) as std::os::raw::c_int
}
