//! A bug in the module must never take the server down: every function the
//! server calls contains a panic, answers or logs it, counts it in
//! `INFO heavykeeper` (`panics_contained`), and the server goes on serving.
//! The debug module's fault hooks make each kind of callback panic on a
//! name no client would choose; the release module has none, and these
//! tests skip there.

use test_harness as common;

use common::{
    cli, config_set, error, module_figure, now_ms, query, value, words, Server, Subscriber,
};
use redis::{Connection, Value};
use std::time::Duration;

/// A fading sketch watched on `channel`, with `x` hot now: the timer
/// visits it when `x` cools (~0.5 s).
fn hot_watched(con: &mut Connection, key: &str, channel: &str) {
    value(con, &["HK.RESERVE", key, "10", "HALFLIFE", "0.1"]);
    value(con, &["HK.WATCH", key, channel, "ABOVE", "20"]);
    let now = now_ms().to_string();
    value(con, &["HK.INCRBYAT", key, &now, "x", "400"]);
}

#[test]
fn a_panicking_timer_visit_is_contained_and_the_timer_goes_on() {
    needs_fault_hooks!();
    let (server, mut con) =
        Server::start_configured(&["watch-interval-ms", "10"], &[]).with_client();
    let mut sub = Subscriber::new(&server, "ok", false);
    hot_watched(&mut con, "bad", "heavykeeper:fault:panic-on-tick");
    hot_watched(&mut con, "good", "ok");
    let events = sub.events(Duration::from_secs(3), 2);
    assert!(
        events.iter().any(|e| e["event"] == "cool"),
        "the other sketch's cool never came: {events:?}"
    );
    common::assert_pong(&mut con);
    assert!(module_figure(&mut con, "panics_contained") >= 1);
    // The panicking sketch is dropped from the schedule, not retried each tick.
    let contained = module_figure(&mut con, "panics_contained");
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(module_figure(&mut con, "panics_contained"), contained);
    assert!(server
        .log()
        .contains("a panic in the watch timer was contained"));
}

#[test]
fn a_panicking_info_section_is_contained() {
    needs_fault_hooks!();
    let (_server, mut con) = Server::start().with_client();
    config_set(
        &mut con,
        "heavykeeper.track-channel",
        "heavykeeper:fault:panic-on-info",
    );
    let info: String = query(&mut con, &["INFO", "heavykeeper"]);
    // The section that panicked is missing; the others are there.
    assert!(!info.contains("heavykeeper_sketches:"), "{info}");
    assert!(info.contains("heavykeeper_watched_keys:"), "{info}");
    config_set(&mut con, "heavykeeper.track-channel", "fine");
    assert!(module_figure(&mut con, "panics_contained") >= 1);
    common::assert_pong(&mut con);
}

#[test]
fn a_panicking_config_change_is_refused_and_changes_nothing() {
    needs_fault_hooks!();
    let (_server, mut con) = Server::start().with_client();
    let refused = error(
        &mut con,
        &words("CONFIG SET heavykeeper.track-channel heavykeeper:fault:panic-on-config"),
    );
    assert!(refused.starts_with("ERR"), "{refused}");
    let current: Vec<String> = query(&mut con, &["CONFIG", "GET", "heavykeeper.track-channel"]);
    assert_eq!(current[1], "heavykeeper:hotkeys");
    assert_eq!(module_figure(&mut con, "panics_contained"), 1);
    common::assert_pong(&mut con);
}

#[test]
fn panicking_keyspace_and_server_event_handlers_are_contained() {
    needs_fault_hooks!();
    let (_server, mut con) = Server::start().with_client();
    let fault_key = "heavykeeper:fault:panic-on-event";
    // The keyspace event of a rename onto the fault name.
    value(&mut con, &["SET", "plain", "v"]);
    value(&mut con, &["RENAME", "plain", fault_key]);
    assert_eq!(
        value(&mut con, &["GET", fault_key]),
        Value::BulkString(b"v".to_vec())
    );
    value(&mut con, &["DEL", fault_key]);
    // Server events while a watched sketch bears the fault name.
    value(&mut con, &["HK.RESERVE", fault_key, "10"]);
    value(&mut con, &["HK.WATCH", fault_key, "ch", "MEMBERS"]);
    value(&mut con, &["SWAPDB", "0", "1"]);
    value(&mut con, &["FLUSHALL"]);
    assert!(module_figure(&mut con, "panics_contained") >= 3);
    common::assert_pong(&mut con);
}

