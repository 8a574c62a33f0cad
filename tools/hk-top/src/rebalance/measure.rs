//! What the planner is given, read from the primaries: each one's slot
//! rates with their 95% bounds (`HK.HOTSLOTS WITHBOUNDS`, what its tracker
//! counts), its whole load with its bounds (`INFO`'s node rates), the keys
//! in those slots (`CLUSTER COUNTKEYSINSLOT`, what moving a slot copies)
//! and its hottest keys (`HK.HOTKEYS`, for the advice on what no move
//! fixes). A module from before the bounds gives the rates alone.

use super::error::Error;
use super::link::{has_command, At, Link};
use super::slot_stats;
use super::topology::ClusterNode;
use crate::reading::hot_keys::{node_hot_keys, tracker_totals};
use crate::reading::hot_slots::node_hot_slots;
use crate::reading::metric::{Metric, Rates};
use heavykeeper_rebalance::{
    Bounds, HotKey, Input, LoadBounds, Measured, NodeSlots, SlotLoad, SlotStats,
};
use heavykeeper_tracker::hash_slot::hash_slot;
use redis::{ConnectionLike, RedisResult};
use std::collections::BTreeMap;
use std::time::Instant;

/// Hot keys asked of each primary: enough to find any key above a target
/// (a key above 1/n of the traffic is among the first n of its node).
const HOT_KEYS_PER_NODE: usize = 20;

/// Where the slot rates come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The heavykeeper tracker on every primary (`HK.HOTSLOTS`).
    Module,
    /// The servers' own `CLUSTER SLOT-STATS`.
    SlotStats,
}

impl Source {
    pub fn name(self) -> &'static str {
        match self {
            Source::Module => "module",
            Source::SlotStats => "slot-stats",
        }
    }

    pub fn parse(name: &str) -> Option<Source> {
        [Source::Module, Source::SlotStats]
            .into_iter()
            .find(|s| s.name() == name)
    }
}

/// The source to measure with: `asked`, or the module where every primary
/// has it, else the servers' slot statistics where they have them.
pub fn choose_source(
    link: &mut dyn Link,
    primaries: &[&ClusterNode],
    asked: Option<Source>,
) -> Result<Source, Error> {
    let mut module_everywhere = true;
    let mut stats_everywhere = true;
    for node in primaries {
        module_everywhere &= has_command(link, &node.address, "HK.HOTSLOTS");
        stats_everywhere &= has_command(link, &node.address, "CLUSTER|SLOT-STATS");
    }
    match asked {
        Some(Source::Module) if !module_everywhere => Err(Error::Usage(
            "--source module: not every primary has the heavykeeper module loaded".into(),
        )),
        Some(Source::SlotStats) if !stats_everywhere => Err(Error::Usage(
            "--source slot-stats: not every primary has CLUSTER SLOT-STATS (Valkey 8+, Redis 8.2+)".into(),
        )),
        Some(source) => Ok(source),
        None if module_everywhere => Ok(Source::Module),
        None if stats_everywhere => Ok(Source::SlotStats),
        None => Err(Error::Unfit(
            "nothing measures the slots' load: load the heavykeeper module on every primary (heavykeeper.track yes), or use a server with CLUSTER SLOT-STATS (Valkey 8+, Redis 8.2+) and cluster-slot-stats-enabled yes".into(),
        )),
    }
}

/// Measures the slots' load, round after round.
pub struct Meter {
    source: Source,
    window: std::time::Duration,
    /// The servers' slot statistics as last read: the next rates start there.
    last: Option<slot_stats::Reading>,
    /// The slots' statistics over the window before, to rank them by (see
    /// `SlotLoad::earlier`).
    earlier: BTreeMap<u16, SlotStats>,
}

impl Meter {
    pub fn new(source: Source, window: std::time::Duration) -> Meter {
        Meter {
            source,
            window,
            last: None,
            earlier: BTreeMap::new(),
        }
    }

