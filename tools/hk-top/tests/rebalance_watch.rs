//! `hk-top rebalance --watch` wired to a real cluster: left running on an
//! 80/10/10 cluster it measures, plans and moves slots off the hot node,
//! every move a JSON line on stdout, the rounds after it counting the slots
//! moved in their cooldown (read back from the journal); no client sees a
//! failure and Ctrl-C ends it between slots. The rules it follows (act only
//! on a confirmed imbalance, never a slot twice within its cooldown, follow
//! a shift) are decisions, tested round by round on a simulated cluster in
//! crates/rebalance/tests/watching.rs.

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
use std::time::Duration;
use support::common::{wait_until, Cluster};
use support::*;

#[test]
fn a_watch_moves_slots_off_a_hot_node_and_ctrl_c_ends_it_between_slots() {
    let cluster = Cluster::start(TRACK_FAST);
    let keys = distinct_slot_keys(&cluster, 300);
    load_keys(&cluster, &keys);
    let traffic = Traffic::start(&cluster, &keys, &[0.8, 0.1, 0.1], 4000.0);
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("journal.json");
    let port = cluster.nodes[0].port.to_string();
    let mut child = hk_top_spawn(
        &[
            "-p",
            &port,
            "rebalance",
            "--watch",
            "--json",
            "--interval-s",
            "1",
            "--confirm",
            "2",
            "--migration",
            "standard",
            "--journal",
            journal.to_str().unwrap(),
        ],
        &[],
    );
    let out = Lines::of(child.stdout.take().unwrap());
    let err = Lines::of(child.stderr.take().unwrap());
    let events = |lines: Vec<String>| -> Vec<Json> {
        (lines.iter().filter_map(|l| serde_json::from_str(l).ok())).collect()
    };
    wait_until(
        "a round counting moved slots in their cooldown",
        Duration::from_secs(60),
        || {
            (events(out.now()).iter())
                .any(|e| e["event"] == "round" && e["slots_in_cooldown"].as_u64() > Some(0))
        },
    );
    signal(&child, "INT");
    let status = child.wait().unwrap();
    let said = err.all().join("\n");
    assert_eq!(status.code(), Some(130), "{said}");
    let events = events(out.all());
    let moves: Vec<&Json> = events.iter().filter(|e| e["event"] == "move").collect();
    assert!(!moves.is_empty(), "{said}");
    let hot = cluster.nodes[0].address();
    assert!(moves.iter().all(|m| m["from"] == hot.as_str()), "{moves:?}");
    assert!(events.iter().any(|e| e["event"] == "end"), "{said}");
    let (seen, expected) = traffic.stop();
    assert_eq!(seen.failures(), (0, 0, 0), "{seen:?}");
    assert_no_slot_half_way(&cluster);
    assert_every_key_intact(&cluster, &keys, &expected);
}
