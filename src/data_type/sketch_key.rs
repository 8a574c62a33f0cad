//! Opening a key that holds (or will hold) a sketch, with the standard errors.
//! Every sketch created or changed by a command passes through here, which
//! is where the module's memory figure is kept up to date.

use crate::data_type::stats;
use crate::data_type::HK_TYPE;
use crate::host::args::err;
use crate::host::quiet_key::QuietValue;
use heavykeeper_sketch::HeavyKeeper;
use redis_module::key::{RedisKey, RedisKeyWritable};
use redis_module::{Context, RedisError, RedisString};
use std::ops::{Deref, DerefMut};

/// The sketch at `key`, read-only. Missing key: `ERR no such key`.
pub fn read(key: &RedisKey) -> Result<&HeavyKeeper, RedisError> {
    found(key.get_value::<HeavyKeeper>(&HK_TYPE))
}

/// The sketch at `key`, writable. Missing key: `ERR no such key`.
pub fn write(key: &RedisKeyWritable) -> Result<SketchMut<'_>, RedisError> {
    found(key.get_value::<HeavyKeeper>(&HK_TYPE)).map(Accounted::new)
}

/// A sketch being changed; when the change is over, its new size is
/// accounted for.
pub type SketchMut<'a> = Accounted<&'a mut HeavyKeeper>;

/// A sketch reached through `G`, whose change in size is accounted for
/// when the guard goes.
pub struct Accounted<G: DerefMut<Target = HeavyKeeper>> {
    sketch: G,
    bytes_before: usize,
}

impl<G: DerefMut<Target = HeavyKeeper>> Accounted<G> {
    fn new(sketch: G) -> Self {
        let bytes_before = sketch.memory_bytes();
        Self {
            sketch,
            bytes_before,
        }
    }
}

impl<G: DerefMut<Target = HeavyKeeper>> Deref for Accounted<G> {
    type Target = HeavyKeeper;
    fn deref(&self) -> &HeavyKeeper {
        &self.sketch
    }
}

impl<G: DerefMut<Target = HeavyKeeper>> DerefMut for Accounted<G> {
    fn deref_mut(&mut self) -> &mut HeavyKeeper {
        &mut self.sketch
    }
}

impl<G: DerefMut<Target = HeavyKeeper>> Drop for Accounted<G> {
    fn drop(&mut self) {
        stats::sketch_resized(self.bytes_before, self.sketch.memory_bytes());
    }
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
    store(key, build()?)
}

/// Stores `sketch` at `key`, replacing what was there (freed by the server).
pub fn store(key: &RedisKeyWritable, sketch: HeavyKeeper) -> Result<(), RedisError> {
    let bytes = sketch.memory_bytes();
    key.set_value(&HK_TYPE, sketch)
        .map_err(|e| err(format!("could not store the sketch: {e}")))?;
    stats::sketch_created(bytes);
    Ok(())
}

/// The key name argument, for error-free reuse in replies and replication.
pub fn name(args: &[RedisString]) -> Result<&RedisString, RedisError> {
    args.get(1).ok_or(RedisError::WrongArity)
}

/// A sketch opened for the module's own upkeep (the watch timer), without
/// any effect a client could see ([`QuietValue`]). What changes is the
/// watch's own state, which is no part of the value; its memory figure is
/// kept up to date all the same.
pub type Quiet = Accounted<QuietValue<HeavyKeeper>>;

impl Quiet {
    /// The sketch at `name` in the context's selected database, if the key
    /// holds one.
    pub fn open(ctx: &Context, name: &RedisString) -> Option<Quiet> {
        QuietValue::open(ctx, name, &HK_TYPE).map(Accounted::new)
    }
}
