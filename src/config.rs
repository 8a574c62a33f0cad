//! Every module config, in one table: settable at load time
//! (`loadmodule ... max-sketch-bytes 64mb`), in redis.conf
//! (`heavykeeper.max-sketch-bytes 64mb`) and with `CONFIG SET`, with the same
//! names, ranges and units everywhere.

use crate::config_callbacks::{self, Value};
use crate::load_args::{Kind, LoadArgs};
use crate::tracking::config as track;
use crate::watching::config as watch;
use redis_module::{raw, Context};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Mutex;

/// Largest fixed footprint (buckets plus top-k slots) one `HK.RESERVE` may allocate.
pub static MAX_SKETCH_BYTES: AtomicI64 = AtomicI64::new(DEFAULT_MAX_SKETCH_BYTES);

pub const DEFAULT_MAX_SKETCH_BYTES: i64 = 64 * 1024 * 1024;
pub const MIN_MAX_SKETCH_BYTES: i64 = 1024;
pub const MAX_MAX_SKETCH_BYTES: i64 = 1 << 40;

/// How far ahead of the server clock a client's timestamp may be.
pub static MAX_FUTURE_MS: AtomicI64 = AtomicI64::new(DEFAULT_MAX_FUTURE_MS);

pub const DEFAULT_MAX_FUTURE_MS: i64 = 60_000;
pub const MAX_MAX_FUTURE_MS: i64 = heavykeeper_sketch::MAX_TIMESTAMP_MS;

/// Registers RedisBloom's `TOPK.*` names on this data type (load time only:
/// commands cannot be added later).
pub static TOPK_COMPAT: AtomicBool = AtomicBool::new(false);

pub fn max_sketch_bytes() -> u64 {
    MAX_SKETCH_BYTES.load(Ordering::Relaxed).max(0) as u64
}

pub fn max_future_ms() -> i64 {
    MAX_FUTURE_MS.load(Ordering::Relaxed).max(0)
}

pub fn topk_compat() -> bool {
    TOPK_COMPAT.load(Ordering::Relaxed)
}

/// What happens when a config changes (at load or by `CONFIG SET`).
type OnChange = Option<fn()>;

/// One config: its name (without the `heavykeeper.` prefix), where its value
/// lives and what it accepts.
pub enum Setting {
    Integer {
        name: &'static str,
        variable: &'static AtomicI64,
        default: i64,
        min: i64,
        max: i64,
        memory: bool,
        on_change: OnChange,
    },
    Bool {
        name: &'static str,
        variable: &'static AtomicBool,
        default: bool,
        immutable: bool,
        on_change: OnChange,
    },
    Text {
        name: &'static str,
        variable: &'static Mutex<Vec<u8>>,
        default: &'static str,
        /// Why a value is refused (`None`: accepted).
        check: fn(&[u8]) -> Option<&'static str>,
        on_change: OnChange,
    },
}

/// Any bytes will do.
fn any_bytes(_: &[u8]) -> Option<&'static str> {
    None
}

/// A plain integer config; `on_change` runs after every change.
const fn integer(
    name: &'static str,
    variable: &'static AtomicI64,
    default: i64,
    min: i64,
    max: i64,
    on_change: OnChange,
) -> Setting {
    Setting::Integer {
        name,
        variable,
        default,
        min,
        max,
        memory: false,
        on_change,
    }
}

/// The tracker re-reads its configs at once.
const TRACKING: OnChange = Some(crate::tracking::apply_configs);

