//! The module's behaviour, told as user stories against real servers: one
//! test binary (one build, one link) with a file per story. `make test` runs
//! it on the debug module (its fault hooks compiled in) against Redis 7.0 and
//! on the release module against Valkey 9.1; the figures of
//! `tests/statistics` run on the release module only.

// A test: a panic is how it fails (clippy.toml allows these in test
// functions; the stories' helpers are test code too).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

/// A tracker that counts every command, forgets within a second, and
/// announces on `hotkeys` a key read more than 200 times a second, every
/// 20 ms: the stories of hot-key events, on one server and on a cluster.
pub const HOT_KEY_EVENTS: &[&str] = &[
    "track",
    "yes",
    "track-sample",
    "1",
    "track-halflife",
    "1",
    "track-notify-above",
    "200",
    "track-channel",
    "hotkeys",
    "watch-interval-ms",
    "20",
];

mod acl;
mod clients;
mod configuration;
mod containment;
mod counting;
mod discovery;
mod docs_reference;
mod errors;
mod examples;
mod fading;
mod fuzz;
mod house;
mod keys;
mod listing;
mod memory;
mod merging;
mod persistence;
mod replication;
mod topk_compat;
mod topk_redisbloom;
mod tracking;
mod tracking_misses;
mod watch;
mod watch_paths;
mod watch_trust;
