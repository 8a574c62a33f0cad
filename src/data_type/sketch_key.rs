//! Opening a key that holds (or will hold) a sketch, with the standard errors.
//! Every sketch created or changed by a command passes through here, which
//! is where the module's memory figure is kept up to date.

use crate::data_type::stats;
use crate::data_type::HK_TYPE;
use crate::host::args::err;
use heavykeeper_sketch::HeavyKeeper;
use redis_module::key::{KeyFlags, RedisKey, RedisKeyWritable};
use redis_module::{raw, Context, RedisError, RedisString};
use std::ops::{Deref, DerefMut};
use std::os::raw::c_int;

/// The sketch at `key`, read-only. Missing key: `ERR no such key`.
pub fn read(key: &RedisKey) -> Result<&HeavyKeeper, RedisError> {
    found(key.get_value::<HeavyKeeper>(&HK_TYPE))
}

/// The sketch at `key`, writable. Missing key: `ERR no such key`.
pub fn write(key: &RedisKeyWritable) -> Result<SketchMut<'_>, RedisError> {
    let sketch = found(key.get_value::<HeavyKeeper>(&HK_TYPE))?;
    Ok(SketchMut {
        bytes_before: sketch.memory_bytes(),
        sketch,
    })
}

/// A sketch being changed; when the change is over, its new size is
/// accounted for.
pub struct SketchMut<'a> {
    sketch: &'a mut HeavyKeeper,
    bytes_before: usize,
}

impl Deref for SketchMut<'_> {
    type Target = HeavyKeeper;
    fn deref(&self) -> &HeavyKeeper {
        self.sketch
    }
}

impl DerefMut for SketchMut<'_> {
    fn deref_mut(&mut self) -> &mut HeavyKeeper {
        self.sketch
    }
}

impl Drop for SketchMut<'_> {
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
/// any effect a client could see: the key is opened read-only, so the
/// server never signals it as modified (no aborted `MULTI`, no client-side
/// caching invalidation, no keyspace event), and with `NOTOUCH` (plus
/// `NOSTATS`/`NOEXPIRE` where the server has them, 7.2+) so that its LRU/LFU
/// clock and hit statistics stay as the clients left them. What changes is
/// the watch's own state, which is no part of the value.
pub struct Quiet {
    /// Closed when the guard goes, after the sketch's last use.
    _key: RedisKey,
    sketch: std::ptr::NonNull<HeavyKeeper>,
    bytes_before: usize,
}

impl Quiet {
    /// The sketch at `name` in the context's selected database, if the key
    /// holds one.
    pub fn open(ctx: &Context, name: &RedisString) -> Option<Quiet> {
        // Opened here, not by the crate: its `to_raw_parts` closes the key
        // it hands out.
        let mode = raw::KeyMode::READ.bits() | quiet_flags().bits();
        // SAFETY: the caller's live context and string.
        let inner = unsafe { raw::RedisModule_OpenKey?(ctx.ctx, name.inner, mode) };
        if inner.is_null() {
            return None;
        }
        // SAFETY: a key just opened in `ctx`; closed when dropped.
        let key = unsafe { RedisKey::from_raw_parts(ctx.ctx, inner) };
        // SAFETY: a key opened on the main thread; the value pointer is
        // the one this module handed to the server, and nothing else holds
        // a reference to it while this guard lives (same thread, no call
        // back into the module in between).
        let value = unsafe {
            let get_type = raw::RedisModule_ModuleTypeGetType?;
            let get_value = raw::RedisModule_ModuleTypeGetValue?;
            if get_type(inner) != *HK_TYPE.raw_type.borrow() {
                return None;
            }
            get_value(inner).cast::<HeavyKeeper>()
        };
        let sketch = std::ptr::NonNull::new(value)?;
        // SAFETY: as above.
        let bytes_before = unsafe { sketch.as_ref() }.memory_bytes();
        Some(Quiet {
            _key: key,
            sketch,
            bytes_before,
        })
    }
}

/// `NOTOUCH`, and what else of the quiet modes the server knows.
fn quiet_flags() -> KeyFlags {
    let wanted = KeyFlags::NOTOUCH | KeyFlags::NOSTATS | KeyFlags::NOEXPIRE;
    // SAFETY: a plain query of the server (7.2+); 7.0 knows only NOTOUCH.
    let known = unsafe { raw::RedisModule_GetOpenKeyModesAll.map(|f| f()) };
    match known {
        Some(known) => KeyFlags::from_bits_truncate(wanted.bits() & known as c_int),
        None => KeyFlags::NOTOUCH,
    }
}

impl Deref for Quiet {
    type Target = HeavyKeeper;
    fn deref(&self) -> &HeavyKeeper {
        // SAFETY: see `open`.
        unsafe { self.sketch.as_ref() }
    }
}

impl DerefMut for Quiet {
    fn deref_mut(&mut self) -> &mut HeavyKeeper {
        // SAFETY: see `open`.
        unsafe { self.sketch.as_mut() }
    }
}

impl Drop for Quiet {
    fn drop(&mut self) {
        stats::sketch_resized(self.bytes_before, self.memory_bytes());
    }
}
