//! What the planner is given, read from the primaries: each one's slot
//! rates (`HK.HOTSLOTS`, what its tracker counts), the keys in those slots
//! (`CLUSTER COUNTKEYSINSLOT`, what moving a slot copies) and its hottest
//! keys (`HK.HOTKEYS`, for the advice on what no move fixes).

use super::topology::ClusterNode;
use crate::access::Access;
use crate::hot_keys::node_hot_keys;
use crate::metric::Metric;
use crate::slot::key_slot;
use heavykeeper_rebalance::{HotKey, Input, NodeSlots, SlotLoad};
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
        });
        input.hot_keys.extend(hot_keys(&mut con, node.address())?);
    }
    Ok(input)
}

/// `HK.HOTSLOTS` (RESP2: slot, reads/s, writes/s, flat).
pub fn hot_slots(con: &mut redis::Connection) -> RedisResult<Vec<SlotLoad>> {
    let flat: Vec<Value> = redis::cmd("HK.HOTSLOTS").query(con)?;
    let mut slots = Vec::new();
    for row in flat.chunks(3) {
        let [slot, reads, writes] = row else { continue };
        let slot: i64 = redis::from_redis_value(slot)?;
        let Ok(slot) = u16::try_from(slot) else {
            continue;
        };
        slots.push(SlotLoad {
            slot,
            reads_per_second: redis::from_redis_value(reads)?,
            writes_per_second: redis::from_redis_value(writes)?,
            keys: 0,
        });
    }
    Ok(slots)
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
