//! Opening a key that holds (or will hold) a sketch, with the standard errors.

use crate::args::err;
use crate::data_type::HK_TYPE;
use heavykeeper_sketch::HeavyKeeper;
use redis_module::key::{RedisKey, RedisKeyWritable};
use redis_module::{RedisError, RedisString};

/// The sketch at `key`, read-only. Missing key: `ERR no such key`.
pub fn read(key: &RedisKey) -> Result<&HeavyKeeper, RedisError> {
    found(key.get_value::<HeavyKeeper>(&HK_TYPE))
}

/// The sketch at `key`, writable. Missing key: `ERR no such key`.
pub fn write(key: &RedisKeyWritable) -> Result<&mut HeavyKeeper, RedisError> {
    found(key.get_value::<HeavyKeeper>(&HK_TYPE))
}

/// The crate reports a key of another type as an error without the
/// standard prefix: answer with the standard `WRONGTYPE` message instead.
fn found<T>(value: Result<Option<T>, RedisError>) -> Result<T, RedisError> {
    match value {
        Ok(Some(sketch)) => Ok(sketch),
        Ok(None) => Err(err("no such key")),
        Err(_) => Err(RedisError::WrongType),
    }
}

/// Stores a new sketch at an empty `key`; an existing key of any type is an
/// error, found before the sketch is built.
pub fn create(
    key: &RedisKeyWritable,
    build: impl FnOnce() -> Result<HeavyKeeper, RedisError>,
) -> Result<(), RedisError> {
    if !key.is_empty() {
        return Err(err("key already exists"));
    }
    key.set_value(&HK_TYPE, build()?)
        .map_err(|e| err(format!("could not store the sketch: {e}")))
}

/// The key name argument, for error-free reuse in replies and replication.
pub fn name(args: &[RedisString]) -> Result<&RedisString, RedisError> {
    args.get(1).ok_or(RedisError::WrongArity)
}
