//! An operator whose cluster has one node on fire finds out where its load
//! comes from: which of its slots (`HK.HOTSLOTS`) and which tenant's keys
//! (`HK.HOTKEYS PREFIXES`), at the tracker's defaults.

use test_harness as common;

use common::{cli, config_set, error, info_number, query, value, Cluster, Server};
use heavykeeper_tracker::hash_slot;
use redis::{Connection, Value};
use std::time::{Duration, Instant};

/// `slot, reads/s, writes/s` rows of `HK.HOTSLOTS ...` (RESP2).
fn hotslots(con: &mut Connection, args: &[&str]) -> Vec<(u16, f64, f64)> {
    query(con, &[&["HK.HOTSLOTS"][..], args].concat())
}

/// `name, db, rate, count` rows of `HK.HOTKEYS ...` (RESP2).
fn hotkeys(con: &mut Connection, args: &[&str]) -> Vec<(Vec<u8>, i64, f64, i64)> {
    query(con, &[&["HK.HOTKEYS"][..], args].concat())
}

/// The names of `HK.HOTKEYS` rows, as text.
fn names_of(rows: &[(Vec<u8>, i64, f64, i64)]) -> Vec<String> {
    rows.iter()
        .map(|p| String::from_utf8_lossy(&p.0).into())
        .collect()
}

/// Sends `GET`s of `keys` in turn to `server`, `per_tick` every 10 ms for
/// `duration`, and returns the rate achieved (GETs per second).
fn steady_gets(server: &Server, keys: Vec<String>, per_tick: usize, duration: Duration) -> f64 {
    let mut con = server.client();
    let start = Instant::now();
    let (mut sent, mut next) = (0usize, 0usize);
    let mut tick = start;
    while start.elapsed() < duration {
        let mut pipe = redis::pipe();
        for _ in 0..per_tick {
            pipe.cmd("GET").arg(&keys[next % keys.len()]).ignore();
            next += 1;
        }
        let _: () = pipe.query(&mut con).unwrap();
        sent += per_tick;
        tick += Duration::from_millis(10);
        std::thread::sleep(tick.saturating_duration_since(Instant::now()));
    }
    sent as f64 / start.elapsed().as_secs_f64()
}

/// `count` key names whose slots are distinct and served by `node`.
fn keys_on_distinct_slots(cluster: &Cluster, node: usize, count: usize) -> Vec<String> {
    let address = cluster.nodes[node].address();
    let ranges = cluster
        .slot_ranges()
        .into_iter()
        .find(|(a, _)| *a == address)
        .map(|(_, r)| r)
        .unwrap();
    let mut slots = std::collections::HashSet::new();
    (0..)
        .map(|i| format!("object:{i}"))
        .filter(|key| {
            let slot = hash_slot(key.as_bytes());
            ranges.iter().any(|r| r.contains(&slot)) && slots.insert(slot)
        })
        .take(count)
        .collect()
}

