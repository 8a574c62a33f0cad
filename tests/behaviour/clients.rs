//! An operator asks who drives a hot key: four services on four hosts
//! (127.0.0.2-5, a name and a library each) read `product:42` at shares of
//! 60/25/10/5%, then disconnect; `HK.HOTKEYS CLIENTS` names them by host,
//! name, library, connection and user, with exact shares where every
//! command is counted; `HK.HOTCLIENTS` finds the node's biggest sender;
//! the `hot` event names the key's top host. Redis 7.0, whose filter does
//! not say which client sent a command, answers an error naming the
//! versions that can.

use test_harness as common;

use common::{cli, error, filter_names_clients, wait_until, words, HostClient, Server, Subscriber};
use redis::{Connection, Value};
use std::time::Duration;

/// The four services: host (127.0.0.N), name, GETs of product:42.
const SERVICES: [(u8, &str, usize); 4] = [
    (2, "checkout", 600),
    (3, "search", 250),
    (4, "cart", 100),
    (5, "batch", 50),
];

fn tracking_every_command() -> (Server, Connection) {
    // A day's half-life: what each service sent a few seconds apart
    // fades by under 1e-4 before it is read.
    let args = words("track yes track-sample 1 track-halflife 86400");
    Server::start_configured(&args, &[]).with_client()
}

/// A client on host 127.0.0.`host`, named `name` (library `lib-name`),
/// that sends `gets` GETs of `key` in one pipeline, waits for every reply
/// and disconnects.
fn service(server: &Server, host: u8, name: &str, key: &str, gets: usize) {
    let lib = format!("lib-{name}");
    let mut client = HostClient::connect(server.port, host);
    let setup: [&[&str]; 2] = [
        &["CLIENT", "SETNAME", name],
        &["CLIENT", "SETINFO", "LIB-NAME", &lib],
    ];
    let get: &[&str] = &["GET", key];
    client.pipeline(setup.into_iter().chain(std::iter::repeat_n(get, gets)));
}

/// The `who, rate, count [, low, high]` rows of a command written as one
/// line (see `words`).
fn ask(con: &mut Connection, line: &str, width: usize) -> Vec<(String, f64, i64, Vec<f64>)> {
    let reply = cli(con, line);
    let Value::Array(flat) = reply else {
        panic!("{line}: {reply:?}")
    };
    let text = |v: &Value| match v {
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        other => panic!("{other:?}"),
    };
    let number = |v: &Value| text(v).parse::<f64>().unwrap();
    (flat.chunks(width))
        .map(|row| {
            let Value::Int(count) = row[2] else {
                panic!("{row:?}")
            };
            let bounds = row[3..].iter().map(number).collect();
            (text(&row[0]), number(&row[1]), count, bounds)
        })
        .collect()
}

/// The key is one of the tracker's members once it is listed: from then
/// on its senders are counted.
fn make_member(server: &Server, con: &mut Connection, key: &str) {
    service(server, 1, "warm-up", key, 20);
    wait_until("the key is listed", Duration::from_secs(10), || {
        let listed: Vec<Value> = redis::cmd("HK.HOTKEYS").query(con).unwrap();
        listed.first() == Some(&Value::BulkString(key.as_bytes().to_vec()))
    });
}

