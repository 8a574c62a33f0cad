//! The HeavyKeeper top-k data type for Redis and Valkey.
//!
//! This crate is the thin Redis layer: argument parsing, key access, replies
//! and data-type callbacks. The sketch itself lives in `heavykeeper-sketch`.

pub mod args;
pub mod clock;
pub mod commands;
pub mod config;
pub mod data_type;
pub mod fault;
pub mod hash_slot;
pub mod keyspace_event;
pub mod limits;
pub mod panic_guard;
pub mod reply;
pub mod sketch_key;
pub mod tracking;
pub mod watching;

use commands::{add, hotkeys, info, list, load_state, merge, query, reserve, watch};
use data_type::HK_TYPE;
use panic_guard::guarded;
use redis_module::configuration::{ConfigurationContext, ConfigurationFlags};
use redis_module::{
    redis_module, Context, InfoContext, ModuleOptions, RedisResult, RedisString, Status,
};
use tracking::config as track;
use watching::config as watch_config;

// Module memory goes through the server's allocator so that INFO memory,
// maxmemory and MEMORY USAGE see it; unit tests run without a server.
#[cfg(not(test))]
type ModuleAllocator = redis_module::alloc::RedisAlloc;
#[cfg(not(test))]
const MODULE_ALLOCATOR: ModuleAllocator = redis_module::alloc::RedisAlloc;
#[cfg(test)]
type ModuleAllocator = std::alloc::System;
#[cfg(test)]
const MODULE_ALLOCATOR: ModuleAllocator = std::alloc::System;

fn init(ctx: &Context, _args: &[RedisString]) -> Status {
    // Without this, a truncated payload in RESTORE or an RDB makes the server
    // panic; with it, the read fails and the callback refuses the value.
    ctx.set_module_options(ModuleOptions::HANDLE_IO_ERRORS);
    // The configs were applied before init (the crate's order): now that
    // there is a context, register the filter if tracking is on.
    tracking::filter::attach(ctx);
    tracking::apply_configs();
    watching::start_timer(ctx);
    Status::Ok
}

/// Every tracking config takes effect as soon as it changes.
fn on_tracking_config<T>(_: &ConfigurationContext, _: &str, _: &'static T) {
    tracking::apply_configs();
}

type OnConfigChange<T> = Box<dyn Fn(&ConfigurationContext, &str, &'static T)>;

fn tracking_changed<T: 'static>() -> Option<OnConfigChange<T>> {
    Some(Box::new(on_tracking_config::<T>))
}

/// `INFO heavykeeper`: the tracker's and the watchers' figures.
fn info(ctx: &InfoContext, _for_crash_report: bool) {
    tracking::info::add_section(ctx);
    let counters = watching::counters();
    let number = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    let _ = ctx
        .builder()
        .add_section("watch")
        .field("watched_keys", number(watching::watched_keys() as u64))
        .and_then(|s| s.field("events_published", number(counters.published)))
        .and_then(|s| s.field("events_dropped", number(counters.dropped)))
        .and_then(|s| s.build_section())
        .and_then(|b| b.build_info());
}

redis_module! {
    name: "heavykeeper",
    version: 1,
    allocator: (ModuleAllocator, MODULE_ALLOCATOR),
    data_types: [HK_TYPE],
    init: init,
    info: info,
    commands: [
        ["hk.reserve", guarded(reserve::reserve), "write deny-oom", 1, 1, 1, ""],
        ["hk.add", guarded(add::add), "write deny-oom fast", 1, 1, 1, ""],
        ["hk.incrby", guarded(add::incrby), "write deny-oom fast", 1, 1, 1, ""],
        ["hk.addat", guarded(add::add_at), "write deny-oom fast", 1, 1, 1, ""],
        ["hk.incrbyat", guarded(add::incrby_at), "write deny-oom fast", 1, 1, 1, ""],
        ["hk.query", guarded(query::query), "readonly fast", 1, 1, 1, ""],
        ["hk.count", guarded(query::count), "readonly fast", 1, 1, 1, ""],
        ["hk.rate", guarded(query::rate), "readonly fast", 1, 1, 1, ""],
        ["hk.list", guarded(list::list), "readonly", 1, 1, 1, ""],
        ["hk.info", guarded(info::info), "readonly fast", 1, 1, 1, ""],
        ["hk.merge", guarded(merge::merge), "write deny-oom", 1, -1, 1, ""],
        ["hk.loadstate", guarded(load_state::load_state), "write deny-oom", 1, 1, 1, ""],
        ["hk.hotkeys", guarded(hotkeys::hotkeys), "readonly", 0, 0, 0, ""],
        ["hk.watch", guarded(watch::watch), "write", 1, 1, 1, ""],
        ["hk.unwatch", guarded(watch::unwatch), "write", 1, 1, 1, ""],
    ],
    configurations: [
        i64: [
            [
                "max-sketch-bytes",
                &config::MAX_SKETCH_BYTES,
                config::DEFAULT_MAX_SKETCH_BYTES,
                config::MIN_MAX_SKETCH_BYTES,
                config::MAX_MAX_SKETCH_BYTES,
                ConfigurationFlags::DEFAULT,
                None
            ],
            [
                "max-future-ms",
                &config::MAX_FUTURE_MS,
                config::DEFAULT_MAX_FUTURE_MS,
                0,
                config::MAX_MAX_FUTURE_MS,
                ConfigurationFlags::DEFAULT,
                None
            ],
            ["track-k", &track::TRACK_K, track::DEFAULT_K, 1, track::MAX_K, ConfigurationFlags::DEFAULT, tracking_changed()],
            ["track-halflife", &track::TRACK_HALFLIFE, track::DEFAULT_HALFLIFE_S, 1, track::MAX_HALFLIFE_S, ConfigurationFlags::DEFAULT, tracking_changed()],
            ["track-sample", &track::TRACK_SAMPLE, 1, 1, track::MAX_SAMPLE, ConfigurationFlags::DEFAULT, tracking_changed()],
            ["track-notify-above", &track::TRACK_NOTIFY_ABOVE, 0, 0, track::MAX_NOTIFY_ABOVE, ConfigurationFlags::DEFAULT, None],
            ["watch-interval-ms", &watch_config::WATCH_INTERVAL_MS, watch_config::DEFAULT_INTERVAL_MS, watch_config::MIN_INTERVAL_MS, watch_config::MAX_INTERVAL_MS, ConfigurationFlags::DEFAULT, None],
            ["watch-max-events", &watch_config::WATCH_MAX_EVENTS, watch_config::DEFAULT_MAX_EVENTS, 1, watch_config::MAX_MAX_EVENTS, ConfigurationFlags::DEFAULT, None],
        ],
        string: [
            ["track-channel", &track::TRACK_CHANNEL, track::DEFAULT_CHANNEL, ConfigurationFlags::DEFAULT, None],
        ],
        bool: [
            ["track", &track::TRACK, false, ConfigurationFlags::DEFAULT, tracking_changed()],
        ],
        enum: [],
        module_args_as_configuration: true,
    ]
}
