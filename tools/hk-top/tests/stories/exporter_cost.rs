//! `make bench` (bench/run.sh) runs this with `--ignored`: what one scrape
//! of `hk-top --prometheus` costs over clusters of 1, 3 and 10 primaries
//! whose trackers hold full lists (20,000 keys under 50 prefixes, read,
//! written and missed, over every slot): the time of a scrape, as
//! Prometheus waits for it, and the series and bytes it returns, at
//! `--count` 20 (the default) and 100. It prints the figures; it asserts
//! only that every node answered and the series stay within their bound.

use crate::promkit::{samples, Exporter};
use crate::support::track_misses;
use heavykeeper_tracker::hash_slot;
use std::process::Command;
use std::time::{Duration, Instant};
use test_harness::{info_field, wait_until, Server};

const CLUSTER_ARGS: &[&str] = &[
    "--cluster-enabled",
    "yes",
    "--cluster-config-file",
    "nodes.conf",
];
const KEYS: usize = 20_000;
const SCRAPES: usize = 20;

/// `n` primaries sharing the 16,384 slots: one node takes them all with
/// `CLUSTER ADDSLOTSRANGE`, more are joined by `redis-cli --cluster create`.
fn primaries(n: usize) -> Vec<Server> {
    let nodes: Vec<Server> = (0..n)
        .map(|_| Server::start_configured(&track_misses("600"), CLUSTER_ARGS))
        .collect();
    if n == 1 {
        let _: () = redis::cmd("CLUSTER")
            .arg("ADDSLOTSRANGE")
            .arg(0)
            .arg(16383)
            .query(&mut nodes[0].client())
            .expect("ADDSLOTSRANGE");
    } else {
        let created = Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(nodes.iter().map(Server::address))
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .output()
            .expect("redis-cli --cluster create");
        assert!(created.status.success(), "{created:?}");
    }
    for node in &nodes {
        let mut con = node.client();
        wait_until("the cluster", Duration::from_secs(60), || {
            info_field(&mut con, "heavykeeper", "heavykeeper_tracker_cluster_state").as_deref()
                == Some("ok")
        });
    }
    nodes
}

/// 20,000 keys each set and read twice, and a quarter of them read three
/// times under a name that does not exist, each sent to the node serving it.
fn fill(nodes: &[Server]) {
    let mut cons: Vec<redis::Connection> = nodes.iter().map(Server::client).collect();
    let mut ranges: Vec<(u16, u16, usize)> = Vec::new();
    let slots: Vec<Vec<redis::Value>> = redis::cmd("CLUSTER")
        .arg("SLOTS")
        .query(&mut cons[0])
        .expect("CLUSTER SLOTS");
    for range in &slots {
        let lo: u16 = redis::from_redis_value(&range[0]).unwrap();
        let hi: u16 = redis::from_redis_value(&range[1]).unwrap();
        let port: u16 = match &range[2] {
            redis::Value::Array(node) => redis::from_redis_value(&node[1]).unwrap(),
            other => panic!("{other:?}"),
        };
        let at = nodes.iter().position(|n| n.port == port).unwrap();
        ranges.push((lo, hi, at));
    }
    let mut pipes: Vec<redis::Pipeline> = nodes.iter().map(|_| redis::pipe()).collect();
    for i in 0..KEYS {
        let key = format!("tenant:{}:k{i}", i % 50);
        let slot = hash_slot(key.as_bytes());
        let range = ranges.iter().find(|r| r.0 <= slot && slot <= r.1);
        let pipe = &mut pipes[range.unwrap().2];
        // Twice or more each: a key seen once is listed by no tracker.
        for _ in 0..2 {
            pipe.cmd("SET").arg(&key).arg(i).ignore();
            pipe.cmd("GET").arg(&key).ignore();
        }
        if i % 4 == 0 {
            for _ in 0..3 {
                pipe.cmd("GET").arg(format!("{{{key}}}:gone")).ignore();
            }
        }
    }
    for (pipe, con) in pipes.iter().zip(&mut cons) {
        let _: () = pipe.query(con).expect("the keys");
    }
}

/// The series and bytes of a scrape, and the milliseconds each took, sorted.
fn measure(exporter: &Exporter, nodes: usize) -> (usize, usize, Vec<f64>) {
    // The first scrape finds the nodes; the ones measured are as
    // Prometheus's every later scrape.
    let first = exporter.metrics();
    let up: Vec<&str> = (first.lines())
        .filter(|l| l.starts_with("heavykeeper_up{"))
        .collect();
    assert_eq!(up.len(), nodes, "{first}");
    assert!(up.iter().all(|l| l.ends_with(" 1")), "{up:?}");
    let mut millis = Vec::new();
    let mut last = String::new();
    for _ in 0..SCRAPES {
        let began = Instant::now();
        last = exporter.metrics();
        millis.push(began.elapsed().as_secs_f64() * 1000.0);
    }
    millis.sort_by(f64::total_cmp);
    (samples(&last).len(), last.len(), millis)
}

#[test]
#[ignore = "a measurement: make bench runs it"]
fn scrape_time_and_series_at_1_3_and_10_nodes() {
    for n in [1, 3, 10] {
        let nodes = primaries(n);
        fill(&nodes);
        for count in [20, 100] {
            let exporter = Exporter::start(nodes[0].port, &["--count", &count.to_string()]);
            let (series, bytes, millis) = measure(&exporter, n);
            // Per node: keys (3 kinds), slots (2), prefixes, each with its
            // bounds, 64 ranges, and some 60 fixed figures.
            assert!(series <= n * (3 * count * 6 + 64 + 80), "{series}");
            let at = |q: f64| millis[((millis.len() - 1) as f64 * q).round() as usize];
            println!(
                "exporter figures: nodes={n} count={count} series={series} bytes={bytes} scrape_ms median={:.1} p90={:.1} max={:.1} ({} scrapes)",
                at(0.5),
                at(0.9),
                at(1.0),
                SCRAPES
            );
        }
    }
}
