//! The tracker's rules on commands, tested without a server: commands as
//! a fake [`FilteredCommand`] hands them over, a command table built from
//! a `COMMAND` reply written down here, and the counts read back.

use super::*;
use crate::tracking::keys::FilteredCommand;
use heavykeeper_tracker::server::client_table::Asked;
use heavykeeper_tracker::server::command_reply::Reply;
use heavykeeper_tracker::server::hash_slot_map::HashSlotMap;
use heavykeeper_tracker::worker;
use heavykeeper_tracker::Ranking;

/// One key spec: its flag, keys from argument `at` to `last_key` after it
/// (negative: from the end).
fn spec(flag: &str, at: i64, last_key: i64) -> Reply {
    let int = Reply::Integer;
    let search = |kind: &str, spec| Reply::map([("type", Reply::text(kind)), ("spec", spec)]);
    let begin = search("index", Reply::map([("index", int(at))]));
    let range = Reply::map([
        ("lastkey", int(last_key)),
        ("keystep", int(1)),
        ("limit", int(0)),
    ]);
    let flags = Reply::Array(vec![Reply::text(flag)]);
    Reply::map([
        ("flags", flags),
        ("begin_search", begin),
        ("find_keys", search("range", range)),
    ])
}

fn table() -> CommandTable {
    CommandTable::from_reply(&[
        Reply::command("get", 2, "readonly", vec![spec("RO", 1, 0)], vec![]),
        Reply::command("set", -3, "write", vec![spec("OW", 1, 0)], vec![]),
        Reply::command("mget", -2, "readonly", vec![spec("RO", 1, -1)], vec![]),
        Reply::command("select", 2, "fast", vec![], vec![]),
        Reply::command("ping", -1, "fast", vec![], vec![]),
    ])
}

/// A command from client `client` (`None`: Redis 7.0, which does not say),
/// whose client is in database `db`.
struct Fake {
    client: Option<u64>,
    args: Vec<Vec<u8>>,
    db: u16,
    in_script: bool,
    /// Arguments past the name read so far (each a call into the server).
    reads: std::cell::Cell<usize>,
}

impl Fake {
    fn of(client: Option<u64>, args: &[&str]) -> Self {
        Fake {
            client,
            args: args.iter().map(|a| a.as_bytes().to_vec()).collect(),
            db: 0,
            in_script: false,
            reads: std::cell::Cell::new(0),
        }
    }
}

impl FilteredCommand for Fake {
    fn client(&self) -> Option<u64> {
        self.client
    }
    fn argc(&self) -> usize {
        self.args.len()
    }
    fn arg(&self, i: usize) -> &[u8] {
        if i > 0 {
            self.reads.set(self.reads.get() + 1);
        }
        self.args.get(i).map_or(&[], Vec::as_slice)
    }
    fn server_keys(&self) -> Vec<(usize, Option<Access>)> {
        Vec::new()
    }
    fn in_script(&self) -> bool {
        self.in_script
    }
    fn client_db(&self, _id: u64) -> Option<Asked> {
        Some((Some(self.db), b"127.0.0.1".to_vec()))
    }
    fn key_exists(&self, _db: u16, _key: &[u8]) -> bool {
        false
    }
}

/// Counting every command, clients named (7.2+) or not (7.0), in a cluster
/// or not; everyone let in.
fn tracking(names_clients: bool, in_cluster: bool) -> Tracking {
    let shape = TrackerShape {
        k: 100,
        half_life_ms: 1e12,
    };
    let mut t = Tracking::new(
        shape,
        Sampling::Fixed(1),
        1.0,
        table(),
        names_clients,
        in_cluster,
    );
    t.senders.assume_everyone_let_in();
    t
}

/// Every listed key's reads (rounded: a count fades a little from the
/// moment it is made, and one that faded below one arrival, a key read once,
/// is not listed), by (db, key).
fn reads(t: &mut Tracking) -> Vec<((u16, String), f64)> {
    let now = clock::cached_now_ms() + 1;
    let hottest = t.current().tracker().hottest(Ranking::Reads, 100, now);
    let name = |key: &[u8]| String::from_utf8_lossy(key).into_owned();
    let mut rows: Vec<_> = (hottest.iter())
        .map(|h| ((h.db, name(&h.key)), h.reads.count.round()))
        .collect();
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    rows
}

#[test]
fn each_key_a_command_reads_counts_once_in_its_clients_database() {
    let mut t = tracking(true, false);
    for _ in 0..3 {
        t.count_command(&Fake::of(Some(7), &["GET", "a"]));
    }
    let mut in_db_2 = Fake::of(Some(8), &["MGET", "a", "b", "b"]);
    in_db_2.db = 2;
    t.count_command(&in_db_2);
    t.count_command(&in_db_2);
    t.count_command(&Fake::of(Some(7), &["SET", "w", "v"]));
    t.count_command(&Fake::of(Some(7), &["SET", "w", "v"]));
    assert_eq!(
        reads(&mut t),
        [
            ((0, "a".into()), 3.0),
            ((2, "a".into()), 2.0),
            ((2, "b".into()), 4.0)
        ]
    );
}

