//! `hk-top rebalance --watch` left running while the hot set moves from
//! one primary to another every 40 s: each shift is rebalanced, no slot is
//! moved twice within its cooldown, every move is a JSON line on stdout,
//! no client sees a failure and Ctrl-C ends it between slots. And the
//! cooldown holds across one-shot runs too.

// A test: a panic is how it fails (clippy.toml allows these in test
// functions; this file's helpers are test code too).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod support;

use serde_json::Value as Json;
use std::collections::HashMap;
use std::thread::sleep;
use std::time::{Duration, Instant};
use support::common::Cluster;
use support::*;

const PHASE: Duration = Duration::from_secs(40);
const COOLDOWN_S: i64 = 60;

#[test]
fn a_watch_follows_a_hot_set_that_shifts_and_moves_no_slot_twice_within_its_cooldown() {
    let cluster = Cluster::start(TRACK_FAST);
    let keys = distinct_slot_keys(&cluster, 300);
    load_keys(&cluster, &keys);
    let weighted: Vec<(String, f64)> = keys.iter().map(|k| (k.0.clone(), 1.0)).collect();
    let traffic = Traffic::start_weighted(&cluster, weighted, 6000.0, 0.05);
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("journal.json");
    let port = cluster.nodes[0].port.to_string();
    let cooldown = COOLDOWN_S.to_string();
    let mut child = hk_top_spawn(
        &[
            "-p",
            &port,
            "rebalance",
            "--watch",
            "--json",
            "--interval-s",
            "3",
            "--confirm",
            "2",
            "--cooldown-s",
            &cooldown,
            "--max-moves",
            "64",
            "--migration",
            "standard",
            "--journal",
            journal.to_str().unwrap(),
        ],
        &[],
    );
    let out = Lines::of(child.stdout.take().unwrap());
    let err = Lines::of(child.stderr.take().unwrap());
    let started = Instant::now();
    let mut phases = Vec::new();
    for phase in 0..4 {
        let hot_node = cluster.nodes[phase % 3].address();
        // The hot set: the keys that node serves as the phase begins.
        let owners = owner_map(&cluster);
        let hot: Vec<String> = (keys.iter())
            .filter(|k| owners[slot_of(&k.0) as usize] == hot_node)
            .map(|k| k.0.clone())
            .collect();
        traffic.set_hot(hot, 0.6);
        let began = Instant::now();
        sleep(PHASE - Duration::from_secs(8));
        let before = traffic.seen();
        sleep(Duration::from_secs(8));
        let landed = shares(&before, &traffic.seen());
        phases.push((
            hot_node,
            began.duration_since(started),
            started.elapsed(),
            landed,
        ));
    }
    signal(&child, "INT");
    let status = child.wait().unwrap();
    let events: Vec<Json> = out
        .all()
        .iter()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let said = err.all().join("\n");
    assert_eq!(status.code(), Some(130), "{said}");
    let (seen, expected) = traffic.stop();
    assert_eq!(seen.failures(), (0, 0, 0), "{seen:?}");
    assert_no_slot_half_way(&cluster);
    assert_every_key_intact(&cluster, &keys, &expected);

    let moves: Vec<&Json> = events.iter().filter(|e| e["event"] == "move").collect();
    let rounds: Vec<&Json> = events.iter().filter(|e| e["event"] == "round").collect();
    assert!(
        events.iter().any(|e| e["event"] == "end"),
        "the end is said: {said}"
    );
    let t0 = rounds
        .first()
        .and_then(|r| r["at_ms"].as_i64())
        .unwrap_or(0);
    // Each shift is rebalanced: slots leave the hot node within its phase,
    // and by the phase's end no node serves more than half the commands.
    for (hot_node, from, to, landed) in &phases {
        let (from_ms, to_ms) = (t0 + from.as_millis() as i64, t0 + to.as_millis() as i64);
        let shed = (moves.iter())
            .filter(|m| m["from"] == hot_node.as_str())
            .filter(|m| (from_ms..to_ms).contains(&m["at_ms"].as_i64().unwrap()))
            .count();
        assert!(
            shed > 0,
            "{hot_node} shed nothing in its phase: {events:?}\n{said}"
        );
        for (node, share) in landed {
            assert!(
                *share <= 0.5,
                "{node} serves {share} at its phase's end: {landed:?}\n{said}"
            );
        }
    }
    // No slot twice within its cooldown.
    let mut last: HashMap<u64, i64> = HashMap::new();
    for m in &moves {
        let (slot, at) = (m["slot"].as_u64().unwrap(), m["at_ms"].as_i64().unwrap());
        if let Some(before) = last.insert(slot, at) {
            assert!(
                at - before >= COOLDOWN_S * 1000,
                "slot {slot} moved again after {} ms",
                at - before
            );
        }
    }
    let largest: Vec<String> = (rounds.iter())
        .map(|r| {
            format!(
                "{:.1}:{:.3}",
                (r["at_ms"].as_i64().unwrap() - t0) as f64 / 1000.0,
                r["largest_share"].as_f64().unwrap()
            )
        })
        .collect();
    eprintln!(
        "watch figures: {} moves over {} phases ({:?} per phase); largest share over time (s:share) {}",
        moves.len(),
        phases.len(),
        (phases.iter())
            .map(|(node, from, to, _)| {
                let (a, b) = (t0 + from.as_millis() as i64, t0 + to.as_millis() as i64);
                moves.iter().filter(|m| m["from"] == node.as_str() && (a..b).contains(&m["at_ms"].as_i64().unwrap())).count()
            })
            .collect::<Vec<usize>>(),
        largest.join(" ")
    );
}

/// Two one-shot runs with the load turned around between them: the second
/// moves no slot the first moved (the journal keeps them in their cooldown).
#[test]
fn a_slot_moved_is_not_moved_back_by_the_next_run_within_its_cooldown() {
    let cluster = Cluster::start(TRACK_FAST);
    let keys = distinct_slot_keys(&cluster, 300);
    load_keys(&cluster, &keys);
    let traffic = Traffic::start(&cluster, &keys, &[0.7, 0.15, 0.15], 4000.0);
    sleep(Duration::from_secs(8));
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("journal.json");
    let port = cluster.nodes[0].port.to_string();
    let args = [
        "-p",
        &port,
        "rebalance",
        "--json",
        "--apply",
        "--migration",
        "standard",
        "--journal",
        journal.to_str().unwrap(),
    ];
    let first = hk_top(&args, &[]);
    assert!(first.status.success(), "{}", text(&first));
    let moved: Vec<u64> = (json_of(&first)["moves"].as_array().unwrap().iter())
        .map(|m| m["slot"].as_u64().unwrap())
        .collect();
    assert!(!moved.is_empty());
    // The moved slots' keys become the hottest: a plan without memory
    // would send them straight back.
    let moved_keys: Vec<String> = (keys.iter())
        .filter(|k| moved.contains(&(slot_of(&k.0) as u64)))
        .map(|k| k.0.clone())
        .collect();
    traffic.set_hot(moved_keys, 0.8);
    sleep(Duration::from_secs(9));
    let second = hk_top(&args, &[]);
    assert!(second.status.success(), "{}", text(&second));
    let again = json_of(&second);
    for m in again["moves"].as_array().unwrap() {
        assert!(
            !moved.contains(&m["slot"].as_u64().unwrap()),
            "slot moved back within its cooldown: {m}"
        );
    }
    let (seen, expected) = traffic.stop();
    assert_eq!(seen.failures(), (0, 0, 0), "{seen:?}");
    assert_every_key_intact(&cluster, &keys, &expected);
}
