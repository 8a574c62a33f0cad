//! The executor's only way to the servers: one command to one node. The
//! migration steps, the reading of the cluster, the measurement and the
//! lease are written against [`Link`], so that what they send is all there
//! is of their I/O, and a scripted `Link` tests them in milliseconds
//! (`fake_cluster.rs`).
//!
//! [`Pool`] waits out what passes: a node that stalls (a fork, a slow
//! disk, `DEBUG SLEEP`), restarts, fails over or is loading answers again
//! within [`Patience`], and the command is sent again on a fresh
//! connection. That is safe because every step of a move can be run twice
//! (`migrate.rs`): a command that timed out may still run on the server,
//! and running it again changes nothing. Past the patience the node's
//! error is the step's: the caller stops between slots, or closes the slot
//! in hand first.

use crate::connection::settings::ConnectionSettings;
use redis::{Cmd, Connection, ConnectionLike, ErrorKind, RedisError, RedisResult, Value};
use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::time::{Duration, Instant};

pub trait Link {
    /// Runs `cmd` on the node at `address` (`host:port`), waiting out what
    /// passes.
    fn run(&mut self, address: &str, cmd: &Cmd) -> RedisResult<Value>;

    /// Runs `cmd` once: reading the cluster as it is, a node that does not
    /// answer now is the answer, not something to wait for.
    fn ask(&mut self, address: &str, cmd: &Cmd) -> RedisResult<Value> {
        self.run(address, cmd)
    }
}

/// One node through a [`Link`] ([`Link::ask`]) as redis-rs's
/// `ConnectionLike`: what reads a node with `cmd.query(con)` reads it
/// through the link. Commands only: a pipeline (packed bytes) is refused.
pub struct At<'a> {
    pub link: &'a mut dyn Link,
    pub address: &'a str,
}

impl ConnectionLike for At<'_> {
    fn req_command(&mut self, cmd: &Cmd) -> RedisResult<Value> {
        self.link.ask(self.address, cmd)
    }

    fn req_packed_command(&mut self, _: &[u8]) -> RedisResult<Value> {
        no_pipelines()
    }

    fn req_packed_commands(&mut self, _: &[u8], _: usize, _: usize) -> RedisResult<Vec<Value>> {
        no_pipelines()
    }

    fn get_db(&self) -> i64 {
        0
    }

    fn check_connection(&mut self) -> bool {
        true
    }

    fn is_open(&self) -> bool {
        true
    }
}

fn no_pipelines<T>() -> RedisResult<T> {
    Err((
        ErrorKind::ClientError,
        "a Link sends commands, not pipelines",
    )
        .into())
}

/// How long a node that stopped answering is waited for, and how long one
/// reply may take (past it the connection is dropped and the command sent
/// again).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Patience {
    pub wait: Duration,
    pub reply: Duration,
}

/// Hears each node a pool starts waiting for, and why.
type OnWait = Box<dyn FnMut(&str, &RedisError) + Send>;

/// One connection per node, opened on first use and again after an error
/// that may pass.
pub struct Pool {
    connection: ConnectionSettings,
    patience: Patience,
    connections: HashMap<String, Connection>,
    on_wait: OnWait,
}

/// Between two tries: doubling, at most this.
const MOST_BETWEEN_TRIES: Duration = Duration::from_secs(2);

impl Pool {
    pub fn new(connection: &ConnectionSettings, patience: Patience) -> Self {
        Pool {
            connection: connection.clone(),
            patience,
            connections: HashMap::new(),
            on_wait: Box::new(|_, _| {}),
        }
    }

    /// `on_wait(address, error)` hears each wait as it begins.
    pub fn on_wait(mut self, on_wait: impl FnMut(&str, &RedisError) + Send + 'static) -> Self {
        self.on_wait = Box::new(on_wait);
        self
    }

