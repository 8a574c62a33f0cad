//! A scripted cluster for the executor's tests, as redis-rs tests its
//! cluster client against a mock of the nodes: three primaries (nodes 0-2)
//! and a replica each (node n + 3 of node n, holding the same data set, n %
//! 3), answering what a run sends (`CLUSTER NODES`/`INFO`, `SETSLOT`,
//! `GETKEYSINSLOT`, `MIGRATE`, `COMMAND INFO`) as Redis 7 does, over one
//! slot map every node agrees on. Faults are scripted to happen right after
//! a command: a failover (`CLUSTER FAILOVER` on the replica: the old
//! primary answers on, as a replica), the run killed (every command after
//! it refused, until [`FakeCluster::revive`]) or signalled.

use super::interrupt::Stop;
use super::link::Link;
use redis::{Cmd, RedisError, RedisResult, Value};
use std::collections::BTreeMap;

const NODES: usize = 6;

/// What happens once a command starting with a given text has run.
#[derive(Clone, Copy, Debug)]
pub enum Fault {
    /// The primary `node` fails over to its replica.
    FailOver(usize),
    /// The run is killed: nothing it sends reaches a node any more.
    Kill,
    /// Someone else moves the slot (and its keys) to the node.
    Give(u16, usize),
    /// Ctrl-C: [`FakeCluster::stop`] is asked.
    Signal,
}

pub struct FakeCluster {
    /// Per node: `None` a primary, `Some(p)` a replica of node `p`.
    replica_of: Vec<Option<usize>>,
    /// Per slot, the node that serves it.
    owner: Vec<usize>,
    migrating: Vec<BTreeMap<u16, String>>,
    importing: Vec<BTreeMap<u16, String>>,
    /// Key name: its slot and the data set that holds it.
    keys: BTreeMap<String, (u16, usize)>,
    faults: Vec<(String, Fault)>,
    killed: bool,
    /// What was sent, as `address command...`.
    pub sent: Vec<String>,
    /// The flag a run over this cluster stops on.
    pub stop: Stop,
}

pub fn address(node: usize) -> String {
    format!("127.0.0.1:{}", 7000 + node)
}

fn id(node: usize) -> String {
    format!("node{node}")
}

/// An error as the server sends it.
fn error(line: &str) -> RedisError {
    match redis::parse_redis_value(format!("-{line}\r\n").as_bytes()).map(Value::extract_error) {
        Ok(Err(e)) | Err(e) => e,
        Ok(Ok(_)) => RedisError::from((redis::ErrorKind::ClientError, "not an error")),
    }
}

/// A command's words, as text (the tests' Links read commands so).
pub fn words(cmd: &Cmd) -> Vec<String> {
    (cmd.args_iter())
        .map(|a| match a {
            redis::Arg::Simple(bytes) => String::from_utf8_lossy(bytes).to_string(),
            redis::Arg::Cursor => String::new(),
        })
        .collect()
}

impl FakeCluster {
    /// Each primary serving a third of the slots; `keys` keys in each of
    /// `slots`.
    pub fn new(slots: &[u16], keys: usize) -> FakeCluster {
        let owner: Vec<usize> = (0..16384).map(|s| s * 3 / 16384).collect();
        let keys = (slots.iter())
            .flat_map(|&s| (0..keys).map(move |k| (format!("{{{s}}}:{k}"), s)))
            .map(|(key, s)| (key, (s, owner[usize::from(s)])))
            .collect();
        FakeCluster {
            replica_of: vec![None, None, None, Some(0), Some(1), Some(2)],
            owner,
            migrating: vec![BTreeMap::new(); NODES],
            importing: vec![BTreeMap::new(); NODES],
            keys,
            faults: Vec::new(),
            killed: false,
            sent: Vec::new(),
            stop: Stop::never(),
        }
    }

