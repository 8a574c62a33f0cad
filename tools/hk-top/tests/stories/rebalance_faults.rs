//! `hk-top rebalance --apply` under the faults an operator meets, each on a
//! real cluster under live traffic (reads checked against the last write;
//! any error but MOVED, ASK and TRYAGAIN is a failure): Ctrl-C and SIGTERM,
//! a source that stalls, a primary that fails over, the tool killed
//! mid-slot, a second run while one holds the cluster, a plan file that is
//! wrong, `--roll-back` on its own. Each proves the wiring once: what the
//! executor decides (which node is the pair after a failover, what a kill
//! at each step left, a stale view, a lost lease) is tested on a scripted
//! cluster in `src/rebalance/apply.rs`, the lease's refusal in `lease.rs`.

use crate::support::common::{info_field, wait_until, Cluster, ClusterOptions};
use crate::support::*;
use serde_json::Value as Json;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

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
        let traffic = Traffic::start(&cluster, &keys, &[0.8, 0.1, 0.1], 2000.0, 0.1);
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
                let load = tracker_rates(&self.cluster, &["reads", "writes"]);
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

    /// hk-top as `rebalance --json --apply --migration standard` with no
    /// cooldown and the journal `journal` names in the scene's directory
    /// (its own: "journal.json"), then `extra`, in the environment `env`.
    fn hk_top<S: AsRef<str>>(&self, journal: &str, extra: &[S], env: &[(&str, &str)]) -> Command {
        let (port, journal) = (self.port(), self.dir.path().join(journal));
        let mut args = vec!["-p", &port, "rebalance", "--json", "--apply"];
        args.extend(["--migration", "standard", "--cooldown-s", "0"]);
        args.extend(["--journal", journal.to_str().unwrap()]);
        args.extend(extra.iter().map(AsRef::as_ref));
        let mut cmd = hk_top_command(&args, env);
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        cmd
    }

    fn run<S: AsRef<str>>(&self, extra: &[S], env: &[(&str, &str)]) -> Output {
        self.hk_top("journal.json", extra, env).output().unwrap()
    }

    /// A run started, its lines read as they come.
    fn start<S: AsRef<str>>(&self, extra: &[S], env: &[(&str, &str)]) -> Running {
        let (child, out, err) = spawn_lines(&mut self.hk_top("journal.json", extra, env));
        Running { child, err, out }
    }

    /// Node 0's slots (with keys), those at `at` in their order.
    fn slots(&self, at: std::ops::Range<usize>) -> Vec<u16> {
        let all: std::collections::BTreeSet<u16> = (self.keys.iter().filter(|k| k.1 == 0))
            .map(|k| slot_of(&k.0))
            .collect();
        all.into_iter().skip(at.start).take(at.len()).collect()
    }

    /// A reviewed plan moving `slots` from node 0 to node 1, as the
    /// `--plan` flag and its file.
    fn plan(&self, slots: &[u16]) -> [String; 2] {
        let from = self.cluster.nodes[0].address();
        let to = self.cluster.nodes[1].address();
        let moves: Vec<Json> = (slots.iter())
            .map(|s| serde_json::json!({"slot": s, "from": from, "to": to}))
            .collect();
        let plan = self
            .dir
            .path()
            .join(format!("plan-{}.json", slots.first().unwrap()));
        std::fs::write(&plan, serde_json::json!({ "moves": moves }).to_string()).unwrap();
        ["--plan".into(), plan.to_str().unwrap().into()]
    }

    /// The clients saw no failure, every key is where and what it should
    /// be, no slot is half-way and nothing is left open in the journal.
    fn assert_intact(mut self) -> Seen {
        let traffic = self.traffic.take().unwrap();
        let (seen, expected) = traffic.stop();
        assert_eq!(seen.failures(), (0, 0, 0), "{seen:?}");
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

/// A run under way: hk-top, and the lines it printed so far.
struct Running {
    child: Child,
    err: Lines,
    out: Lines,
}

impl Running {
    /// Once it ended (within a minute): its status, what it said on
    /// stderr, and its last JSON report (null if none).
    fn end(mut self) -> (std::process::ExitStatus, String, Json) {
        let deadline = Instant::now() + Duration::from_secs(60);
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(
                Instant::now() < deadline,
                "hk-top did not end: {:?}",
                self.err.now()
            );
            sleep(Duration::from_millis(20));
        };
        let last = (self.out.all().iter().rev()).find_map(|l| serde_json::from_str(l).ok());
        (status, self.err.all().join("\n"), last.unwrap_or_default())
    }
}

