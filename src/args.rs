//! Argument parsing with error messages that say which argument is wrong.

use redis_module::{RedisError, RedisString};

pub fn err(message: impl Into<String>) -> RedisError {
    RedisError::String(format!("ERR {}", message.into()))
}

fn text(arg: &RedisString) -> Option<&str> {
    std::str::from_utf8(arg.as_slice()).ok()
}

/// An integer in `min..=max`.
pub fn integer(arg: &RedisString, what: &str, min: u64, max: u64) -> Result<u64, RedisError> {
    text(arg)
        .and_then(|s| s.parse::<u64>().ok())
        .filter(|v| (min..=max).contains(v))
        .ok_or_else(|| err(format!("{what} must be an integer between {min} and {max}")))
}

/// A finite decimal number.
pub fn decimal(arg: &RedisString, what: &str) -> Result<f64, RedisError> {
    text(arg)
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|v| v.is_finite())
        .ok_or_else(|| err(format!("{what} must be a number")))
}

/// Case-insensitive keyword comparison.
pub fn is_keyword(arg: &RedisString, keyword: &str) -> bool {
    arg.as_slice().eq_ignore_ascii_case(keyword.as_bytes())
}

/// A timestamp in milliseconds since the Unix epoch.
pub fn timestamp(arg: &RedisString) -> Result<i64, RedisError> {
    let max = crate::clock::MAX_TIMESTAMP_MS as u64;
    integer(arg, "timestamp (milliseconds since the Unix epoch)", 0, max).map(|t| t as i64)
}
