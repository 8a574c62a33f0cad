//! `heavykeeper.watch-interval-ms` and `heavykeeper.watch-max-events`.

use crate::host::config::Setting;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

static WATCH_INTERVAL_MS: AtomicI64 = AtomicI64::new(DEFAULT_INTERVAL_MS);
static WATCH_MAX_EVENTS: AtomicI64 = AtomicI64::new(DEFAULT_MAX_EVENTS);

const DEFAULT_INTERVAL_MS: i64 = 100;
const MIN_INTERVAL_MS: i64 = 10;
const MAX_INTERVAL_MS: i64 = 60_000;
const DEFAULT_MAX_EVENTS: i64 = 1000;
const MAX_MAX_EVENTS: i64 = 1_000_000;

pub static SETTINGS: [Setting; 2] = [
    Setting::integer(
        "watch-interval-ms",
        &WATCH_INTERVAL_MS,
        (DEFAULT_INTERVAL_MS, MIN_INTERVAL_MS, MAX_INTERVAL_MS),
        None,
    ),
    Setting::integer(
        "watch-max-events",
        &WATCH_MAX_EVENTS,
        (DEFAULT_MAX_EVENTS, 1, MAX_MAX_EVENTS),
        None,
    ),
];

pub fn interval() -> Duration {
    let ms = WATCH_INTERVAL_MS
        .load(Ordering::Relaxed)
        .clamp(MIN_INTERVAL_MS, MAX_INTERVAL_MS);
    Duration::from_millis(ms as u64)
}

/// Events each watched sketch may publish per second.
pub fn max_events_per_second() -> u64 {
    WATCH_MAX_EVENTS
        .load(Ordering::Relaxed)
        .clamp(1, MAX_MAX_EVENTS) as u64
}
