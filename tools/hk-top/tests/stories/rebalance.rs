//! `hk-top rebalance` on real three-primary clusters: the 60/20/20
//! cluster under live traffic (a plan, then `--apply`: no key lost or
//! changed, no client error but MOVED/ASK, no node above 45% of the reads
//! afterwards), a key no move can fix, a cluster too idle to balance or not
//! fit to move slots in, and a node on fire planned as when every command
//! is counted (a run interrupted, a reviewed plan: rebalance_faults.rs).
//! Run on Redis 7.0 (the standard migration) and, with `REDIS_SERVER` set
//! to a Valkey 9 binary, on its own atomic slot migration.

use crate::support::common::{self, wait_until, Cluster};
use crate::support::*;
use redis::Connection;
use serde_json::Value as Json;
use std::collections::HashMap;
use std::thread::sleep;
use std::time::{Duration, Instant};

/// The cluster: 1,000 keys on distinct slots, 60% of ~9k GET/s on
/// the first node's, 20% on each other's. The plan moves slots from the
/// first node only, to both others; applied under the traffic it loses and
/// changes no key, the clients see no error but redirections, and after it
/// no node serves more than 45% of the reads.
#[test]
fn a_hot_node_sheds_slots_under_live_traffic_and_no_key_is_lost() {
    let cluster = Cluster::start(TRACK_2S);
    let keys = keys_per_slot(&cluster, 1000, 1);
    load_keys(&cluster, &keys);
    let traffic = Traffic::start(&cluster, &keys, &[0.6, 0.2, 0.2], rate(), 0.0);
    // The planner moves the slots measured hottest, and where all are
    // alike those are the ones the sampling noise flatters: the fewer
    // samples, the more it sheds on paper and the less in truth
    // (docs/rebalance.md, "what the figures mean"); what the loading wrote
    // is forgotten by then.
    loading_forgotten(&cluster);
    let port = cluster.nodes[1].port.to_string();
    let journal = tempfile::tempdir().unwrap();
    let journal = journal.path().join("journal.json");
    let journal = journal.to_str().unwrap();
    let (at_apply, started) = (traffic.seen(), Instant::now());
    let applied = hk_top_line(
        &format!("-p {port} rebalance --json --apply --journal {journal}"),
        &[],
    );
    let apply_seconds = started.elapsed().as_secs_f64();
    // The plan: from the first node only, to both others, nothing to advise.
    let plan = json_ok(&applied);
    let first = cluster.nodes[0].address();
    let moves = plan["moves"].as_array().unwrap();
    assert!(!moves.is_empty(), "{plan}");
    assert!(moves.iter().all(|m| m["from"] == first.as_str()), "{plan}");
    let receivers: std::collections::HashSet<&str> =
        moves.iter().map(|m| m["to"].as_str().unwrap()).collect();
    assert_eq!(receivers.len(), 2, "both cool nodes take a part: {plan}");
    assert_eq!(plan["advice"].as_array().unwrap().len(), 0, "{plan}");
    let before_share = share_before(&plan, &first);
    assert!(
        before_share.is_some_and(|b| (0.5..0.7).contains(&b)),
        "the first node measured at {before_share:?}: {plan}"
    );
    let after_apply = traffic.seen();
    let (report, applied_report) = (&plan, &plan["applied"]);
    assert_eq!(applied_report["moves_done"], moves.len(), "{report}");
    assert_eq!(applied_report["interrupted"], false);
    // Valkey 9 moves the slots itself: the module says it handles that.
    if common::server_binary().contains("valkey") {
        assert_eq!(applied_report["method"], "atomic", "{report}");
        assert!(applied_report["atomic_refused"].is_null(), "{report}");
    }

    // The reads as they land (counted where answered, redirected or not),
    // over a second's worth.
    let (settled, window) = (traffic.seen(), Instant::now());
    wait_until("a second of reads", Duration::from_secs(10), || {
        traffic.seen().gets >= settled.gets + rate() as u64
    });
    let (end, window) = (traffic.seen(), window.elapsed());
    let landed = shares(&settled, &end);
    // And as the trackers count them, once what they counted before the
    // moves has faded.
    let tracked_shares = || {
        let tracked = tracker_rates(&cluster, &["reads"]);
        let all: f64 = tracked.iter().sum();
        tracked.iter().map(|r| r / all).collect::<Vec<f64>>()
    };
    wait_until(
        "the trackers to see the moves",
        Duration::from_secs(20),
        || tracked_shares().iter().all(|&share| share <= 0.45),
    );
    let tracked = tracked_shares();
    let (seen, expected) = traffic.stop();
    eprintln!(
        "rebalance figures ({}{}): {} moves, {} keys, apply {:.2} s (hk-top's own: {:.2} s); during it {} GETs, {} MOVED, {} ASK; client GET rate {:.0}/s; reads landed per node afterwards {:?}; tracker shares afterwards {:?}",
        applied_report["method"],
        applied_report["atomic_refused"].as_str().map(|e| format!(", the server's own refused: {e}")).unwrap_or_default(),
        applied_report["moves_done"],
        applied_report["keys_moved"],
        apply_seconds,
        applied_report["seconds"].as_f64().unwrap_or(0.0),
        after_apply.gets - at_apply.gets,
        after_apply.moved - at_apply.moved,
        after_apply.ask - at_apply.ask,
        (end.gets - settled.gets) as f64 / window.as_secs_f64(),
        landed,
        tracked,
    );
    assert_eq!(seen.failures(), (0, 0, 0), "{seen:?}");
    assert!(seen.moved > 0, "the clients were redirected: {seen:?}");
    assert!(landed.values().all(|&share| share <= 0.45), "{landed:?}");
    assert_every_key_intact(&cluster, &keys, &expected);
}