#[test]
fn a_key_is_read_only_when_its_access_is_kept() {
    // Reading a key is two calls into the server: thinned one in 16, a
    // GET's key is read for the kept accesses only, an MGET's likewise.
    let mut t = tracking(true, false);
    t.slots.keep_one_in_from_now(|_| 16);
    let get = Fake::of(Some(7), &["GET", "a"]);
    let mget = Fake::of(Some(7), &["MGET", "a", "b"]);
    for _ in 0..1_600 {
        t.count_command(&get);
        t.count_command(&mget);
    }
    let kept = t.sketches.batch().len();
    assert!((100..=500).contains(&kept), "{kept}");
    // An MGET's keys are found by their positions, not read, when not kept.
    assert_eq!(get.reads.get() + mget.reads.get(), kept);
}

#[test]
fn commands_the_server_would_refuse_count_nothing() {
    let mut t = tracking(true, false);
    for _ in 0..2 {
        t.count_command(&Fake::of(Some(7), &["GET", "a", "extra"]));
        t.count_command(&Fake::of(Some(7), &["GET"]));
        t.count_command(&Fake::of(Some(7), &["NOSUCH", "a"]));
        t.count_command(&Fake::of(Some(7), &["PING"]));
    }
    assert_eq!(reads(&mut t), []);
    assert_eq!(t.figures().commands_seen, 8);
}

#[test]
fn a_select_moves_the_clients_next_command_not_this_one() {
    let mut t = tracking(true, false);
    let mut get = Fake::of(Some(7), &["GET", "a"]);
    t.count_command(&get);
    // The server now has client 7 in db 3: the tracker asks again only
    // after the SELECT it saw.
    get.db = 3;
    t.count_command(&get);
    let mut select = Fake::of(Some(7), &["SELECT", "3"]);
    select.db = 3;
    t.count_command(&select);
    t.count_command(&get);
    t.count_command(&get);
    assert_eq!(
        reads(&mut t),
        [((0, "a".into()), 2.0), ((3, "a".into()), 2.0)]
    );
}

#[test]
fn on_redis_7_0_a_running_scripts_commands_are_not_counted_twice() {
    let mut t = tracking(false, false);
    t.count_command(&Fake::of(None, &["GET", "a"]));
    t.count_command(&Fake::of(None, &["GET", "a"]));
    // A script runs: its own commands pass the filter too.
    let mut inside = Fake::of(None, &["GET", "a"]);
    inside.in_script = true;
    t.senders.script_started();
    t.count_command(&inside);
    assert_eq!(reads(&mut t), [((0, "a".into()), 2.0)]);
}

#[test]
fn a_cluster_node_counts_only_the_keys_it_serves() {
    let mut t = tracking(true, true);
    // This node serves slots 0-8191; "a" hashes to 15495, "b" to 3300.
    let nodes = "me 127.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-8191\n\
                 other 127.0.0.1:7001@17001 master - 0 0 2 connected 8192-16383\n";
    t.routing
        .as_mut()
        .expect("a cluster node")
        .set_map(HashSlotMap::from_nodes(nodes, true, false).expect("a map"));
    for _ in 0..2 {
        t.count_command(&Fake::of(Some(7), &["GET", "a"]));
        t.count_command(&Fake::of(Some(7), &["GET", "b"]));
    }
    assert_eq!(reads(&mut t), [((0, "b".into()), 2.0)]);
    assert_eq!(t.figures().commands_redirected, 2);
}

#[test]
fn a_fixed_share_of_time_lets_the_worker_take_more_only_when_allowed() {
    let mut t = tracking(false, false);
    // A budget under the fixed bound leaves it as it is.
    t.configure(Sampling::Fixed(1), 0.01, false, None);
    assert_eq!(t.cost.worker_share(), worker::WORKER_CPU_SHARE);
    // Nor does the default budget (2% of a core): its three quarters are
    // the bound itself.
    use crate::tracking::config::{budget_of, DEFAULT_CPU_MILLICORES};
    let default = budget_of(DEFAULT_CPU_MILLICORES);
    t.configure(Sampling::Fixed(1), default, false, None);
    assert!(default > worker::WORKER_CPU_SHARE);
    assert_eq!(t.cost.worker_share(), worker::WORKER_CPU_SHARE);
    // An operator who allows a whole core lets the worker take three
    // quarters of it before it thins: every access of a saturated node is
    // counted (it needs ~20% of a core).
    t.configure(Sampling::Fixed(1), 1.0, false, None);
    assert_eq!(
        t.cost.worker_share(),
        crate::tracking::cost::FIXED_WORKER_PART
    );
    // Sampling by the budget: the worker's part of it, as before.
    t.configure(Sampling::Budgeted, 1.0, false, None);
    assert!(t.cost.worker_share() < 1.0);
}
