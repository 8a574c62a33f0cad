//! The tracking configs: `heavykeeper.track`, `track-k`, `track-halflife`,
//! `track-sample`, `track-cpu-millicores`, `track-misses`, and the events'
//! `track-notify-above` and `track-channel`, at load time or with
//! `CONFIG SET`. Each change is applied at once (see
//! [`super::apply_configs`]).

use crate::host::config::{any_bytes, OnChange, Setting};
use heavykeeper_tracker::counting::prefixes::PrefixRule;
use heavykeeper_tracker::{KeyTracker, TrackerShape};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Mutex;

pub static TRACK: AtomicBool = AtomicBool::new(false);
pub static TRACK_K: AtomicI64 = AtomicI64::new(DEFAULT_K);
pub static TRACK_HALFLIFE: AtomicI64 = AtomicI64::new(DEFAULT_HALFLIFE_S);
pub static TRACK_SAMPLE: AtomicI64 = AtomicI64::new(DEFAULT_SAMPLE);
/// `0`: the share of time counted follows the measured cost, within
/// `track-cpu-millicores` (every command where that fits). `1`: every
/// command, whatever it costs. `N`: one slot of time in N, always.
pub const DEFAULT_SAMPLE: i64 = 0;
pub const MAX_SAMPLE: i64 = heavykeeper_tracker::sampling::coverage::MAX_EVERY as i64;

/// The CPU the tracker may use with `track-sample 0`, in thousandths of one
/// core (20: 2%), main thread and worker together. Why 2% and not 1%: at 1%,
/// on a 2-core VM, Valkey 9.1 at ~20,000 commands a second could not count
/// every command and a key's pipeline fell in uncounted time, and beside a
/// saturating load one slot in 9 to 40 was counted and a steady key read up
/// to +63% in a reading; the default's cost per `GET` at saturation stays
/// within +1% in `processCommand` and the worker (`docs/benchmarks.md`).
pub static TRACK_CPU_MILLICORES: AtomicI64 = AtomicI64::new(DEFAULT_CPU_MILLICORES);
pub const DEFAULT_CPU_MILLICORES: i64 = 20;
pub const MAX_CPU_MILLICORES: i64 = 1000;

/// Count reads of keys that do not exist (`HK.HOTKEYS MISSES`).
pub static TRACK_MISSES: AtomicBool = AtomicBool::new(false);

/// Where keys are cut into prefixes (`HK.HOTKEYS PREFIXES`): after the
/// delimiter's `depth`-th occurrence, for each depth listed.
pub static TRACK_PREFIX_DELIMITER: Mutex<Vec<u8>> = Mutex::new(Vec::new());
pub const DEFAULT_PREFIX_DELIMITER: &str = ":";
pub static TRACK_PREFIX_DEPTHS: Mutex<Vec<u8>> = Mutex::new(Vec::new());
/// `tenant:7:cart:19` counts under `tenant:7:`.
pub const DEFAULT_PREFIX_DEPTHS: &str = "2";
/// The longest delimiter: a separator, not a key.
pub const MAX_PREFIX_DELIMITER: usize = 16;

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

/// The tracker re-reads its configs at once.
const TRACKING: OnChange = Some(super::apply_configs);

pub static SETTINGS: [Setting; 10] = [
    Setting::bool("track", &TRACK, false, TRACKING),
    Setting::integer("track-k", &TRACK_K, (DEFAULT_K, 1, MAX_K), TRACKING),
    Setting::integer(
        "track-halflife",
        &TRACK_HALFLIFE,
        (DEFAULT_HALFLIFE_S, 1, MAX_HALFLIFE_S),
        TRACKING,
    ),
    Setting::integer(
        "track-sample",
        &TRACK_SAMPLE,
        (DEFAULT_SAMPLE, 0, MAX_SAMPLE),
        TRACKING,
    ),
    Setting::integer(
        "track-cpu-millicores",
        &TRACK_CPU_MILLICORES,
        (DEFAULT_CPU_MILLICORES, 1, MAX_CPU_MILLICORES),
        TRACKING,
    ),
    Setting::bool("track-misses", &TRACK_MISSES, false, TRACKING),
    Setting::integer(
        "track-notify-above",
        &TRACK_NOTIFY_ABOVE,
        (0, 0, MAX_NOTIFY_ABOVE),
        None,
    ),
    Setting::Text {
        name: "track-channel",
        variable: &TRACK_CHANNEL,
        default: DEFAULT_CHANNEL,
        check: any_bytes,
        on_change: None,
    },
    Setting::Text {
        name: "track-prefix-delimiter",
        variable: &TRACK_PREFIX_DELIMITER,
        default: DEFAULT_PREFIX_DELIMITER,
        check: check_prefix_delimiter,
        on_change: TRACKING,
    },
    Setting::Text {
        name: "track-prefix-depths",
        variable: &TRACK_PREFIX_DEPTHS,
        default: DEFAULT_PREFIX_DEPTHS,
        check: check_prefix_depths,
        on_change: TRACKING,
    },
];

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

/// How the share of time counted is chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sampling {
    /// Within the CPU budget.
    Budgeted,
    /// One slot in N (1: every command).
    Fixed(u32),
}

pub fn sampling() -> Sampling {
    match TRACK_SAMPLE.load(Ordering::Relaxed).clamp(0, MAX_SAMPLE) {
        0 => Sampling::Budgeted,
        n => Sampling::Fixed(n as u32),
    }
}

/// The CPU budget, a share of one core.
pub fn cpu_budget() -> f64 {
    budget_of(TRACK_CPU_MILLICORES.load(Ordering::Relaxed))
}

/// A budget in millicores as a share of one core, within the setting's
/// bounds.
pub fn budget_of(millicores: i64) -> f64 {
    millicores.clamp(1, MAX_CPU_MILLICORES) as f64 / 1000.0
}

pub fn misses_on() -> bool {
    TRACK_MISSES.load(Ordering::Relaxed)
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

pub fn check_prefix_delimiter(value: &[u8]) -> Option<&'static str> {
    match value.len() {
        0 => {
            Some("the prefix delimiter may not be empty (track-prefix-depths 0 turns prefixes off)")
        }
        n if n > MAX_PREFIX_DELIMITER => Some("the prefix delimiter is at most 16 bytes"),
        _ => None,
    }
}

pub fn check_prefix_depths(value: &[u8]) -> Option<&'static str> {
    const WHY: &str = "track-prefix-depths takes up to 4 depths from 1 to 16, as in \"2\" or \"1,2\" (0: no prefixes)";
    let parsed = std::str::from_utf8(value)
        .ok()
        .and_then(PrefixRule::parse_depths);
    parsed.is_none().then_some(WHY)
}

/// How keys are cut into prefixes now (`None`: prefixes not counted).
pub fn prefix_rule() -> Option<PrefixRule> {
    let text = |m: &Mutex<Vec<u8>>| m.lock().map(|v| v.clone()).unwrap_or_default();
    let depths = text(&TRACK_PREFIX_DEPTHS);
    let depths = std::str::from_utf8(&depths)
        .ok()
        .and_then(PrefixRule::parse_depths)?;
    PrefixRule::new(&text(&TRACK_PREFIX_DELIMITER), &depths)
}