/// Ctrl-C or SIGTERM at any moment of a run: the slot in hand is finished,
/// the run stops before the next one with a non-zero status and
/// `"interrupted": true`, no call fails for having been interrupted, and
/// the next run goes on from there.
#[test]
fn a_signal_stops_a_run_between_two_slots_and_the_next_run_goes_on() {
    let scene = Scene::new(40, 20, false);
    // Signals after 1 and 2 slots, each run its own reviewed plan (a signal
    // mid-slot finishing the slot in hand is apply.rs's
    // a_signal_mid_slot_stops_the_run_once_the_slot_is_made).
    for (signal_name, code, after, at) in [("INT", 130, 1, 0..4), ("TERM", 143, 2, 4..8)] {
        let run = scene.start(
            &scene.plan(&scene.slots(at)),
            &[("HK_TOP_TEST_SLOT_PAUSE_MS", "150")],
        );
        run.err
            .wait_for(&format!("[{after}/"), Duration::from_secs(60));
        signal(run.child.id(), signal_name);
        let (status, said, report) = run.end();
        assert_eq!(status.code(), Some(code), "SIG{signal_name}: {said}");
        assert!(
            !said.contains("os error 4") && !said.contains("Interrupted"),
            "{said}"
        );
        let applied = &report["applied"];
        assert_eq!(applied["interrupted"], true, "{said}");
        assert!(applied["moves_done"].as_u64() >= Some(after), "{applied}");
        assert_no_slot_half_way(&scene.cluster);
        assert_eq!(
            open_moves(&scene.journal()),
            0,
            "stopped between slots: {said}"
        );
    }
    let done = scene.run(&scene.plan(&scene.slots(8..12)), &[]);
    let finished = json_ok(&done);
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
/// the first slot has moved, and waits for the run to end: what it said on
/// stderr, once it succeeded having made every move of its plan.
fn run_through_a_stall(scene: &Scene, extra: &[&str], pause_ms: &str, seconds: f64) -> String {
    let mut source = scene.cluster.nodes[0].client();
    let env = [
        ("HK_TOP_TEST_SLOT_PAUSE_MS", pause_ms),
        ("HK_TOP_TEST_REPLY_MS", REPLY_MS),
    ];
    let run = scene.start(extra, &env);
    run.err.wait_for("[1/", Duration::from_secs(60));
    let stall = redis::cmd("DEBUG").arg("SLEEP").arg(seconds).clone();
    let stall = std::thread::spawn(move || stall.query::<()>(&mut source));
    let (status, said, report) = run.end();
    stall.join().unwrap().unwrap();
    assert!(status.success(), "{said}");
    let planned = report["moves"].as_array().map(Vec::len);
    assert_eq!(
        report["applied"]["moves_done"].as_u64(),
        planned.map(|n| n as u64),
        "{said}"
    );
    eprintln!(
        "fault figures (source stalled {seconds} s, {extra:?}): {}",
        applied_summary(&report["applied"])
    );
    said
}

/// A source that stops answering for 1.5 s mid-run (past the reply
/// timeout, within the 60 s patience) is waited for: the run goes on and
/// finishes its plan. Then one that stalls past
/// `--patience-s` in the middle of a slot (the standard order tells the
/// target first, so a stalled source is always met within a slot): the
/// call gives up at the patience and names the node, the slot in hand is
/// tried again until the source answers (within `--timeout-s`), never left
/// half-way, and the plan goes on to its end.
#[test]
fn a_stalled_source_is_waited_out_or_named_and_the_slot_finished() {
    let scene = Scene::new(60, 50, false);
    let [flag, plan] = scene.plan(&scene.slots(0..3));
    let said = run_through_a_stall(&scene, &[&flag, &plan], "100", 1.5);
    assert!(said.contains("waiting for it"), "the wait is said: {said}");
    let stalled = scene.cluster.nodes[0].address();
    let [flag, plan] = scene.plan(&scene.slots(3..9));
    let said = run_through_a_stall(&scene, &[&flag, &plan, "--patience-s", "1"], "300", 2.0);
    // The call gave up at the patience (1 s) and said which node and
    // which slot.
    let named = (said.lines())
        .find(|l| l.contains("is half-way") && l.contains(&stalled))
        .unwrap_or_else(|| panic!("the stalled node is named: {said}"));
    assert!(named.contains("trying again to finish it"), "{named}");
    eprintln!(
        "fault figures (stalls): clients {}",
        scene.assert_intact().summary()
    );
}

/// A primary that fails over mid-run (`CLUSTER FAILOVER` on its replica):
/// the run goes on with the primary that took over, and loses no key.
#[test]
fn a_failover_mid_run_goes_on_with_the_primary_that_took_over() {
    let mut scene = Scene::new(40, 50, true);
    // A cluster just made: every node knows every other, the replicas as
    // replicas (a vote a node cannot place is not cast).
    let cluster = &scene.cluster;
    wait_until(
        "every node to know the others",
        Duration::from_secs(30),
        || {
            (cluster.nodes.iter().chain(&cluster.replicas)).all(|n| {
                let listing = cluster_nodes(n);
                let known = listing.lines().count() == 6 && listing.matches("slave").count() == 3;
                known
                    && !["handshake", "fail", "disconnected"]
                        .iter()
                        .any(|s| listing.contains(s))
            })
        },
    );
    // The failover once the run has read the cluster, before its first
    // move: a primary's election may fail while slots change hands (a
    // slot's newer epoch), and the run's view is then stale.
    let pause = [("HK_TOP_TEST_READ_PAUSE_MS", "2000")];
    let run = scene.start(&scene.plan(&scene.slots(0..6)), &pause);
    run.err
        .wait_for("the cluster is read", Duration::from_secs(60));
    let mut replica = scene.cluster.replicas[0].client();
    let _: () = redis::cmd("CLUSTER")
        .arg("FAILOVER")
        .query(&mut replica)
        .unwrap();
    wait_until(
        "the replica to serve as primary",
        Duration::from_secs(20),
        || info_field(&mut replica, "replication", "role").as_deref() == Some("master"),
    );
    let (status, said, report) = run.end();
    assert!(status.success() && said.contains("failed over"), "{said}");
    // Intact over the primaries as they are now: the promoted replica in
    // its primary's place.
    let promoted = scene.cluster.replicas.remove(0);
    let demoted = std::mem::replace(&mut scene.cluster.nodes[0], promoted);
    scene.cluster.replicas.insert(0, demoted);
    let applied = report["applied"].clone();
    let seen = scene.assert_intact();
    eprintln!(
        "fault figures (failover of the source mid-run): {}; clients {}",
        applied_summary(&applied),
        seen.summary()
    );
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
        let out = scene.run(NONE, &[("HK_TOP_TEST_STOP", at)]);
        assert_eq!(out.status.code(), Some(9), "{}", text(&out));
    };
    killed("migrating");
    let refused = scene.hk_top("elsewhere.json", NONE, &[]).output().unwrap();
    assert_ended(&refused, 3, "half-migrated by someone else");
    let (port, journal) = (scene.port(), scene.journal());
    let owners_before = owner_map(&scene.cluster);
    let journal = journal.to_str().unwrap();
    let out = hk_top_line(
        &format!("-p {port} rebalance --json --roll-back --journal {journal}"),
        &[],
    );
    assert_eq!(json_ok(&out)["applied"]["rolled_back"], 1, "{}", text(&out));
    assert_eq!(
        owner_map(&scene.cluster),
        owners_before,
        "nothing else moved"
    );
    assert_no_slot_half_way(&scene.cluster);
    killed("keys");
    let resumed = scene.run(NONE, &[]);
    assert_ended(&resumed, 0, "finished slot");
    assert_eq!(json_of(&resumed)["applied"]["resumed"], 1);
    let adopt = hk_top(&["-p", &port, "rebalance", "--adopt"], &[]);
    assert_eq!(adopt.status.code(), Some(2), "{}", text(&adopt));
    scene.assert_intact();
}