/// One key with half of all reads: no slot move can fix it, and the plan
/// says so by name, with a near cache first (the key is only read), as JSON
/// and to a person (which advice for which key: the planner's, in
/// crates/rebalance/tests/plans.rs).
#[test]
fn a_key_with_half_the_traffic_is_advice_not_a_move() {
    let cluster = Cluster::start(TRACK_FAST);
    let keys = keys_per_slot(&cluster, 300, 1);
    load_keys(&cluster, &keys);
    let hot = keys[0].clone();
    let mut cons: Vec<Connection> = cluster.nodes.iter().map(|n| n.client()).collect();
    for round in 0..3000 {
        let (key, node) = &keys[1 + round % (keys.len() - 1)];
        for (key, node) in [(&hot.0, hot.1), (key, *node)] {
            let _: Option<String> = redis::cmd("GET").arg(key).query(&mut cons[node]).unwrap();
        }
    }
    let port = cluster.nodes[0].port.to_string();
    let out = hk_top(&["-p", &port, "rebalance", "--json"], &[]);
    let plan = json_ok(&out);
    let advice = plan["advice"].as_array().unwrap();
    let named =
        (advice.iter().find(|a| a["kind"] == "hot-key")).unwrap_or_else(|| panic!("{plan}"));
    assert_eq!(named["key"], hot.0.as_str());
    assert_eq!(named["slot"], slot_of(&hot.0));
    assert_eq!(named["node"], cluster.nodes[hot.1].address().as_str());
    assert!(
        (0.4..0.6).contains(&named["share"].as_f64().unwrap()),
        "{named}"
    );
    assert_eq!(named["remedies"][0]["remedy"], "near-cache", "{named}");
    let how = named["remedies"][0]["how"].as_str().unwrap();
    assert!(how.contains("examples/near_cache.py"), "{how}");
    let said =
        String::from_utf8_lossy(&hk_top(&["-p", &port, "rebalance"], &[]).stdout).to_string();
    assert!(
        said.contains(&format!("advice: key {}", hot.0)) && said.contains("near-cache"),
        "{said}"
    );
}

/// A cluster serving nothing is "too light" to balance (the rule is the
/// planner's: crates/rebalance/tests/plans.rs), as JSON and to a person.
/// A node down: `--apply` refuses and moves nothing (a slot half-migrated
/// by someone else: rebalance_faults.rs's a_killed_run_is_refused_to_others_...).
#[test]
fn an_idle_cluster_is_too_light_and_one_not_fit_to_move_slots_in_is_refused() {
    let mut cluster = Cluster::start(TRACK_FAST);
    let port = cluster.nodes[1].port.to_string();
    let idle = hk_top(&["-p", &port, "rebalance", "--json"], &[]);
    assert_eq!(json_of(&idle)["too_light"], true, "{}", text(&idle));
    let said = hk_top(&["-p", &port, "rebalance"], &[]);
    assert_ended(&said, 0, "nothing worth balancing");
    let owners = owner_map(&cluster);
    cluster.nodes[2].stop();
    let journal = tempfile::tempdir().unwrap();
    let journal = journal.path().join("journal.json");
    let line = format!(
        "-p {port} rebalance --apply --journal {}",
        journal.display()
    );
    // A cluster with a node stopped never settles: refused at once.
    let out = hk_top_line(&line, &[("HK_TOP_TEST_SETTLE_MS", "0")]);
    assert_ended(&out, 3, "refusing to move slots");
    assert_eq!(owner_map(&cluster), owners, "nothing moved");
}

