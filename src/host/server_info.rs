//! Reading one field of the server's `INFO` (`RM_GetServerInfo`): what a
//! module can learn of the server's own counters.

use redis_module::{raw, Context};
use std::ffi::CStr;

/// The text of `field` in `section`, if the server has it.
pub fn field(ctx: &Context, section: &CStr, field: &CStr) -> Option<Vec<u8>> {
    // SAFETY: a live context; the info data is freed before returning, and
    // the field's text copied out before that.
    unsafe {
        let info = raw::RedisModule_GetServerInfo?(ctx.ctx, section.as_ptr());
        if info.is_null() {
            return None;
        }
        let text = raw::RedisModule_ServerInfoGetFieldC?(info, field.as_ptr());
        let value = (!text.is_null()).then(|| CStr::from_ptr(text).to_bytes().to_vec());
        if let Some(free) = raw::RedisModule_FreeServerInfo {
            free(ctx.ctx, info);
        }
        value
    }
}

/// Is the server Valkey of at least version `major`? (`INFO server` names
/// it: `server_name:valkey`, `valkey_version:9.1.2`.)
pub fn is_valkey_from(ctx: &Context, major: u32) -> bool {
    let named_valkey = field(ctx, c"server", c"server_name").is_some_and(|n| n == b"valkey");
    let version = field(ctx, c"server", c"valkey_version").unwrap_or_default();
    let found_major = std::str::from_utf8(&version)
        .ok()
        .and_then(|v| v.split('.').next()?.parse::<u32>().ok());
    named_valkey && found_major.is_some_and(|m| m >= major)
}

/// How many `code` errors the server has replied (`INFO errorstats`,
/// `errorstat_<code>:count=N`): `Some(0)` before the first, `None` if the
/// server cannot say.
pub fn error_count(ctx: &Context, name: &CStr) -> Option<u64> {
    crate::server_api!(RedisModule_GetServerInfo)?;
    match field(ctx, c"errorstats", name) {
        None => Some(0),
        Some(text) => parse_error_count(&text),
    }
}

/// How many commands the server has served (`INFO stats`,
/// `total_commands_processed`), if it can say.
pub fn commands_processed(ctx: &Context) -> Option<u64> {
    crate::server_api!(RedisModule_GetServerInfo)?;
    let text = field(ctx, c"stats", c"total_commands_processed")?;
    std::str::from_utf8(&text).ok()?.trim().parse().ok()
}

/// `count=N` (as `INFO errorstats` writes it).
fn parse_error_count(text: &[u8]) -> Option<u64> {
    let digits = text.strip_prefix(b"count=")?;
    std::str::from_utf8(digits).ok()?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_counts_are_read_as_info_writes_them() {
        assert_eq!(parse_error_count(b"count=42"), Some(42));
        assert_eq!(parse_error_count(b"count=0\r"), Some(0));
        assert_eq!(parse_error_count(b"42"), None);
        assert_eq!(parse_error_count(b"count=x"), None);
    }
}
