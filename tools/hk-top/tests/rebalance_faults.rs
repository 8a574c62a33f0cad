//! `hk-top rebalance --apply` under the faults an operator meets, each on a
//! real cluster under live traffic (reads checked against the last write;
//! any error but MOVED, ASK and TRYAGAIN is a failure): Ctrl-C and SIGTERM,
//! a source that stalls, a primary that fails over, the tool killed
//! mid-slot, a second run while one holds the cluster, a plan file that is
//! wrong, `--roll-back` on its own. Each proves the wiring once: what the
//! executor decides (which node is the pair after a failover, what a kill
//! at each step left, a stale view, a lost lease) is tested on a scripted
//! cluster in `src/rebalance/apply.rs`, the lease's refusal in `lease.rs`.

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
use std::path::PathBuf;
use std::thread::sleep;
use std::time::{Duration, Instant};
use support::common::{wait_until, Cluster, ClusterOptions};
use support::*;

/// A cluster with keys on many slots, most reads on the first node's,
/// clients reading and writing, a journal in a directory of its own.
struct Scene {
    cluster: Cluster,
    keys: Vec<(String, usize)>,
    traffic: Option<Traffic>,
    dir: tempfile::TempDir,
}

impl Scene {
    fn new(slots: usize, per_slot: usize, replicas: bool) -> Scene {
        let cluster = Cluster::start_with(&ClusterOptions {
            // Counting every command, forgetting in a second: the trackers
            // see the load a few seconds after it starts.
            module_args: &["track", "yes", "track-sample", "1", "track-halflife", "1"],
            replicas,
            ..ClusterOptions::default()
        });
        let keys = keys_per_slot(&cluster, slots, per_slot);
        load_keys(&cluster, &keys);
        let traffic = Traffic::start_writing(&cluster, &keys, &[0.8, 0.1, 0.1], 2000.0, 0.1);
        Scene {
            cluster,
            keys,
            traffic: Some(traffic),
            dir: tempfile::tempdir().unwrap(),
        }
    }

    /// Once the trackers see the load: the first node's share of what
    /// they count over 0.7 (the loading's writes forgotten).
    fn measured(self) -> Scene {
        wait_until(
            "the trackers to see the load",
            Duration::from_secs(30),
            || {
                let load = tracker_load(&self.cluster);
                load[0] > 0.7 * load.iter().sum::<f64>()
            },
        );
        self
    }

    fn journal(&self) -> PathBuf {
        self.dir.path().join("journal.json")
    }

    fn port(&self) -> String {
        self.cluster.nodes[1].port.to_string()
    }

    /// `rebalance --json --apply --migration standard` with this scene's
    /// journal and no cooldown, then `extra`.
    fn apply_args(&self, extra: &[&str]) -> Vec<String> {
        self.apply_args_with(&self.journal(), extra)
    }

