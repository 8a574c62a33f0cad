//! An operator budgets memory for sketches: the default shape is small, and
//! `MEMORY USAGE` counts item bytes and is what the allocator handed out.

use test_harness as common;

use common::{cli, info_number, query, value, Server};

#[test]
fn defaults_fit_k100_in_64_kib() {
    let (_server, mut con) = Server::start().with_client();
    value(&mut con, &["HK.RESERVE", "d", "100"]);
    let usage: i64 = query(&mut con, &["MEMORY", "USAGE", "d"]);
    assert!(usage <= 64 * 1024, "{usage}");
}

#[test]
fn memory_usage_counts_item_bytes_and_matches_the_allocator() {
    let (_server, mut con) = Server::start().with_client();
    cli(&mut con, "HK.RESERVE m 10 WIDTH 64 DEPTH 2");
    let empty: i64 = query(&mut con, &["MEMORY", "USAGE", "m"]);
    let long = "x".repeat(100_000);
    value(&mut con, &["HK.ADD", "m", &long]);
    let full: i64 = query(&mut con, &["MEMORY", "USAGE", "m"]);
    assert!(full - empty >= 100_000, "{empty} -> {full}");

    // Many sketches: what MEMORY USAGE claims is what the allocator handed out.
    let before: i64 = info_number(&mut con, "memory", "used_memory");
    let mut claimed = 0;
    for i in 0..200 {
        let key = format!("s{i}");
        value(&mut con, &["HK.RESERVE", &key, "50"]);
        value(&mut con, &["HK.ADD", &key, "a", "b", "c"]);
        let usage: i64 = query(&mut con, &["MEMORY", "USAGE", &key]);
        claimed += usage;
    }
    let after: i64 = info_number(&mut con, "memory", "used_memory");
    let used = after - before;
    let ratio = claimed as f64 / used as f64;
    assert!(
        (0.85..1.15).contains(&ratio),
        "claimed {claimed}, allocated {used}"
    );
}
