//! Keyspace notifications for writes, without allocating per command.

use redis_module::{raw, Context, NotifyEvent, RedisString};
use std::ffi::CStr;

/// Tells subscribers (`notify-keyspace-events` with `d`, or `A`) that `key`
/// changed through `event`.
pub fn key_changed(ctx: &Context, event: &CStr, key: &RedisString) {
    // SAFETY: the server fills the function pointer before any command runs;
    // `event` is NUL-terminated and `key` is a live string of this call.
    unsafe {
        if let Some(notify) = raw::RedisModule_NotifyKeyspaceEvent {
            notify(
                ctx.ctx,
                NotifyEvent::MODULE.bits(),
                event.as_ptr(),
                key.inner,
            );
        }
    }
}
