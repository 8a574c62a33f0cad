//! User stories for every command, on RESP2 and RESP3.

mod common;

use common::{error, list_with_count, value, Server};
use redis::{Commands, Value};

fn items(values: &[&str]) -> Vec<Value> {
    values
        .iter()
        .map(|v| Value::BulkString(v.as_bytes().to_vec()))
        .collect()
}

#[test]
fn an_app_team_finds_its_hottest_keys() {
    let server = Server::start();
    let mut con = server.client();
    assert_eq!(value(&mut con, &["HK.RESERVE", "hot", "3"]), Value::Okay);
    for _ in 0..50 {
        value(&mut con, &["HK.ADD", "hot", "user:1", "user:2", "user:1"]);
    }
    value(
        &mut con,
        &["HK.ADD", "hot", "cart:9", "cart:9", "cart:9", "tiny"],
    );

    assert_eq!(
        list_with_count(&mut con, "hot"),
        vec![
            (b"user:1".to_vec(), 100),
            (b"user:2".to_vec(), 50),
            (b"cart:9".to_vec(), 3)
        ]
    );
    let listed: Vec<String> = redis::cmd("HK.LIST").arg("hot").query(&mut con).unwrap();
    assert_eq!(listed, vec!["user:1", "user:2", "cart:9"]);
    let present: Vec<i64> = redis::cmd("HK.QUERY")
        .arg("hot")
        .arg(&["user:1", "tiny", "never"])
        .query(&mut con)
        .unwrap();
    assert_eq!(present, vec![1, 0, 0]);
    let counts: Vec<i64> = redis::cmd("HK.COUNT")
        .arg("hot")
        .arg(&["user:1", "cart:9", "never"])
        .query(&mut con)
        .unwrap();
    assert_eq!(counts, vec![100, 3, 0]);
}

#[test]
fn add_reports_what_each_arrival_expelled() {
    let server = Server::start();
    let mut con = server.client();
    value(&mut con, &["HK.RESERVE", "k", "2", "SEED", "1"]);
    value(&mut con, &["HK.ADD", "k", "a", "a", "b"]);
    // "c" reaches nmin + 1 = 2 only on its second arrival and pushes out "b".
    let reply = value(&mut con, &["HK.ADD", "k", "c", "c"]);
    assert_eq!(
        reply,
        Value::Array(vec![Value::Nil, Value::BulkString(b"b".to_vec())])
    );
}

#[test]
fn incrby_counts_weighted_arrivals_in_one_step() {
    let server = Server::start();
    let mut con = server.client();
    value(&mut con, &["HK.RESERVE", "sql", "10"]);
    let reply = value(
        &mut con,
        &[
            "HK.INCRBY",
            "sql",
            "SELECT 1",
            "5000000000",
            "SELECT 2",
            "7",
        ],
    );
    assert_eq!(reply, Value::Array(vec![Value::Nil, Value::Nil]));
    assert_eq!(
        list_with_count(&mut con, "sql"),
        vec![
            (b"SELECT 1".to_vec(), 5_000_000_000),
            (b"SELECT 2".to_vec(), 7)
        ]
    );
}

#[test]
fn items_are_binary_safe_through_every_command() {
    let server = Server::start();
    let mut con = server.client();
    value(&mut con, &["HK.RESERVE", "bin", "5"]);
    let big = vec![0xAB_u8; 1 << 20];
    let odd: Vec<Vec<u8>> = vec![
        b"".to_vec(),
        b"nul\0inside".to_vec(),
        b"crlf\r\n".to_vec(),
        big,
    ];
    for item in &odd {
        let _: Value = redis::cmd("HK.INCRBY")
            .arg("bin")
            .arg(item.as_slice())
            .arg(3)
            .query(&mut con)
            .unwrap();
    }
    let mut expected = odd.clone();
    expected.sort();
    for reload in [false, true] {
        if reload {
            let _: () = redis::cmd("DEBUG").arg("RELOAD").query(&mut con).unwrap();
        }
        let mut listed: Vec<Vec<u8>> = redis::cmd("HK.LIST").arg("bin").query(&mut con).unwrap();
        listed.sort();
        assert_eq!(listed, expected, "after reload: {reload}");
    }
    for item in &odd {
        let counts: Vec<i64> = redis::cmd("HK.COUNT")
            .arg("bin")
            .arg(item.as_slice())
            .query(&mut con)
            .unwrap();
        assert_eq!(counts, vec![3]);
    }
}