pub static SETTINGS: [Setting; 15] = [
    Setting::Integer {
        name: "max-sketch-bytes",
        variable: &MAX_SKETCH_BYTES,
        default: DEFAULT_MAX_SKETCH_BYTES,
        min: MIN_MAX_SKETCH_BYTES,
        max: MAX_MAX_SKETCH_BYTES,
        memory: true,
        on_change: None,
    },
    integer(
        "max-future-ms",
        &MAX_FUTURE_MS,
        DEFAULT_MAX_FUTURE_MS,
        0,
        MAX_MAX_FUTURE_MS,
        None,
    ),
    Setting::Bool {
        name: "topk-compat",
        variable: &TOPK_COMPAT,
        default: false,
        immutable: true,
        on_change: None,
    },
    Setting::Bool {
        name: "track",
        variable: &track::TRACK,
        default: false,
        immutable: false,
        on_change: TRACKING,
    },
    integer(
        "track-k",
        &track::TRACK_K,
        track::DEFAULT_K,
        1,
        track::MAX_K,
        TRACKING,
    ),
    integer(
        "track-halflife",
        &track::TRACK_HALFLIFE,
        track::DEFAULT_HALFLIFE_S,
        1,
        track::MAX_HALFLIFE_S,
        TRACKING,
    ),
    integer(
        "track-sample",
        &track::TRACK_SAMPLE,
        track::DEFAULT_SAMPLE,
        0,
        track::MAX_SAMPLE,
        TRACKING,
    ),
    integer(
        "track-cpu-millicores",
        &track::TRACK_CPU_MILLICORES,
        track::DEFAULT_CPU_MILLICORES,
        1,
        track::MAX_CPU_MILLICORES,
        TRACKING,
    ),
    Setting::Bool {
        name: "track-misses",
        variable: &track::TRACK_MISSES,
        default: false,
        immutable: false,
        on_change: TRACKING,
    },
    integer(
        "track-notify-above",
        &track::TRACK_NOTIFY_ABOVE,
        0,
        0,
        track::MAX_NOTIFY_ABOVE,
        None,
    ),
    Setting::Text {
        name: "track-channel",
        variable: &track::TRACK_CHANNEL,
        default: track::DEFAULT_CHANNEL,
        check: any_bytes,
        on_change: None,
    },
    Setting::Text {
        name: "track-prefix-delimiter",
        variable: &track::TRACK_PREFIX_DELIMITER,
        default: track::DEFAULT_PREFIX_DELIMITER,
        check: track::check_prefix_delimiter,
        on_change: TRACKING,
    },
    Setting::Text {
        name: "track-prefix-depths",
        variable: &track::TRACK_PREFIX_DEPTHS,
        default: track::DEFAULT_PREFIX_DEPTHS,
        check: track::check_prefix_depths,
        on_change: TRACKING,
    },
    integer(
        "watch-interval-ms",
        &watch::WATCH_INTERVAL_MS,
        watch::DEFAULT_INTERVAL_MS,
        watch::MIN_INTERVAL_MS,
        watch::MAX_INTERVAL_MS,
        None,
    ),
    integer(
        "watch-max-events",
        &watch::WATCH_MAX_EVENTS,
        watch::DEFAULT_MAX_EVENTS,
        1,
        watch::MAX_MAX_EVENTS,
        None,
    ),
];

impl Setting {
    pub fn name(&self) -> &'static str {
        match self {
            Setting::Integer { name, .. }
            | Setting::Bool { name, .. }
            | Setting::Text { name, .. } => name,
        }
    }

    /// What runs after a change.
    pub fn on_change(&self) -> OnChange {
        match self {
            Setting::Integer { on_change, .. }
            | Setting::Bool { on_change, .. }
            | Setting::Text { on_change, .. } => *on_change,
        }
    }

    /// What a load argument for this setting must be.
    pub fn kind(&self) -> Kind {
        match *self {
            Setting::Integer {
                min,
                max,
                memory: true,
                ..
            } => Kind::Memory { min, max },
            Setting::Integer { min, max, .. } => Kind::Integer { min, max },
            Setting::Bool { .. } => Kind::Bool,
            Setting::Text { .. } => Kind::Text,
        }
    }
}

/// The table as the load-argument parser reads it.
pub fn kinds() -> Vec<(&'static str, Kind)> {
    SETTINGS.iter().map(|s| (s.name(), s.kind())).collect()
}

/// Registers every config with the server, the load arguments standing in
/// for the defaults (redis.conf's `heavykeeper.*` lines, applied by
/// `RM_LoadConfigs` afterwards, win over both).
pub fn register(ctx: &Context, given: &LoadArgs) -> Result<(), String> {
    for setting in &SETTINGS {
        let (value, flags) = match *setting {
            Setting::Integer {
                name,
                default,
                memory,
                ..
            } => (
                Value::Integer(given.integer(name).unwrap_or(default)),
                if memory {
                    raw::REDISMODULE_CONFIG_MEMORY
                } else {
                    raw::REDISMODULE_CONFIG_DEFAULT
                },
            ),
            Setting::Bool {
                name,
                default,
                immutable,
                ..
            } => (
                Value::Bool(given.bool(name).unwrap_or(default)),
                if immutable {
                    raw::REDISMODULE_CONFIG_IMMUTABLE
                } else {
                    raw::REDISMODULE_CONFIG_DEFAULT
                },
            ),
            Setting::Text {
                name,
                default,
                check,
                ..
            } => {
                let value = given.text(name).unwrap_or(default.as_bytes());
                if let Some(why) = check(value) {
                    return Err(format!("{name}: {why}"));
                }
                (Value::Text(value), raw::REDISMODULE_CONFIG_DEFAULT)
            }
        };
        config_callbacks::register(ctx, setting, value, flags)?;
    }
    Ok(())
}
