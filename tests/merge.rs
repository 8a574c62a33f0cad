//! `HK.MERGE` builds its result beside the destination: a merge refused for
//! memory leaves the destination as it was, and a merged sketch keeps every
//! parameter of its first source.

use test_harness as common;

use common::{error, hk_info, info_field, list_with_count, value, Server};
use redis::{Connection, Value};

/// Everything a client can see of a sketch: `HK.INFO`, `HK.LIST` and the
/// `DUMP` bytes.
fn seen(con: &mut Connection, key: &str) -> (String, Vec<(Vec<u8>, i64)>, Value) {
    let mut info: Vec<(String, String)> = hk_info(con, key)
        .into_iter()
        .map(|(field, v)| (field, format!("{v:?}")))
        .collect();
    info.sort();
    let dump = value(con, &["DUMP", key]);
    (format!("{info:?}"), list_with_count(con, key), dump)
}

/// Two shards of one stream, with an explicit seed so that they merge.
fn shards(con: &mut Connection, width: &str) {
    for (shard, items) in [("east", ["a", "b", "a"]), ("west", ["c", "a", "d"])] {
        value(
            con,
            &["HK.RESERVE", shard, "10", "WIDTH", width, "SEED", "42"],
        );
        for item in items {
            value(con, &["HK.ADD", shard, item]);
        }
    }
}

#[test]
fn a_merge_over_the_size_cap_is_refused_and_changes_nothing() {
    let server = Server::start();
    let mut con = server.client();
    shards(&mut con, "4096");
    value(&mut con, &["HK.MERGE", "total", "east"]);
    let before = seen(&mut con, "total");
    value(
        &mut con,
        &["CONFIG", "SET", "heavykeeper.max-sketch-bytes", "4096"],
    );
    for destination in ["total", "new"] {
        let e = error(&mut con, &["HK.MERGE", destination, "east", "west"]);
        assert!(e.contains("heavykeeper.max-sketch-bytes"), "{e}");
    }
    let e = error(&mut con, &["HK.MERGE", "total", "total", "west"]);
    assert!(e.contains("heavykeeper.max-sketch-bytes"), "{e}");
    assert_eq!(seen(&mut con, "total"), before);
    assert_eq!(value(&mut con, &["EXISTS", "new"]), Value::Int(0));
}

#[test]
fn a_merge_that_would_not_fit_under_maxmemory_answers_oom_and_changes_nothing() {
    let server = Server::start();
    let mut con = server.client();
    // Large enough that the server's own small allocations do not matter.
    shards(&mut con, "262144");
    value(&mut con, &["HK.MERGE", "total", "east"]);
    let before = seen(&mut con, "total");
    let size: i64 = redis::cmd("MEMORY")
        .arg("USAGE")
        .arg("east")
        .query(&mut con)
        .unwrap();
    let used: i64 = info_field(&mut con, "memory", "used_memory")
        .unwrap()
        .parse()
        .unwrap();
    // Below maxmemory, so the server lets the command run; no room for a
    // result built beside the destination.
    let limit = (used + size / 2).to_string();
    value(&mut con, &["CONFIG", "SET", "maxmemory", &limit]);
    for args in [
        ["HK.MERGE", "total", "east", "west"],
        ["HK.MERGE", "total", "total", "west"],
        ["HK.MERGE", "new", "east", "west"],
    ] {
        let e = error(&mut con, &args);
        assert!(e.starts_with("OOM "), "{args:?}: {e}");
    }
    value(&mut con, &["CONFIG", "SET", "maxmemory", "0"]);
    assert_eq!(seen(&mut con, "total"), before);
    assert_eq!(value(&mut con, &["EXISTS", "new"]), Value::Int(0));
    // With room again, the same merge goes through.
    value(&mut con, &["HK.MERGE", "total", "east", "west"]);
    assert_ne!(seen(&mut con, "total"), before);
}

#[test]
fn a_merged_topk_sketch_keeps_redisbloom_ties() {
    let server = Server::start_configured(&["topk-compat", "yes"], &[]);
    let mut con = server.client();
    value(&mut con, &["TOPK.RESERVE", "tk", "5"]);
    value(&mut con, &["TOPK.ADD", "tk", "a", "b", "c", "a"]);
    value(&mut con, &["HK.MERGE", "m", "tk"]);
    let (source, merged) = (hk_info(&mut con, "tk"), hk_info(&mut con, "m"));
    assert_eq!(
        merged.get("ties"),
        source.get("ties"),
        "{merged:?} / {source:?}"
    );
    for field in ["k", "width", "depth", "decay", "seed", "halflife"] {
        assert_eq!(merged.get(field), source.get(field), "{field}");
    }
    // The same members and counts (equal counts list in heap order, which a
    // merge rebuilds).
    let mut listed = [
        list_with_count(&mut con, "m"),
        list_with_count(&mut con, "tk"),
    ];
    for list in &mut listed {
        list.sort();
    }
    assert_eq!(listed[0], listed[1]);
}
