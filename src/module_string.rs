//! Strings for the server made from bytes: key names, channels, messages.
//!
//! Key and channel names are binary. The crate's `Context::create_string`
//! and `RedisString::create` go through a C string and panic on a NUL byte;
//! this goes through pointer and length, so every byte string is a valid
//! name. (`clippy.toml` forbids the other two.)

use redis_module::{Context, RedisString};

/// `bytes` as a server string owned by the context `ctx` (freed with it, or
/// when dropped).
pub fn of(ctx: &Context, bytes: &[u8]) -> RedisString {
    RedisString::create_from_slice(ctx.ctx, bytes)
}

/// `bytes` as a server string owned by no context (for a callback that has
/// none): freed when dropped.
pub fn detached(bytes: &[u8]) -> RedisString {
    RedisString::create_from_slice(std::ptr::null_mut(), bytes)
}
