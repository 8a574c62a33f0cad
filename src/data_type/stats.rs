//! Module-wide figures for `INFO heavykeeper` (section
//! `heavykeeper_sketches`): how many sketches there are, the memory they
//! hold, what they counted and what the limits refused.
//!
//! Sketch count and memory are kept by the places a sketch's life passes
//! through: created (commands, RDB load, copy), changed (the write guard in
//! `sketch_key`) and freed (the free callback, possibly on the lazy-free
//! thread: hence atomics).

use crate::host::info::{self, number};
use crate::host::panic_guard;
use redis_module::InfoContext;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

static SKETCHES: AtomicI64 = AtomicI64::new(0);
static SKETCH_BYTES: AtomicI64 = AtomicI64::new(0);
static ARRIVALS: AtomicU64 = AtomicU64::new(0);
static REFUSED_BY_LIMITS: AtomicU64 = AtomicU64::new(0);

pub fn sketch_created(bytes: usize) {
    SKETCHES.fetch_add(1, Ordering::Relaxed);
    SKETCH_BYTES.fetch_add(bytes as i64, Ordering::Relaxed);
}

pub fn sketch_freed(bytes: usize) {
    SKETCHES.fetch_sub(1, Ordering::Relaxed);
    SKETCH_BYTES.fetch_sub(bytes as i64, Ordering::Relaxed);
}

pub fn sketch_resized(before: usize, after: usize) {
    if before != after {
        SKETCH_BYTES.fetch_add(after as i64 - before as i64, Ordering::Relaxed);
    }
}

/// Arrivals counted by commands (their total weight).
pub fn counted(weight: u64) {
    ARRIVALS.fetch_add(weight, Ordering::Relaxed);
}

/// A client command refused by `max-sketch-bytes`, `max-future-ms` or `maxmemory`.
pub fn refused_by_limits() {
    REFUSED_BY_LIMITS.fetch_add(1, Ordering::Relaxed);
}

pub fn add_section(ctx: &InfoContext) {
    let load = |counter: &AtomicU64| number(counter.load(Ordering::Relaxed));
    let bytes = SKETCH_BYTES.load(Ordering::Relaxed).max(0);
    let fields = [
        ("sketches", SKETCHES.load(Ordering::Relaxed).max(0)),
        ("sketch_memory_bytes", bytes),
        ("arrivals_counted", load(&ARRIVALS)),
        ("commands_refused_by_limits", load(&REFUSED_BY_LIMITS)),
        ("panics_contained", number(panic_guard::incidents())),
    ];
    info::add_section(ctx, "sketches", "", fields);
}