    /// `fault` right after the first command that starts with `after`.
    pub fn on(&mut self, after: &str, fault: Fault) {
        self.faults.push((after.to_string(), fault));
    }

    pub fn revive(&mut self) {
        self.killed = false;
    }

    pub fn owner_of(&self, slot: u16) -> usize {
        self.owner[usize::from(slot)]
    }

    /// Is any slot migrating or importing anywhere?
    pub fn half_way(&self) -> bool {
        (self.migrating.iter().chain(&self.importing)).any(|m| !m.is_empty())
    }

    /// The data sets holding `slot`'s keys.
    pub fn holders(&self, slot: u16) -> Vec<usize> {
        let mut holders: Vec<usize> = (self.keys.values().filter(|(s, _)| *s == slot))
            .map(|k| k.1)
            .collect();
        holders.dedup();
        holders
    }

    fn give(&mut self, slot: u16, node: usize) {
        self.owner[usize::from(slot)] = node;
        (self.keys.values_mut().filter(|(s, _)| *s == slot)).for_each(|k| k.1 = node % 3);
    }

    fn fail_over(&mut self, primary: usize) {
        let replica = (primary + 3) % NODES;
        (self.replica_of[replica], self.replica_of[primary]) = (None, Some(replica));
        (self.owner.iter_mut().filter(|o| **o == primary)).for_each(|o| *o = replica);
        // Migrating and importing are a node's own: not replicated.
        self.migrating[primary].clear();
        self.importing[primary].clear();
    }

    /// Does node `n`'s data set hold a key of `slot`?
    fn holds(&self, n: usize, slot: u16) -> bool {
        self.keys
            .values()
            .any(|&(s, set)| s == slot && set == n % 3)
    }

    /// `CLUSTER NODES` as `me` sees it.
    fn listing(&self, me: usize) -> String {
        let mut out = String::new();
        for n in 0..NODES {
            let role = self.replica_of[n].map_or("master", |_| "slave");
            let myself = ["", "myself,"][usize::from(n == me)];
            let primary = self.replica_of[n].map_or("-".to_string(), id);
            let bus = 17000 + n;
            out += &format!(
                "{} {}@{bus} {myself}{role} {primary} 0 0 1 connected",
                id(n),
                address(n)
            );
            let slots: Vec<u16> = (0..16384).filter(|&s| self.owner_of(s) == n).collect();
            for (lo, hi) in super::atomic::ranges(&slots) {
                out += &format!(" {lo}-{hi}");
            }
            if n == me {
                self.migrating[n]
                    .iter()
                    .for_each(|(s, to)| out += &format!(" [{s}->-{to}]"));
                self.importing[n]
                    .iter()
                    .for_each(|(s, from)| out += &format!(" [{s}-<-{from}]"));
            }
            out.push('\n');
        }
        out
    }

    fn answer(&mut self, n: usize, words: &[String]) -> RedisResult<Value> {
        let word = |i: usize| words.get(i).map_or("", String::as_str);
        let replica = self.replica_of[n].is_some();
        let slot = || word(2).parse::<u16>().unwrap();
        match (word(0), word(1)) {
            ("CLUSTER", "NODES") => Ok(Value::BulkString(self.listing(n).into_bytes())),
            ("CLUSTER", "INFO") => Ok(Value::BulkString(b"cluster_state:ok\r\n".to_vec())),
            ("COMMAND", _) => Ok(Value::Array(vec![Value::Nil])),
            ("CLUSTER", "SETSLOT") if replica => {
                Err(error("ERR Please use SETSLOT only with masters."))
            }
            ("CLUSTER", "SETSLOT") => self.setslot(n, slot(), word(3), word(4)),
            ("CLUSTER", "GETKEYSINSLOT") => {
                let keys = (self
                    .keys
                    .iter()
                    .filter(|(_, &(s, set))| s == slot() && set == n % 3))
                .take(word(3).parse().unwrap())
                .map(|(k, _)| crate::fixtures::bulk(k));
                Ok(Value::Array(keys.collect()))
            }
            ("MIGRATE", _) if replica => Err(error(
                "READONLY You can't write against a read only replica.",
            )),
            ("MIGRATE", _) => {
                let to: usize = word(2).parse::<usize>().unwrap() - 7000;
                if self.replica_of[to].is_some() {
                    return Err(error(
                        "ERR Target instance replied with error: MOVED 1 127.0.0.1:1",
                    ));
                }
                for key in words.iter().skip_while(|w| *w != "KEYS").skip(1) {
                    if let Some(k) = self.keys.get_mut(key).filter(|k| k.1 == n % 3) {
                        k.1 = to % 3;
                    }
                }
                Ok(Value::Okay)
            }
            _ => Err(error(&format!("ERR unknown command {words:?}"))),
        }
    }

