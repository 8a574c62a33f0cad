//! A gateway limits a client while it is hot and lets it back in when it
//! cools. The `cool` must come whatever happened to the key in between:
//! a reload, a restart, an AOF replay, a failover, `RESTORE`, `COPY`,
//! `RENAME`, `MOVE`, `SWAPDB` or `HK.LOADSTATE`. Nothing arrives after the
//! item turned hot: only fading (and the timer) can announce the `cool`.

use test_harness as common;

use common::{module_figure, now_ms, query, restore, run, value, words, Server, Subscriber};
use heavykeeper_sketch::Params;
use redis::{Connection, Value};
use std::collections::BTreeSet;
use std::time::Duration;

/// Half-life 0.5 s, a hot line of 20 req/s (a count of 14.4): 400 arrivals
/// now are 554 req/s. The item stays above the line for 2.4 s and cools
/// below 16 req/s after 2.56 s, so a path taken within a second still finds
/// it hot when the new place derives what is hot.
const HALF_LIFE: &str = "0.5";
const ARRIVALS: &str = "400";
const CHANNEL: &str = "fade";

fn hot_sketch(con: &mut Connection, key: &str) {
    value(con, &["HK.RESERVE", key, "10", "HALFLIFE", HALF_LIFE]);
    value(con, &["HK.WATCH", key, CHANNEL, "ABOVE", "20"]);
    let now = now_ms().to_string();
    value(con, &["HK.INCRBYAT", key, &now, "x", ARRIVALS]);
}

/// The keys whose `x` cooled within `window` (stops at `max` of them).
fn cooled(sub: &mut Subscriber, window: Duration, max: usize) -> BTreeSet<String> {
    let deadline = std::time::Instant::now() + window;
    let mut keys = BTreeSet::new();
    while keys.len() < max {
        let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) else {
            break;
        };
        for event in sub.events(left, 1) {
            if event["event"] == "cool" && event["item"] == "x" {
                keys.extend(event["key"].as_str().map(str::to_string));
            }
        }
    }
    keys
}

fn keys(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| s.to_string()).collect()
}

const WAIT: Duration = Duration::from_secs(6);

#[test]
fn a_reloaded_sketch_still_cools() {
    let (server, mut con) = Server::start().with_client();
    let mut sub = Subscriber::new(&server, CHANNEL, false);
    hot_sketch(&mut con, "limiter");
    value(&mut con, &["DEBUG", "RELOAD"]);
    assert_eq!(cooled(&mut sub, WAIT, 1), keys(&["limiter"]));
}

#[test]
fn a_restarted_server_still_cools() {
    let (mut server, mut con) = Server::start().with_client();
    hot_sketch(&mut con, "limiter");
    value(&mut con, &["SAVE"]);
    server.restart();
    let mut sub = Subscriber::new(&server, CHANNEL, false);
    assert_eq!(cooled(&mut sub, WAIT, 1), keys(&["limiter"]));
}

#[test]
fn an_aof_replay_still_cools() {
    // Every write on disk before its reply, and the first AOF rewrite (the
    // server makes one when AOF starts) finished: the stop is a kill, and
    // what it finds on disk must be everything that was acknowledged.
    let (mut server, mut con) =
        Server::start_with(&["--appendonly", "yes", "--appendfsync", "always"]).with_client();
    common::wait_for_aof_rewrite(&mut con);
    hot_sketch(&mut con, "limiter");
    let mut con = server.restart();
    assert_eq!(module_figure(&mut con, "watched_keys"), 1);
    let mut sub = Subscriber::new(&server, CHANNEL, false);
    assert_eq!(cooled(&mut sub, WAIT, 1), keys(&["limiter"]));
}

