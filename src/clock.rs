//! The server's clock, in milliseconds since the Unix epoch.

use redis_module::raw;

/// Latest timestamp a command may carry: the end of the year 9999.
pub use heavykeeper_sketch::MAX_TIMESTAMP_MS;

pub fn now_ms() -> i64 {
    // SAFETY: the function pointer is filled in by the server before any
    // command runs and never changes afterwards.
    unsafe { raw::RedisModule_Milliseconds.map_or(0, |f| f()) }
}