#[test]
fn ties_are_listed_in_a_deterministic_order() {
    let server = Server::start();
    let mut con = server.client();
    value(&mut con, &["HK.RESERVE", "t", "4"]);
    value(&mut con, &["HK.ADD", "t", "d", "b", "c", "a"]);
    let listed: Vec<String> = redis::cmd("HK.LIST").arg("t").query(&mut con).unwrap();
    assert_eq!(listed, vec!["a", "b", "c", "d"]);
}

#[test]
fn resp3_clients_get_pairs_and_maps() {
    let server = Server::start();
    let mut con = server.client_resp3();
    value(&mut con, &["HK.RESERVE", "r", "2", "SEED", "9"]);
    value(&mut con, &["HK.INCRBY", "r", "x", "5", "y", "2"]);
    let reply = value(&mut con, &["HK.LIST", "r", "WITHCOUNT"]);
    assert_eq!(
        reply,
        Value::Array(vec![
            Value::Array(vec![Value::BulkString(b"x".to_vec()), Value::Int(5)]),
            Value::Array(vec![Value::BulkString(b"y".to_vec()), Value::Int(2)]),
        ])
    );
    assert_eq!(
        value(&mut con, &["HK.LIST", "r"]),
        Value::Array(items(&["x", "y"]))
    );
    let Value::Map(info) = value(&mut con, &["HK.INFO", "r"]) else {
        panic!("HK.INFO is not a map on RESP3");
    };
    let field = |name: &str| {
        info.iter()
            .find(|(k, _)| {
                *k == Value::BulkString(name.as_bytes().to_vec())
                    || *k == Value::SimpleString(name.into())
            })
            .map(|(_, v)| v.clone())
    };
    assert_eq!(field("k"), Some(Value::Int(2)));
    assert_eq!(field("members"), Some(Value::Int(2)));
    let reply = value(&mut con, &["HK.ADD", "r", "z"]);
    assert_eq!(reply, Value::Array(vec![Value::Nil]));
}

#[test]
fn info_describes_the_sketch() {
    let server = Server::start();
    let mut con = server.client();
    value(
        &mut con,
        &[
            "hk.reserve",
            "i",
            "7",
            "width",
            "100",
            "DEPTH",
            "4",
            "Decay",
            "0.8",
            "SEED",
            "42",
        ],
    );
    value(&mut con, &["HK.INCRBY", "i", "a", "10"]);
    let info = common::hk_info(&mut con, "i");
    let text = |name: &str| -> String { redis::from_redis_value(&info[name]).unwrap() };
    assert_eq!(text("k"), "7");
    assert_eq!(text("width"), "100");
    assert_eq!(text("depth"), "4");
    assert_eq!(text("decay"), "0.8");
    assert_eq!(text("seed"), "42");
    assert_eq!(text("arrivals"), "10");
    assert_eq!(text("members"), "1");
    let memory: i64 = redis::from_redis_value(&info["memory"]).unwrap();
    let usage: i64 = redis::cmd("MEMORY")
        .arg("USAGE")
        .arg("i")
        .query(&mut con)
        .unwrap();
    assert!(
        // 8 bytes a bucket without fading.
        memory > 100 * 4 * 8 && usage >= memory,
        "{memory} vs {usage}"
    );
    assert_eq!(info["halflife"], Value::Nil);
}

#[test]
fn defaults_fit_k100_in_64_kib() {
    let server = Server::start();
    let mut con = server.client();
    value(&mut con, &["HK.RESERVE", "d", "100"]);
    let usage: i64 = redis::cmd("MEMORY")
        .arg("USAGE")
        .arg("d")
        .query(&mut con)
        .unwrap();
    assert!(usage <= 64 * 1024, "{usage}");
}