#[test]
fn the_clients_behind_a_hot_key_are_named_with_their_exact_shares() {
    let (server, mut con) = tracking_every_command();
    if !filter_names_clients(&mut con) {
        let e = error(&mut con, &["HK.HOTKEYS", "CLIENTS", "product:42"]);
        assert!(e.contains("Redis 7.2 or later, or Valkey"), "{e}");
        assert!(error(&mut con, &["HK.HOTCLIENTS"]).contains("7.2"));
        return;
    }
    make_member(&server, &mut con, "product:42");
    for (host, name, gets) in SERVICES {
        service(&server, host, name, "product:42", gets);
    }
    let by = |con: &mut Connection, how: &str| {
        ask(
            con,
            &format!("HK.HOTKEYS CLIENTS product:42 BY {how} WITHBOUNDS"),
            5,
        )
    };
    // Every command counted: each service's share of the row is what it
    // sent of the row's accesses since the row was listed (within the
    // fading between services read seconds apart on a busy machine). (Its count and
    // rate are that share of the row's, which holds the warm-up's 20 reads
    // from before: its bounds allow for their being anyone's, and so hold
    // what the service sent, from exactly that to 20 more.)
    let hosts = by(&mut con, "HOST");
    let all: f64 = hosts.iter().map(|r| r.1).sum();
    for (host, _, gets) in SERVICES {
        let row = hosts.iter().find(|r| r.0 == format!("127.0.0.{host}"));
        let (_, rate, count, bounds) = row.unwrap_or_else(|| panic!("{host}: {hosts:?}"));
        assert!(
            (rate / all - gets as f64 / 1_000.0).abs() < 1e-4,
            "{hosts:?}"
        );
        let per = *count as f64 / rate;
        let (low, high) = (bounds[0] * per, bounds[1] * per);
        let sent = gets as f64;
        assert!(
            (low - sent).abs() < 1.0 && (high - sent - 20.0).abs() < 1.0,
            "{hosts:?}"
        );
    }
    let names: Vec<String> = by(&mut con, "NAME").into_iter().map(|r| r.0).collect();
    assert_eq!(names[..4], ["checkout", "search", "cart", "batch"]);
    let libs: Vec<String> = by(&mut con, "LIB").into_iter().map(|r| r.0).collect();
    assert_eq!(libs[0], "lib-checkout");
    let users: Vec<String> = by(&mut con, "USER").into_iter().map(|r| r.0).collect();
    assert_eq!(users, ["default"]);
    let connections = by(&mut con, "CONNECTION");
    assert!(connections[0].0.starts_with("id=") && connections[0].0.contains(" 127.0.0.2:"));
    assert_eq!(
        ask(&mut con, "HK.HOTKEYS CLIENTS product:42 COUNT 1", 3).len(),
        1
    );
    // A key that is no member has nobody to name.
    assert!(ask(&mut con, "HK.HOTKEYS CLIENTS nothing", 3).is_empty());
    // The node's biggest sender, whatever its keys.
    let node = ask(&mut con, "HK.HOTCLIENTS BY NAME", 3);
    assert_eq!(node[0].0, "checkout", "{node:?}");
    // RESP3: a row an array.
    let mut resp3 = server.client_resp3();
    let nested: Value = redis::cmd("HK.HOTCLIENTS").query(&mut resp3).unwrap();
    assert!(
        matches!(&nested, Value::Array(r) if matches!(r[0], Value::Array(_))),
        "{nested:?}"
    );
    for (asked, wanted) in [
        (
            &["HK.HOTKEYS", "CLIENTS", "product:42", "BY", "PORT"][..],
            "BY takes HOST",
        ),
        (&["HK.HOTCLIENTS", "COUNT", "0"], "COUNT"),
        (&["HK.HOTCLIENTS", "DB", "1"], "unknown or repeated option"),
        (&["HK.HOTKEYS", "CLIENTS", "product:42", "DB", "x"], "DB"),
    ] {
        let e = error(&mut con, asked);
        assert!(e.starts_with("ERR") && e.contains(wanted), "{asked:?}: {e}");
    }
}

#[test]
fn the_hot_event_names_the_host_that_sends_the_key_most() {
    let (server, mut con) = tracking_every_command();
    if !filter_names_clients(&mut con) {
        return;
    }
    common::config_set(&mut con, "heavykeeper.track-notify-above", "50");
    let mut events = Subscriber::new(&server, "heavykeeper:hotkeys", false);
    make_member(&server, &mut con, "flash:sale");
    let mut hot = None;
    wait_until("a hot event", Duration::from_secs(20), || {
        service(&server, 7, "storm", "flash:sale", 2_000);
        let seen = events.events(Duration::from_millis(200), 10);
        hot = seen.into_iter().find(|e| e["event"] == "hot");
        hot.is_some()
    });
    let hot = hot.unwrap();
    assert_eq!(hot["top_client"], "127.0.0.7", "{hot}");
    assert!(hot["top_client_share"].as_f64().unwrap() > 0.5, "{hot}");
}