#[test]
fn panicking_data_type_callbacks_are_contained() {
    needs_fault_hooks!();
    let (_server, mut con) = Server::start().with_client();
    let member = "heavykeeper:fault:panic-in-callbacks";
    value(&mut con, &["HK.RESERVE", "k", "10"]);
    value(&mut con, &["HK.ADD", "k", member]);
    // MEMORY USAGE answers (without the sketch's own figure).
    let usage = value(&mut con, &["MEMORY", "USAGE", "k"]);
    assert!(matches!(usage, Value::Int(_)), "{usage:?}");
    // COPY fails cleanly: the copy callback refused.
    let copied = common::run::<Value>(&mut con, &[b"COPY", b"k", b"k2"]);
    assert!(copied.is_err() || copied == Ok(Value::Int(0)), "{copied:?}");
    assert_eq!(value(&mut con, &["EXISTS", "k2"]), Value::Int(0));
    // RESTORE of its dump: the load callback refused, nothing half-made.
    let dump: Vec<u8> = query(&mut con, &["DUMP", "k"]);
    let restored = common::run::<Value>(&mut con, &[b"RESTORE", b"k3", b"0", &dump]);
    assert!(restored.is_err(), "{restored:?}");
    assert_eq!(value(&mut con, &["EXISTS", "k3"]), Value::Int(0));
    // DEL unlinks it (unlink and free effort panic), UNLINK too.
    value(&mut con, &["DEL", "k"]);
    assert_eq!(value(&mut con, &["EXISTS", "k"]), Value::Int(0));
    assert!(module_figure(&mut con, "panics_contained") >= 4);
    common::assert_pong(&mut con);
}

#[test]
fn a_panic_in_the_command_filter_is_contained_logged_and_counted() {
    needs_fault_hooks!();
    let (server, mut con) =
        Server::start_configured(&["track", "yes", "track-sample", "1"], &[]).with_client();
    let before = module_figure(&mut con, "panics_contained");
    for _ in 0..3 {
        // The command itself runs: only its count is lost.
        let _: Option<String> = query(&mut con, &["GET", "heavykeeper:fault:panic-on-filter"]);
    }
    assert_eq!(module_figure(&mut con, "panics_contained"), before + 3);
    assert!(
        server
            .log()
            .contains("a panic in the command filter was contained"),
        "{}",
        server.log()
    );
    // And the tracker goes on counting the commands after it.
    for _ in 0..20 {
        let _: Option<String> = query(&mut con, &["GET", "after"]);
    }
    let listed: Vec<Value> = query(&mut con, &["HK.HOTKEYS"]);
    assert!(
        listed
            .iter()
            .any(|v| v == &Value::BulkString(b"after".to_vec())),
        "{listed:?}"
    );
    common::assert_pong(&mut con);
}

#[test]
fn a_copy_that_cannot_be_allocated_fails_and_the_server_lives() {
    needs_fault_hooks!();
    let (_server, mut con) = Server::start().with_client();
    value(&mut con, &["HK.RESERVE", "big", "10"]);
    cli(&mut con, "HK.ADD big heavykeeper:fault:copy-out-of-memory");
    // The copy's memory is refused (as by an allocator out of memory):
    // COPY fails, nothing is created, the server does not abort.
    let copied = common::run::<Value>(&mut con, &[b"COPY", b"big", b"copy"]);
    assert!(copied.is_err() || copied == Ok(Value::Int(0)), "{copied:?}");
    assert_eq!(value(&mut con, &["EXISTS", "copy"]), Value::Int(0));
    // A sketch that can be copied is.
    value(&mut con, &["HK.RESERVE", "small", "10"]);
    value(&mut con, &["HK.ADD", "small", "x"]);
    assert_eq!(value(&mut con, &["COPY", "small", "small2"]), Value::Int(1));
    common::assert_pong(&mut con);
}
