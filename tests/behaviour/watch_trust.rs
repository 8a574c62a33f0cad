//! An operator leaves watches on in production: the watch timer must be
//! invisible to every other client (their transactions, their caches, the
//! keys' LRU/LFU), a watch may only publish where its user may publish,
//! any bytes are a valid key and channel name, and a watch is paid for in
//! `MEMORY USAGE` and the size cap like the rest of the sketch.

use test_harness as common;

use common::{cli, config_set, error, now_ms, query, run, value, words, Server, Subscriber};
use heavykeeper_sketch::{encode, HeavyKeeper, Params, WatchSpec};
use redis::{Connection, Value};
use std::time::Duration;

/// A fading sketch watched on `channel`, made in one command (so that no
/// command of the test touches the key after its creation): `x` is hot
/// now (400 arrivals, half-life 0.2 s) and the timer announces its `cool`
/// after ~1 s and its `leave` after ~1.7 s.
fn load_hot_sketch(con: &mut Connection, key: &[u8], channel: &[u8]) {
    let params = Params {
        half_life_ms: Some(200.0),
        ..Params::for_k(10, 3)
    };
    let payload = watched_payload(params, 400, channel, true, Some(20.0));
    run::<Value>(con, &[b"HK.LOADSTATE", key, &payload]).expect("HK.LOADSTATE");
}

/// What `HK.LOADSTATE` takes: a sketch made now with `params`, `x` arrived
/// `x_arrivals` times, watched on `channel` (its members too if `members`,
/// hot above `above`).
pub(crate) fn watched_payload(
    params: Params,
    x_arrivals: u64,
    channel: &[u8],
    members: bool,
    above: Option<f64>,
) -> Vec<u8> {
    let now = now_ms();
    let mut sketch = HeavyKeeper::new(params, now);
    if x_arrivals > 0 {
        sketch.add(b"x", x_arrivals, now);
    }
    sketch.set_watch(Some(WatchSpec {
        channel: channel.to_vec(),
        members,
        above,
        below: None,
    }));
    encode(&sketch)
}

/// Reads events until one of `kind` (at most 5 s).
fn wait_for(sub: &mut Subscriber, kind: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let mut seen = Vec::new();
    while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
        let Some(event) = sub.events(left, 1).pop() else {
            break;
        };
        if event["event"] == kind {
            return;
        }
        seen.push(event);
    }
    panic!("no {kind} event; saw {seen:?}");
}

#[test]
fn the_timer_never_aborts_another_clients_transaction() {
    let (server, mut con) =
        Server::start_configured(&["watch-interval-ms", "10"], &[]).with_client();
    for round in 0..5 {
        let key = format!("limiter:{round}");
        let mut sub = Subscriber::new(&server, "fade", false);
        load_hot_sketch(&mut con, key.as_bytes(), b"fade");
        value(&mut con, &["WATCH", &key]);
        // The timer opens the sketch and announces while the key is watched.
        wait_for(&mut sub, "cool");
        value(&mut con, &["MULTI"]);
        value(&mut con, &["HK.COUNT", &key, "x"]);
        let exec = value(&mut con, &["EXEC"]);
        assert!(
            matches!(exec, Value::Array(_)),
            "round {round}: EXEC aborted ({exec:?})"
        );
    }
}

#[test]
fn the_timer_leaves_the_lfu_counter_alone() {
    // No decay of the counter with time: across a minute boundary it would
    // drop by one whatever the timer did.
    let server = Server::start_with(&words("--maxmemory-policy allkeys-lfu --lfu-decay-time 0"));
    let mut con = server.client();
    let mut sub = Subscriber::new(&server, "fade", false);
    load_hot_sketch(&mut con, b"lfu", b"fade");
    let before: i64 = query(&mut con, &["OBJECT", "FREQ", "lfu"]);
    wait_for(&mut sub, "cool");
    wait_for(&mut sub, "leave");
    let after: i64 = query(&mut con, &["OBJECT", "FREQ", "lfu"]);
    assert_eq!(before, after, "the timer's visits counted as accesses");
}

#[test]
fn the_timer_leaves_the_lru_clock_alone() {
    let (server, mut con) = Server::start().with_client();
    let mut sub = Subscriber::new(&server, "fade", false);
    load_hot_sketch(&mut con, b"lru", b"fade");
    wait_for(&mut sub, "cool");
    wait_for(&mut sub, "leave");
    // The leave was announced a moment ago, ~1.7 s after the key was made.
    let idle: i64 = query(&mut con, &["OBJECT", "IDLETIME", "lru"]);
    assert!(
        idle >= 1,
        "idle {idle} s: the timer's visit refreshed the LRU clock"
    );
}

/// The keys invalidated for a client-side cache, as a thread reads them.
fn invalidations(server: &Server) -> (i64, std::sync::mpsc::Receiver<Value>) {
    let mut con = server.client();
    let id: i64 = query(&mut con, &["CLIENT", "ID"]);
    let _: Value = query(&mut con, &["SUBSCRIBE", "__redis__:invalidate"]);
    let (send, receive) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        while let Ok(message) = con.recv_response() {
            if send.send(message).is_err() {
                break;
            }
        }
    });
    (id, receive)
}

