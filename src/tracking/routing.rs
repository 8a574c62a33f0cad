//! On a cluster node, which commands the node will run: the filter sees a
//! command before the server redirects it, so without this a client that
//! sends another node's keys here (answered `MOVED`) would make this node
//! look loaded with slots it does not serve. The rules are
//! [`heavykeeper_tracker::server::hash_slot_map::HashSlotMap`]'s; this keeps the map fresh and
//! remembers who sent `ASKING`.
//!
//! Fresh: `CLUSTER INFO` is read every tick (its epoch moves whenever
//! slots change owner anywhere), `CLUSTER NODES` when the epoch moved,
//! after a `CLUSTER` command the filter saw, and every second regardless.
//! Between a move and the next tick (100 ms) a key of a slot just moved may
//! still be counted where it was.

use heavykeeper_tracker::server::hash_slot_map::HashSlotMap;
use redis_module::{Context, RedisValue};

/// Ticks between readings of `CLUSTER NODES` when nothing says it changed.
const NODES_EVERY_TICKS: u64 = 10;

#[derive(Default)]
pub struct Routing {
    map: Option<HashSlotMap>,
    /// `cluster_current_epoch` when the map was read.
    epoch: Option<u64>,
    stale: bool,
    ticks: u64,
    /// The client whose last command was `ASKING` (`Some(None)` on Redis
    /// 7.0, where the filter does not say whose: the next command).
    asking: Option<Option<u64>>,
}

impl Routing {
    /// What the node serves, once read (`None` outside a cluster, or
    /// before the first reading: then everything counts).
    #[inline]
    pub fn map(&self) -> Option<&HashSlotMap> {
        self.map.as_ref()
    }

    /// The hash slots this node is taken to serve, and whether the cluster
    /// was `ok` when last read (`None` before the map was first read).
    pub fn served(&self) -> Option<(usize, bool)> {
        let map = self.map.as_ref()?;
        Some((map.served(), map.cluster_ok()))
    }

    /// Unit tests: the map as if read from the server.
    #[cfg(test)]
    pub fn set_map(&mut self, map: HashSlotMap) {
        self.map = Some(map);
    }

    /// A `CLUSTER` command went by: read the map again at the next tick.
    pub fn may_have_changed(&mut self) {
        self.stale = true;
    }

    /// `client` sent `ASKING`: its next command may use a slot being
    /// imported.
    pub fn asking(&mut self, client: Option<u64>) {
        self.asking = Some(client);
    }

    /// Did `client` send `ASKING` just before this command? (Asked once per
    /// command: it counts for one command only.)
    #[inline]
    pub fn take_asking(&mut self, client: Option<u64>) -> bool {
        self.asking.take().is_some_and(|asker| asker == client)
    }

    /// Every tick: the map, read again if need be.
    pub fn tick(&mut self, ctx: &Context) {
        self.ticks += 1;
        let Some((ok, epoch)) = cluster_info(ctx) else {
            return;
        };
        if let Some(map) = self.map.as_mut() {
            map.set_cluster_ok(ok);
        }
        let due = self.stale
            || self.map.is_none()
            || self.epoch != Some(epoch)
            || self.ticks % NODES_EVERY_TICKS == 0;
        if !due {
            return;
        }
        let Some(nodes) = ctx.call("CLUSTER", &["NODES"]).ok().as_ref().and_then(text) else {
            return;
        };
        let reads_when_down = config_yes(ctx, "cluster-allow-reads-when-down");
        if let Some(map) = HashSlotMap::from_nodes(&nodes, ok, reads_when_down) {
            self.map = Some(map);
            self.epoch = Some(epoch);
            self.stale = false;
        }
    }
}

/// `cluster_state` is `ok`, and `cluster_current_epoch`.
fn cluster_info(ctx: &Context) -> Option<(bool, u64)> {
    let info = ctx
        .call("CLUSTER", &["INFO"])
        .ok()
        .as_ref()
        .and_then(text)?;
    let field = |name: &str| {
        info.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .map(str::trim)
    };
    let ok = field("cluster_state")? == "ok";
    let epoch = field("cluster_current_epoch")?.parse().ok()?;
    Some((ok, epoch))
}

/// A config that is `yes`.
fn config_yes(ctx: &Context, name: &str) -> bool {
    match ctx.call("CONFIG", &["GET", name]) {
        Ok(RedisValue::Array(pair)) => pair.get(1).and_then(text).is_some_and(|v| v == "yes"),
        _ => false,
    }
}

/// A reply's text (bulk, simple or verbatim).
pub fn text(reply: &RedisValue) -> Option<String> {
    match reply {
        RedisValue::SimpleString(s) | RedisValue::BulkString(s) => Some(s.clone()),
        RedisValue::BulkRedisString(s) => s.try_as_str().ok().map(str::to_string),
        RedisValue::StringBuffer(b) => String::from_utf8(b.clone()).ok(),
        RedisValue::VerbatimString((_, b)) => String::from_utf8(b.clone()).ok(),
        _ => None,
    }
}
