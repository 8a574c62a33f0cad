//! A gateway and a near cache are told the moment something turns hot:
//! watched sketches publish enter, leave, hot and cool events.

use test_harness as common;

use common::{
    cli, error, hk_info, now_ms, query, repeat, restore, value, words, Server, Subscriber,
};
use redis::Value;
use serde_json::Value as Json;
use std::time::Duration;

/// Each event as `kind item`.
fn kinds(events: &[Json]) -> Vec<String> {
    let item = |e: &Json| e["item"].as_str().unwrap_or("<binary>").to_string();
    (events.iter())
        .map(|e| format!("{} {}", e["event"].as_str().unwrap(), item(e)))
        .collect()
}

const QUIET: Duration = Duration::from_millis(300);

#[test]
fn members_and_counts_without_fading() {
    let (server, mut con) = Server::start().with_client();
    value(&mut con, &["HK.RESERVE", "top", "2", "WIDTH", "1024"]);
    cli(&mut con, "HK.WATCH top events MEMBERS ABOVE 10");
    let mut sub = Subscriber::new(&server, "events", false);
    value(&mut con, &["HK.INCRBY", "top", "a", "12", "b", "3"]);
    let first = sub.events(QUIET, 10);
    assert_eq!(kinds(&first), ["enter a", "hot a", "enter b"]);
    assert_eq!(first[1]["count"], 12);
    assert_eq!(first[1]["key"], "top");
    assert!((first[1]["time"].as_i64().unwrap() - now_ms()).abs() < 5_000);
    // c pushes b out, then d (heavier) pushes the hot a out: leave and cool.
    value(&mut con, &["HK.INCRBY", "top", "c", "20"]);
    value(&mut con, &["HK.INCRBY", "top", "d", "30"]);
    let second = sub.events(QUIET, 10);
    let got = kinds(&second);
    for expected in ["enter c", "hot c", "leave b"] {
        assert!(got.iter().any(|g| g == expected), "{got:?}");
    }
    let a_left = got.iter().any(|g| g == "leave a");
    let c_left = got.iter().any(|g| g == "leave c");
    assert!(a_left ^ c_left, "exactly one of a and c leaves: {got:?}");
    // Without fading nothing cools by itself.
    assert!(sub.events(QUIET, 10).is_empty());
}

#[test]
fn fading_items_cool_and_leave_on_time_by_the_timer() {
    let (server, mut con) =
        Server::start_configured(&["watch-interval-ms", "20"], &[]).with_client();
    value(&mut con, &["HK.RESERVE", "f", "5", "HALFLIFE", "0.2"]);
    cli(&mut con, "HK.WATCH f fade MEMBERS ABOVE 100");
    let mut sub = Subscriber::new(&server, "fade", false);
    // 40 arrivals now: rate 40·ln2/0.2 = 139 req/s, above 100.
    let t = now_ms().to_string();
    value(&mut con, &["HK.INCRBYAT", "f", &t, "x", "40"]);
    let events = sub.events(Duration::from_millis(2_500), 4);
    assert_eq!(kinds(&events), ["enter x", "hot x", "cool x", "leave x"]);
    // Cooling below 80 req/s takes log2(139/80) = 0.8 half-lives (160 ms);
    // leaving (below one arrival) log2(40) = 5.3 half-lives (1.06 s).
    let at = |i: usize| events[i]["time"].as_i64().unwrap() - events[0]["time"].as_i64().unwrap();
    assert!((150..=260).contains(&at(2)), "cool after {} ms", at(2));
    assert!((1_050..=1_200).contains(&at(3)), "leave after {} ms", at(3));
    assert!(events[2]["rate"].as_f64().unwrap() < 80.0);
}

#[test]
fn an_item_hovering_at_the_line_does_not_flap() {
    let (server, mut con) = Server::start().with_client();
    // A half-life of 10 s: a rate of 10/s is a count of 144.
    let t0 = now_ms() - 10_200;
    let at = |offset: i64| (t0 + offset).to_string();
    value(
        &mut con,
        &["HK.RESERVE", "h", "5", "HALFLIFE", "10", "CREATED", &at(0)],
    );
    cli(&mut con, "HK.WATCH h hover ABOVE 10 BELOW 5");
    let mut sub = Subscriber::new(&server, "hover", false);
    // 150 (10.4/s: hot); 5 s later 106 (7.4/s: between the lines) + 40 = 146
    // (10.1/s: above again); 5 s later 103 + 45 = 148: up and down across
    // the upper line, never below the lower one.
    value(&mut con, &["HK.INCRBYAT", "h", &at(0), "x", "150"]);
    value(&mut con, &["HK.INCRBYAT", "h", &at(5_000), "x", "40"]);
    value(&mut con, &["HK.INCRBYAT", "h", &at(10_000), "x", "45"]);
    let got = kinds(&sub.events(QUIET, 10));
    assert_eq!(got, ["hot x"], "one hot, no flapping: {got:?}");
}

