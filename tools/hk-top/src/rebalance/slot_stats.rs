//! Measuring a cluster without the heavykeeper module: the servers' own
//! per-slot statistics (`CLUSTER SLOT-STATS`, Valkey 8+ and Redis 8.2+,
//! with `cluster-slot-stats-enabled yes`). Their `cpu-usec` and
//! `network-bytes-in`/`-out` are counters since the slot came to the node
//! (or since `CONFIG RESETSTAT`), so a rate is two readings apart: the
//! difference over the time between them. A slot that moved in between
//! starts again from 0 on its new node; its rate there counts from then.
//! `key-count` is what moving the slot copies.

use super::error::Error;
use super::link::Link;
use super::topology::ClusterNode;
use heavykeeper_rebalance::{Input, NodeSlots, SlotLoad, SlotStats};
use redis::Value;
use std::collections::BTreeMap;
use std::time::Instant;

/// One slot's counters at one reading.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Counters {
    keys: u64,
    cpu_usec: f64,
    network_bytes: f64,
}

/// Every primary's counters at one moment.
#[derive(Clone, Debug)]
pub struct Reading {
    at: Instant,
    nodes: BTreeMap<String, BTreeMap<u16, Counters>>,
}

/// Every primary's slot counters now.
pub fn read(link: &mut dyn Link, primaries: &[&ClusterNode]) -> Result<Reading, Error> {
    let mut nodes = BTreeMap::new();
    for node in primaries {
        let address = node.address.as_str();
        let mut cmd = redis::cmd("CLUSTER");
        cmd.arg("SLOT-STATS").arg("SLOTSRANGE").arg(0).arg(16383);
        let reply =
            (link.ask(address, &cmd)).map_err(|e| Error::node(address, "CLUSTER SLOT-STATS", e))?;
        let slots = parse(&reply);
        if slots.is_empty() && !node.slots.is_empty() {
            return Err(Error::node(
                address,
                "CLUSTER SLOT-STATS",
                "no slot in the reply",
            ));
        }
        if !has_cpu(&reply) {
            return Err(Error::Unfit(format!(
                "{address} keeps no per-slot CPU or network counts: run CONFIG SET cluster-slot-stats-enabled yes on every primary (and set it in their configuration files), then measure again"
            )));
        }
        let owned = slots.into_iter().filter(|(slot, _)| node.owns(*slot));
        nodes.insert(address.to_string(), owned.collect());
    }
    Ok(Reading {
        at: Instant::now(),
        nodes,
    })
}

/// The rates between two readings, per primary of the later one.
pub fn rates(before: &Reading, after: &Reading) -> Input {
    let seconds = after.at.duration_since(before.at).as_secs_f64().max(1e-3);
    let mut input = Input::default();
    for (node, slots) in &after.nodes {
        let earlier = before.nodes.get(node);
        let slots = (slots.iter())
            .map(|(&slot, now)| {
                // A slot new to the node (or counters reset) counts from 0.
                let then = (earlier.and_then(|e| e.get(&slot)))
                    .filter(|t| t.cpu_usec <= now.cpu_usec && t.network_bytes <= now.network_bytes)
                    .copied()
                    .unwrap_or_default();
                SlotLoad {
                    slot,
                    keys: now.keys,
                    stats: SlotStats {
                        cpu_usec: (now.cpu_usec - then.cpu_usec) / seconds,
                        network_bytes: (now.network_bytes - then.network_bytes) / seconds,
                    },
                    ..SlotLoad::default()
                }
            })
            .filter(|s| s.stats.cpu_usec > 0.0 || s.stats.network_bytes > 0.0 || s.keys > 0)
            .collect();
        input.nodes.push(NodeSlots {
            node: node.clone(),
            slots,
            measured: None,
        });
    }
    input
}

/// `[[slot, stats], ...]`, the stats a map (RESP3) or flat pairs (RESP2),
/// whatever fields the server has (Redis 8.4 adds `memory-bytes`).
fn parse(reply: &Value) -> Vec<(u16, Counters)> {
    let Value::Array(rows) = reply else {
        return Vec::new();
    };
    rows.iter()
        .filter_map(|row| {
            let Value::Array(pair) = row else { return None };
            let slot = match pair.first()? {
                Value::Int(s) => u16::try_from(*s).ok().filter(|s| *s < 16384)?,
                _ => return None,
            };
            let fields = fields(pair.get(1)?);
            let get = |name: &str| fields.iter().find(|(k, _)| k == name).map(|(_, v)| *v);
            Some((
                slot,
                Counters {
                    keys: get("key-count").unwrap_or(0) as u64,
                    cpu_usec: get("cpu-usec").unwrap_or(0) as f64,
                    network_bytes: (get("network-bytes-in").unwrap_or(0)
                        + get("network-bytes-out").unwrap_or(0))
                        as f64,
                },
            ))
        })
        .collect()
}