    /// The same with the journal at `journal` (a second run of its own).
    fn apply_args_with(&self, journal: &std::path::Path, extra: &[&str]) -> Vec<String> {
        let mut args: Vec<String> = [
            "-p",
            &self.port(),
            "rebalance",
            "--json",
            "--apply",
            "--migration",
            "standard",
            "--cooldown-s",
            "0",
            "--journal",
            journal.to_str().unwrap(),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        args.extend(extra.iter().map(|s| s.to_string()));
        args
    }

    fn run(&self, extra: &[&str], env: &[(&str, &str)]) -> std::process::Output {
        let args = self.apply_args(extra);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        hk_top(&args, env)
    }

    fn spawn(&self, extra: &[&str], env: &[(&str, &str)]) -> std::process::Child {
        self.spawn_with(&self.journal(), extra, env)
    }

    fn spawn_with(
        &self,
        journal: &std::path::Path,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> std::process::Child {
        let args = self.apply_args_with(journal, extra);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        hk_top_spawn(&args, env)
    }

    /// The first `n` slots of the first node's keys.
    fn first_nodes_slots(&self, n: usize) -> Vec<u16> {
        (self.keys.iter())
            .filter(|k| k.1 == 0)
            .map(|k| slot_of(&k.0))
            .collect::<std::collections::BTreeSet<u16>>()
            .into_iter()
            .take(n)
            .collect()
    }

    /// A plan file named `name` moving `slots` from `from` to `to`; its
    /// `--plan` argument.
    fn write_plan(&self, name: &str, slots: &[u16], from: &str, to: &str) -> String {
        let moves: Vec<Json> = (slots.iter())
            .map(|s| serde_json::json!({"slot": s, "from": from, "to": to}))
            .collect();
        let plan = self.dir.path().join(name);
        std::fs::write(&plan, serde_json::json!({ "moves": moves }).to_string()).unwrap();
        plan.to_str().unwrap().to_string()
    }

    /// The clients saw no failure, every key is where and what it should
    /// be, no slot is half-way and nothing is left open in the journal.
    fn assert_intact(mut self) -> Seen {
        let traffic = self.traffic.take().unwrap();
        let (seen, expected) = traffic.stop();
        assert_eq!(seen.failures(), (0, 0, 0), "{seen:?}");
        wait_until("the slot maps to settle", Duration::from_secs(10), || {
            (self.cluster.nodes.iter()).all(|n| {
                let listing: String = redis::cmd("CLUSTER")
                    .arg("NODES")
                    .query(&mut n.client())
                    .unwrap();
                !listing.contains("->-") && !listing.contains("-<-")
            })
        });
        assert_no_slot_half_way(&self.cluster);
        assert_every_key_intact(&self.cluster, &self.keys, &expected);
        assert_eq!(
            open_moves(&self.journal()),
            0,
            "nothing left open in the journal"
        );
        seen
    }
}

/// Waits for a child, at most `limit`.
fn wait_exit(child: &mut std::process::Child, limit: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("hk-top did not end in {limit:?}");
        }
        sleep(Duration::from_millis(20));
    }
}

