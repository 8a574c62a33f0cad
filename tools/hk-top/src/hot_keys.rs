//! One snapshot of the hottest keys across nodes: each node's
//! `HK.HOTKEYS READS` and `HK.HOTKEYS WRITES`, joined per key. In a cluster
//! every key lives on exactly one primary, so the union of the nodes' lists
//! is the cluster's list: nothing is double counted or estimated across
//! nodes.

use crate::access::Access;
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

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Rates {
    pub reads_per_second: f64,
    pub writes_per_second: f64,
}

impl Rates {
    pub fn total(&self) -> f64 {
        self.reads_per_second + self.writes_per_second
    }
}

/// The hottest keys of every node, hottest first; nodes that could not be
/// read are listed with their error.
pub struct Snapshot {
    pub keys: Vec<(KeyId, Rates)>,
    pub errors: Vec<(String, String)>,
}

pub fn snapshot(access: &Access, nodes: &[Node], count: usize) -> Snapshot {
    let mut joined: BTreeMap<KeyId, Rates> = BTreeMap::new();
    let mut errors = Vec::new();
    for node in nodes {
        match node_rates(access, &node.address, count) {
            Ok(rows) => {
                for (id, rates) in rows {
                    let entry = joined.entry(id).or_default();
                    entry.reads_per_second += rates.reads_per_second;
                    entry.writes_per_second += rates.writes_per_second;
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
    keys.truncate(count);
    Snapshot { keys, errors }
}

fn node_rates(access: &Access, address: &str, count: usize) -> RedisResult<Vec<(KeyId, Rates)>> {
    let mut con = access.connect(address)?;
    node_hot_keys(&mut con, address, count)
}

/// `HK.HOTKEYS READS` and `WRITES` of one node, as rows per key and kind.
pub fn node_hot_keys(
    con: &mut redis::Connection,
    address: &str,
    count: usize,
) -> RedisResult<Vec<(KeyId, Rates)>> {
    let mut rows = Vec::new();
    for (kind, is_read) in [("READS", true), ("WRITES", false)] {
        let flat: Vec<Value> = redis::cmd("HK.HOTKEYS")
            .arg(kind)
            .arg("COUNT")
            .arg(count)
            .query(con)?;
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
            let rates = if is_read {
                Rates {
                    reads_per_second: rate,
                    ..Rates::default()
                }
            } else {
                Rates {
                    writes_per_second: rate,
                    ..Rates::default()
                }
            };
            rows.push((id, rates));
        }
    }
    Ok(rows)
}
