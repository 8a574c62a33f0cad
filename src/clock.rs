//! The server's clock, in milliseconds since the Unix epoch.

use redis_module::raw;

/// Latest timestamp a command may carry: the year 9999.
pub const MAX_TIMESTAMP_MS: i64 = 253_402_300_799_999;

pub fn now_ms() -> i64 {
    // SAFETY: the function pointer is filled in by the server before any
    // command runs and never changes afterwards.
    unsafe { raw::RedisModule_Milliseconds.map_or(0, |f| f()) }
}