#[test]
fn restore_copy_rename_move_and_swapdb_keep_the_watch() {
    let (server, mut con) = Server::start().with_client();
    let mut sub = Subscriber::new(&server, CHANNEL, false);
    for key in words("dumped original old-name moved replaced copied-over") {
        hot_sketch(&mut con, key);
    }
    value(&mut con, &["SELECT", "1"]);
    hot_sketch(&mut con, "swapped");
    value(&mut con, &["SELECT", "0"]);

    let dump: Vec<u8> = query(&mut con, &["DUMP", "dumped"]);
    value(&mut con, &["DEL", "dumped"]);
    restore(&mut con, "restored", &dump).unwrap();
    // RESTORE ... REPLACE onto a watched key: the old value goes, the new one is followed.
    let dump_again: Vec<u8> = query(&mut con, &["DUMP", "restored"]);
    let replace: [&[u8]; 5] = [b"RESTORE", b"replaced", b"0", &dump_again, b"REPLACE"];
    run::<()>(&mut con, &replace).unwrap();
    value(&mut con, &["COPY", "original", "copy"]);
    value(&mut con, &["COPY", "original", "copied-over", "REPLACE"]);
    value(&mut con, &["RENAME", "old-name", "new-name"]);
    value(&mut con, &["MOVE", "moved", "1"]);
    value(&mut con, &["SWAPDB", "0", "1"]);

    let expected = keys(&words(
        "restored replaced original copy copied-over new-name moved swapped",
    ));
    assert_eq!(cooled(&mut sub, WAIT, expected.len()), expected);
    // Exactly those: the deleted and renamed-away names are forgotten.
    assert_eq!(module_figure(&mut con, "watched_keys"), 8);
}

#[test]
fn a_watched_payload_loaded_with_loadstate_announces() {
    let (server, mut con) = Server::start().with_client();
    let mut sub = Subscriber::new(&server, CHANNEL, false);
    let params = Params {
        half_life_ms: Some(500.0),
        ..Params::for_k(10, 7)
    };
    let payload =
        crate::watch_trust::watched_payload(params, 400, CHANNEL.as_bytes(), false, Some(20.0));
    run::<Value>(&mut con, &[b"HK.LOADSTATE", b"loaded", &payload]).unwrap();
    assert_eq!(cooled(&mut sub, WAIT, 1), keys(&["loaded"]));
}

#[test]
fn a_promoted_replica_announces_what_fading_does() {
    let (primary, mut con) = Server::start().with_client();
    // A running server turned into a replica (not one started as one).
    let (replica, mut replica_con) = Server::start().with_client();
    value(
        &mut replica_con,
        &["REPLICAOF", "127.0.0.1", &primary.port.to_string()],
    );
    replica.wait_for_link();
    let mut on_replica = Subscriber::new(&replica, CHANNEL, false);
    // A half-life of 1 s and 4,000 arrivals: hot for 7.1 s, time to fail over.
    value(&mut con, &["HK.RESERVE", "limiter", "10", "HALFLIFE", "1"]);
    value(&mut con, &["HK.WATCH", "limiter", CHANNEL, "ABOVE", "20"]);
    let now = now_ms().to_string();
    value(&mut con, &["HK.INCRBYAT", "limiter", &now, "x", "4000"]);
    let acked: i64 = query(&mut con, &["WAIT", "1", "5000"]);
    assert_eq!(acked, 1);
    // A replica announces nothing of its own.
    assert!(on_replica.events(Duration::from_millis(300), 1).is_empty());
    value(&mut replica_con, &["REPLICAOF", "NO", "ONE"]);
    let events = on_replica.events(Duration::from_secs(10), 1);
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["event"], "cool");
    assert_eq!(events[0]["key"], "limiter");
}

#[test]
fn deleted_flushed_expired_and_overwritten_watches_are_forgotten() {
    let (server, mut con) = Server::start().with_client();
    for key in ["deleted", "expiring", "overwritten", "unwatched"] {
        hot_sketch(&mut con, key);
    }
    value(&mut con, &["SELECT", "2"]);
    hot_sketch(&mut con, "flushed");
    value(&mut con, &["SELECT", "0"]);
    let watched_after = |con: &mut Connection, command: &[&str], left: i64| {
        value(con, command);
        common::wait_until(
            &format!("{command:?} forgotten"),
            Duration::from_secs(3),
            || module_figure(con, "watched_keys") == left,
        );
    };
    watched_after(&mut con, &["PING"], 5);
    watched_after(&mut con, &["DEL", "deleted"], 4);
    watched_after(&mut con, &["PEXPIRE", "expiring", "50"], 3);
    watched_after(&mut con, &["SET", "overwritten", "now a string"], 2);
    watched_after(&mut con, &["HK.UNWATCH", "unwatched"], 1);
    watched_after(&mut con, &["FLUSHALL"], 0);
    // A key of the same name made afresh, unwatched, announces nothing.
    let mut sub = Subscriber::new(&server, CHANNEL, false);
    value(
        &mut con,
        &["HK.RESERVE", "deleted", "10", "HALFLIFE", HALF_LIFE],
    );
    let now = now_ms().to_string();
    value(&mut con, &["HK.INCRBYAT", "deleted", &now, "x", ARRIVALS]);
    assert!(sub.events(Duration::from_secs(3), 1).is_empty());
}
