//! A command's arguments as the server passed them, borrowed: no string is
//! retained and no vector built, which matters for a command that carries
//! a thousand items. Each argument's bytes are read when asked for.

use redis_module::{raw, Context, RedisError, RedisString};
use std::ptr::NonNull;

#[derive(Clone, Copy)]
pub struct ArgV<'a> {
    ctx: *mut raw::RedisModuleCtx,
    argv: &'a [*mut raw::RedisModuleString],
}

impl<'a> ArgV<'a> {
    /// # Safety
    /// `argv` holds `argc` strings that live for the whole command.
    pub unsafe fn new(
        ctx: *mut raw::RedisModuleCtx,
        argv: *mut *mut raw::RedisModuleString,
        argc: std::os::raw::c_int,
    ) -> Self {
        let argv = if argv.is_null() || argc <= 0 {
            &[][..]
        } else {
            // SAFETY: `argc` live strings at `argv` (the caller's promise).
            unsafe { std::slice::from_raw_parts(argv, argc as usize) }
        };
        Self { ctx, argv }
    }

    pub fn len(&self) -> usize {
        self.argv.len()
    }

    pub fn is_empty(&self) -> bool {
        self.argv.is_empty()
    }

    /// The bytes of argument `i` (empty past the end).
    pub fn bytes(&self, i: usize) -> &'a [u8] {
        self.argv
            .get(i)
            .map_or(&[][..], |&s| RedisString::string_as_slice(s))
    }

    /// Arguments `from..`, `step` apart.
    pub fn each(&self, from: usize, step: usize) -> impl Iterator<Item = &'a [u8]> + 'a {
        self.argv
            .get(from..)
            .unwrap_or_default()
            .iter()
            .step_by(step.max(1))
            .map(|&s| RedisString::string_as_slice(s))
    }

    /// Argument `i` as a string the module may keep (the key name, say).
    pub fn string(&self, i: usize) -> Option<RedisString> {
        self.argv
            .get(i)
            .map(|&s| RedisString::new(NonNull::new(self.ctx), s))
    }

    /// The key name (the first argument), retained.
    pub fn key(&self) -> Result<RedisString, RedisError> {
        self.string(1).ok_or(RedisError::WrongArity)
    }

    /// Every argument as a retained string, for handlers that want them so.
    pub fn strings(&self) -> Vec<RedisString> {
        (0..self.len()).filter_map(|i| self.string(i)).collect()
    }

    pub fn context(&self) -> Context {
        Context::new(self.ctx)
    }
}
