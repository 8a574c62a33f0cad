//! `hk-top rebalance --watch` wired to a real cluster: left running on an
//! 80/10/10 cluster it measures, plans and moves slots off the hot node,
//! every move a JSON line on stdout, the rounds after it counting the slots
//! moved in their cooldown (read back from the journal); no client sees a
//! failure and Ctrl-C ends it between slots. The rules it follows (act only
//! on a confirmed imbalance, never a slot twice within its cooldown, follow
//! a shift) are decisions, tested round by round on a simulated cluster in
//! crates/rebalance/tests/watching.rs. And `make bench`'s figures of a
//! watch over a hot set that shifts (a measurement, run by name).

use crate::support::common::{wait_until, Cluster};
use crate::support::*;
use serde_json::Value as Json;
use std::process::Child;
use std::time::Duration;

/// `rebalance --watch --json` on `cluster` with a journal in `dir`, then
/// `extra`; its stdout's and stderr's lines.
fn watch(cluster: &Cluster, dir: &tempfile::TempDir, extra: &[&str]) -> (Child, Lines, Lines) {
    let port = cluster.nodes[0].port.to_string();
    let journal = dir.path().join("journal.json");
    let journal = journal.to_str().unwrap();
    let line =
        format!("-p {port} rebalance --watch --json --migration standard --journal {journal}");
    let args = [line.split(' ').collect(), extra.to_vec()].concat();
    spawn_lines(&mut hk_top_command(&args, &[]))
}

fn events(lines: &[String]) -> Vec<Json> {
    (lines.iter().filter_map(|l| serde_json::from_str(l).ok())).collect()
}

#[test]
fn a_watch_moves_slots_off_a_hot_node_and_ctrl_c_ends_it_between_slots() {
    let cluster = Cluster::start(TRACK_FAST);
    let keys = keys_per_slot(&cluster, 300, 1);
    load_keys(&cluster, &keys);
    let traffic = Traffic::start(&cluster, &keys, &[0.8, 0.1, 0.1], 4000.0, 0.0);
    let dir = tempfile::tempdir().unwrap();
    let (mut child, out, err) = watch(&cluster, &dir, &["--interval-s", "1", "--confirm", "2"]);
    wait_until(
        "a round counting moved slots in their cooldown",
        Duration::from_secs(60),
        || {
            (events(&out.now()).iter())
                .any(|e| e["event"] == "round" && e["slots_in_cooldown"].as_u64() > Some(0))
        },
    );
    signal(child.id(), "INT");
    let status = child.wait().unwrap();
    let said = err.all().join("\n");
    assert_eq!(status.code(), Some(130), "{said}");
    let events = events(&out.all());
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

/// `make bench`'s figures: a watch left running while the hot set moves
/// from one primary to the next once the watch has settled on the last
/// shift, the largest node's share round by round as a `watch figures`
/// line (bench/run.sh plots it).
#[test]
#[ignore = "a measurement for make bench (a few minutes): run by name with --ignored"]
fn watch_figures_over_a_hot_set_that_shifts() {
    let cluster = Cluster::start(TRACK_FAST);
    let keys = keys_per_slot(&cluster, 300, 1);
    load_keys(&cluster, &keys);
    let weighted: Vec<(String, f64)> = keys.iter().map(|k| (k.0.clone(), 1.0)).collect();
    let traffic = Traffic::start_weighted(&cluster, weighted, 6000.0, 0.05);
    let dir = tempfile::tempdir().unwrap();
    let every: Vec<&str> = "--interval-s 3 --confirm 2 --cooldown-s 60 --max-moves 64"
        .split(' ')
        .collect();
    let (mut child, out, _err) = watch(&cluster, &dir, &every);
    let moves = || {
        (events(&out.now()).iter())
            .filter(|e| e["event"] == "move")
            .count()
    };
    let mut per_phase = Vec::new();
    for phase in 0..4 {
        let (hot_node, owners) = (cluster.nodes[phase % 3].address(), owner_map(&cluster));
        let on = |key: &str| owners[slot_of(key) as usize] == hot_node;
        let hot = keys.iter().filter(|k| on(&k.0)).map(|k| k.0.clone());
        traffic.set_hot(hot.collect(), 0.6);
        let before = moves();
        until_settled(&out, before);
        per_phase.push(moves() - before);
    }
    signal(child.id(), "INT");
    child.wait().unwrap();
    let rounds: Vec<Json> = (events(&out.all()).into_iter())
        .filter(|e| e["event"] == "round")
        .collect();
    let t0 = rounds.first().map_or(0, |r| r["at_ms"].as_i64().unwrap());
    let shares: Vec<String> = (rounds.iter())
        .map(|r| {
            let at = (r["at_ms"].as_i64().unwrap() - t0) as f64 / 1000.0;
            format!("{at:.1}:{:.3}", r["largest_share"].as_f64().unwrap())
        })
        .collect();
    let (seen, _) = traffic.stop();
    eprintln!(
        "watch figures: {} moves over 4 phases ({per_phase:?} per phase); largest share over time (s:share) {}; clients {}",
        per_phase.iter().sum::<usize>(),
        shares.join(" "),
        seen.summary()
    );
}

/// Rounds with no move after which the watch has settled on a shift.
const QUIET_ROUNDS: usize = 4;

/// Waits until the watch has answered a shift: a move made since `before`
/// moves, then `QUIET_ROUNDS` rounds with none (at most 90 s: a shift
/// that needs no move ends there).
fn until_settled(out: &Lines, before: usize) {
    let settled = || {
        let events = events(&out.now());
        let moves = events.iter().filter(|e| e["event"] == "move").count();
        let last_move = events.iter().rposition(|e| e["event"] == "move");
        let quiet = last_move.map_or(0, |at| {
            (events.iter().skip(at))
                .filter(|e| e["event"] == "round")
                .count()
        });
        moves > before && quiet >= QUIET_ROUNDS
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(90);
    while !settled() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(250));
    }
}