    /// The planner's input now: the trackers' rates, or the slot
    /// statistics' since the last reading, ranked by the window before (the
    /// first time, one window split in two; `stop` cuts the wait short).
    pub fn input(
        &mut self,
        link: &mut dyn Link,
        primaries: &[&ClusterNode],
        stop: &dyn Fn() -> bool,
    ) -> Result<Input, Error> {
        match self.source {
            Source::Module => measure(link, primaries)
                .map_err(|e| Error::Unfit(format!("measuring the slots: {e}"))),
            Source::SlotStats => {
                let before = match self.last.take() {
                    Some(reading) => reading,
                    None => {
                        let first = slot_stats::read(link, primaries)?;
                        wait_until(Instant::now() + self.window / 2, stop);
                        let half = slot_stats::read(link, primaries)?;
                        self.earlier = per_slot(&slot_stats::rates(&first, &half));
                        wait_until(Instant::now() + self.window / 2, stop);
                        half
                    }
                };
                let now = slot_stats::read(link, primaries)?;
                let mut input = slot_stats::rates(&before, &now);
                let ranked_by = std::mem::replace(&mut self.earlier, per_slot(&input));
                for slot in input.nodes.iter_mut().flat_map(|n| n.slots.iter_mut()) {
                    slot.earlier = Some(ranked_by.get(&slot.slot).copied().unwrap_or_default());
                }
                self.last = Some(now);
                Ok(input)
            }
        }
    }
}

/// Waits until `until`, or until `stop` says so (a signal cuts it short).
pub fn wait_until(until: Instant, stop: &dyn Fn() -> bool) {
    while Instant::now() < until && !stop() {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

fn per_slot(input: &Input) -> BTreeMap<u16, SlotStats> {
    (input.nodes.iter().flat_map(|n| n.slots.iter()))
        .map(|s| (s.slot, s.stats))
        .collect()
}

/// The planner's input for `primaries`, named by address, from their
/// trackers.
pub fn measure(link: &mut dyn Link, primaries: &[&ClusterNode]) -> RedisResult<Input> {
    let mut input = Input::default();
    for node in primaries {
        let mut con = At {
            link: &mut *link,
            address: &node.address,
        };
        let mut slots = hot_slots(&mut con)?;
        // Only the slots it serves now: a row for a slot moved away a
        // moment ago is its last reads fading.
        slots.retain(|s| node.owns(s.slot));
        count_keys(&mut con, &mut slots)?;
        input.nodes.push(NodeSlots {
            node: node.address.clone(),
            slots,
            measured: measured_totals(&mut con),
        });
        input.hot_keys.extend(hot_keys(&mut con, &node.address)?);
    }
    Ok(input)
}

/// `HK.HOTSLOTS WITHBOUNDS` (or without bounds, from a module that has
/// none) as the planner's slot loads.
fn hot_slots(con: &mut dyn ConnectionLike) -> RedisResult<Vec<SlotLoad>> {
    let rows = node_hot_slots(con, None, true)?.unwrap_or_default();
    let slots = rows.iter().map(|row| SlotLoad {
        slot: row.slot(),
        reads_per_second: row.rates().get(Metric::Reads),
        writes_per_second: row.rates().get(Metric::Writes),
        bounds: load_bounds(row.rates()),
        ..SlotLoad::default()
    });
    Ok(slots.collect())
}

/// The node's whole load as its tracker measures it, with its bounds
/// (`INFO heavykeeper`; `None` from a module without bounds, or a user
/// that may not run `INFO`).
fn measured_totals(con: &mut dyn ConnectionLike) -> Option<Measured> {
    let rates = tracker_totals(con)?;
    Some(Measured {
        reads_per_second: rates.get(Metric::Reads),
        writes_per_second: rates.get(Metric::Writes),
        bounds: load_bounds(&rates)?,
    })
}

/// The reads' and writes' bounds, where the tracker gave both.
fn load_bounds(rates: &Rates) -> Option<LoadBounds> {
    let bounds = |m| {
        (rates.bounds(m)).map(|b| Bounds {
            low: b.low,
            high: b.high,
        })
    };
    Some(LoadBounds {
        reads: bounds(Metric::Reads)?,
        writes: bounds(Metric::Writes)?,
    })
}

/// Every slot's key count.
fn count_keys(con: &mut dyn ConnectionLike, slots: &mut [SlotLoad]) -> RedisResult<()> {
    for s in slots.iter_mut() {
        s.keys = redis::cmd("CLUSTER")
            .arg("COUNTKEYSINSLOT")
            .arg(s.slot)
            .query(con)?;
    }
    Ok(())
}

fn hot_keys(con: &mut dyn ConnectionLike, address: &str) -> RedisResult<Vec<HotKey>> {
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
            slot: hash_slot(&key),
            key,
            reads_per_second: reads,
            writes_per_second: writes,
        })
        .collect())
}
