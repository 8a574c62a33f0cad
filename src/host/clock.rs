//! The server's clock, in milliseconds since the Unix epoch.

use redis_module::raw;

pub fn now_ms() -> i64 {
    // SAFETY: the function pointer is filled in by the server before any
    // command runs and never changes afterwards.
    unsafe { raw::RedisModule_Milliseconds.map_or(0, |f| f()) }
}

/// A clock for counting every command, cheaper than [`now_ms`]: the time
/// the server cached for the current command where it offers one (Redis
/// 7.2+, Valkey), else the kernel's coarse clock (a few milliseconds of
/// resolution, no system call). Rates over seconds need no more.
pub fn cached_now_ms() -> i64 {
    if let Some(cached) = crate::server_api!(RedisModule_CachedMicroseconds) {
        // SAFETY: takes nothing; the server's cached command time.
        return unsafe { cached() } / 1000;
    }
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid out-pointer; CLOCK_REALTIME_COARSE cannot fail on Linux.
    if unsafe { libc::clock_gettime(libc::CLOCK_REALTIME_COARSE, &mut ts) } != 0 {
        return now_ms();
    }
    ts.tv_sec.saturating_mul(1000) + ts.tv_nsec / 1_000_000
}
