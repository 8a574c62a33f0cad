//! Strings for the server made from bytes: key names, channels, messages.
//!
//! Key and channel names are binary. The crate's `Context::create_string`
//! and `RedisString::create` go through a C string and panic on a NUL byte;
//! this goes through pointer and length, so every byte string is a valid
//! name. (`clippy.toml` forbids the other two.)

use redis_module::{raw, Context, RedisString};

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

/// The bytes of a string the server handed over, borrowed for the current
/// call; empty for a null string. (The crate's `string_as_slice` builds a
/// slice from whatever pointer comes back, null included.)
///
/// # Safety
/// `s` is null or a string the server passed to the current call, and the
/// bytes are not used after that call returns.
pub unsafe fn bytes<'a>(s: *const raw::RedisModuleString) -> &'a [u8] {
    if s.is_null() {
        return &[];
    }
    let mut len = 0usize;
    // SAFETY: see above; the server fills the function pointer before
    // anything runs.
    unsafe {
        let Some(ptr_len) = raw::RedisModule_StringPtrLen else {
            return &[];
        };
        let ptr = ptr_len(s, &mut len);
        if ptr.is_null() {
            &[]
        } else {
            std::slice::from_raw_parts(ptr.cast::<u8>(), len)
        }
    }
}
