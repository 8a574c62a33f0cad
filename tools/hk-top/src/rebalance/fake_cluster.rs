//! A scripted cluster for the executor's tests, as redis-rs tests its
//! cluster client against a mock of the nodes: three primaries, each with
//! a replica, answering what a run sends (`CLUSTER NODES`/`INFO`,
//! `SETSLOT`, `GETKEYSINSLOT`, `MIGRATE`, `COMMAND INFO`) as Redis 7 does,
//! over one slot map every node agrees on. Faults are scripted to happen
//! right after a command: a failover (`CLUSTER FAILOVER` on the replica:
//! the old primary answers on, as a replica), the run killed (every
//! command after it refused, until [`FakeCluster::revive`]) or signalled.

use super::interrupt::Stop;
use super::link::Link;
use redis::{Cmd, RedisError, RedisResult, Value};
use std::collections::BTreeMap;

pub const SLOTS: usize = 16384;

/// What happens once a command starting with a given text has run.
#[derive(Clone, Copy, Debug)]
pub enum Fault {
    /// The primary `node` (an index) fails over to its replica.
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
    /// Per node, the data set it holds: a replica's is its primary's.
    shard: Vec<usize>,
    owner: Vec<usize>,
    migrating: Vec<BTreeMap<u16, String>>,
    importing: Vec<BTreeMap<u16, String>>,
    /// Key name: its slot and the shard that holds it.
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

fn error(line: &str) -> RedisError {
    match redis::parse_redis_value(format!("-{line}\r\n").as_bytes()).map(Value::extract_error) {
        Ok(Err(e)) | Err(e) => e,
        Ok(Ok(_)) => RedisError::from((redis::ErrorKind::ClientError, "not an error")),
    }
}

impl FakeCluster {
    /// Nodes 0-2 primaries serving a third of the slots each, 3-5 their
    /// replicas; `keys` keys in each of `slots`.
    pub fn new(slots: &[u16], keys: usize) -> FakeCluster {
        let mut cluster = FakeCluster {
            replica_of: vec![None, None, None, Some(0), Some(1), Some(2)],
            shard: vec![0, 1, 2, 0, 1, 2],
            owner: (0..SLOTS).map(|s| s * 3 / SLOTS).collect(),
            migrating: vec![BTreeMap::new(); 6],
            importing: vec![BTreeMap::new(); 6],
            keys: BTreeMap::new(),
            faults: Vec::new(),
            killed: false,
            sent: Vec::new(),
            stop: Stop::never(),
        };
        for &slot in slots {
            let shard = cluster.owner_of(slot);
            for k in 0..keys {
                cluster
                    .keys
                    .insert(format!("{{{slot}}}:{k}"), (slot, shard));
            }
        }
        cluster
    }

    /// `fault` right after the first command that starts with `after`.
    pub fn on(&mut self, after: &str, fault: Fault) {
        self.faults.push((after.to_string(), fault));
    }

    pub fn revive(&mut self) {
        self.killed = false;
    }

    pub fn owner_of(&self, slot: u16) -> usize {
        self.owner.get(usize::from(slot)).copied().unwrap_or(0)
    }

    fn give(&mut self, slot: u16, node: usize) {
        self.owner[usize::from(slot)] = node;
        let shard = self.shard[node];
        (self.keys.values_mut().filter(|(s, _)| *s == slot)).for_each(|k| k.1 = shard);
    }

    /// Is any slot migrating or importing anywhere?
    pub fn half_way(&self) -> bool {
        (self.migrating.iter().chain(&self.importing)).any(|m| !m.is_empty())
    }

    /// The shards holding `slot`'s keys.
    pub fn holders(&self, slot: u16) -> Vec<usize> {
        let mut holders: Vec<usize> = (self.keys.values())
            .filter(|(s, _)| *s == slot)
            .map(|k| k.1)
            .collect();
        holders.dedup();
        holders
    }

    pub fn shard_of(&self, node: usize) -> usize {
        self.shard[node]
    }

    fn fail_over(&mut self, primary: usize) {
        let Some(replica) = self.replica_of.iter().position(|r| *r == Some(primary)) else {
            return;
        };
        self.replica_of[replica] = None;
        self.replica_of[primary] = Some(replica);
        (self.owner.iter_mut().filter(|o| **o == primary)).for_each(|o| *o = replica);
        // Migrating and importing are a node's own: not replicated.
        self.migrating[primary].clear();
        self.importing[primary].clear();
    }

    fn node_at(&self, address: &str) -> Option<usize> {
        (0..self.shard.len()).find(|&n| self::address(n) == address)
    }

    fn node_of(&self, node_id: &str) -> Option<usize> {
        (0..self.shard.len()).find(|&n| id(n) == node_id)
    }

