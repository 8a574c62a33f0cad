//! What the planner is given, read from the primaries: each one's slot
//! rates with their 95% bounds (`HK.HOTSLOTS WITHBOUNDS`, what its tracker
//! counts), its whole load with its bounds (`INFO`'s node rates), the keys
//! in those slots (`CLUSTER COUNTKEYSINSLOT`, what moving a slot copies)
//! and its hottest keys (`HK.HOTKEYS`, for the advice on what no move
//! fixes). A module from before the bounds gives the rates alone.

use super::topology::ClusterNode;
use crate::access::Access;
use crate::hot_keys::node_hot_keys;
use crate::metric::Metric;
use crate::slot::key_slot;
use heavykeeper_rebalance::{Bounds, HotKey, Input, LoadBounds, Measured, NodeSlots, SlotLoad};
use redis::{RedisResult, Value};
use std::collections::BTreeMap;

/// Hot keys asked of each primary: enough to find any key above a target
/// (a key above 1/n of the traffic is among the first n of its node).
const HOT_KEYS_PER_NODE: usize = 20;

/// The planner's input for `primaries`, named by address.
pub fn measure(access: &Access, primaries: &[&ClusterNode]) -> RedisResult<Input> {
    let mut input = Input::default();
    for node in primaries {
        let mut con = access.connect(node.address())?;
        let mut slots = hot_slots(&mut con)?;
        // Only the slots it serves now: a row for a slot moved away a
        // moment ago is its last reads fading.
        slots.retain(|s| node.owns(s.slot));
        count_keys(&mut con, &mut slots)?;
        input.nodes.push(NodeSlots {
            node: node.address().to_string(),
            slots,
            measured: measured_totals(&mut con),
        });
        input.hot_keys.extend(hot_keys(&mut con, node.address())?);
    }
    Ok(input)
}

/// `HK.HOTSLOTS WITHBOUNDS` (RESP2, flat: slot, reads/s, writes/s, and
/// the low and high of each), or without bounds from a module that has none.
pub fn hot_slots(con: &mut redis::Connection) -> RedisResult<Vec<SlotLoad>> {
    let (flat, with_bounds) = match redis::cmd("HK.HOTSLOTS").arg("WITHBOUNDS").query(con) {
        Ok(flat) => (flat, true),
        Err(e) if e.detail().is_some_and(|d| d.contains("'WITHBOUNDS'")) => {
            (redis::cmd("HK.HOTSLOTS").query::<Vec<Value>>(con)?, false)
        }
        Err(e) => return Err(e),
    };
    let mut slots = Vec::new();
    for row in flat.chunks(if with_bounds { 7 } else { 3 }) {
        let f =
            |i: usize| -> RedisResult<f64> { row.get(i).map_or(Ok(0.0), redis::from_redis_value) };
        let slot: i64 = match row.first() {
            Some(slot) => redis::from_redis_value(slot)?,
            None => continue,
        };
        let Ok(slot) = u16::try_from(slot) else {
            continue;
        };
        let bounds = (with_bounds && row.len() == 7).then(|| -> RedisResult<LoadBounds> {
            Ok(LoadBounds {
                reads: Bounds {
                    low: f(3)?,
                    high: f(4)?,
                },
                writes: Bounds {
                    low: f(5)?,
                    high: f(6)?,
                },
            })
        });
        slots.push(SlotLoad {
            slot,
            reads_per_second: f(1)?,
            writes_per_second: f(2)?,
            keys: 0,
            bounds: bounds.transpose()?,
        });
    }
    Ok(slots)
}

/// The node's whole load as its tracker measures it, with its bounds
/// (`INFO heavykeeper`; `None` from a module without bounds, or a user
/// that may not run `INFO`).
fn measured_totals(con: &mut redis::Connection) -> Option<Measured> {
    let info: String = redis::cmd("INFO").arg("heavykeeper").query(con).ok()?;
    let field = |name: &str| -> Option<f64> {
        info.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .and_then(|v| v.trim().parse().ok())
    };
    let rate = |name: &str| -> Option<(f64, Bounds)> {
        let prefix = format!("heavykeeper_tracker_{name}_per_second");
        Some((
            field(&prefix)?,
            Bounds {
                low: field(&format!("{prefix}_low"))?,
                high: field(&format!("{prefix}_high"))?,
            },
        ))
    };
    let (reads, reads_bounds) = rate("reads")?;
    let (writes, writes_bounds) = rate("writes")?;
    Some(Measured {
        reads_per_second: reads,
        writes_per_second: writes,
        bounds: LoadBounds {
            reads: reads_bounds,
            writes: writes_bounds,
        },
    })
}

/// Every slot's key count, in one round trip.
fn count_keys(con: &mut redis::Connection, slots: &mut [SlotLoad]) -> RedisResult<()> {
    if slots.is_empty() {
        return Ok(());
    }
    let mut pipe = redis::pipe();
    for s in slots.iter() {
        pipe.cmd("CLUSTER").arg("COUNTKEYSINSLOT").arg(s.slot);
    }
    let counts: Vec<u64> = pipe.query(con)?;
    for (s, n) in slots.iter_mut().zip(counts) {
        s.keys = n;
    }
    Ok(())
}

fn hot_keys(con: &mut redis::Connection, address: &str) -> RedisResult<Vec<HotKey>> {
    let answer = node_hot_keys(con, address, Some(HOT_KEYS_PER_NODE))?;
    // Databases other than 0 do not exist in a cluster; joined per key.
    let mut joined: BTreeMap<Vec<u8>, (f64, f64)> = BTreeMap::new();
    for (id, rates) in answer.rows {
        let entry = joined.entry(id.key).or_default();
        entry.0 += rates.get(Metric::Reads);
        entry.1 += rates.get(Metric::Writes);
    }
    Ok(joined
        .into_iter()
        .map(|(key, (reads, writes))| HotKey {
            slot: key_slot(&key),
            key,
            reads_per_second: reads,
            writes_per_second: writes,
        })
        .collect())
}