    fn setslot(&mut self, n: usize, slot: u16, state: &str, node: &str) -> RedisResult<Value> {
        let owns = self.owner_of(slot) == n;
        match state {
            "IMPORTING" if owns => {
                return Err(error(&format!(
                    "ERR I'm already the owner of hash slot {slot}"
                )))
            }
            "MIGRATING" if !owns => {
                return Err(error(&format!("ERR I'm not the owner of hash slot {slot}")))
            }
            "IMPORTING" => drop(self.importing[n].insert(slot, node.to_string())),
            "MIGRATING" => drop(self.migrating[n].insert(slot, node.to_string())),
            _ => {
                if state == "NODE" {
                    let to: usize = node.trim_start_matches("node").parse().unwrap();
                    if owns && to != n && self.holds(n, slot) {
                        return Err(error(&format!("ERR Can't assign hashslot {slot} to a different node while I still hold keys for this hash slot.")));
                    }
                    self.owner[usize::from(slot)] = to;
                }
                self.migrating[n].remove(&slot);
                self.importing[n].remove(&slot);
            }
        }
        Ok(Value::Okay)
    }
}

impl Link for FakeCluster {
    fn run(&mut self, address: &str, cmd: &Cmd) -> RedisResult<Value> {
        let (words, node) = (
            words(cmd),
            (0..NODES).find(|&n| self::address(n) == address),
        );
        let line = words.join(" ");
        self.sent.push(format!("{address} {line}"));
        let Some(n) = node.filter(|_| !self.killed) else {
            return Err(std::io::Error::from(std::io::ErrorKind::ConnectionRefused).into());
        };
        let reply = self.answer(n, &words);
        if let Some(i) =
            (self.faults.iter()).position(|(after, _)| line.starts_with(after.as_str()))
        {
            match self.faults.remove(i).1 {
                Fault::FailOver(primary) => self.fail_over(primary),
                Fault::Kill => self.killed = true,
                Fault::Give(slot, node) => self.give(slot, node),
                Fault::Signal => self.stop.ask(2),
            }
        }
        reply
    }
}

/// The lease's key, on node `b:1` (node `a:1` sends there with `MOVED`):
/// holding `held`, and taken where it holds nothing; a renewal of a lease
/// taken so answered `renewed` (1: still ours, 0: another run's now).
pub struct LeaseKey {
    pub held: Option<String>,
    pub renewed: i64,
}

impl Link for LeaseKey {
    fn run(&mut self, address: &str, cmd: &Cmd) -> RedisResult<Value> {
        if address == "a:1" {
            return Err((redis::ErrorKind::Moved, "MOVED", "1 b:1".to_string()).into());
        }
        Ok(match (words(cmd)[0].as_str(), &self.held) {
            ("SET", None) => Value::Okay,
            ("EVAL", None) => Value::Int(self.renewed),
            ("GET", Some(held)) => Value::BulkString(held.clone().into_bytes()),
            // The swap of a dead holder's lease.
            ("EVAL", Some(_)) => Value::Okay,
            _ => Value::Nil,
        })
    }
}
