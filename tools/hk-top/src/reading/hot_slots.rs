//! A cluster node's hash slots by the load they take (`HK.HOTSLOTS`):
//! every access the tracker counts is in its slot's load, hot key or not,
//! so the rows add up to the node's load. The exporter shows the hottest
//! few as series of their own and all of them over the slot range
//! ([`crate::reading::slot_ranges`]).
//!
//! (`hk-top rebalance` reads the same command into the planner's types;
//! this is the exporter's reading, in hk-top's own [`Rates`].)

use crate::reading::hot_keys::is_without_bounds;
use crate::reading::metric::{Bounds, Metric, Rates};
use redis::{RedisResult, Value};

/// One slot's reads and writes per second, with their bounds where asked
/// for and given.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SlotRow {
    slot: u16,
    rates: Rates,
}

impl SlotRow {
    #[cfg(test)]
    pub fn new(slot: u16, rates: Rates) -> Self {
        SlotRow { slot, rates }
    }

    pub fn slot(&self) -> u16 {
        self.slot
    }

    /// Reads and writes (the only metrics a slot has).
    pub fn rates(&self) -> &Rates {
        &self.rates
    }
}

/// `HK.HOTSLOTS [COUNT n] [WITHBOUNDS]`: the node's slots, hottest first
/// (every slot with any load without `count`); `None` from a node outside
/// a cluster, which has no slots: not a failure.
pub fn node_hot_slots(
    con: &mut redis::Connection,
    count: Option<usize>,
    with_bounds: bool,
) -> RedisResult<Option<Vec<SlotRow>>> {
    let answer = match ask(con, count, with_bounds) {
        Err(e) if with_bounds && is_without_bounds(&e) => {
            // A module from before WITHBOUNDS: the rates alone.
            ask(con, count, false).and_then(|flat| parse(&flat, false))
        }
        Ok(flat) => parse(&flat, with_bounds),
        Err(e) => Err(e),
    };
    match answer {
        Ok(rows) => Ok(Some(rows)),
        Err(e) if is_not_cluster(&e) => Ok(None),
        Err(e) => Err(e),
    }
}

fn ask(
    con: &mut redis::Connection,
    count: Option<usize>,
    with_bounds: bool,
) -> RedisResult<Vec<Value>> {
    let mut cmd = redis::cmd("HK.HOTSLOTS");
    if let Some(count) = count {
        cmd.arg("COUNT").arg(count);
    }
    if with_bounds {
        cmd.arg("WITHBOUNDS");
    }
    cmd.query(con)
}

/// RESP2's flat `slot, reads, writes[, reads low, reads high, writes low,
/// writes high]` rows.
fn parse(flat: &[Value], with_bounds: bool) -> RedisResult<Vec<SlotRow>> {
    let width = if with_bounds { 7 } else { 3 };
    let number = |value: &Value| -> RedisResult<f64> { redis::from_redis_value(value) };
    let mut rows = Vec::new();
    // A short row at the end is left out, as an odd reply.
    for row in flat.chunks_exact(width) {
        let [slot, reads, writes, bounds @ ..] = row else {
            continue;
        };
        let slot: i64 = redis::from_redis_value(slot)?;
        let Ok(slot) = u16::try_from(slot) else {
            continue;
        };
        // With bounds, reads' low and high come first, then writes'.
        let mut bounds = bounds.chunks_exact(2);
        let mut rates = Rates::default();
        for (metric, rate) in [(Metric::Reads, reads), (Metric::Writes, writes)] {
            let rate = number(rate)?;
            rates.add_all(&match bounds.next() {
                Some([low, high]) => {
                    let bounds = Bounds {
                        low: number(low)?,
                        high: number(high)?,
                    };
                    Rates::bounded(metric, rate, bounds)
                }
                _ => Rates::only(metric, rate),
            });
        }
        rows.push(SlotRow { slot, rates });
    }
    Ok(rows)
}

fn is_not_cluster(e: &redis::RedisError) -> bool {
    e.detail()
        .is_some_and(|d| d.starts_with("HK.HOTSLOTS needs cluster mode"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(text: &str) -> Value {
        Value::BulkString(text.as_bytes().to_vec())
    }

    #[test]
    fn rows_with_and_without_bounds() {
        let flat = vec![
            Value::Int(866),
            bulk("50.5"),
            bulk("2"),
            bulk("45"),
            bulk("56"),
            bulk("1"),
            bulk("3"),
        ];
        let rows = parse(&flat, true).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].slot(), 866);
        let rates = rows[0].rates();
        assert_eq!(rates.get(Metric::Reads), 50.5);
        assert_eq!(rates.get(Metric::Writes), 2.0);
        assert_eq!(
            rates.bounds(Metric::Reads),
            Some(Bounds {
                low: 45.0,
                high: 56.0
            })
        );
        assert_eq!(
            rates.bounds(Metric::Writes),
            Some(Bounds {
                low: 1.0,
                high: 3.0
            })
        );
        let plain = parse(&flat[..3], false).unwrap();
        assert_eq!(plain[0].rates().bounds(Metric::Reads), None);
        assert_eq!(plain[0].rates().total(), 52.5);
    }
}