#[test]
fn a_churning_boundary_pairs_every_enter_with_a_leave() {
    let (server, mut con) = Server::start().with_client();
    value(&mut con, &["HK.RESERVE", "c", "3", "WIDTH", "2048"]);
    value(&mut con, &["HK.WATCH", "c", "churn", "MEMBERS"]);
    let mut sub = Subscriber::new(&server, "churn", false);
    for round in 0..20 {
        let item = format!("i{round}");
        cli(&mut con, &format!("HK.INCRBY c {item} {}", 10 + round * 5));
    }
    let got = kinds(&sub.events(QUIET, 1000));
    let enters = got.iter().filter(|g| g.starts_with("enter ")).count();
    let leaves = got.iter().filter(|g| g.starts_with("leave ")).count();
    assert_eq!(enters, 20, "{got:?}");
    assert_eq!(enters - leaves, 3, "the three members stay listed: {got:?}");
    let listed: Vec<(Vec<u8>, i64)> = common::list_with_count(&mut con, "c");
    for (item, _) in &listed {
        let item = String::from_utf8(item.clone()).unwrap();
        assert!(
            !got.contains(&format!("leave {item}")),
            "{item} left but is listed"
        );
    }
}

#[test]
fn binary_items_travel_base64_and_the_watch_is_validated() {
    let (server, mut con) = Server::start().with_client();
    value(&mut con, &["HK.RESERVE", "b", "3"]);
    for bad in [
        vec!["HK.WATCH", "b", "ch"],
        vec!["HK.WATCH", "b", "ch", "BELOW", "3"],
        vec!["HK.WATCH", "b", "ch", "ABOVE", "5", "BELOW", "5"],
        vec!["HK.WATCH", "b", "ch", "ABOVE", "-1"],
        vec!["HK.WATCH", "b", "ch", "ABOVE", "nan"],
        vec!["HK.WATCH", "b", "ch", "MEMBERS", "MEMBERS"],
        vec!["HK.WATCH", "missing", "ch", "MEMBERS"],
    ] {
        assert!(error(&mut con, &bad).starts_with("ERR"), "{bad:?}");
    }
    value(&mut con, &["SET", "s", "v"]);
    assert!(error(&mut con, &["HK.WATCH", "s", "ch", "MEMBERS"]).starts_with("WRONGTYPE"));
    value(&mut con, &["HK.WATCH", "b", "bin", "MEMBERS"]);
    let mut sub = Subscriber::new(&server, "bin", false);
    let item: &[u8] = b"\xff\x00ip";
    common::run::<Value>(&mut con, &[b"HK.ADD", b"b", item]).unwrap();
    let events = sub.events(QUIET, 1);
    assert_eq!(events[0]["item_base64"], "/wBpcA==");
    assert!(events[0].get("item").is_none());
    assert_eq!(value(&mut con, &["HK.UNWATCH", "b"]), Value::Int(1));
    assert_eq!(value(&mut con, &["HK.UNWATCH", "b"]), Value::Int(0));
    value(&mut con, &["HK.ADD", "b", "more"]);
    assert!(sub.events(QUIET, 1).is_empty());
}

#[test]
fn the_watch_survives_reload_copy_and_dump_and_shows_in_info() {
    let (server, mut con) = Server::start().with_client();
    value(&mut con, &["HK.RESERVE", "w", "3", "HALFLIFE", "60"]);
    cli(&mut con, "HK.WATCH w alerts MEMBERS ABOVE 2.5");
    let info = hk_info(&mut con, "w");
    assert_eq!(info["watch_channel"], Value::BulkString(b"alerts".to_vec()));
    assert_eq!(info["watch_members"], Value::Int(1));
    assert_eq!(info["watch_above"], Value::BulkString(b"2.5".to_vec()));
    assert_eq!(info["watch_below"], Value::BulkString(b"2".to_vec()));
    value(&mut con, &["DEBUG", "RELOAD"]);
    value(&mut con, &["COPY", "w", "w2"]);
    let dump: Vec<u8> = query(&mut con, &["DUMP", "w"]);
    restore(&mut con, "w3", &dump).unwrap();
    for key in ["w", "w2", "w3"] {
        assert_eq!(
            hk_info(&mut con, key)["watch_channel"],
            info["watch_channel"],
            "{key}"
        );
    }
    // A loaded watch announces what happens after the load, not before.
    let mut sub = Subscriber::new(&server, "alerts", false);
    // Two arrivals: a single one fades below one arrival at once and leaves.
    value(&mut con, &["HK.ADD", "w2", "x", "x"]);
    assert_eq!(kinds(&sub.events(QUIET, 5)), ["enter x"]);
}

