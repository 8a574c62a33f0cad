//! A module value opened for the module's own upkeep (a timer), without any
//! effect a client could see: the key is opened read-only, so the server
//! never signals it as modified (no aborted `MULTI`, no client-side caching
//! invalidation, no keyspace event), and with `NOTOUCH` (plus
//! `NOSTATS`/`NOEXPIRE` where the server has them, 7.2+) so that its
//! LRU/LFU clock and hit statistics stay as the clients left them. The
//! value may still be changed in place: in what no client reads.

use redis_module::key::{KeyFlags, RedisKey};
use redis_module::native_types::RedisType;
use redis_module::{raw, Context, RedisString};
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::os::raw::c_int;
use std::ptr::NonNull;

pub struct QuietValue<T> {
    /// Closed when the guard goes, after the value's last use.
    _key: RedisKey,
    value: NonNull<T>,
    _type: PhantomData<T>,
}

impl<T> QuietValue<T> {
    /// The value at `name` in the context's selected database, if the key
    /// holds one of type `of_type`, whose values are `T`s.
    pub fn open(ctx: &Context, name: &RedisString, of_type: &RedisType) -> Option<Self> {
        let (open, get_type, get_value) = (
            crate::server_api!(RedisModule_OpenKey)?,
            crate::server_api!(RedisModule_ModuleTypeGetType)?,
            crate::server_api!(RedisModule_ModuleTypeGetValue)?,
        );
        // Opened here, not by the crate: its `to_raw_parts` closes the key
        // it hands out.
        let mode = raw::KeyMode::READ.bits() | quiet_flags().bits();
        // SAFETY: the caller's live context and string.
        let inner = unsafe { open(ctx.ctx, name.inner, mode) };
        if inner.is_null() {
            return None;
        }
        // SAFETY: a key just opened in `ctx`; closed when dropped.
        let key = unsafe { RedisKey::from_raw_parts(ctx.ctx, inner) };
        // SAFETY: a key opened on the main thread; the type is compared
        // before the value is taken for a `T`, the type's own values.
        let value = unsafe {
            if get_type(inner) != *of_type.raw_type.borrow() {
                return None;
            }
            get_value(inner).cast::<T>()
        };
        Some(QuietValue {
            _key: key,
            value: NonNull::new(value)?,
            _type: PhantomData,
        })
    }
}

/// `NOTOUCH`, and what else of the quiet modes the server knows.
fn quiet_flags() -> KeyFlags {
    let wanted = KeyFlags::NOTOUCH | KeyFlags::NOSTATS | KeyFlags::NOEXPIRE;
    // SAFETY: a plain query of the server (7.2+); 7.0 knows only NOTOUCH.
    let known = crate::server_api!(RedisModule_GetOpenKeyModesAll).map(|f| unsafe { f() });
    match known {
        Some(known) => KeyFlags::from_bits_truncate(wanted.bits() & known as c_int),
        None => KeyFlags::NOTOUCH,
    }
}

impl<T> Deref for QuietValue<T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the value pointer is the one the module handed to the
        // server for this key, open until `self` goes; nothing else holds a
        // reference to it meanwhile (main thread, no call back into the
        // module in between).
        unsafe { self.value.as_ref() }
    }
}

impl<T> DerefMut for QuietValue<T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`; `&mut self` makes this the only reference.
        unsafe { self.value.as_mut() }
    }
}