fn fields(stats: &Value) -> Vec<(String, i64)> {
    let pair = |k: &Value, v: &Value| -> Option<(String, i64)> {
        let name = match k {
            Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
            Value::SimpleString(s) => s.clone(),
            _ => return None,
        };
        match v {
            Value::Int(i) => Some((name, *i)),
            _ => None,
        }
    };
    match stats {
        Value::Map(map) => map.iter().filter_map(|(k, v)| pair(k, v)).collect(),
        Value::Array(flat) => (flat.chunks(2))
            .filter_map(|p| pair(p.first()?, p.get(1)?))
            .collect(),
        _ => Vec::new(),
    }
}

/// Does the reply carry `cpu-usec` (off unless `cluster-slot-stats-enabled`)?
fn has_cpu(reply: &Value) -> bool {
    let Value::Array(rows) = reply else {
        return false;
    };
    match rows.first() {
        // A node with no slot says nothing either way.
        None => true,
        Some(Value::Array(pair)) => pair
            .get(1)
            .is_some_and(|stats| fields(stats).iter().any(|(k, _)| k == "cpu-usec")),
        Some(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::bulk;
    use std::time::Duration;

    #[test]
    fn both_protocols_and_any_field_set_read_alike() {
        // RESP2 from Valkey 9.1 with the statistics on; RESP3 from a Redis
        // with memory-bytes; a reply with the statistics off.
        let stats = [
            ("key-count", 3),
            ("cpu-usec", 11),
            ("network-bytes-in", 80),
            ("network-bytes-out", 27),
        ];
        let flat = |stats: &[(&str, i64)]| {
            Value::Array(
                stats
                    .iter()
                    .flat_map(|&(k, v)| [bulk(k), Value::Int(v)])
                    .collect(),
            )
        };
        let row = |stats: Value| Value::Array(vec![Value::Array(vec![Value::Int(7), stats])]);
        let resp2 = row(flat(&stats));
        let mut with_memory = stats.to_vec();
        with_memory.insert(1, ("memory-bytes", 4096));
        let map = with_memory.iter().map(|&(k, v)| (bulk(k), Value::Int(v)));
        let resp3 = row(Value::Map(map.collect()));
        let counters = Counters {
            keys: 3,
            cpu_usec: 11.0,
            network_bytes: 107.0,
        };
        assert_eq!(parse(&resp2), [(7, counters)]);
        assert_eq!(parse(&resp3), [(7, counters)]);
        assert!(has_cpu(&resp2) && has_cpu(&resp3));
        let off = row(flat(&[("key-count", 3)]));
        assert!(!has_cpu(&off));
        assert_eq!(parse(&Value::Int(1)), []);
    }

    #[test]
    fn rates_are_differences_and_a_slot_new_to_a_node_counts_from_zero() {
        let at = Instant::now();
        let reading = |at, cpu: f64| Reading {
            at,
            nodes: BTreeMap::from([(
                "a:1".to_string(),
                BTreeMap::from([(
                    1,
                    Counters {
                        keys: 5,
                        cpu_usec: cpu,
                        network_bytes: 10.0 * cpu,
                    },
                )]),
            )]),
        };
        let later = at + Duration::from_secs(2);
        let input = rates(&reading(at, 100.0), &reading(later, 300.0));
        let slot = &input.nodes[0].slots[0];
        assert_eq!((slot.slot, slot.keys), (1, 5));
        assert!((slot.stats.cpu_usec - 100.0).abs() < 1e-9);
        assert!((slot.stats.network_bytes - 1000.0).abs() < 1e-9);
        // Counters that went down were reset: the later reading is the rate's whole.
        let input = rates(&reading(at, 500.0), &reading(later, 300.0));
        assert!((input.nodes[0].slots[0].stats.cpu_usec - 150.0).abs() < 1e-9);
    }
}
