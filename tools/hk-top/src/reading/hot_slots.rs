//! A cluster node's hash slots by the load they take (`HK.HOTSLOTS`):
//! every access the tracker counts is in its slot's load, hot key or not,
//! so the rows add up to the node's load. The exporter shows the hottest
//! few as series of their own and all of them over the slot range
//! ([`cumulative`]: 64 ranges of 256 slots, each with the reads and writes
//! per second of every slot in it, for a heat map of hot slots). Those
//! series are cumulative (slots numbered up to `le`), as a histogram's
//! buckets are, because that is the shape Grafana's heatmap takes from
//! Prometheus (`format: heatmap` sorts the series by `le` and takes each
//! bucket's difference from the one below). Their number is fixed, 64 per
//! node, whatever the traffic: where hot slots are the `--count` hottest
//! by name, this is all of them, coarsely.
//!
//! (`hk-top rebalance` turns these rows into the planner's types.)

use crate::reading::hot_keys::list;
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
    con: &mut dyn redis::ConnectionLike,
    count: Option<usize>,
    with_bounds: bool,
) -> RedisResult<Option<Vec<SlotRow>>> {
    let answer = list(con, "HK.HOTSLOTS", None, count, with_bounds)
        .and_then(|(flat, with_bounds)| parse(&flat, with_bounds));
    let not_cluster = |d: &str| d.starts_with("HK.HOTSLOTS needs cluster mode");
    match answer {
        Ok(rows) => Ok(Some(rows)),
        Err(e) if e.detail().is_some_and(not_cluster) => Ok(None),
        Err(e) => Err(e),
    }
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
            let bounds = match bounds.next() {
                Some([low, high]) => Some(Bounds {
                    low: number(low)?,
                    high: number(high)?,
                }),
                _ => None,
            };
            rates.add_all(&Rates::bounded(metric, number(rate)?, bounds));
        }
        rows.push(SlotRow { slot, rates });
    }
    Ok(rows)
}

pub const SLOTS: u32 = 16384;
pub const SLOTS_PER_RANGE: u32 = 256;
pub const RANGES: usize = (SLOTS / SLOTS_PER_RANGE) as usize;

/// The last slot of each range (the `le` of its bucket) and the load of
/// every slot up to it, in slot order.
pub fn cumulative(rows: &[SlotRow]) -> Vec<(u32, f64)> {
    let mut per_range = [0.0; RANGES];
    for row in rows {
        let range = u32::from(row.slot()) / SLOTS_PER_RANGE;
        if let Some(load) = per_range.get_mut(range as usize) {
            *load += row.rates().total();
        }
    }
    let mut sum = 0.0;
    (1..)
        .zip(per_range)
        .map(|(nth, load): (u32, f64)| {
            sum += load;
            (nth * SLOTS_PER_RANGE - 1, sum)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::bulk;

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
        let bounds = |low, high| Some(Bounds { low, high });
        assert_eq!(rates.bounds(Metric::Reads), bounds(45.0, 56.0));
        assert_eq!(rates.bounds(Metric::Writes), bounds(1.0, 3.0));
        let plain = parse(&flat[..3], false).unwrap();
        assert_eq!(plain[0].rates().bounds(Metric::Reads), None);
        assert_eq!(plain[0].rates().total(), 52.5);
    }

    #[test]
    fn every_slot_counts_once_in_its_range_and_the_buckets_add_up() {
        let row = |slot, reads| SlotRow::new(slot, Rates::only(Metric::Reads, reads));
        let mut writes = Rates::only(Metric::Reads, 1.0);
        writes.add(Metric::Writes, 2.0);
        let rows = [
            row(0, 10.0),
            row(255, 5.0),
            row(256, 7.0),
            SlotRow::new(16383, writes),
        ];
        let buckets = cumulative(&rows);
        assert_eq!(buckets.len(), 64);
        assert_eq!(buckets[0], (255, 15.0));
        assert_eq!(buckets[1], (511, 22.0));
        assert_eq!(buckets[62], (16127, 22.0));
        assert_eq!(buckets[63], (16383, 25.0));
    }
}
