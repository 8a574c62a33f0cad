//! The tracking configs: `heavykeeper.track`, `track-k`, `track-halflife`
//! and `track-sample`, at load time or with `CONFIG SET`. Each change is
//! applied at once (see [`super::apply_configs`]).

use heavykeeper_sketch::{KeyTracker, TrackerShape};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Mutex;

pub static TRACK: AtomicBool = AtomicBool::new(false);
pub static TRACK_K: AtomicI64 = AtomicI64::new(DEFAULT_K);
pub static TRACK_HALFLIFE: AtomicI64 = AtomicI64::new(DEFAULT_HALFLIFE_S);
pub static TRACK_SAMPLE: AtomicI64 = AtomicI64::new(DEFAULT_SAMPLE);
/// `track yes` alone counts one command in 16 (weighted 16): the main
/// thread's cost is then within noise of tracking off, and the list and
/// rates stay right (`make bench`, "Tracking the server's own hot keys").
pub const DEFAULT_SAMPLE: i64 = 16;

/// Publish `hot`/`cool` for keys whose rate crosses this (req/s; 0: off).
pub static TRACK_NOTIFY_ABOVE: AtomicI64 = AtomicI64::new(0);
pub const MAX_NOTIFY_ABOVE: i64 = 1_000_000_000;
/// Where those events go.
pub static TRACK_CHANNEL: Mutex<Vec<u8>> = Mutex::new(Vec::new());
pub const DEFAULT_CHANNEL: &str = "heavykeeper:hotkeys";

pub const DEFAULT_K: i64 = 100;
pub const MAX_K: i64 = KeyTracker::MAX_K as i64;
pub const DEFAULT_HALFLIFE_S: i64 = 10;
/// A day: longer half-lives would not mean "now" any more.
pub const MAX_HALFLIFE_S: i64 = 86_400;
pub const MAX_SAMPLE: i64 = 1_000_000;

pub fn tracking_on() -> bool {
    TRACK.load(Ordering::Relaxed)
}

pub fn shape() -> TrackerShape {
    TrackerShape {
        k: TRACK_K.load(Ordering::Relaxed).clamp(1, MAX_K) as u32,
        half_life_ms: TRACK_HALFLIFE
            .load(Ordering::Relaxed)
            .clamp(1, MAX_HALFLIFE_S) as f64
            * 1000.0,
    }
}

pub fn sample() -> u64 {
    TRACK_SAMPLE.load(Ordering::Relaxed).clamp(1, MAX_SAMPLE) as u64
}

pub fn notify_above() -> f64 {
    TRACK_NOTIFY_ABOVE
        .load(Ordering::Relaxed)
        .clamp(0, MAX_NOTIFY_ABOVE) as f64
}

/// The channel's bytes (any bytes: channel names are binary).
pub fn channel() -> Vec<u8> {
    TRACK_CHANNEL
        .lock()
        .map(|c| c.clone())
        .unwrap_or_else(|_| DEFAULT_CHANNEL.as_bytes().to_vec())
}
