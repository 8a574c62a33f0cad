//! A team counting on several shards merges them into one top k with
//! `HK.MERGE`: safe to retry, never counting a stream twice, in place.
//! A merge refused for memory leaves the destination as it was; a merged
//! sketch keeps every parameter of its first source.

use test_harness as common;

use common::{
    cli, config_set, digest, error, hk_info, info_number, list_with_count, listed, query, value,
    Server,
};
use redis::{Connection, Value};

#[test]
fn shards_counted_on_separate_keys_merge_into_one_top_k() {
    let (_server, mut con) = Server::start().with_client();
    for key in ["total", "shard:1", "shard:2", "shard:3"] {
        value(&mut con, &["HK.RESERVE", key, "3", "SEED", "7"]);
    }
    // Each shard sees part of the traffic; only together is "b" the hottest.
    value(&mut con, &["HK.INCRBY", "shard:1", "a", "50", "b", "40"]);
    value(&mut con, &["HK.INCRBY", "shard:2", "b", "30", "c", "20"]);
    value(&mut con, &["HK.INCRBY", "shard:3", "c", "25", "d", "5"]);
    assert_eq!(
        cli(&mut con, "HK.MERGE total shard:1 shard:2 shard:3"),
        Value::Okay
    );
    assert_eq!(
        list_with_count(&mut con, "total"),
        listed(&[("b", 70), ("a", 50), ("c", 45)])
    );
    assert_eq!(
        crate::as_text(&hk_info(&mut con, "total")["arrivals"]),
        "170"
    );

    // Refused merges change nothing.
    let before = digest(&mut con, "total");
    value(&mut con, &["HK.RESERVE", "other-seed", "3", "SEED", "8"]);
    let e = error(&mut con, &["HK.MERGE", "total", "shard:1", "other-seed"]);
    assert_eq!(e, "ERR sketches differ in SEED");
    assert_eq!(
        error(&mut con, &["HK.MERGE", "total", "shard:1", "missing"]),
        "ERR no such key"
    );
    value(&mut con, &["SET", "str", "v"]);
    assert!(error(&mut con, &["HK.MERGE", "total", "str"]).starts_with("WRONGTYPE"));
    assert_eq!(digest(&mut con, "total"), before);
}

#[test]
fn a_merge_is_idempotent_and_never_counts_a_stream_twice() {
    let (_server, mut con) = Server::start().with_client();
    for key in ["east", "west", "t"] {
        value(&mut con, &["HK.RESERVE", key, "3", "SEED", "7"]);
    }
    value(&mut con, &["HK.INCRBY", "east", "a", "50", "b", "40"]);
    value(&mut con, &["HK.INCRBY", "west", "b", "30", "c", "20"]);
    value(&mut con, &["HK.INCRBY", "t", "x", "100"]);
    let merged = listed(&[("b", 70), ("a", 50), ("c", 20)]);
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
    let before = digest(&mut con, "east");
    value(&mut con, &["HK.MERGE", "east", "east"]);
    assert_eq!(digest(&mut con, "east"), before);
    assert_eq!(
        list_with_count(&mut con, "east"),
        listed(&[("a", 50), ("b", 40)])
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
    let exists: i64 = query(&mut con, &["EXISTS", "t2"]);
    assert_eq!(exists, 0);
}

#[test]
fn a_merge_reads_its_sources_in_place_without_copying_them() {
    let (_server, mut con) = Server::start().with_client();
    // 20 sources of ~1.2 MB each: copying them all would peak at +24 MB.
    let sources: Vec<String> = (0..20).map(|i| format!("src:{i}")).collect();
    for (i, key) in sources.iter().chain([&"dest".to_string()]).enumerate() {
        cli(
            &mut con,
            &format!("HK.RESERVE {key} 10 WIDTH 100000 DEPTH 1 SEED 3"),
        );
        value(&mut con, &["HK.INCRBY", key, &format!("item:{i}"), "5"]);
    }
    let sketch_bytes: i64 = query(&mut con, &["MEMORY", "USAGE", "dest"]);
    let used =
        |con: &mut redis::Connection, field: &str| -> i64 { info_number(con, "memory", field) };
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
    assert_eq!(list_with_count(&mut con, "fresh").len(), 10);
    assert_eq!(
        list_with_count(&mut con, "dest"),
        list_with_count(&mut con, "fresh")
    );
}

#[test]
fn an_item_just_outside_both_shards_top_k_is_not_locked_out_after_a_merge() {
    let (_server, mut con) = Server::start().with_client();
    for (shard, z) in [("east", "50"), ("west", "60")] {
        cli(
            &mut con,
            &format!("HK.RESERVE {shard} 10 WIDTH 4096 SEED 9"),
        );
        for i in 0..10 {
            cli(&mut con, &format!("HK.INCRBY {shard} {shard}:{i} 100"));
        }
        value(&mut con, &["HK.INCRBY", shard, "z", z]);
    }
    value(&mut con, &["HK.MERGE", "all", "east", "west"]);
    for _ in 0..100 {
        value(&mut con, &["HK.ADD", "all", "z"]);
    }
    let queried: Vec<i64> = query(&mut con, &["HK.QUERY", "all", "z"]);
    assert_eq!(queried, vec![1], "{:?}", list_with_count(&mut con, "all"));
    let count = list_with_count(&mut con, "all")
        .into_iter()
        .find(|(item, _)| item == b"z")
        .unwrap()
        .1;
    assert!(
        (100..=210).contains(&count),
        "{count}: a lower bound of 210 arrivals"
    );
}

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
        cli(con, &format!("HK.RESERVE {shard} 10 WIDTH {width} SEED 42"));
        for item in items {
            value(con, &["HK.ADD", shard, item]);
        }
    }
}

#[test]
fn a_merge_over_the_size_cap_is_refused_and_changes_nothing() {
    let (_server, mut con) = Server::start().with_client();
    shards(&mut con, "4096");
    value(&mut con, &["HK.MERGE", "total", "east"]);
    let before = seen(&mut con, "total");
    config_set(&mut con, "heavykeeper.max-sketch-bytes", "4096");
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
    let (_server, mut con) = Server::start().with_client();
    // Large enough that the server's own small allocations do not matter.
    shards(&mut con, "262144");
    value(&mut con, &["HK.MERGE", "total", "east"]);
    let before = seen(&mut con, "total");
    let size: i64 = query(&mut con, &["MEMORY", "USAGE", "east"]);
    let used: i64 = info_number(&mut con, "memory", "used_memory");
    // Below maxmemory, so the server lets the command run; no room for a
    // result built beside the destination.
    let limit = (used + size / 2).to_string();
    config_set(&mut con, "maxmemory", &limit);
    for args in [
        ["HK.MERGE", "total", "east", "west"],
        ["HK.MERGE", "total", "total", "west"],
        ["HK.MERGE", "new", "east", "west"],
    ] {
        let e = error(&mut con, &args);
        assert!(e.starts_with("OOM "), "{args:?}: {e}");
    }
    config_set(&mut con, "maxmemory", "0");
    assert_eq!(seen(&mut con, "total"), before);
    assert_eq!(value(&mut con, &["EXISTS", "new"]), Value::Int(0));
    // With room again, the same merge goes through.
    value(&mut con, &["HK.MERGE", "total", "east", "west"]);
    assert_ne!(seen(&mut con, "total"), before);
}

#[test]
fn a_merged_topk_sketch_keeps_redisbloom_ties() {
    let (_server, mut con) = Server::start_configured(&["topk-compat", "yes"], &[]).with_client();
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
