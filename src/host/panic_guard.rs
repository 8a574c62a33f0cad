//! The last line of defence: a panic must never unwind into the server,
//! where it would abort the process with every client's data. Every
//! function the server calls runs under one of these guards: commands,
//! the timer, INFO, config callbacks, server and keyspace events, the
//! command filter and every data-type callback.

use redis_module::logging::log_warning;
use redis_module::{Context, RedisError, RedisResult};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};

/// Panics contained outside commands (a command's panic is its error reply).
static INCIDENTS: AtomicU64 = AtomicU64::new(0);

/// Contained panics so far, for `INFO heavykeeper`.
pub fn incidents() -> u64 {
    INCIDENTS.load(Ordering::Relaxed)
}

/// Runs a command handler; a panic becomes an error reply.
pub fn contain(ctx: &Context, handler: impl FnOnce() -> RedisResult) -> RedisResult {
    catch_unwind(AssertUnwindSafe(handler)).unwrap_or_else(|_| {
        ctx.log_warning("heavykeeper: a command panicked; the error was returned to the client");
        Err(RedisError::Str(
            "ERR internal error in the heavykeeper module",
        ))
    })
}

/// Runs a callback of the server's (`what` names it for the log), turning a
/// panic into `fallback`, one log line and one counted incident.
pub fn or_fallback<T>(what: &str, fallback: T, callback: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(callback)).unwrap_or_else(|_| {
        incident(what);
        fallback
    })
}

/// When the last incident was logged (seconds since the Unix epoch).
static LOGGED_AT_S: AtomicU64 = AtomicU64::new(0);

/// Counts and logs a contained panic: every one counted, at most one a
/// second logged (a panic in the command filter would otherwise write a
/// line for every command). Logging is itself guarded: nothing may unwind
/// from here.
pub fn incident(what: &str) {
    let n = INCIDENTS.fetch_add(1, Ordering::Relaxed) + 1;
    let now_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    if LOGGED_AT_S.swap(now_s, Ordering::Relaxed) == now_s {
        return;
    }
    let _ = catch_unwind(|| {
        log_warning(format!(
            "heavykeeper: a panic in {what} was contained ({n} so far; a bug: please report it)"
        ));
    });
}