fn parse_json_lines(lines: &[String]) -> Vec<Json> {
    lines
        .iter()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Ctrl-C or SIGTERM at any moment of a run: the slot in hand is finished,
/// the run stops before the next one with a non-zero status and
/// `"interrupted": true`, no call fails for having been interrupted, and
/// the next run goes on from there.
#[test]
fn a_signal_stops_a_run_between_two_slots_and_the_next_run_goes_on() {
    let scene = Scene::new(40, 20, false).measured();
    // Signals after 1 and 2 slots (a signal mid-slot finishing the slot in
    // hand is apply.rs's a_signal_mid_slot_stops_the_run_once_the_slot_is_made).
    for (signal_name, code, after) in [("INT", 130, 1), ("TERM", 143, 2)] {
        let mut child = scene.spawn(&[], &[("HK_TOP_TEST_SLOT_PAUSE_MS", "150")]);
        let err = Lines::of(child.stderr.take().unwrap());
        let out = Lines::of(child.stdout.take().unwrap());
        err.wait_for(&format!("[{after}/"), Duration::from_secs(60));
        signal(&child, signal_name);
        let status = wait_exit(&mut child, Duration::from_secs(60));
        let said = err.all().join("\n");
        assert_eq!(status.code(), Some(code), "SIG{signal_name}: {said}");
        assert!(
            !said.contains("os error 4") && !said.contains("Interrupted"),
            "{said}"
        );
        let report = parse_json_lines(&out.all());
        let applied = &report.last().unwrap_or_else(|| panic!("no JSON: {said}"))["applied"];
        assert_eq!(applied["interrupted"], true, "{applied}");
        assert!(
            applied["moves_done"].as_u64().unwrap() >= after,
            "{applied}"
        );
        assert_no_slot_half_way(&scene.cluster);
        assert_eq!(
            open_moves(&scene.journal()),
            0,
            "stopped between slots: {said}"
        );
    }
    let done = scene.run(&[], &[]);
    assert!(done.status.success(), "{}", text(&done));
    let finished = json_of(&done);
    assert_eq!(finished["applied"]["interrupted"], false);
    let seen = scene.assert_intact();
    eprintln!(
        "fault figures (SIGINT/SIGTERM after 1 and 2 slots, then a run to the end): last run {}; clients {}",
        applied_summary(&finished["applied"]),
        seen.summary()
    );
}

/// `moves_done`, `keys_moved` and `seconds` of a report's `applied`.
fn applied_summary(applied: &Json) -> String {
    format!(
        "{} slots, {} keys, {:.2} s",
        applied["moves_done"],
        applied["keys_moved"],
        applied["seconds"].as_f64().unwrap_or(0.0)
    )
}

/// A reply may take 0.5 s (`HK_TOP_TEST_REPLY_MS`; 15 s in production), so
/// that a stall of seconds is past it.
const REPLY_MS: &str = "500";

/// Runs hk-top over `scene` (with `extra` flags, pausing `pause_ms` before
/// each slot), stalls the hot source for `seconds` (`DEBUG SLEEP`) once
/// the first slot has moved, and waits for the run to end: its status,
/// what it said on stderr, and its last JSON report.
fn run_through_a_stall(
    scene: &Scene,
    extra: &[&str],
    pause_ms: &str,
    seconds: f64,
) -> (std::process::ExitStatus, String, Json) {
    let source = scene.cluster.nodes[0].client();
    let env = [
        ("HK_TOP_TEST_SLOT_PAUSE_MS", pause_ms),
        ("HK_TOP_TEST_REPLY_MS", REPLY_MS),
    ];
    let mut child = scene.spawn(extra, &env);
    let err = Lines::of(child.stderr.take().unwrap());
    let out = Lines::of(child.stdout.take().unwrap());
    err.wait_for("[1/", Duration::from_secs(60));
    let stall = std::thread::spawn(move || {
        let mut source = source;
        let _: redis::RedisResult<()> = redis::cmd("DEBUG")
            .arg("SLEEP")
            .arg(seconds)
            .query(&mut source);
    });
    let status = wait_exit(&mut child, Duration::from_secs(120));
    stall.join().unwrap();
    let said = err.all().join("\n");
    let report = parse_json_lines(&out.all())
        .pop()
        .unwrap_or_else(|| panic!("no JSON: {said}"));
    (status, said, report)
}

/// Every move the plan lists was made.
fn assert_every_move_made(report: &Json, said: &str) {
    assert_eq!(
        report["applied"]["moves_done"],
        report["moves"].as_array().unwrap().len(),
        "{said}"
    );
}

/// A source that stops answering for 1.5 s mid-run (past the reply
/// timeout, within the 60 s patience) is waited for: the run goes on and
/// finishes, no slot is left half-way.
#[test]
fn a_stalled_source_is_waited_out_within_the_patience() {
    let scene = Scene::new(40, 50, false).measured();
    let (status, said, report) = run_through_a_stall(&scene, &[], "100", 1.5);
    assert!(status.success(), "{said}");
    assert!(said.contains("waiting for it"), "the wait is said: {said}");
    assert_every_move_made(&report, &said);
    let seen = scene.assert_intact();
    eprintln!(
        "fault figures (source stalled 1.5 s): {}; clients {}",
        applied_summary(&report["applied"]),
        seen.summary()
    );
}

/// A source that stalls past `--patience-s` in the middle of a slot (the
/// standard order tells the target first, so a stalled source is always
/// met within a slot): the call gives up at the patience and names the
/// node, the slot in hand is tried again until the source answers (within
/// `--timeout-s`), never left half-way, and the plan goes on to its end.
#[test]
fn a_stall_past_the_patience_within_a_slot_is_named_and_the_slot_finished() {
    let scene = Scene::new(40, 50, false).measured();
    let stalled = scene.cluster.nodes[0].address();
    let (status, said, report) = run_through_a_stall(&scene, &["--patience-s", "1"], "300", 3.0);
    assert!(status.success(), "{said}");
    // The call gave up at the patience (1 s) and said which node and
    // which slot.
    let named = said
        .lines()
        .find(|l| l.contains("is half-way") && l.contains(&stalled))
        .unwrap_or_else(|| panic!("the stalled node is named: {said}"));
    assert!(named.contains("trying again to finish it"), "{named}");
    assert_eq!(report["applied"]["interrupted"], false);
    assert_every_move_made(&report, &said);
    let seen = scene.assert_intact();
    eprintln!(
        "fault figures (source stalled 3 s mid-slot, --patience-s 1): {}; clients {}",
        applied_summary(&report["applied"]),
        seen.summary()
    );
}

/// A primary that fails over mid-run (`CLUSTER FAILOVER` on its replica):
/// the run goes on with the primary that took over, and loses no key.
#[test]
fn a_failover_mid_run_goes_on_with_the_primary_that_took_over() {
    let scene = Scene::new(40, 50, true).measured();
    let replica = scene.cluster.replicas[0].client();
    let mut child = scene.spawn(&[], &[("HK_TOP_TEST_SLOT_PAUSE_MS", "200")]);
    let err = Lines::of(child.stderr.take().unwrap());
    let out = Lines::of(child.stdout.take().unwrap());
    err.wait_for("[2/", Duration::from_secs(60));
    let mut replica = replica;
    let _: () = redis::cmd("CLUSTER")
        .arg("FAILOVER")
        .query(&mut replica)
        .unwrap();
    let status = wait_exit(&mut child, Duration::from_secs(120));
    let said = err.all().join("\n");
    assert!(status.success(), "{said}");
    let report = parse_json_lines(&out.all());
    let applied = report.last().unwrap()["applied"].clone();
    wait_until(
        "the replica to serve as primary",
        Duration::from_secs(20),
        || {
            let role: String = redis::cmd("ROLE")
                .query::<Vec<redis::Value>>(&mut scene.cluster.replicas[0].client())
                .ok()
                .and_then(|r| r.first().and_then(|v| redis::from_redis_value(v).ok()))
                .unwrap_or_default();
            role == "master"
        },
    );
    let seen = scene.assert_intact_with_failover();
    eprintln!(
        "fault figures (failover of the source mid-run): {}; clients {}",
        applied_summary(&applied),
        seen.summary()
    );
}

impl Scene {
    /// [`Scene::assert_intact`] over the primaries as they are after a
    /// failover (a promoted replica in its primary's place).
    fn assert_intact_with_failover(mut self) -> Seen {
        let promoted = self.cluster.replicas.remove(0);
        let demoted = std::mem::replace(&mut self.cluster.nodes[0], promoted);
        self.cluster.replicas.insert(0, demoted);
        self.assert_intact()
    }
}

/// A cluster serving nothing is "too light" to balance (the rule is the
/// planner's: crates/rebalance/tests/plans.rs), as JSON and to a person;
/// a plan file that lists a slot twice, or sends one to a node that is not
/// a primary, is refused whole (exit 3) with nothing moved.
#[test]
fn a_plan_file_is_checked_whole_before_the_first_move() {
    let cluster = Cluster::start(TRACK_FAST);
    let port = cluster.nodes[0].port.to_string();
    let idle = hk_top(&["-p", &port, "rebalance", "--json"], &[]);
    assert_eq!(json_of(&idle)["too_light"], true, "{}", text(&idle));
    let said = hk_top(&["-p", &port, "rebalance"], &[]);
    assert!(
        String::from_utf8_lossy(&said.stdout).contains("nothing worth balancing"),
        "{}",
        text(&said)
    );
    let keys = distinct_slot_keys(&cluster, 50);
    load_keys(&cluster, &keys);
    let ids: Vec<String> = cluster.nodes.iter().map(|n| n.address()).collect();
    let mine: Vec<u16> = keys
        .iter()
        .filter(|k| k.1 == 0)
        .map(|k| slot_of(&k.0))
        .take(2)
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let nowhere = "127.0.0.1:1".to_string();
    let cases = [
        (
            vec![
                (mine[0], &ids[0], &ids[1]),
                (mine[1], &ids[0], &ids[1]),
                (mine[0], &ids[0], &ids[2]),
            ],
            "twice",
        ),
        (
            vec![(mine[0], &ids[0], &ids[1]), (mine[1], &ids[0], &nowhere)],
            "not another primary",
        ),
    ];
    for (moves, said) in cases {
        let moves: Vec<Json> = (moves.iter())
            .map(|(s, f, t)| serde_json::json!({"slot": s, "from": f, "to": t}))
            .collect();
        let plan = dir.path().join("plan.json");
        std::fs::write(&plan, serde_json::json!({ "moves": moves }).to_string()).unwrap();
        let journal = dir.path().join("j.json");
        let out = hk_top(
            &[
                "-p",
                &port,
                "rebalance",
                "--apply",
                "--plan",
                plan.to_str().unwrap(),
                "--journal",
                journal.to_str().unwrap(),
            ],
            &[],
        );
        assert_eq!(out.status.code(), Some(3), "{}", text(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(said),
            "{}",
            text(&out)
        );
        assert_eq!(
            cluster.owner_of_slot(mine[0]).port,
            cluster.nodes[0].port,
            "nothing moved"
        );
    }
    assert_every_key_intact(&cluster, &keys, &Default::default());
}

/// hk-top killed mid-slot (as `kill -9` would, its lease left behind):
/// a run with another journal refuses the slot as someone else's;
/// `--roll-back` on its own takes the dead run's lease over, gives back
/// what it left and moves nothing else; killed again, the next `--apply`
/// finishes the slot and the plan; `--adopt` alone is a usage error. (A
/// kill at each of a move's four steps, finished or rolled back: apply.rs's
/// a_move_killed_at_any_of_its_four_steps_...)
#[test]
fn a_killed_run_is_refused_to_others_and_rolled_back_or_finished_by_the_next() {
    let scene = Scene::new(60, 20, false).measured();
    let killed = |at: &str| {
        let out = scene.run(&[], &[("HK_TOP_TEST_STOP", at)]);
        assert_eq!(out.status.code(), Some(9), "{}", text(&out));
    };
    killed("migrating");
    let elsewhere = scene.dir.path().join("elsewhere.json");
    let refused = scene
        .spawn_with(&elsewhere, &[], &[])
        .wait_with_output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(3), "{}", text(&refused));
    assert!(text(&refused).contains("half-migrated by someone else"));
    let (port, journal) = (scene.port(), scene.journal());
    let owners_before = owner_map(&scene.cluster);
    let journal = journal.to_str().unwrap();
    let back = [
        "-p",
        &port,
        "rebalance",
        "--json",
        "--roll-back",
        "--journal",
        journal,
    ];
    let out = hk_top(&back, &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(json_of(&out)["applied"]["rolled_back"], 1, "{}", text(&out));
    assert_eq!(
        owner_map(&scene.cluster),
        owners_before,
        "nothing else moved"
    );
    assert_no_slot_half_way(&scene.cluster);
    killed("keys");
    let resumed = scene.run(&[], &[]);
    assert!(resumed.status.success(), "{}", text(&resumed));
    assert_eq!(
        json_of(&resumed)["applied"]["resumed"],
        1,
        "{}",
        text(&resumed)
    );
    assert!(text(&resumed).contains("finished slot"));
    let adopt = hk_top(&["-p", &port, "rebalance", "--adopt"], &[]);
    assert_eq!(adopt.status.code(), Some(2), "{}", text(&adopt));
    scene.assert_intact();
}

/// A second run while one holds the cluster (two at once, from any host,
/// with any journal) is refused before any move, told who holds it; the
/// first carries its reviewed plan out as printed, and the same plan once
/// more is stale (its slots have moved) and refused whole.
#[test]
fn a_second_run_is_refused_while_one_holds_the_cluster() {
    let scene = Scene::new(10, 20, false);
    let ids: Vec<String> = scene.cluster.nodes.iter().map(|n| n.address()).collect();
    let plan = scene.write_plan("plan.json", &scene.first_nodes_slots(5), &ids[0], &ids[1]);
    let first = scene.spawn_with(
        &scene.dir.path().join("first.json"),
        &["--plan", &plan],
        &[("HK_TOP_TEST_SLOT_PAUSE_MS", "400")],
    );
    let mut holder = scene.cluster.owner_of(LEASE_KEY).client();
    wait_until(
        "the first run to hold the lease",
        Duration::from_secs(20),
        || {
            redis::cmd("EXISTS")
                .arg(LEASE_KEY)
                .query::<i64>(&mut holder)
                .unwrap()
                == 1
        },
    );
    let second = scene.spawn_with(
        &scene.dir.path().join("second.json"),
        &["--plan", &plan],
        &[],
    );
    let second = second.wait_with_output().unwrap();
    assert_eq!(second.status.code(), Some(3), "{}", text(&second));
    let said = String::from_utf8_lossy(&second.stderr);
    assert!(
        said.contains("holds this cluster") && said.contains("pid ") && said.contains("since "),
        "{said}"
    );
    let first = first.wait_with_output().unwrap();
    assert!(first.status.success(), "{}", text(&first));
    let planned = scene.first_nodes_slots(5);
    assert_eq!(json_of(&first)["applied"]["moves_done"], planned.len());
    for slot in planned {
        assert_eq!(
            scene.cluster.owner_of_slot(slot).port,
            scene.cluster.nodes[1].port
        );
    }
    let again = scene.run(&["--plan", &plan], &[]);
    assert_eq!(again.status.code(), Some(3), "{}", text(&again));
    assert!(
        text(&again).contains("the plan is stale"),
        "{}",
        text(&again)
    );
    scene.assert_intact();
}

const LEASE_KEY: &str = "hk-top:rebalance:lease";
