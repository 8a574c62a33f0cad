//! A node's load over the whole slot range, for a heat map of hot slots:
//! 64 ranges of 256 slots, each with the reads and writes per second of
//! every slot in it. The series are cumulative (slots numbered up to `le`),
//! as a histogram's buckets are, because that is the shape Grafana's
//! heatmap takes from Prometheus (`format: heatmap` sorts the series by
//! `le` and takes each bucket's difference from the one below). Their
//! number is fixed, 64 per node, whatever the traffic: where hot slots
//! are the `--count` hottest by name, this is all of them, coarsely.

use crate::reading::hot_slots::SlotRow;

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
    use crate::reading::metric::{Metric, Rates};

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
