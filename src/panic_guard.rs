//! The last line of defence: a panic must never unwind into the server,
//! where it would abort the process with every client's data.

use redis_module::{Context, RedisError, RedisResult};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Runs a command handler; a panic becomes an error reply.
pub fn contain(ctx: &Context, handler: impl FnOnce() -> RedisResult) -> RedisResult {
    catch_unwind(AssertUnwindSafe(handler)).unwrap_or_else(|_| {
        ctx.log_warning("heavykeeper: a command panicked; the error was returned to the client");
        Err(RedisError::Str(
            "ERR internal error in the heavykeeper module",
        ))
    })
}

/// Runs a data-type callback, turning a panic into `fallback`.
pub fn or_fallback<T>(fallback: T, callback: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(callback)).unwrap_or(fallback)
}