#[test]
fn naming_clients_is_for_those_who_may_see_them() {
    let (server, mut con) = tracking_every_command();
    // Redis 7.0 sets no module command's ACL categories (and names no clients).
    if !filter_names_clients(&mut con) {
        return;
    }
    cli(&mut con, "ACL SETUSER app on >pw ~* +@read -@dangerous");
    let url = format!("redis://app:pw@127.0.0.1:{}/", server.port);
    let mut app = redis::Client::open(url).unwrap().get_connection().unwrap();
    for asked in [&["HK.HOTCLIENTS"][..], &["HK.HOTKEYS", "CLIENTS", "k"]] {
        let e = error(&mut app, asked);
        assert!(e.starts_with("NOPERM"), "{asked:?}: {e}");
    }
}

/// In a cluster, `HK.HOTCLIENTS SLOT n` says who drives one of the node's
/// hottest hash slots (outside one, an error says there are none).
#[test]
fn a_hot_hash_slot_names_who_drives_it() {
    let (server, mut con) = tracking_every_command();
    if !filter_names_clients(&mut con) {
        return;
    }
    let e = error(&mut con, &["HK.HOTCLIENTS", "SLOT", "1"]);
    assert!(e.contains("cluster mode"), "{e}");
    drop(server);
    let cluster = common::Cluster::start(&["track", "yes", "track-sample", "1"]);
    let owner = cluster.owner_of("product:42");
    let slot: i64 = common::query(&mut owner.client(), &["CLUSTER", "KEYSLOT", "product:42"]);
    let mut rows = Vec::new();
    // The node watches its hottest slots, chosen each second: read until
    // the slot is one and its senders are counted.
    wait_until("the slot's senders", Duration::from_secs(20), || {
        service(owner, 6, "slot-reader", "product:42", 200);
        let asked = format!("HK.HOTCLIENTS SLOT {slot} BY NAME");
        rows = ask(&mut owner.client(), &asked, 3);
        !rows.is_empty()
    });
    assert_eq!(rows[0].0, "slot-reader", "{rows:?}");
}

/// A client that never logged in is refused before its commands run: it
/// drives nothing and is named nowhere, however much it sends.
#[test]
fn a_client_that_never_logged_in_is_named_nowhere() {
    let server = Server::start_configured(
        &["track", "yes", "track-sample", "1"],
        &["--requirepass", "pw"],
    );
    let mut con = server.client_with_password("pw");
    if !filter_names_clients(&mut con) {
        return;
    }
    // A logged-in client from 127.0.0.2 makes the key a member and reads it.
    let logged_in = |gets: usize| {
        let get: &[&str] = &["GET", "product:42"];
        let auth: &[&str] = &["AUTH", "pw"];
        let mut client = HostClient::connect(server.port, 2);
        client.pipeline(std::iter::once(auth).chain(std::iter::repeat_n(get, gets)));
    };
    logged_in(20);
    wait_until("the key is listed", Duration::from_secs(10), || {
        let listed: Vec<Value> = redis::cmd("HK.HOTKEYS").query(&mut con).unwrap();
        !listed.is_empty()
    });
    // 127.0.0.9 never logs in: every GET answered NOAUTH (a few at a time:
    // the server keeps such a client's buffers small).
    let mut stranger = HostClient::connect(server.port, 9);
    for _ in 0..200 {
        let refused = stranger.refused(&["GET", "product:42"], 10);
        assert!(refused[0].starts_with("-NOAUTH"), "{refused:?}");
    }
    logged_in(100);
    let hosts = ask(&mut con, "HK.HOTKEYS CLIENTS product:42", 3);
    let node = ask(&mut con, "HK.HOTCLIENTS BY HOST", 3);
    for rows in [&hosts, &node] {
        assert!(rows.iter().all(|r| r.0 != "127.0.0.9"), "{rows:?}");
        assert_eq!(rows[0].0, "127.0.0.2", "{rows:?}");
    }
}