#[test]
fn memory_usage_counts_item_bytes_and_matches_the_allocator() {
    let server = Server::start();
    let mut con = server.client();
    value(
        &mut con,
        &["HK.RESERVE", "m", "10", "WIDTH", "64", "DEPTH", "2"],
    );
    let empty: i64 = redis::cmd("MEMORY")
        .arg("USAGE")
        .arg("m")
        .query(&mut con)
        .unwrap();
    let long = "x".repeat(100_000);
    value(&mut con, &["HK.ADD", "m", &long]);
    let full: i64 = redis::cmd("MEMORY")
        .arg("USAGE")
        .arg("m")
        .query(&mut con)
        .unwrap();
    assert!(full - empty >= 100_000, "{empty} -> {full}");

    // Many sketches: what MEMORY USAGE claims is what the allocator handed out.
    let before: i64 = common::info_field(&mut con, "memory", "used_memory")
        .unwrap()
        .parse()
        .unwrap();
    let mut claimed = 0;
    for i in 0..200 {
        let key = format!("s{i}");
        value(&mut con, &["HK.RESERVE", &key, "50"]);
        value(&mut con, &["HK.ADD", &key, "a", "b", "c"]);
        let usage: i64 = redis::cmd("MEMORY")
            .arg("USAGE")
            .arg(&key)
            .query(&mut con)
            .unwrap();
        claimed += usage;
    }
    let after: i64 = common::info_field(&mut con, "memory", "used_memory")
        .unwrap()
        .parse()
        .unwrap();
    let used = after - before;
    let ratio = claimed as f64 / used as f64;
    assert!(
        (0.85..1.15).contains(&ratio),
        "claimed {claimed}, allocated {used}"
    );
}

#[test]
fn copy_makes_an_independent_deep_copy() {
    let server = Server::start();
    let mut con = server.client();
    value(&mut con, &["HK.RESERVE", "src", "5"]);
    value(&mut con, &["HK.ADD", "src", "a", "a", "b"]);
    let copied: i64 = redis::cmd("COPY")
        .arg("src")
        .arg("dst")
        .query(&mut con)
        .unwrap();
    assert_eq!(copied, 1);
    assert_eq!(
        common::digest(&mut con, "src"),
        common::digest(&mut con, "dst")
    );
    value(&mut con, &["HK.ADD", "dst", "c"]);
    assert_ne!(
        common::digest(&mut con, "src"),
        common::digest(&mut con, "dst")
    );
    assert_eq!(list_with_count(&mut con, "src").len(), 2);
    assert_eq!(list_with_count(&mut con, "dst").len(), 3);
    let _: () = con.del("src").unwrap();
    assert_eq!(list_with_count(&mut con, "dst").len(), 3);
}

#[test]
fn the_sketch_is_a_first_class_key() {
    let server = Server::start();
    let mut con = server.client();
    value(&mut con, &["HK.RESERVE", "typed", "5"]);
    let kind: String = redis::cmd("TYPE").arg("typed").query(&mut con).unwrap();
    assert_eq!(kind, "heavykeep");
    let _: () = con.expire("typed", 100).unwrap();
    let ttl: i64 = con.ttl("typed").unwrap();
    assert!(ttl > 0);
    let _: () = con.rename("typed", "renamed").unwrap();
    assert_eq!(list_with_count(&mut con, "renamed").len(), 0);
    assert_eq!(error(&mut con, &["HK.LIST", "typed"]), "ERR no such key");
}

#[test]
fn the_size_cap_is_a_module_config() {
    let server = Server::start_with(&["--heavykeeper.max-sketch-bytes", "100000"]);
    let mut con = server.client();
    let cap: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("heavykeeper.max-sketch-bytes")
        .query(&mut con)
        .unwrap();
    assert_eq!(cap[1], "100000");
    let e = error(&mut con, &["HK.RESERVE", "big", "100", "WIDTH", "100000"]);
    assert!(e.starts_with("ERR sketch would take"), "{e}");
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("heavykeeper.max-sketch-bytes")
        .arg("100000000")
        .query(&mut con)
        .unwrap();
    assert_eq!(
        value(&mut con, &["HK.RESERVE", "big", "100", "WIDTH", "100000"]),
        Value::Okay
    );
}

