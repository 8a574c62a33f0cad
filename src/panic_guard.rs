//! The last line of defence: a panic must never unwind into the server,
//! where it would abort the process with every client's data.

use redis_module::{Context, RedisError, RedisResult, RedisString};
use std::panic::{catch_unwind, AssertUnwindSafe};

pub type Handler = fn(&Context, Vec<RedisString>) -> RedisResult;

/// Wraps a command handler so that a panic becomes an error reply.
pub fn guarded(handler: Handler) -> impl Fn(&Context, Vec<RedisString>) -> RedisResult {
    move |ctx, args| {
        catch_unwind(AssertUnwindSafe(|| handler(ctx, args))).unwrap_or_else(|_| {
            ctx.log_warning(
                "heavykeeper: a command panicked; the error was returned to the client",
            );
            Err(RedisError::Str(
                "ERR internal error in the heavykeeper module",
            ))
        })
    }
}

/// Runs a data-type callback, turning a panic into `fallback`.
pub fn or_fallback<T>(fallback: T, callback: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(callback)).unwrap_or(fallback)
}