#[test]
fn the_timer_sends_no_client_side_caching_invalidation() {
    let server = Server::start();
    let (id, invalidated) = invalidations(&server);
    let mut cache = server.client();
    let mut con = server.client();
    let mut sub = Subscriber::new(&server, "fade", false);
    load_hot_sketch(&mut con, b"cached", b"fade");
    cli(&mut cache, &format!("CLIENT TRACKING ON REDIRECT {id}"));
    // The near cache reads the sketch: from now on a write invalidates it.
    value(&mut cache, &["HK.COUNT", "cached", "x"]);
    wait_for(&mut sub, "cool");
    wait_for(&mut sub, "leave");
    let got = invalidated.recv_timeout(Duration::from_millis(300));
    assert!(got.is_err(), "the timer invalidated a cached key: {got:?}");
    // A real write does invalidate: the subscription works.
    value(&mut con, &["HK.ADD", "cached", "y"]);
    let got = invalidated.recv_timeout(Duration::from_secs(2));
    assert!(
        format!("{got:?}").contains("cached"),
        "no invalidation on a write: {got:?}"
    );
}

#[test]
fn a_watch_publishes_only_where_its_user_may_publish() {
    let server = Server::start();
    let mut admin = server.client();
    value(&mut admin, &["HK.RESERVE", "k", "10"]);
    cli(
        &mut admin,
        "ACL SETUSER app on >pw ~* +@all resetchannels &app:*",
    );
    let mut app = server.client();
    value(&mut app, &["AUTH", "app", "pw"]);
    // PUBLISH and HK.WATCH agree, word for word.
    let publish = error(&mut app, &["PUBLISH", "admin:control", "hello"]);
    let watch = error(&mut app, &["HK.WATCH", "k", "admin:control", "MEMBERS"]);
    assert!(watch.starts_with("NOPERM"), "{watch}");
    assert_eq!(watch, publish);
    let log: Vec<Value> = query(&mut admin, &["ACL", "LOG"]);
    assert!(
        format!("{log:?}").contains("admin:control"),
        "no ACL LOG entry: {log:?}"
    );
    // A payload carrying a watch is checked the same way.
    let payload = watched_payload(Params::for_k(10, 1), 0, b"admin:control", true, None);
    let e = common::error_bytes(&mut app, &[b"HK.LOADSTATE", b"other", &payload]);
    assert!(e.starts_with("NOPERM "), "{e}");
    assert_eq!(value(&mut admin, &["EXISTS", "other"]), Value::Int(0));
    // Its own channels are fine.
    assert_eq!(cli(&mut app, "HK.WATCH k app:events MEMBERS"), Value::Okay);
}

#[test]
fn any_bytes_are_a_key_and_a_channel_name_for_the_watch() {
    let (server, mut con) = Server::start_configured(&["topk-compat", "yes"], &[]).with_client();
    let key: &[u8] = b"a\x00b\xff";
    let channel: &[u8] = b"c\x00h\xfe";
    let mut sub = Subscriber::on_bytes(&server, channel, false);
    load_hot_sketch(&mut con, key, channel);
    let events = sub.events(Duration::from_secs(5), 4);
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["event"].as_str()).collect();
    assert_eq!(kinds, ["cool", "leave"], "{events:?}");
    // Not UTF-8: the key travels base64-encoded.
    assert_eq!(events[0]["key_base64"], "YQBi/w==");
    for command in [
        &[b"HK.WATCH", key, channel, b"MEMBERS"][..],
        &[b"TOPK.COUNT", key, b"x"],
        &[b"TOPK.LIST", key],
        &[b"HK.UNWATCH", key],
    ] {
        run::<Value>(&mut con, command).unwrap_or_else(|e| panic!("{command:?}: {e}"));
    }
    common::assert_pong(&mut server.client());
}

#[test]
fn a_watch_is_paid_for_in_memory_usage_and_the_size_cap() {
    let (_server, mut con) = Server::start().with_client();
    value(&mut con, &["HK.RESERVE", "k", "10", "WIDTH", "64"]);
    let usage = |con: &mut Connection| -> i64 { query(con, &["MEMORY", "USAGE", "k"]) };
    let before = usage(&mut con);
    let channel = "c".repeat(10_000);
    value(&mut con, &["HK.WATCH", "k", &channel, "MEMBERS"]);
    let after = usage(&mut con);
    assert!(after >= before + 10_000, "{before} -> {after}");
    value(&mut con, &["HK.UNWATCH", "k"]);
    // A cap just above the sketch leaves no room for a 10 KB channel.
    let cap = (before + 2_000).to_string();
    config_set(&mut con, "heavykeeper.max-sketch-bytes", &cap);
    let refused = error(&mut con, &["HK.WATCH", "k", &channel, "MEMBERS"]);
    assert!(refused.contains("max-sketch-bytes"), "{refused}");
    assert_eq!(cli(&mut con, "HK.WATCH k short MEMBERS"), Value::Okay);
    // So does a payload that carries such a watch.
    let params = Params {
        width: 64,
        ..Params::for_k(10, 1)
    };
    let payload = watched_payload(params, 0, channel.as_bytes(), true, None);
    let e = common::error_bytes(&mut con, &[b"HK.LOADSTATE", b"big", &payload]);
    assert!(e.contains("max-sketch-bytes"), "{e}");
}