#[test]
fn commands_declare_their_flags_and_key_positions() {
    let server = Server::start();
    let mut con = server.client();
    let expected = [
        ("hk.reserve", vec!["write", "denyoom"]),
        ("hk.add", vec!["write", "denyoom", "fast"]),
        ("hk.incrby", vec!["write", "denyoom", "fast"]),
        ("hk.query", vec!["readonly", "fast"]),
        ("hk.count", vec!["readonly", "fast"]),
        ("hk.list", vec!["readonly"]),
        ("hk.info", vec!["readonly", "fast"]),
    ];
    for (name, flags) in expected {
        let reply: Vec<Value> = redis::cmd("COMMAND")
            .arg("INFO")
            .arg(name)
            .query(&mut con)
            .unwrap();
        let Value::Array(doc) = &reply[0] else {
            panic!("{name} is not registered");
        };
        let declared: Vec<String> = redis::from_redis_value(&doc[2]).unwrap();
        for flag in flags {
            assert!(declared.contains(&flag.to_string()), "{name}: {declared:?}");
        }
        let positions: Vec<i64> = doc[3..6]
            .iter()
            .map(|v| redis::from_redis_value(v).unwrap())
            .collect();
        assert_eq!(positions, vec![1, 1, 1], "{name}");
    }
    let keys: Vec<String> = redis::cmd("COMMAND")
        .arg("GETKEYS")
        .arg("HK.ADD")
        .arg("mykey")
        .arg("a")
        .query(&mut con)
        .unwrap();
    assert_eq!(keys, vec!["mykey"]);
}

#[test]
fn acl_key_patterns_apply_to_sketch_commands() {
    let server = Server::start();
    let mut admin = server.client();
    value(&mut admin, &["HK.RESERVE", "app:hot", "5"]);
    value(&mut admin, &["HK.RESERVE", "other:hot", "5"]);
    let _: () = redis::cmd("ACL")
        .arg(&["SETUSER", "app", "on", ">secret", "~app:*", "+@all"])
        .query(&mut admin)
        .unwrap();
    let mut con = server.client();
    let _: () = redis::cmd("AUTH")
        .arg("app")
        .arg("secret")
        .query(&mut con)
        .unwrap();
    assert_eq!(
        value(&mut con, &["HK.ADD", "app:hot", "k"]),
        Value::Array(vec![Value::Nil])
    );
    let e = error(&mut con, &["HK.ADD", "other:hot", "k"]);
    assert!(e.starts_with("NOPERM"), "{e}");
    let e = error(&mut con, &["HK.LIST", "other:hot"]);
    assert!(e.starts_with("NOPERM"), "{e}");
}

#[test]
fn shards_counted_on_separate_keys_merge_into_one_top_k() {
    let server = Server::start();
    let mut con = server.client();
    for key in ["total", "shard:1", "shard:2", "shard:3"] {
        value(&mut con, &["HK.RESERVE", key, "3", "SEED", "7"]);
    }
    // Each shard sees part of the traffic; only together is "b" the hottest.
    value(&mut con, &["HK.INCRBY", "shard:1", "a", "50", "b", "40"]);
    value(&mut con, &["HK.INCRBY", "shard:2", "b", "30", "c", "20"]);
    value(&mut con, &["HK.INCRBY", "shard:3", "c", "25", "d", "5"]);
    assert_eq!(
        value(
            &mut con,
            &["HK.MERGE", "total", "shard:1", "shard:2", "shard:3"]
        ),
        Value::Okay
    );
    assert_eq!(
        list_with_count(&mut con, "total"),
        vec![
            (b"b".to_vec(), 70),
            (b"a".to_vec(), 50),
            (b"c".to_vec(), 45)
        ]
    );
    let info = common::hk_info(&mut con, "total");
    assert_eq!(
        redis::from_redis_value::<String>(&info["arrivals"]).unwrap(),
        "170"
    );

    // Refused merges change nothing.
    let before = common::digest(&mut con, "total");
    value(&mut con, &["HK.RESERVE", "other-seed", "3", "SEED", "8"]);
    let e = error(&mut con, &["HK.MERGE", "total", "shard:1", "other-seed"]);
    assert_eq!(e, "ERR sketches differ in SEED");
    assert_eq!(
        error(&mut con, &["HK.MERGE", "total", "shard:1", "missing"]),
        "ERR no such key"
    );
    value(&mut con, &["SET", "str", "v"]);
    assert!(error(&mut con, &["HK.MERGE", "total", "str"]).starts_with("WRONGTYPE"));
    assert_eq!(common::digest(&mut con, "total"), before);
    let keys: Vec<String> = redis::cmd("COMMAND")
        .arg("GETKEYS")
        .arg(&["HK.MERGE", "total", "shard:1", "shard:2"])
        .query(&mut con)
        .unwrap();
    assert_eq!(keys, vec!["total", "shard:1", "shard:2"]);
}

