//! Opening a key that holds (or will hold) a sketch, with the standard errors.

use crate::args::err;
use crate::data_type::HK_TYPE;
use heavykeeper_sketch::HeavyKeeper;
use redis_module::key::{RedisKey, RedisKeyWritable};
use redis_module::{RedisError, RedisString};

pub fn wrong_type() -> RedisError {
    RedisError::WrongType
}

pub fn no_such_key() -> RedisError {
    err("no such key")
}

/// The sketch at `key`, read-only. Missing key: `ERR no such key`.
pub fn read(key: &RedisKey) -> Result<&HeavyKeeper, RedisError> {
    match key.get_value::<HeavyKeeper>(&HK_TYPE) {
        Ok(Some(sketch)) => Ok(sketch),
        Ok(None) => Err(no_such_key()),
        Err(_) => Err(wrong_type()),
    }
}

/// The sketch at `key`, writable. Missing key: `ERR no such key`.
pub fn write(key: &RedisKeyWritable) -> Result<&mut HeavyKeeper, RedisError> {
    match key.get_value::<HeavyKeeper>(&HK_TYPE) {
        Ok(Some(sketch)) => Ok(sketch),
        Ok(None) => Err(no_such_key()),
        Err(_) => Err(wrong_type()),
    }
}

/// Stores a new sketch at an empty `key`; an existing key of any type is an error.
pub fn create(key: &RedisKeyWritable, sketch: HeavyKeeper) -> Result<(), RedisError> {
    if !key.is_empty() {
        return Err(err("key already exists"));
    }
    key.set_value(&HK_TYPE, sketch)
        .map_err(|e| err(format!("could not store the sketch: {e}")))
}

/// The key name argument, for error-free reuse in replies and replication.
pub fn name(args: &[RedisString]) -> Result<&RedisString, RedisError> {
    args.get(1).ok_or(RedisError::WrongArity)
}