#[test]
fn each_nodes_hot_slots_add_up_to_the_reads_it_serves() {
    // The tracker at its defaults (its budget decides what it counts).
    let cluster = Cluster::start(&["track", "yes"]);
    // 1,000 keys on distinct slots; 60% of the reads on the first node's.
    let shares = [(0, 333, 30), (1, 333, 10), (2, 334, 10)];
    let keys: Vec<Vec<String>> = shares
        .iter()
        .map(|&(node, count, _)| keys_on_distinct_slots(&cluster, node, count))
        .collect();
    let rates: Vec<f64> = std::thread::scope(|scope| {
        let handles: Vec<_> = shares
            .iter()
            .zip(&keys)
            .map(|(&(node, _, per_tick), keys)| {
                let server = &cluster.nodes[node];
                let keys = keys.clone();
                scope.spawn(move || steady_gets(server, keys, per_tick, Duration::from_secs(5)))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (node, sent) in rates.iter().enumerate() {
        let mut con = cluster.nodes[node].client();
        let slots = hotslots(&mut con, &[]);
        let listed: f64 = slots.iter().map(|s| s.1).sum();
        assert!(
            (listed / sent - 1.0).abs() < 0.2,
            "node {node}: slots add up to {listed:.0} reads/s, {sent:.0} GET/s were sent"
        );
        assert!(slots.iter().all(|s| s.2 == 0.0), "no writes were sent");
        assert!(
            slots.len() <= 334 && slots.len() > 250,
            "{} slots listed",
            slots.len()
        );
        let served = keys[node].iter().map(|k| hash_slot(k.as_bytes()));
        let served: std::collections::HashSet<u16> = served.collect();
        assert!(
            slots.iter().all(|s| served.contains(&s.0)),
            "only slots the node was sent"
        );
        // The node's own total says the same.
        let total: f64 = info_number(
            &mut con,
            "heavykeeper",
            "heavykeeper_tracker_reads_per_second",
        );
        assert!(
            (total / sent - 1.0).abs() < 0.2,
            "node {node}: INFO says {total:.0}/s"
        );
    }
}

#[test]
fn slots_rank_by_reads_writes_or_both() {
    let cluster = Cluster::start(common::TRACK_EVERY_COMMAND);
    let keys = keys_on_distinct_slots(&cluster, 1, 3);
    let mut con = cluster.nodes[1].client();
    let mut pipe = redis::pipe();
    for (key, reads, writes) in [(&keys[0], 300, 0), (&keys[1], 0, 200), (&keys[2], 120, 120)] {
        for _ in 0..reads {
            pipe.cmd("GET").arg(key).ignore();
        }
        for _ in 0..writes {
            pipe.cmd("SET").arg(key).arg("v").ignore();
        }
    }
    let _: () = pipe.query(&mut con).unwrap();
    let slot = |i: usize| hash_slot(keys[i].as_bytes());
    let order = |args: &[&str]| -> Vec<u16> {
        hotslots(&mut cluster.nodes[1].client(), args)
            .iter()
            .map(|s| s.0)
            .collect()
    };
    assert_eq!(order(&[]), [slot(0), slot(2), slot(1)]);
    assert_eq!(order(&["READS"]), [slot(0), slot(2), slot(1)]);
    assert_eq!(order(&["WRITES", "COUNT", "2"]), [slot(1), slot(2)]);
    // Rates in proportion to what was sent, reads and writes apart.
    let rows = hotslots(&mut con, &[]);
    let (reads, writes) = (rows[1].1, rows[1].2);
    assert!((reads / writes - 1.0).abs() < 0.01, "{rows:?}");
    assert!((rows[0].1 / reads - 2.5).abs() < 0.02, "{rows:?}");
    // RESP3: one array per slot.
    let mut resp3 = cluster.nodes[1].client_resp3();
    let nested: Vec<Value> = query(&mut resp3, &["HK.HOTSLOTS", "COUNT", "1"]);
    assert!(
        matches!(&nested[..], [Value::Array(row)] if row.len() == 3),
        "{nested:?}"
    );
    // Bad options are refused with the usual prefixes.
    for args in [
        &["COUNT", "0"][..],
        &["COUNT", "16385"],
        &["READS", "WRITES"],
        &["SLOTS"],
        &["COUNT"],
    ] {
        let text = error(&mut con, &[&["HK.HOTSLOTS"][..], args].concat());
        assert!(text.starts_with("ERR"), "{args:?}: {text}");
    }
}

#[test]
fn outside_a_cluster_hot_slots_is_an_error_that_says_why() {
    let (_server, mut con) =
        Server::start_configured(common::TRACK_EVERY_COMMAND, &[]).with_client();
    let text = error(&mut con, &["HK.HOTSLOTS"]);
    assert!(text.contains("needs cluster mode"), "{text}");
    value(&mut con, &["CONFIG", "SET", "heavykeeper.track", "no"]);
    let text = error(&mut con, &["HK.HOTSLOTS"]);
    assert!(text.contains("tracking is off"), "{text}");
}

/// 60,000 reads over 3 s: 30% over 20,000 keys of tenant 7, the rest over
/// the keys of 99 other tenants; no key read more than a few times.
fn tenant_traffic(con: &mut Connection) {
    for round in 0..60 {
        let mut pipe = redis::pipe();
        for i in 0..1_000 {
            let n = round * 1_000 + i;
            let key = if i % 10 < 3 {
                format!("tenant:7:cart:{}", n % 20_000)
            } else {
                let tenant = 100 + n % 99;
                format!("tenant:{tenant}:cart:{}", n % 1_000)
            };
            pipe.cmd("GET").arg(key).ignore();
        }
        let _: () = pipe.query(con).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn a_tenant_spread_over_many_keys_comes_first_among_prefixes() {
    let (_server, mut con) = Server::start_configured(&["track", "yes"], &[]).with_client();
    tenant_traffic(&mut con);
    let prefixes = hotkeys(&mut con, &["PREFIXES", "COUNT", "5"]);
    assert_eq!(prefixes[0].0, b"tenant:7:*".to_vec(), "{prefixes:?}");
    let all: f64 = info_number(
        &mut con,
        "heavykeeper",
        "heavykeeper_tracker_reads_per_second",
    );
    let share = prefixes[0].2 / all;
    assert!(
        (share / 0.3 - 1.0).abs() < 0.2,
        "tenant 7 has {share:.2} of the reads"
    );
    assert!(prefixes[1].2 < prefixes[0].2 / 5.0, "{prefixes:?}");
    // No key of it is hot on its own (a sampled access stands for several,
    // so a key read once or twice may count for tens). None may be listed
    // at all: a key read once has faded under one access by the time it is
    // read, and a listing holds keys worth at least one.
    let keys = hotkeys(&mut con, &["COUNT", "1"]);
    assert!(
        keys.iter().all(|key| key.3 < prefixes[0].3 / 10),
        "{keys:?} against {prefixes:?}"
    );

    // One level up, every tenant is one prefix.
    config_set(&mut con, "heavykeeper.track-prefix-depths", "1,2");
    value(&mut con, &["HK.HOTKEYS", "RESET"]);
    tenant_traffic(&mut con);
    let prefixes = hotkeys(&mut con, &["PREFIXES", "COUNT", "2"]);
    let names: Vec<&[u8]> = prefixes.iter().map(|p| p.0.as_slice()).collect();
    assert_eq!(names, [&b"tenant:*"[..], b"tenant:7:*"]);
}

/// A server counting every command, keys' prefixes cut at `delimiter`, one deep.
fn prefixes_cut_at(delimiter: &str) -> Server {
    let args = [
        "track",
        "yes",
        "track-sample",
        "1",
        "track-prefix-depths",
        "1",
    ];
    let delimiter = ["track-prefix-delimiter", delimiter];
    Server::start_configured(&[&args[..], &delimiter].concat(), &[])
}

#[test]
fn prefixes_follow_the_configured_delimiter_and_can_be_turned_off() {
    let server = prefixes_cut_at("/");
    let mut con = server.client();
    // Each key 3 times (a count that fades below 1 is not listed).
    for key in [
        "img/a.png",
        "img/b.png",
        "img/c.png",
        "css/x.css",
        "plain",
        "a*b/[c]",
    ]
    .repeat(3)
    {
        let _: Value = query(&mut con, &["GET", key]);
    }
    let prefixes = hotkeys(&mut con, &["PREFIXES"]);
    let names = names_of(&prefixes);
    // Glob characters escaped: each row is a SCAN MATCH pattern as it is.
    assert_eq!(names, ["img/*", "a\\*b/*", "css/*"]);
    assert_eq!(prefixes[0].3, 9);

    for (name, bad) in [
        ("track-prefix-depths", "two"),
        ("track-prefix-depths", "1,2,3,4,5"),
        ("track-prefix-depths", "17"),
        ("track-prefix-delimiter", ""),
        ("track-prefix-delimiter", "a-delimiter-too-long"),
    ] {
        let text = error(
            &mut con,
            &["CONFIG", "SET", &format!("heavykeeper.{name}"), bad],
        );
        assert!(text.starts_with("ERR"), "{name} {bad:?}: {text}");
    }
    let depths: Vec<String> = query(
        &mut con,
        &["CONFIG", "GET", "heavykeeper.track-prefix-depths"],
    );
    assert_eq!(depths[1], "1", "a refused value changes nothing");

    config_set(&mut con, "heavykeeper.track-prefix-depths", "0");
    let text = error(&mut con, &["HK.HOTKEYS", "PREFIXES"]);
    assert!(text.contains("prefix tracking is off"), "{text}");
}

/// A key longer than the tracker keeps (1 KiB) is tracked under its first
/// bytes, a marker (`...#`) and a hash: its prefixes come from its own
/// bytes, never from the marker, so that every prefix row matches keys.
#[test]
fn a_long_keys_prefixes_come_from_its_own_bytes() {
    let server = prefixes_cut_at("#");
    let mut con = server.client();
    let without = "x".repeat(3000);
    let with = format!("tenant#{}", "y".repeat(3000));
    for key in [&without, &with].repeat(3) {
        let _: Value = query(&mut con, &["GET", key]);
    }
    let prefixes = hotkeys(&mut con, &["PREFIXES"]);
    let names = names_of(&prefixes);
    assert_eq!(names, ["tenant#*"]);
}

/// A client that sends another node's keys here (all answered `MOVED`),
/// keys of two slots at once (`CROSSSLOT`), or a slot being imported
/// without `ASKING`: none of it was served here, so none of it shows in
/// this node's hot slots, hot keys or totals, while what it serves does.
#[test]
fn commands_a_node_redirects_count_nowhere() {
    let cluster = Cluster::start(common::TRACK_EVERY_COMMAND);
    let first = &cluster.nodes[0];
    let theirs = keys_on_distinct_slots(&cluster, 1, 1).remove(0);
    let ours = keys_on_distinct_slots(&cluster, 0, 2);
    let mut con = first.client();
    let mut moved = 0;
    for _ in 0..3_000 {
        match redis::cmd("GET").arg(&theirs).query::<Value>(&mut con) {
            Err(e) if e.kind() == redis::ErrorKind::Moved => moved += 1,
            other => panic!("expected MOVED, got {other:?}"),
        }
    }
    assert_eq!(moved, 3_000);
    for _ in 0..500 {
        let e = redis::cmd("MGET")
            .arg(&ours[0])
            .arg(&theirs)
            .query::<Value>(&mut con)
            .unwrap_err();
        assert!(common::server_error_text(&e).contains("CROSSSLOT"), "{e}");
    }
    for _ in 0..200 {
        let _: Value = redis::cmd("GET").arg(&ours[1]).query(&mut con).unwrap();
    }
    let slots = hotslots(&mut con, &[]);
    let theirs_slot = hash_slot(theirs.as_bytes());
    assert!(
        slots.iter().all(|s| s.0 != theirs_slot),
        "a slot this node does not serve is listed: {slots:?}"
    );
    assert_eq!(
        slots.iter().map(|s| s.0).collect::<Vec<_>>(),
        vec![hash_slot(ours[1].as_bytes())],
        "only the slot it served"
    );
    let keys = hotkeys(&mut con, &[]);
    assert_eq!(keys.len(), 1, "{keys:?}");
    assert_eq!((keys[0].0.as_slice(), keys[0].3), (ours[1].as_bytes(), 200));
    let redirected: u64 = info_number(
        &mut con,
        "heavykeeper",
        "heavykeeper_tracker_commands_redirected",
    );
    assert_eq!(redirected, 3_500);
    // A slot being imported: without ASKING its commands are MOVED; with
    // it, served here and counted.
    let second = &cluster.nodes[1];
    let source_id: String = query(&mut second.client(), &["CLUSTER", "MYID"]);
    cli(
        &mut con,
        &format!("CLUSTER SETSLOT {theirs_slot} IMPORTING {source_id}"),
    );
    std::thread::sleep(Duration::from_millis(300));
    for _ in 0..100 {
        let e = redis::cmd("GET")
            .arg(&theirs)
            .query::<Value>(&mut con)
            .unwrap_err();
        assert_eq!(e.kind(), redis::ErrorKind::Moved, "{e}");
    }
    for _ in 0..40 {
        let (_, value): ((), Value) = redis::pipe()
            .cmd("ASKING")
            .cmd("GET")
            .arg(&theirs)
            .query(&mut con)
            .unwrap();
        assert_eq!(value, Value::Nil);
    }
    let keys = hotkeys(&mut con, &[]);
    let asked = keys.iter().find(|k| k.0 == theirs.as_bytes());
    assert_eq!(asked.map(|k| k.3), Some(40), "{keys:?}");
}
