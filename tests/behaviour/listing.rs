//! An app team reads what a sketch holds: the top k in a fixed order, as many
//! as it asks for, as pairs on RESP3, and `HK.INFO` for the sketch itself.

use test_harness as common;

use common::{cli, error, query, value, Server};
use redis::Value;

fn items(values: &[&str]) -> Vec<Value> {
    values
        .iter()
        .map(|v| Value::BulkString(v.as_bytes().to_vec()))
        .collect()
}

#[test]
fn ties_are_listed_in_a_deterministic_order() {
    let (_server, mut con) = Server::start().with_client();
    value(&mut con, &["HK.RESERVE", "t", "4"]);
    value(&mut con, &["HK.ADD", "t", "d", "b", "c", "a"]);
    let listed: Vec<String> = query(&mut con, &["HK.LIST", "t"]);
    assert_eq!(listed, vec!["a", "b", "c", "d"]);
}

#[test]
fn list_count_returns_the_n_highest_only() {
    let (_server, mut con) = Server::start().with_client();
    value(&mut con, &["HK.RESERVE", "k", "50"]);
    for (item, times) in [("a", 9), ("b", 7), ("c", 7), ("d", 3), ("e", 1)] {
        value(&mut con, &["HK.INCRBY", "k", item, &times.to_string()]);
    }
    let full: Vec<Value> = query(&mut con, &["HK.LIST", "k", "WITHCOUNT"]);
    for n in 1..=6usize {
        let head = cli(&mut con, &format!("HK.LIST k WITHCOUNT COUNT {n}"));
        let expected = full[..(2 * n).min(full.len())].to_vec();
        assert_eq!(head, Value::Array(expected), "COUNT {n}");
    }
    let e = error(&mut con, &["HK.LIST", "k", "COUNT", "0"]);
    assert!(e.starts_with("ERR COUNT"), "{e}");
    let e = error(&mut con, &["HK.LIST", "k", "COUNT", "2", "COUNT", "3"]);
    assert!(e.contains("repeated"), "{e}");
}

#[test]
fn a_resp3_client_gets_the_list_as_pairs() {
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
    assert_eq!(cli(&mut con, "HK.LIST r"), Value::Array(items(&["x", "y"])));
    let reply = value(&mut con, &["HK.ADD", "r", "z"]);
    assert_eq!(reply, Value::Array(vec![Value::Nil]));
}

#[test]
fn info_describes_the_sketchs_shape_contents_and_memory() {
    let (_server, mut con) = Server::start().with_client();
    cli(
        &mut con,
        "hk.reserve i 7 width 100 DEPTH 4 Decay 0.8 SEED 42",
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
    let usage: i64 = query(&mut con, &["MEMORY", "USAGE", "i"]);
    assert!(
        // 8 bytes a bucket without fading.
        memory > 100 * 4 * 8 && usage >= memory,
        "{memory} vs {usage}"
    );
    assert_eq!(info["halflife"], Value::Nil);
}
