//! Hot misses (`HK.HOTKEYS MISSES`, keys read while they do not exist) in
//! `--once` and `--json` against real servers: what the server lists is
//! what hk-top shows and sorts by; a server that does not count misses
//! (`track-misses no`, the default) is a server without misses, never an
//! error; in a cluster where one node counts them, the others' figures are
//! unknown (`-`, no JSON field), not zero.

use test_harness as common;

use crate::support::{get_n, hk_top_ok, key_bytes, track_misses};
use base64::Engine;
use common::{config_set, value, Cluster, Server, TRACK_EVERY_COMMAND};
use redis::Value;
use serde_json::Value as Json;
use std::collections::BTreeSet;

fn json(args: &[&str]) -> Json {
    serde_json::from_str(&hk_top_ok(&[args, &["--json"]].concat())).expect("JSON")
}

fn rows(parsed: &Json) -> &Vec<Json> {
    parsed["keys"].as_array().expect("a keys array")
}

fn row_of<'a>(parsed: &'a Json, key: &[u8]) -> &'a Json {
    rows(parsed)
        .iter()
        .find(|r| key_bytes(r) == key)
        .unwrap_or_else(|| panic!("{} not listed: {parsed}", String::from_utf8_lossy(key)))
}

/// The keys the server itself lists as hot misses.
fn server_misses(con: &mut redis::Connection) -> BTreeSet<Vec<u8>> {
    let flat: Vec<Value> = redis::cmd("HK.HOTKEYS")
        .arg("MISSES")
        .query(con)
        .expect("HK.HOTKEYS MISSES");
    flat.chunks(4)
        .map(|row| redis::from_redis_value(&row[0]).unwrap())
        .collect()
}

/// A `--once` row's MISSES/S figure: the one before the error bar.
fn misses_column(line: &str) -> &str {
    let fields: Vec<&str> = line.split_whitespace().collect();
    fields[fields.len() - 2]
}

const MISSED: &[u8] = b"user:404";
const MISSED_BINARY: &[u8] = b"gone:\xff\x00";

#[test]
fn once_and_json_show_the_keys_read_while_missing() {
    let server = Server::start_configured(&track_misses("3600"), &[]);
    let mut con = server.client();
    value(&mut con, &["SET", "present", "v"]);
    get_n(&mut con, b"present", 60);
    get_n(&mut con, MISSED, 30);
    get_n(&mut con, MISSED_BINARY, 10);
    let port = server.port.to_string();
    let parsed = json(&["-p", &port]);
    assert!(parsed["errors"].as_array().unwrap().is_empty(), "{parsed}");
    // What the server lists as misses is what carries a misses figure.
    let missing = |r: &&Json| r["misses_per_second"].as_f64().unwrap() > 0.0;
    let missed = rows(&parsed).iter().filter(missing);
    let missed: BTreeSet<Vec<u8>> = missed.map(key_bytes).collect();
    assert_eq!(missed, server_misses(&mut con));
    assert_eq!(
        missed,
        BTreeSet::from([MISSED.to_vec(), MISSED_BINARY.to_vec()])
    );
    // A key that exists: its node counts misses, it has none.
    assert_eq!(row_of(&parsed, b"present")["misses_per_second"], 0.0);
    // Every miss is a read too.
    let user = row_of(&parsed, MISSED);
    assert!(user["reads_per_second"].as_f64().unwrap() > 0.0, "{user}");
    assert_eq!(
        row_of(&parsed, MISSED_BINARY)["key_base64"],
        base64::engine::general_purpose::STANDARD.encode(MISSED_BINARY)
    );
    // Sorted by misses: the most missed first, then the other miss.
    let by_misses = json(&["-p", &port, "--sort", "misses", "--count", "2"]);
    let order: Vec<Vec<u8>> = rows(&by_misses).iter().map(key_bytes).collect();
    assert_eq!(order, [MISSED.to_vec(), MISSED_BINARY.to_vec()]);
    // The table: a MISSES/S column, the binary key escaped.
    let table = hk_top_ok(&["-p", &port, "--once", "--sort", "misses"]);
    let lines: Vec<&str> = table.lines().collect();
    // MISSES/S, then the total's error bar.
    assert!(lines[0].trim_end().ends_with("MISSES/S       ±"), "{table}");
    assert!(lines[1].starts_with("user:404 "), "{table}");
    assert!(lines[2].starts_with(r"gone:\xff\x00 "), "{table}");
    // (One decimal: rates under the tests' hour-long half-life print as
    // 0.0; JSON above has them exactly.)
    for line in &lines[1..] {
        let misses = misses_column(line);
        assert!(misses.parse::<f64>().is_ok(), "a figure, not -: {table}");
    }
}

