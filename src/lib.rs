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
pub mod keyspace_event;
pub mod limits;
pub mod panic_guard;
pub mod reply;
pub mod sketch_key;
pub mod tracking;

use commands::{add, hotkeys, info, list, load_state, merge, query, reserve};
use data_type::HK_TYPE;
use panic_guard::guarded;
use redis_module::configuration::{ConfigurationContext, ConfigurationFlags};
use redis_module::{
    redis_module, Context, InfoContext, ModuleOptions, RedisResult, RedisString, Status,
};
use tracking::config as track;

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

/// `INFO heavykeeper`: the tracker's figures.
fn info(ctx: &InfoContext, _for_crash_report: bool) {
    tracking::info::add_section(ctx);
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
        ],
        string: [],
        bool: [
            ["track", &track::TRACK, false, ConfigurationFlags::DEFAULT, tracking_changed()],
        ],
        enum: [],
        module_args_as_configuration: true,
    ]
}