#[test]
fn a_flood_is_capped_and_what_is_dropped_is_counted() {
    let (server, mut con) = Server::start_configured(&["watch-max-events", "5"], &[]).with_client();
    value(&mut con, &["HK.RESERVE", "flood", "100", "WIDTH", "4096"]);
    value(&mut con, &["HK.WATCH", "flood", "f", "MEMBERS"]);
    let mut sub = Subscriber::new(&server, "f", false);
    let mut add = redis::cmd("HK.ADD");
    add.arg("flood");
    for i in 0..20 {
        add.arg(format!("i{i}"));
    }
    let _: Value = add.query(&mut con).unwrap();
    assert_eq!(sub.events(QUIET, 100).len(), 5);
    assert_eq!(
        hk_info(&mut con, "flood")["watch_events_dropped"],
        Value::Int(15)
    );
    assert_eq!(common::module_figure(&mut con, "events_dropped"), 15);
}

#[test]
fn a_replica_agrees_on_the_watch_and_publishes_nothing() {
    let primary = Server::start_configured(&["watch-interval-ms", "20"], &[]);
    let replica = Server::replica_of(&primary, &["watch-interval-ms", "20"]);
    let mut r = replica.client();
    let mut p = primary.client();
    value(&mut p, &["HK.RESERVE", "rw", "3", "HALFLIFE", "0.1"]);
    value(&mut p, &["HK.WATCH", "rw", "rep", "MEMBERS", "ABOVE", "50"]);
    let mut on_primary = Subscriber::new(&primary, "rep", false);
    let mut on_replica = Subscriber::new(&replica, "rep", false);
    value(&mut p, &["HK.INCRBY", "rw", "x", "20"]);
    let acked: i64 = query(&mut p, &["WAIT", "1", "10000"]);
    assert_eq!(acked, 1);
    assert_eq!(
        hk_info(&mut r, "rw")["watch_channel"],
        hk_info(&mut p, "rw")["watch_channel"]
    );
    assert_eq!(common::digest(&mut r, "rw"), common::digest(&mut p, "rw"));
    let got = kinds(&on_primary.events(Duration::from_millis(1_200), 4));
    assert_eq!(got, ["enter x", "hot x", "cool x", "leave x"]);
    assert!(
        on_replica.events(QUIET, 1).is_empty(),
        "a replica never publishes"
    );
}

#[test]
fn in_a_cluster_events_are_shard_messages_on_the_keys_slot() {
    let (server, mut con) = Server::start_with(&words(
        "--cluster-enabled yes --cluster-config-file nodes.conf",
    ))
    .with_client();
    value(&mut con, &["CLUSTER", "ADDSLOTSRANGE", "0", "16383"]);
    common::wait_until("the cluster", Duration::from_secs(30), || {
        let info: String = query(&mut con, &["CLUSTER", "INFO"]);
        info.contains("cluster_state:ok")
    });
    value(&mut con, &["HK.RESERVE", "{gw}limiter", "10"]);
    let e = error(&mut con, &["HK.WATCH", "{gw}limiter", "events", "MEMBERS"]);
    assert!(e.contains("same hash tag"), "{e}");
    cli(&mut con, "HK.WATCH {gw}limiter {gw}events MEMBERS");
    let mut sub = Subscriber::new(&server, "{gw}events", true);
    value(&mut con, &["HK.ADD", "{gw}limiter", "ip:1"]);
    assert_eq!(kinds(&sub.events(QUIET, 1)), ["enter ip:1"]);
}

#[test]
fn the_tracker_tells_when_a_key_of_the_server_turns_hot_and_cools() {
    let (server, mut con) =
        Server::start_configured(&words(crate::HOT_KEY_EVENTS), &[]).with_client();
    let mut sub = Subscriber::new(&server, "hotkeys", false);
    // ~500 reads in a moment: 500·ln2 = 347 req/s, above 200.
    repeat(&mut con, 500, &["GET", "product:42"]);
    // The worker counts batches of 512: read the list to flush them.
    let _: Value = query(&mut con, &["HK.HOTKEYS"]);
    let events = sub.events(Duration::from_secs(3), 2);
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(events[0]["event"], "hot");
    assert_eq!(events[0]["key"], "product:42");
    assert_eq!(events[0]["db"], 0);
    assert!(events[0]["reads_per_second"].as_f64().unwrap() >= 200.0);
    assert_eq!(events[0]["writes_per_second"].as_f64().unwrap(), 0.0);
    assert_eq!(events[1]["event"], "cool");
    assert!(events[1]["rate"].as_f64().unwrap() < 160.0);
}