/// A node on fire: the first primary saturated by a client sending it, in
/// pipelines, `GET`s of a key it does not serve (each answered `MOVED`: they
/// count nowhere and load no slot of its, but its tracker can then afford to
/// count only a part of the time) while the 60/20/20 reads go on. At
/// the defaults the plan is the one counting every command makes (as
/// a_hot_node_sheds_... counts every command): it reaches the target, it
/// moves slots of the first node only, each one the clients truly read
/// (none on noise), and what it moves is enough in truth to bring the
/// first node under 45% of the reads.
#[test]
fn a_node_on_fire_is_planned_as_when_every_command_is_counted() {
    let cluster = Cluster::start(&["track", "yes", "track-halflife", "2"]);
    let keys = keys_per_slot(&cluster, 1000, 1);
    load_keys(&cluster, &keys);
    let traffic = Traffic::start(&cluster, &keys, &[0.6, 0.2, 0.2], rate(), 0.0);
    let elsewhere = keys.iter().find(|k| k.1 == 1).unwrap();
    let fire = OnFire::start(cluster.nodes[0].port, &elsewhere.0);
    let port = cluster.nodes[1].port.to_string();
    let first = cluster.nodes[0].address();
    loading_forgotten(&cluster);
    let counted = counted_share(&cluster.nodes[0]);
    let out = hk_top(&["-p", &port, "rebalance", "--json"], &[]);
    let plan = json_ok(&out);
    // Told to count every command, the first node counts every moment
    // under the fire too (the plan it then makes is a_hot_node_sheds_...'s).
    for node in &cluster.nodes {
        common::config_set(&mut node.client(), "heavykeeper.track-sample", "1");
    }
    wait_until("every moment counted", Duration::from_secs(10), || {
        counted_share(&cluster.nodes[0]) > 0.99
    });
    drop(fire);
    let (seen, _) = traffic.stop();
    assert_eq!(seen.failures(), (0, 0, 0), "{seen:?}");
    let truth = true_reads_per_slot(&keys, &[0.6, 0.2, 0.2]);
    let moves = plan["moves"].as_array().unwrap();
    let slot = |m: &Json| m["slot"].as_u64().unwrap() as u16;
    let shed: f64 = moves
        .iter()
        .map(|m| truth.get(&slot(m)).copied().unwrap_or(0.0))
        .sum();
    eprintln!(
        "on fire: first node counted {counted:.3} of the time; {} moves, shedding {shed:.3} of the reads in truth; shares {}",
        moves.len(),
        plan_shares(&plan)
    );
    assert_eq!(plan["reaches_target"], true, "{plan}");
    assert!(!moves.is_empty(), "{plan}");
    // Slots of the first node only, each one the clients truly read.
    assert!(
        moves
            .iter()
            .all(|m| m["from"] == first.as_str() && truth.contains_key(&slot(m))),
        "{plan}"
    );
    let before = share_before(&plan, &first);
    assert!(before.is_some_and(|b| (0.5..0.7).contains(&b)), "{plan}");
    assert!(
        0.6 - shed <= 0.45,
        "the moves shed {shed} of the reads in truth: {plan}"
    );
    // The fire was real: at the defaults the first node counted a share of
    // its time.
    assert!(
        counted < 0.5,
        "the first node counted {counted} of the time"
    );
}

/// Clients sending one node pipelines of `GET key` as fast as it answers
/// them, until dropped (`redis-benchmark` would stop at the first `MOVED`).
struct OnFire {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl OnFire {
    fn start(port: u16, key: &str) -> OnFire {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let get = format!("*2\r\n$3\r\nGET\r\n${}\r\n{key}\r\n", key.len());
        let pipeline = get.repeat(64).into_bytes();
        let threads = (0..2)
            .map(|_| {
                let (stop, pipeline) = (stop.clone(), pipeline.clone());
                std::thread::spawn(move || fire(port, &pipeline, 64, &stop))
            })
            .collect();
        OnFire { stop, threads }
    }
}

/// Sends `pipeline` (`commands` commands) and reads their replies, again
/// and again.
fn fire(port: u16, pipeline: &[u8], commands: usize, stop: &std::sync::atomic::AtomicBool) {
    use std::io::{Read, Write};
    let mut socket = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    let mut buffer = vec![0u8; 1 << 16];
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        socket.write_all(pipeline).unwrap();
        // Every reply (an error line) ends in one CRLF.
        let mut lines = 0;
        while lines < commands {
            let n = match socket.read(&mut buffer) {
                Ok(0) => return,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => panic!("{e}"),
            };
            lines += buffer[..n].iter().filter(|&&b| b == b'\n').count();
        }
    }
}

impl Drop for OnFire {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// The share of the last second the node's tracker counted.
fn counted_share(node: &common::Server) -> f64 {
    let read = |con: &mut Connection| -> f64 {
        common::info_number(con, "heavykeeper", "heavykeeper_tracker_seconds_counted")
    };
    let mut con = node.client();
    let (start, at) = (read(&mut con), Instant::now());
    sleep(Duration::from_secs(1));
    (read(&mut con) - start) / at.elapsed().as_secs_f64()
}

/// Each slot's true share of the reads the traffic sends.
fn true_reads_per_slot(keys: &[(String, usize)], weights: &[f64]) -> HashMap<u16, f64> {
    let mut per_slot = HashMap::new();
    for (key, weight) in key_weights(keys, weights) {
        *per_slot.entry(slot_of(&key)).or_insert(0.0) += weight;
    }
    per_slot
}