#[test]
fn a_merge_is_idempotent_and_never_counts_a_stream_twice() {
    let server = Server::start();
    let mut con = server.client();
    for key in ["east", "west", "t"] {
        value(&mut con, &["HK.RESERVE", key, "3", "SEED", "7"]);
    }
    value(&mut con, &["HK.INCRBY", "east", "a", "50", "b", "40"]);
    value(&mut con, &["HK.INCRBY", "west", "b", "30", "c", "20"]);
    value(&mut con, &["HK.INCRBY", "t", "x", "100"]);
    let merged = vec![
        (b"b".to_vec(), 70),
        (b"a".to_vec(), 50),
        (b"c".to_vec(), 20),
    ];
    // A missing destination is created; a retry (after a timeout, say)
    // leaves the same answer, not twice the counts.
    for _ in 0..3 {
        value(&mut con, &["HK.MERGE", "total", "east", "west"]);
        assert_eq!(list_with_count(&mut con, "total"), merged);
    }
    // An existing destination becomes the merge of its sources: what it
    // held before does not count.
    value(&mut con, &["HK.INCRBY", "t", "x", "5"]);
    value(&mut con, &["HK.MERGE", "t", "east", "west"]);
    assert_eq!(list_with_count(&mut con, "t"), merged);
    // A sketch merged with itself is itself.
    let before = common::digest(&mut con, "east");
    value(&mut con, &["HK.MERGE", "east", "east"]);
    assert_eq!(common::digest(&mut con, "east"), before);
    assert_eq!(
        list_with_count(&mut con, "east"),
        vec![(b"a".to_vec(), 50), (b"b".to_vec(), 40)]
    );
    // Listing the destination among the sources accumulates, explicitly.
    value(&mut con, &["HK.MERGE", "east", "east", "west"]);
    assert_eq!(list_with_count(&mut con, "east"), merged);
    // A source listed twice would count its stream twice: refused.
    let e = error(&mut con, &["HK.MERGE", "t2", "west", "west"]);
    assert_eq!(
        e,
        "ERR source 'west' is listed twice: it would count its sub-stream twice"
    );
    // A destination listed as a source must exist, like any source.
    assert_eq!(
        error(&mut con, &["HK.MERGE", "t2", "t2", "west"]),
        "ERR no such key"
    );
    let exists: i64 = redis::cmd("EXISTS").arg("t2").query(&mut con).unwrap();
    assert_eq!(exists, 0);
}

#[test]
fn a_merge_reads_its_sources_in_place_without_copying_them() {
    let server = Server::start();
    let mut con = server.client();
    // 20 sources of ~1.2 MB each: copying them all would peak at +24 MB.
    let sources: Vec<String> = (0..20).map(|i| format!("src:{i}")).collect();
    for (i, key) in sources.iter().chain([&"dest".to_string()]).enumerate() {
        value(
            &mut con,
            &[
                "HK.RESERVE",
                key,
                "10",
                "WIDTH",
                "100000",
                "DEPTH",
                "1",
                "SEED",
                "3",
            ],
        );
        value(&mut con, &["HK.INCRBY", key, &format!("item:{i}"), "5"]);
    }
    let sketch_bytes: i64 = redis::cmd("MEMORY")
        .arg("USAGE")
        .arg("dest")
        .query(&mut con)
        .unwrap();
    let used = |con: &mut redis::Connection, field: &str| -> i64 {
        common::info_field(con, "memory", field)
            .unwrap()
            .parse()
            .unwrap()
    };
    for target in ["dest", "fresh"] {
        value(&mut con, &["CONFIG", "RESETSTAT"]);
        let before = used(&mut con, "used_memory");
        let mut merge = redis::cmd("HK.MERGE");
        merge.arg(target).arg(&sources);
        let _: () = merge.query(&mut con).unwrap();
        let peak = used(&mut con, "used_memory_peak");
        // An existing destination is rebuilt in place; a new one is one sketch.
        let allowed = if target == "dest" { 0 } else { sketch_bytes } + sketch_bytes / 2;
        assert!(
            peak - before < allowed,
            "{target}: peak +{} bytes, a sketch is {sketch_bytes}",
            peak - before
        );
    }
    assert_eq!(common::list_with_count(&mut con, "fresh").len(), 10);
    assert_eq!(
        common::list_with_count(&mut con, "dest"),
        common::list_with_count(&mut con, "fresh")
    );
}

