//! An operator configures the module at load time, in redis.conf or with
//! `CONFIG SET`, and gets the same rules everywhere; memory limits hold.

use test_harness as common;

use common::{config_set, error, info_field, info_number, query, value, wait_until, words, Server};
use redis::Value;
use std::time::Duration;

/// The module's own line in a refused load's log.
pub(crate) fn refusal(log: &str) -> &str {
    log.lines()
        .find(|l| l.contains("heavykeeper: refusing to load"))
        .unwrap_or_else(|| panic!("no refusal in the log:\n{log}"))
}

/// Each kind of value against the module's own settings (the parser's
/// other mistakes, a missing value or one given twice, are its unit tests').
#[test]
fn every_bad_load_argument_refuses_the_load_naming_it() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["trak", "yes"],
            "unknown argument 'trak' (did you mean 'track'?)",
        ),
        (
            &["max-sketch-bytes", "10"],
            "argument 'max-sketch-bytes': '10' is out of range",
        ),
        (
            &["track-k", "many"],
            "argument 'track-k': 'many' is not an integer",
        ),
        (
            &["watch-interval-ms", "1"],
            "argument 'watch-interval-ms': '1' is out of range",
        ),
        (
            &["track", "maybe"],
            "argument 'track': 'maybe' is not yes or no",
        ),
    ];
    for (args, expected) in cases {
        let log = Server::refused_load(args, &[]);
        let line = refusal(&log);
        assert!(line.contains(expected), "{args:?}: {line}");
        assert_eq!(log.matches("refusing to load").count(), 1, "{log}");
    }
}

#[test]
fn load_arguments_and_config_set_accept_and_refuse_the_same_values() {
    let server =
        Server::start_configured(&words("max-sketch-bytes 2mb heavykeeper.track-k 7"), &[]);
    let mut con = server.client();
    let get = |con: &mut redis::Connection, name: &str| -> String {
        let pair: Vec<String> = query(con, &["CONFIG", "GET", name]);
        pair[1].clone()
    };
    assert_eq!(
        get(&mut con, "heavykeeper.max-sketch-bytes"),
        (2 << 20).to_string()
    );
    assert_eq!(get(&mut con, "heavykeeper.track-k"), "7");
    config_set(&mut con, "heavykeeper.max-sketch-bytes", "1gb");
    assert_eq!(
        get(&mut con, "heavykeeper.max-sketch-bytes"),
        (1u64 << 30).to_string()
    );
    for bad in ["10", "2tb", "lots"] {
        let e = error(
            &mut con,
            &words(&format!("CONFIG SET heavykeeper.max-sketch-bytes {bad}")),
        );
        assert!(e.starts_with("ERR"), "{bad}: {e}");
        let log = Server::refused_load(&["max-sketch-bytes", bad], &[]);
        refusal(&log);
    }
    // topk-compat is decided at load time.
    let e = error(&mut con, &words("CONFIG SET heavykeeper.topk-compat yes"));
    assert!(e.contains("immutable"), "{e}");
}

#[test]
fn the_size_cap_refuses_a_large_reserve_until_config_set_raises_it() {
    let (_server, mut con) =
        Server::start_with(&["--heavykeeper.max-sketch-bytes", "100000"]).with_client();
    let cap: Vec<String> = query(&mut con, &["CONFIG", "GET", "heavykeeper.max-sketch-bytes"]);
    assert_eq!(cap[1], "100000");
    let e = error(&mut con, &["HK.RESERVE", "big", "100", "WIDTH", "100000"]);
    assert!(e.starts_with("ERR sketch would take"), "{e}");
    config_set(&mut con, "heavykeeper.max-sketch-bytes", "100000000");
    assert_eq!(
        value(&mut con, &["HK.RESERVE", "big", "100", "WIDTH", "100000"]),
        Value::Okay
    );
}

#[test]
fn a_reserve_that_would_not_fit_under_maxmemory_is_refused() {
    let (_server, mut con) = Server::start().with_client();
    value(&mut con, &["HK.RESERVE", "first", "10", "WIDTH", "262144"]);
    // Room for half of another one.
    let size: i64 = query(&mut con, &["MEMORY", "USAGE", "first"]);
    let used: i64 = info_number(&mut con, "memory", "used_memory");
    let limit = (used + size / 2).to_string();
    config_set(&mut con, "maxmemory", &limit);
    let e = error(&mut con, &["HK.RESERVE", "second", "10", "WIDTH", "262144"]);
    assert!(e.starts_with("OOM "), "{e}");
    assert!(e.contains("maxmemory"), "{e}");
    assert_eq!(value(&mut con, &["EXISTS", "second"]), Value::Int(0));
    // A small one still fits, and the first is untouched.
    value(&mut con, &["HK.RESERVE", "small", "10"]);
    value(&mut con, &["HK.ADD", "first", "a"]);
}

#[test]
fn a_large_sketch_is_freed_off_the_main_thread() {
    let (_server, mut con) = Server::start().with_client();
    let lazyfreed = |con: &mut redis::Connection| -> i64 {
        // In `memory` on Redis 7.0, `stats` elsewhere.
        info_number(con, "all", "lazyfreed_objects")
    };
    let before = lazyfreed(&mut con);
    value(&mut con, &["HK.RESERVE", "big", "1000", "WIDTH", "262144"]);
    value(&mut con, &words("HK.RESERVE tiny 1 WIDTH 8 DEPTH 1"));
    value(&mut con, &["UNLINK", "big", "tiny"]);
    wait_until("the lazy free", Duration::from_secs(10), || {
        lazyfreed(&mut con) > before
    });
    // The big one went to the lazy-free thread; the tiny one was freed inline.
    assert_eq!(lazyfreed(&mut con), before + 1);
    assert_eq!(
        info_field(&mut con, "heavykeeper", "heavykeeper_sketches").as_deref(),
        Some("0")
    );
}

#[test]
fn a_sketch_larger_than_the_machine_is_refused_before_anything_is_allocated() {
    let (_server, mut con) = Server::start().with_client();
    let total: u64 = info_field(&mut con, "memory", "total_system_memory")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    // 2^30 columns x 16 rows of 8 bytes: 128 GiB, the largest counting shape.
    let shape_bytes = (1u64 << 34) * 8;
    if total == 0 || total >= shape_bytes {
        eprintln!("skipped: this machine reports {total} bytes of memory");
        return;
    }
    // An operator lifted the per-sketch cap and set no maxmemory.
    config_set(&mut con, "heavykeeper.max-sketch-bytes", "512gb");
    let e = error(
        &mut con,
        &words("HK.RESERVE huge 10 WIDTH 1073741824 DEPTH 16"),
    );
    assert!(e.starts_with("OOM "), "{e}");
    assert!(e.contains("the machine's memory"), "{e}");
    common::assert_pong(&mut con);
}
