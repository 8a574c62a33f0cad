//! Fault injection for the integration tests, in debug builds only: the one
//! way to prove that a panic inside a command or a callback is contained.
//! Release builds compile every hook to nothing.

/// An item whose arrival panics in the middle of `HK.ADD`/`HK.INCRBY`.
pub const PANIC_ON_ADD: &[u8] = b"heavykeeper:fault:panic-on-add";
/// A member that makes encoding a sketch panic (RDB save, AOF rewrite, digest).
pub const PANIC_ON_ENCODE: &[u8] = b"heavykeeper:fault:panic-on-encode";

#[inline]
pub fn on_add(item: &[u8]) {
    if cfg!(debug_assertions) && item == PANIC_ON_ADD {
        panic!("fault injected by a test: panic on add"); // panic-ok: debug builds only, under the guard
    }
}

#[inline]
pub fn on_encode(sketch: &heavykeeper_sketch::HeavyKeeper) {
    if cfg!(debug_assertions) && sketch.contains(PANIC_ON_ENCODE, i64::MAX) {
        panic!("fault injected by a test: panic on encode"); // panic-ok: debug builds only, under the guard
    }
}
