//! `hk-top` against real servers: one server, and a three-primary cluster
//! created by `redis-cli --cluster create` on loopback, where the union of
//! the nodes' lists is the cluster's list and each key shows its node.

use test_harness as common;

use common::{value, Cluster, Server, TRACK_EVERY_COMMAND};
use serde_json::Value as Json;
use std::collections::HashMap;
use std::process::Command;

fn hk_top(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_hk-top"))
        .args(args)
        .output()
        .expect("run hk-top");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 output")
}

#[test]
fn once_prints_the_hottest_keys_of_one_server() {
    let server = Server::start_configured(TRACK_EVERY_COMMAND, &[]);
    let mut con = server.client();
    for (key, n) in [("cart:9", 6), ("user:1", 3)] {
        for _ in 0..n {
            value(&mut con, &["GET", key]);
        }
    }
    // Two writes: a single one fades below one arrival at once and is not listed.
    value(&mut con, &["SET", "user:1", "x"]);
    value(&mut con, &["SET", "user:1", "y"]);
    let port = server.port.to_string();
    let table = hk_top(&["--port", &port, "--once"]);
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[0].starts_with("KEY"), "{table}");
    assert!(lines[1].starts_with("cart:9"), "{table}");
    assert!(lines[2].starts_with("user:1"), "{table}");
    let parsed: Json = serde_json::from_str(&hk_top(&["--port", &port, "--json"])).unwrap();
    let user = &parsed["keys"][1];
    assert_eq!(user["key"], "user:1");
    assert!(user["reads_per_second"].as_f64().unwrap() > 0.0);
    assert!(user["writes_per_second"].as_f64().unwrap() > 0.0);
    assert_eq!(user["node"], format!("127.0.0.1:{port}"));
}

#[test]
fn a_cluster_shows_the_union_of_its_primaries_and_which_node_is_hot() {
    let cluster = Cluster::start(TRACK_EVERY_COMMAND);
    let nodes = &cluster.nodes;
    // Every node starts counting at the same moment, a second before the
    // keys: a rate is corrected for how long its node has counted, so nodes
    // that started apart would rank equal counts apart.
    for node in nodes {
        let _: redis::Value = redis::cmd("GET")
            .arg("warm-up")
            .query(&mut node.client())
            .unwrap_or(redis::Value::Nil);
    }
    std::thread::sleep(std::time::Duration::from_secs(1));
    // user:0 is the hottest, user:29 the coolest; each on its own node.
    let mut owner_of = HashMap::new();
    for i in 0..30 {
        let key = format!("user:{i}");
        let owner = cluster.owner_of(&key);
        let mut con = owner.client();
        for _ in 0..(40 - i) {
            let _: Option<String> = redis::cmd("GET").arg(&key).query(&mut con).unwrap();
        }
        owner_of.insert(key, owner.address());
    }
    let parsed: Json = serde_json::from_str(&hk_top(&[
        "--port",
        &nodes[2].port.to_string(),
        "--json",
        "--count",
        "10",
    ]))
    .unwrap();
    let keys = parsed["keys"].as_array().unwrap();
    let listed: Vec<&str> = keys.iter().map(|k| k["key"].as_str().unwrap()).collect();
    let expected: Vec<String> = (0..10).map(|i| format!("user:{i}")).collect();
    assert_eq!(listed, expected, "{parsed}");
    for k in keys {
        assert_eq!(k["node"], owner_of[k["key"].as_str().unwrap()], "{k}");
    }
    let distinct: std::collections::HashSet<&str> =
        keys.iter().map(|k| k["node"].as_str().unwrap()).collect();
    assert!(
        distinct.len() >= 2,
        "the hot keys span the nodes: {distinct:?}"
    );
    assert_eq!(parsed["errors"].as_array().unwrap().len(), 0);
    // The same union as a table, from another node.
    let table = hk_top(&[
        "--port",
        &nodes[0].port.to_string(),
        "--once",
        "--count",
        "10",
    ]);
    let rows: Vec<&str> = table.lines().skip(1).collect();
    assert_eq!(rows.len(), 10, "{table}");
    for (row, key) in rows.iter().zip(&expected) {
        let fields: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(fields[0], key, "{table}");
        assert_eq!(fields[2], owner_of[key], "{table}");
    }
}
