//! Module configuration, settable at load time (`loadmodule ... max-sketch-bytes N`)
//! and with `CONFIG SET heavykeeper.<name> N`.

use std::sync::atomic::{AtomicI64, Ordering};

/// Largest fixed footprint (buckets plus top-k slots) one `HK.RESERVE` may allocate.
pub static MAX_SKETCH_BYTES: AtomicI64 = AtomicI64::new(DEFAULT_MAX_SKETCH_BYTES);

pub const DEFAULT_MAX_SKETCH_BYTES: i64 = 64 * 1024 * 1024;
pub const MIN_MAX_SKETCH_BYTES: i64 = 1024;
pub const MAX_MAX_SKETCH_BYTES: i64 = 1 << 40;

/// How far ahead of the server clock a client's timestamp may be.
pub static MAX_FUTURE_MS: AtomicI64 = AtomicI64::new(DEFAULT_MAX_FUTURE_MS);

pub const DEFAULT_MAX_FUTURE_MS: i64 = 60_000;
pub const MAX_MAX_FUTURE_MS: i64 = heavykeeper_sketch::MAX_TIMESTAMP_MS;

pub fn max_sketch_bytes() -> u64 {
    MAX_SKETCH_BYTES.load(Ordering::Relaxed).max(0) as u64
}

pub fn max_future_ms() -> i64 {
    MAX_FUTURE_MS.load(Ordering::Relaxed).max(0)
}
