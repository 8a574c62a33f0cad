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
/// (Module arguments as a `loadmodule` line spells them: `words` splits them.)
pub const HOT_KEY_EVENTS: &str =
    "track yes track-sample 1 track-halflife 1 track-notify-above 200 track-channel hotkeys watch-interval-ms 20";

/// The repository's root.
pub fn root() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every file under `dir`, in its subdirectories too, in order.
pub fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let mut files = Vec::new();
    for path in entries.map(|entry| entry.unwrap().path()) {
        if path.is_dir() {
            files.extend(files_under(&path));
        } else {
            files.push(path);
        }
    }
    files.sort();
    files
}

/// A reply's text (a bulk or simple string).
pub fn as_text(v: &redis::Value) -> String {
    redis::from_redis_value(v).unwrap()
}

/// A map reply (RESP3) or its flat pairs (RESP2), by name.
pub fn as_map(v: &redis::Value) -> std::collections::HashMap<String, redis::Value> {
    match v {
        redis::Value::Map(pairs) => pairs.iter().map(|(k, v)| (as_text(k), v.clone())).collect(),
        redis::Value::Array(flat) => flat
            .chunks(2)
            .map(|p| (as_text(&p[0]), p[1].clone()))
            .collect(),
        other => panic!("not a map: {other:?}"),
    }
}

/// `COMMAND DOCS name` as a field map, on either protocol.
pub fn command_docs(
    con: &mut redis::Connection,
    name: &str,
) -> std::collections::HashMap<String, redis::Value> {
    let reply = test_harness::value(con, &["COMMAND", "DOCS", name]);
    as_map(&as_map(&reply)[name])
}

/// Ends a test that needs the module's fault hooks where it has none (the
/// release module), saying that it skipped.
macro_rules! needs_fault_hooks {
    () => {
        if !test_harness::fault_hooks_or_skip() {
            return;
        }
    };
}

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
