//! One snapshot of the hottest keys across nodes: each node's
//! `HK.HOTKEYS <KIND>` for every [`Metric`], joined per key. In a cluster
//! every key lives on exactly one primary, so the union of the nodes' lists
//! is the cluster's list: nothing is double counted or estimated across
//! nodes.

use crate::access::Access;
use crate::metric::{Metric, Rates};
use crate::nodes::Node;
use redis::{RedisResult, Value};
use std::collections::BTreeMap;

/// A key as one node serves it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KeyId {
    pub node: String,
    pub db: i64,
    pub key: Vec<u8>,
}

/// The tracked keys of every node asked, hottest (by total) first; nodes
/// that could not be read are listed with their error.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    pub nodes: Vec<Node>,
    pub keys: Vec<(KeyId, Rates)>,
    pub errors: Vec<(String, String)>,
}

impl Snapshot {
    /// Why `address` did not answer, if it did not.
    pub fn error_of(&self, address: &str) -> Option<&str> {
        self.errors
            .iter()
            .find(|(node, _)| node == address)
            .map(|(_, e)| e.as_str())
    }
}

/// Every key each node's tracker holds (at most its `track-k`), so that
/// filtering, sorting and cutting to `--count` afterwards are exact. The
/// nodes are asked at once: one slow node delays the snapshot by its
/// timeout, not by its timeout times the nodes behind it.
pub fn snapshot(access: &Access, nodes: &[Node]) -> Snapshot {
    let answers: Vec<RedisResult<Vec<(KeyId, Rates)>>> = std::thread::scope(|scope| {
        let asking: Vec<_> = nodes
            .iter()
            .map(|node| scope.spawn(|| node_rates(access, &node.address)))
            .collect();
        asking
            .into_iter()
            .map(|asked| asked.join().expect("a node's reader panicked"))
            .collect()
    });
    let mut joined: BTreeMap<KeyId, Rates> = BTreeMap::new();
    let mut errors = Vec::new();
    for (node, answer) in nodes.iter().zip(answers) {
        match answer {
            Ok(rows) => {
                for (id, rates) in rows {
                    joined.entry(id).or_default().add_all(&rates);
                }
            }
            Err(e) => errors.push((node.address.clone(), e.to_string())),
        }
    }
    let mut keys: Vec<(KeyId, Rates)> = joined.into_iter().collect();
    keys.sort_by(|a, b| {
        b.1.total()
            .total_cmp(&a.1.total())
            .then_with(|| a.0.cmp(&b.0))
    });
    Snapshot {
        nodes: nodes.to_vec(),
        keys,
        errors,
    }
}

fn node_rates(access: &Access, address: &str) -> RedisResult<Vec<(KeyId, Rates)>> {
    let mut con = access.connect(address)?;
    node_hot_keys(&mut con, address, None)
}

/// `HK.HOTKEYS <KIND> [COUNT n]` of one node for every metric, as rows per
/// key and kind.
pub fn node_hot_keys(
    con: &mut redis::Connection,
    address: &str,
    count: Option<usize>,
) -> RedisResult<Vec<(KeyId, Rates)>> {
    let mut rows = Vec::new();
    for metric in Metric::ALL {
        let mut cmd = redis::cmd("HK.HOTKEYS");
        cmd.arg(metric.hotkeys_kind());
        if let Some(count) = count {
            cmd.arg("COUNT").arg(count);
        }
        let flat: Vec<Value> = cmd.query(con)?;
        for row in flat.chunks(4) {
            let [key, db, rate, _count] = row else {
                continue;
            };
            let id = KeyId {
                node: address.to_string(),
                db: redis::from_redis_value(db)?,
                key: redis::from_redis_value(key)?,
            };
            let rate: f64 = redis::from_redis_value(rate)?;
            rows.push((id, Rates::only(metric, rate)));
        }
    }
    Ok(rows)
}