    fn once(&mut self, address: &str, cmd: &Cmd) -> RedisResult<Value> {
        let con = match self.connections.entry(address.to_string()) {
            Entry::Occupied(open) => open.into_mut(),
            Entry::Vacant(none) => none.insert(
                self.connection
                    .connect_waiting(address, self.patience.reply)?,
            ),
        };
        let reply = cmd.query::<Value>(con);
        if reply.as_ref().is_err_and(may_pass) {
            // Whatever the connection was in the middle of is lost with it.
            self.connections.remove(address);
        }
        reply
    }
}

impl Link for Pool {
    fn ask(&mut self, address: &str, cmd: &Cmd) -> RedisResult<Value> {
        self.once(address, cmd)
    }

    fn run(&mut self, address: &str, cmd: &Cmd) -> RedisResult<Value> {
        let deadline = Instant::now() + self.patience.wait;
        let mut pause = Duration::from_millis(100);
        let mut waiting = false;
        loop {
            let reply = self.once(address, cmd);
            let Err(e) = &reply else {
                return reply;
            };
            if !may_pass(e) {
                return reply;
            }
            if e.kind() == ErrorKind::IoError && interrupted(e) {
                continue;
            }
            if Instant::now() + pause > deadline {
                return reply;
            }
            if !waiting {
                waiting = true;
                (self.on_wait)(address, e);
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(MOST_BETWEEN_TRIES);
        }
    }
}

/// An error that says nothing of the command: the node is unreachable,
/// slow, restarting, loading, failing over, or a call was interrupted.
pub fn may_pass(e: &RedisError) -> bool {
    e.is_io_error()
        || e.is_timeout()
        || e.is_connection_dropped()
        || e.is_connection_refusal()
        || matches!(
            e.kind(),
            ErrorKind::TryAgain
                | ErrorKind::ClusterDown
                | ErrorKind::BusyLoadingError
                | ErrorKind::MasterDown
        )
        // MIGRATE's own: the source could not reach the target in time.
        || e.code() == Some("IOERR")
}

/// Does the node have the command `name` (`COMMAND INFO`)?
pub fn has_command(link: &mut dyn Link, address: &str, name: &str) -> bool {
    let mut cmd = redis::cmd("COMMAND");
    cmd.arg("INFO").arg(name);
    matches!(link.ask(address, &cmd), Ok(Value::Array(items)) if items.first().is_some_and(|i| *i != Value::Nil))
}

fn interrupted(e: &RedisError) -> bool {
    std::error::Error::source(e)
        .and_then(|s| s.downcast_ref::<std::io::Error>())
        .is_some_and(|io| io.kind() == std::io::ErrorKind::Interrupted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_may_pass_is_the_nodes_state_not_the_commands_fault() {
        let io = |kind| RedisError::from(std::io::Error::new(kind, "x"));
        assert!(may_pass(&io(std::io::ErrorKind::Interrupted)));
        assert!(may_pass(&io(std::io::ErrorKind::WouldBlock)));
        assert!(may_pass(&io(std::io::ErrorKind::ConnectionRefused)));
        assert!(interrupted(&io(std::io::ErrorKind::Interrupted)));
        // As the server sends them.
        let reply = |line: &str| {
            redis::parse_redis_value(format!("-{line}\r\n").as_bytes())
                .and_then(Value::extract_error)
                .unwrap_err()
        };
        for (line, passes) in [
            (
                "TRYAGAIN Multiple keys request during rehashing of slot",
                true,
            ),
            ("LOADING Redis is loading the dataset in memory", true),
            ("CLUSTERDOWN The cluster is down", true),
            ("IOERR error or timeout reading to target instance", true),
            ("ERR I'm not the owner of hash slot 7", false),
            ("BUSYKEY Target key name already exists.", false),
            ("MOVED 7 127.0.0.1:7001", false),
        ] {
            assert_eq!(may_pass(&reply(line)), passes, "{line}");
        }
    }
}
