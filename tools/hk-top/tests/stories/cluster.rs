//! `hk-top` against real servers: one server, and a three-primary cluster
//! created by `redis-cli --cluster create` on loopback, where the union of
//! the nodes' lists is the cluster's list and each key shows its node.

use test_harness as common;

use crate::support::{hk_top_line, hk_top_ok as hk_top, json_ok, owner_map, slot_of};
use common::{repeat, value, Cluster, Server, TRACK_EVERY_COMMAND};
use serde_json::Value as Json;
use std::collections::HashMap;

#[test]
fn once_prints_the_hottest_keys_of_one_server() {
    let server = Server::start_configured(TRACK_EVERY_COMMAND, &[]);
    let mut con = server.client();
    for (key, n) in [("cart:9", 6), ("user:1", 3)] {
        repeat(&mut con, n, &["GET", key]);
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
    // (A key each node serves: a command answered MOVED counts nowhere.)
    for (i, node) in nodes.iter().enumerate() {
        let key = (0..)
            .map(|n| format!("warm-up:{i}:{n}"))
            .find(|key| cluster.owner_of(key).port == node.port)
            .unwrap();
        let _: redis::Value = redis::cmd("GET")
            .arg(key)
            .query(&mut node.client())
            .unwrap();
    }
    std::thread::sleep(std::time::Duration::from_secs(1));
    // user:0 is the hottest, user:29 the coolest; each on its own node.
    // Read in rounds, every key first read in the first: a rate is counted
    // since a key's first access, so keys begun later would read hotter.
    let mut owner_of = HashMap::new();
    let mut cons = Vec::new();
    for i in 0..30 {
        let key = format!("user:{i}");
        let owner = cluster.owner_of(&key);
        cons.push(owner.client());
        owner_of.insert(key, owner.address());
    }
    for round in 0..40 {
        for (i, con) in cons.iter_mut().enumerate().filter(|(i, _)| round < 40 - i) {
            let key = format!("user:{i}");
            let _: Option<String> = redis::cmd("GET").arg(&key).query(con).unwrap();
        }
    }
    // Each node's rates are corrected for the time since its first access:
    // looked at milliseconds later, the nodes would differ by when they
    // are asked; a second later, by no more than the counts do.
    std::thread::sleep(std::time::Duration::from_secs(2));
    let line = format!("--port {} --json --count 10", nodes[2].port);
    let parsed = json_ok(&hk_top_line(&line, &[]));
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
    let port = nodes[0].port.to_string();
    let table = hk_top(&["--port", &port, "--once", "--count", "10"]);
    let rows: Vec<&str> = table.lines().skip(1).collect();
    assert_eq!(rows.len(), 10, "{table}");
    for (row, key) in rows.iter().zip(&expected) {
        let fields: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(fields[0], key, "{table}");
        assert_eq!(fields[2], owner_of[key], "{table}");
    }
}

/// `--json` shows the cluster's balance: each primary's reads and writes
/// per second as its tracker counts them (every access, not only the
/// listed keys'), their shares adding up to one, and each key's slot.
#[test]
fn json_gives_each_nodes_tracked_load_and_each_keys_slot() {
    let cluster = Cluster::start(TRACK_EVERY_COMMAND);
    // Node 0 serves three times the traffic of each other node, most of
    // it on keys read too seldom to be listed; interleaved, so that every
    // node's rate runs over the same seconds.
    let owners = owner_map(&cluster);
    let mut keys: Vec<Vec<String>> = vec![Vec::new(); 3];
    for i in 0.. {
        if keys.iter().all(|k| k.len() >= 300) {
            break;
        }
        let key = format!("k:{i}");
        let owner = &owners[slot_of(&key) as usize];
        let n = (cluster.nodes.iter().position(|s| s.address() == *owner)).unwrap();
        keys[n].push(key);
    }
    let mut cons: Vec<_> = cluster.nodes.iter().map(|s| s.client()).collect();
    for round in 0..100 {
        for (n, con) in cons.iter_mut().enumerate() {
            let each = if n == 0 { 3 } else { 1 };
            for key in &keys[n][round * each..(round + 1) * each] {
                let _: Option<String> = redis::cmd("GET").arg(key).query(con).unwrap();
                let _: () = redis::cmd("SET").arg(key).arg("v").query(con).unwrap();
            }
        }
    }
    // Read at once, as `hk-top rebalance` does right after a burst: a node
    // once read 0 here (1 run in 4 to 10) because an INFO read before its
    // first counted access set the tracker's start to time 0, which turned
    // the warm-up correction off (with a 1-hour half-life, 300 reads then
    // read 0.06/s).
    let line = format!("--port {} --json", cluster.nodes[1].port);
    let parsed = json_ok(&hk_top_line(&line, &[]));
    let nodes = parsed["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 3, "{parsed}");
    let share_of = |address: &str| {
        let node = nodes.iter().find(|n| n["node"] == address).unwrap();
        assert_eq!(node["tracked"], true, "{node}");
        assert!(node["reads_per_second"].as_f64().unwrap() > 0.0, "{node}");
        assert!(node["writes_per_second"].as_f64().unwrap() > 0.0, "{node}");
        node["share"].as_f64().unwrap()
    };
    let shares = cluster.nodes.iter().map(|n| share_of(&n.address()));
    let shares: Vec<f64> = shares.collect();
    assert!(
        (shares.iter().sum::<f64>() - 1.0).abs() < 1e-9,
        "{shares:?}"
    );
    assert!(
        (0.5..0.7).contains(&shares[0]),
        "three fifths on node 0: {shares:?}"
    );
    for k in parsed["keys"].as_array().unwrap() {
        let key = k["key"].as_str().unwrap();
        let slot: u64 = redis::cmd("CLUSTER")
            .arg("KEYSLOT")
            .arg(key)
            .query(&mut cluster.nodes[0].client())
            .unwrap();
        assert_eq!(k["slot"], slot, "{k}");
    }
}