#[test]
fn an_item_just_outside_both_shards_top_k_is_not_locked_out_after_a_merge() {
    let server = Server::start();
    let mut con = server.client();
    for (shard, z) in [("east", "50"), ("west", "60")] {
        value(
            &mut con,
            &["HK.RESERVE", shard, "10", "WIDTH", "4096", "SEED", "9"],
        );
        for i in 0..10 {
            value(
                &mut con,
                &["HK.INCRBY", shard, &format!("{shard}:{i}"), "100"],
            );
        }
        value(&mut con, &["HK.INCRBY", shard, "z", z]);
    }
    value(&mut con, &["HK.MERGE", "all", "east", "west"]);
    for _ in 0..100 {
        value(&mut con, &["HK.ADD", "all", "z"]);
    }
    let queried: Vec<i64> = redis::cmd("HK.QUERY")
        .arg("all")
        .arg("z")
        .query(&mut con)
        .unwrap();
    assert_eq!(
        queried,
        vec![1],
        "{:?}",
        common::list_with_count(&mut con, "all")
    );
    let count = common::list_with_count(&mut con, "all")
        .into_iter()
        .find(|(item, _)| item == b"z")
        .unwrap()
        .1;
    assert!(
        (100..=210).contains(&count),
        "{count}: a lower bound of 210 arrivals"
    );
}

#[test]
fn an_item_holding_a_bucket_enters_once_the_minimum_has_faded() {
    let server = Server::start();
    let mut con = server.client();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let t0 = (now - 60_000).to_string();
    value(
        &mut con,
        &["HK.RESERVE", "f", "1", "HALFLIFE", "1", "CREATED", &t0],
    );
    value(&mut con, &["HK.INCRBYAT", "f", &t0, "old", "100"]);
    value(&mut con, &["HK.ADDAT", "f", &t0, "new"]);
    // Twenty half-lives later "old" has faded below one arrival.
    let later = (now - 40_000).to_string();
    for _ in 0..3 {
        value(&mut con, &["HK.ADDAT", "f", &later, "new"]);
    }
    let listed = common::list_with_count_at(&mut con, "f", Some(now - 40_000));
    assert_eq!(listed, vec![(b"new".to_vec(), 3)]);
}

#[test]
fn counts_stop_at_two_to_the_53_through_every_command() {
    let server = Server::start();
    let mut con = server.client();
    for key in ["k", "k2"] {
        value(&mut con, &["HK.RESERVE", key, "3", "SEED", "1"]);
    }
    value(&mut con, &["HK.INCRBY", "k", "x", "9007199254740992"]);
    value(
        &mut con,
        &["HK.INCRBY", "k", "x", "3", "x", "9007199254740992"],
    );
    value(&mut con, &["HK.INCRBY", "k2", "x", "10"]);
    value(&mut con, &["HK.MERGE", "k", "k", "k2"]);
    let counts: Vec<i64> = redis::cmd("HK.COUNT")
        .arg("k")
        .arg("x")
        .query(&mut con)
        .unwrap();
    assert_eq!(counts, vec![9_007_199_254_740_992]);
}

#[test]
fn writes_notify_keyspace_subscribers() {
    let server = Server::start();
    let mut con = server.client();
    let _: () = redis::cmd("CONFIG")
        .arg(&["SET", "notify-keyspace-events", "Ed"])
        .query(&mut con)
        .unwrap();
    let mut listener = server.client();
    let mut pubsub = listener.as_pubsub();
    pubsub.subscribe("__keyevent@0__:hk.add").unwrap();
    pubsub.subscribe("__keyevent@0__:hk.reserve").unwrap();
    pubsub
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    value(&mut con, &["HK.RESERVE", "watched", "5"]);
    value(&mut con, &["HK.INCRBY", "watched", "a", "3"]);
    let events: Vec<(String, String)> = (0..2)
        .map(|_| {
            let msg = pubsub.get_message().expect("a keyspace event");
            (
                msg.get_channel_name().to_string(),
                msg.get_payload().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        events,
        vec![
            (
                "__keyevent@0__:hk.reserve".to_string(),
                "watched".to_string()
            ),
            ("__keyevent@0__:hk.add".to_string(), "watched".to_string()),
        ]
    );
}