/// A plan file is checked whole before the first move: one that lists a
/// slot twice is refused (exit 3), nothing moved (every problem a check
/// finds: plan_check.rs). A second run while one holds the cluster (two at
/// once, from any host, with any journal) is refused before any move, told
/// who holds it; the first carries its reviewed plan out as printed, and
/// the same plan once more is stale (its slots have moved) and refused.
#[test]
fn a_plan_file_is_checked_whole_and_a_second_run_refused_while_one_holds_the_cluster() {
    let scene = Scene::new(10, 20, false);
    let [_, twice] = scene.plan(&[scene.slots(0..1), scene.slots(0..2)].concat());
    let refused = scene.run(&["--plan", &twice], &[]);
    assert_ended(&refused, 3, "twice");
    assert_eq!(
        owner_map(&scene.cluster)[usize::from(scene.slots(0..1)[0])],
        scene.cluster.nodes[0].address()
    );
    let planned = scene.slots(0..5);
    let plan = scene.plan(&planned);
    let plan = plan[1].as_str();
    let pause = [("HK_TOP_TEST_SLOT_PAUSE_MS", "400")];
    let first = scene
        .hk_top("first.json", &["--plan", plan], &pause)
        .spawn()
        .unwrap();
    let mut holder = scene.cluster.owner_of(LEASE_KEY).client();
    let held = || redis::cmd("EXISTS").arg(LEASE_KEY).query(&mut holder) == Ok(1);
    wait_until(
        "the first run to hold the lease",
        Duration::from_secs(20),
        held,
    );
    let second = scene
        .hk_top("second.json", &["--plan", plan], &[])
        .output()
        .unwrap();
    assert_eq!(second.status.code(), Some(3), "{}", text(&second));
    let said = String::from_utf8_lossy(&second.stderr);
    assert!(
        said.contains("holds this cluster") && said.contains("pid ") && said.contains("since "),
        "{said}"
    );
    let first = first.wait_with_output().unwrap();
    assert_eq!(json_ok(&first)["applied"]["moves_done"], planned.len());
    for slot in planned {
        assert_eq!(
            scene.cluster.owner_of_slot(slot).port,
            scene.cluster.nodes[1].port
        );
    }
    let again = scene.run(&["--plan", plan], &[]);
    assert_ended(&again, 3, "the plan is stale");
    scene.assert_intact();
}

const LEASE_KEY: &str = "hk-top:rebalance:lease";

/// No more flags.
const NONE: &[&str] = &[];
