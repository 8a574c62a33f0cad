//! The executor's only way to the servers: one command to one node. The
//! migration steps are written against [`Link`], so that what they send is
//! all there is of their I/O.

use crate::access::Access;
use redis::{Cmd, Connection, RedisResult, Value};
use std::collections::hash_map::Entry;
use std::collections::HashMap;

pub trait Link {
    /// Runs `cmd` on the node at `address` (`host:port`).
    fn run(&mut self, address: &str, cmd: &Cmd) -> RedisResult<Value>;
}

/// One connection per node, opened on first use and again after an I/O
/// error (a node that restarted, a timeout).
pub struct Pool {
    access: Access,
    connections: HashMap<String, Connection>,
}

impl Pool {
    pub fn new(access: &Access) -> Self {
        Pool {
            access: access.clone(),
            connections: HashMap::new(),
        }
    }
}

impl Link for Pool {
    fn run(&mut self, address: &str, cmd: &Cmd) -> RedisResult<Value> {
        let con = match self.connections.entry(address.to_string()) {
            Entry::Occupied(open) => open.into_mut(),
            Entry::Vacant(none) => none.insert(self.access.connect(address)?),
        };
        let reply = cmd.query::<Value>(con);
        if let Err(e) = &reply {
            if e.is_io_error() || e.is_timeout() || e.is_connection_dropped() {
                self.connections.remove(address);
            }
        }
        reply
    }
}