    /// `CLUSTER NODES` as `me` sees it.
    fn listing(&self, me: usize) -> String {
        let mut out = String::new();
        for n in 0..self.shard.len() {
            let role = if self.replica_of[n].is_some() {
                "slave"
            } else {
                "master"
            };
            let flags = if n == me {
                format!("myself,{role}")
            } else {
                role.to_string()
            };
            let primary = self.replica_of[n].map_or("-".to_string(), id);
            let mut line = format!(
                "{} {}@1{} {flags} {primary} 0 0 1 connected",
                id(n),
                address(n),
                7000 + n
            );
            let mut slot = 0;
            while slot < SLOTS {
                let end = (slot..SLOTS)
                    .find(|&s| self.owner[s] != self.owner[slot])
                    .unwrap_or(SLOTS);
                if self.owner[slot] == n {
                    line += &format!(" {slot}-{}", end - 1);
                }
                slot = end;
            }
            if n == me {
                self.migrating[n]
                    .iter()
                    .for_each(|(s, to)| line += &format!(" [{s}->-{to}]"));
                self.importing[n]
                    .iter()
                    .for_each(|(s, from)| line += &format!(" [{s}-<-{from}]"));
            }
            out += &line;
            out.push('\n');
        }
        out
    }

    fn answer(&mut self, n: usize, words: &[String]) -> RedisResult<Value> {
        let word = |i: usize| words.get(i).map_or("", String::as_str);
        let primary = self.replica_of[n].is_none();
        match (word(0), word(1)) {
            ("CLUSTER", "NODES") => Ok(Value::BulkString(self.listing(n).into_bytes())),
            ("CLUSTER", "INFO") => Ok(Value::BulkString(b"cluster_state:ok\r\n".to_vec())),
            ("COMMAND", _) => Ok(Value::Array(vec![Value::Nil])),
            ("CLUSTER", "SETSLOT") if !primary => {
                Err(error("ERR Please use SETSLOT only with masters."))
            }
            ("CLUSTER", "SETSLOT") => {
                let slot: u16 = word(2).parse().unwrap();
                self.setslot(n, slot, word(3), word(4))
            }
            ("CLUSTER", "GETKEYSINSLOT") => {
                let slot: u16 = word(2).parse().unwrap();
                let count: usize = word(3).parse().unwrap();
                let keys = (self.keys.iter())
                    .filter(|(_, &(s, shard))| s == slot && shard == self.shard[n])
                    .take(count)
                    .map(|(k, _)| Value::BulkString(k.as_bytes().to_vec()));
                Ok(Value::Array(keys.collect()))
            }
            ("MIGRATE", _) if !primary => Err(error(
                "READONLY You can't write against a read only replica.",
            )),
            ("MIGRATE", _) => {
                let to = self.node_at(&format!("{}:{}", word(1), word(2))).unwrap();
                if self.replica_of[to].is_some() {
                    return Err(error(
                        "ERR Target instance replied with error: MOVED 1 127.0.0.1:1",
                    ));
                }
                let listed = words.iter().skip_while(|w| *w != "KEYS").skip(1);
                for key in listed {
                    if let Some(k) = self.keys.get_mut(key).filter(|k| k.1 == self.shard[n]) {
                        k.1 = self.shard[to];
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
            "IMPORTING" => drop(self.importing[n].insert(slot, node.to_string())),
            "MIGRATING" if !owns => {
                return Err(error(&format!("ERR I'm not the owner of hash slot {slot}")))
            }
            "MIGRATING" => drop(self.migrating[n].insert(slot, node.to_string())),
            "NODE" => {
                let to = self.node_of(node).unwrap();
                let holds = self
                    .keys
                    .values()
                    .any(|&(s, shard)| s == slot && shard == self.shard[n]);
                if owns && to != n && holds {
                    return Err(error(&format!("ERR Can't assign hashslot {slot} to a different node while I still hold keys for this hash slot.")));
                }
                self.migrating[n].remove(&slot);
                self.importing[n].remove(&slot);
                self.owner[usize::from(slot)] = to;
            }
            _ => {
                self.migrating[n].remove(&slot);
                self.importing[n].remove(&slot);
            }
        }
        Ok(Value::Okay)
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

impl Link for FakeCluster {
    fn run(&mut self, address: &str, cmd: &Cmd) -> RedisResult<Value> {
        let words = words(cmd);
        let line = words.join(" ");
        self.sent.push(format!("{address} {line}"));
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        let Some(n) = self.node_at(address).filter(|_| !self.killed) else {
            return Err(refused.into());
        };
        let reply = self.answer(n, &words);
        if let Some(i) = self
            .faults
            .iter()
            .position(|(after, _)| line.starts_with(after.as_str()))
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
