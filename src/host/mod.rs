//! The host: what the module needs of the server, with nothing about
//! sketches or features: the one module context, the allocator, strings,
//! arguments and replies, command and config registration, publishing,
//! timers' panic guard, the clock. The data type and the features
//! (tracking, watching) stand on it; it imports none of them.

pub mod allocator;
pub mod args;
pub mod argv;
pub mod channel_permission;
pub mod client_info;
pub mod clock;
pub mod command_filter;
pub mod command_spec;
pub mod config;
pub mod event_loop;
pub mod events;
pub mod fault;
pub mod info;
pub mod keyspace;
pub mod keyspace_event;
pub mod main_thread_cell;
pub mod module_context;
pub mod module_load;
pub mod module_string;
pub mod options;
pub mod panic_guard;
pub mod publish;
pub mod quiet_key;
pub mod reply;
pub mod server_info;
pub mod thread_heap;

/// The server's API function `$name`, `None` where this server does not
/// export it (check before relying on one newer than Redis 7.0).
#[macro_export]
macro_rules! server_api {
    ($name:ident) => {{
        // SAFETY: the server fills the API table once, in `RedisModule_Init`
        // at load, before anything else of the module runs, and never
        // writes it again: reading it races with nothing.
        unsafe { ::redis_module::raw::$name }
    }};
}