#[test]
fn a_server_not_counting_misses_has_none_and_says_nothing() {
    let server = Server::start_configured(TRACK_EVERY_COMMAND, &[]);
    let mut con = server.client();
    get_n(&mut con, MISSED, 20);
    let port = server.port.to_string();
    let table = hk_top_ok(&["-p", &port, "--once"]);
    assert!(!table.contains("MISSES"), "{table}");
    assert_eq!(
        table.lines().count(),
        2,
        "a header and the key, no error line: {table}"
    );
    let parsed = json(&["-p", &port]);
    assert!(parsed["errors"].as_array().unwrap().is_empty(), "{parsed}");
    let user = row_of(&parsed, MISSED);
    assert!(user.get("misses_per_second").is_none(), "{user}");
    // Turned on while running: the next snapshot has them.
    config_set(&mut con, "heavykeeper.track-misses", "yes");
    get_n(&mut con, MISSED, 20);
    let parsed = json(&["-p", &port]);
    let user = row_of(&parsed, MISSED);
    assert!(user["misses_per_second"].as_f64().unwrap() > 0.0, "{user}");
    assert!(hk_top_ok(&["-p", &port, "--once"]).contains("MISSES/S"));
}

#[test]
fn in_a_cluster_misses_show_where_their_node_counts_them() {
    let cluster = Cluster::start(TRACK_EVERY_COMMAND);
    let counting = cluster.owner_of("{a}:gone");
    config_set(&mut counting.client(), "heavykeeper.track-misses", "yes");
    // A missing key on the node that counts misses, one on another node.
    get_n(&mut counting.client(), b"{a}:gone", 20);
    let elsewhere_node = |n: &&Server| n.port != counting.port;
    let other = cluster.nodes.iter().find(elsewhere_node).unwrap();
    let elsewhere = (0..)
        .map(|i| format!("{{x{i}}}:gone"))
        .find(|k| cluster.owner_of(k).port == other.port)
        .unwrap();
    get_n(&mut other.client(), elsewhere.as_bytes(), 20);
    let port = cluster.nodes[0].port.to_string();
    let parsed = json(&["-p", &port]);
    assert!(parsed["errors"].as_array().unwrap().is_empty(), "{parsed}");
    let gone = row_of(&parsed, b"{a}:gone");
    assert_eq!(gone["node"], counting.address());
    assert!(gone["misses_per_second"].as_f64().unwrap() > 0.0, "{gone}");
    let not_counted = row_of(&parsed, elsewhere.as_bytes());
    assert!(
        not_counted.get("misses_per_second").is_none(),
        "{not_counted}"
    );
    assert!(not_counted["reads_per_second"].as_f64().unwrap() > 0.0);
    // The table: the same, `-` where the node does not count misses.
    let table = hk_top_ok(&["-p", &port, "--once"]);
    let misses_cell = |key: &str| {
        let line = table.lines().find(|l| l.starts_with(key)).expect(&table);
        misses_column(line).to_string()
    };
    assert_eq!(misses_cell(&elsewhere), "-", "{table}");
    assert_ne!(misses_cell("{a}:gone"), "-", "{table}");
}
