//! What a plan cannot do by moving slots, and what to do instead.

use crate::load::{HotKey, Input, Measure, Slot};
use crate::outcome::NodeOutcome;
use crate::target::slack;

/// A way to take load off one key or one slot, other than moving it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Remedy {
    /// Serve the key's reads from the application's memory, invalidated by
    /// the server on every write (`examples/near_cache.py`).
    NearCache,
    /// Read the key from the primary's replicas (`READONLY`), adding
    /// replicas as the reads need.
    ReadReplicas,
    /// Keep copies of the key on different slots (`key:{0}` .. `key:{n}`),
    /// each on whichever primary serves its slot (`examples/split_key.py`).
    SplitKey,
    /// Many keys share one hash tag, so one slot: give them distinct tags.
    SpreadHashTag,
}

impl Remedy {
    pub fn name(self) -> &'static str {
        match self {
            Remedy::NearCache => "near-cache",
            Remedy::ReadReplicas => "read-replicas",
            Remedy::SplitKey => "split-key",
            Remedy::SpreadHashTag => "spread-hash-tag",
        }
    }

    pub fn how(self) -> &'static str {
        match self {
            Remedy::NearCache => "cache it in the application, invalidated by the server on write (examples/near_cache.py)",
            Remedy::ReadReplicas => "send its reads to the primary's replicas (READONLY), adding replicas as needed",
            Remedy::SplitKey => "split it into copies on different slots, each read or written at random, merged back when it cools (examples/split_key.py)",
            Remedy::SpreadHashTag => "its keys share a hash tag and so one slot: give them distinct tags",
        }
    }
}

/// One thing the moves leave undone.
#[derive(Clone, Debug, PartialEq)]
pub enum Advice {
    /// One key serves more than the target on its own.
    HotKey {
        key: Vec<u8>,
        slot: Slot,
        node: Option<String>,
        reads_per_second: f64,
        writes_per_second: f64,
        share: f64,
        remedies: Vec<Remedy>,
    },
    /// One slot serves more than the target, no key of it alone does.
    HotSlot {
        slot: Slot,
        node: String,
        reads_per_second: f64,
        writes_per_second: f64,
        share: f64,
        keys: u64,
        remedies: Vec<Remedy>,
    },
    /// A primary the moves leave over the target although none of its
    /// slots is too hot to move: its slots are too coarse to share out, or
    /// the plan was cut short.
    OverTarget { node: String, share: f64 },
}

/// The advice for a plan whose primaries end as `outcomes`.
pub fn advise(
    input: &Input,
    measure: Measure,
    total: f64,
    target: f64,
    outcomes: &[NodeOutcome],
) -> Vec<Advice> {
    if total <= 0.0 {
        return Vec::new();
    }
    let over = |load: f64| load > target + slack(total);
    let mut advice: Vec<Advice> = (input.hot_keys.iter())
        .filter(|k| over(k.load(measure)))
        .map(|k| hot_key(input, k, measure, total))
        .collect();
    let explained =
        |slot: Slot| (input.hot_keys.iter()).any(|k| k.slot == slot && over(k.load(measure)));
    let mut fixed_on = Vec::with_capacity(input.nodes.len());
    for node in &input.nodes {
        let mut fixed = false;
        for s in node.slots.iter().filter(|s| over(s.load(measure))) {
            fixed = true;
            if !explained(s.slot) {
                advice.push(Advice::HotSlot {
                    slot: s.slot,
                    node: node.node.clone(),
                    reads_per_second: s.reads_per_second,
                    writes_per_second: s.writes_per_second,
                    share: s.load(measure) / total,
                    keys: s.keys,
                    remedies: vec![Remedy::SpreadHashTag],
                });
            }
        }
        fixed_on.push(fixed);
    }
    for (outcome, fixed) in outcomes.iter().zip(fixed_on) {
        if over(outcome.after) && !fixed {
            advice.push(Advice::OverTarget {
                node: outcome.node.clone(),
                share: outcome.after / total,
            });
        }
    }
    advice
}

fn hot_key(input: &Input, key: &HotKey, measure: Measure, total: f64) -> Advice {
    let owner = input
        .nodes
        .iter()
        .find(|n| n.slots.iter().any(|s| s.slot == key.slot));
    Advice::HotKey {
        key: key.key.clone(),
        slot: key.slot,
        node: owner.map(|n| n.node.clone()),
        reads_per_second: key.reads_per_second,
        writes_per_second: key.writes_per_second,
        share: key.load(measure) / total,
        remedies: remedies_for(key),
    }
}

/// A key mostly read (four reads in five or more) can be served without
/// its primary: a near cache or replicas, and splitting as the last
/// resort; a key written much has only splitting (a cache or a replica
/// takes no writes).
fn remedies_for(key: &HotKey) -> Vec<Remedy> {
    let all = key.reads_per_second + key.writes_per_second;
    if all > 0.0 && key.reads_per_second / all >= 0.8 {
        vec![Remedy::NearCache, Remedy::ReadReplicas, Remedy::SplitKey]
    } else {
        vec![Remedy::SplitKey]
    }
}
