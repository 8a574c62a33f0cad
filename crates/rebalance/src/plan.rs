//! The plan: the greedy of the crate's docs, over a ledger of what each
//! primary would serve once the moves chosen so far are made.

use crate::advice::{advise, Advice};
use crate::load::{Input, Measure, Slot, SlotLoad, SlotStats};
use crate::outcome::NodeOutcome;
use crate::target::{slack, Options};

/// One slot to move.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Move {
    pub slot: Slot,
    pub from: String,
    pub to: String,
    pub reads_per_second: f64,
    pub writes_per_second: f64,
    /// The server's slot statistics, where they were the measure.
    pub stats: SlotStats,
    pub keys: u64,
}

impl Move {
    pub fn load(&self, measure: Measure) -> f64 {
        match measure {
            Measure::Cpu => self.stats.cpu_usec,
            Measure::Network => self.stats.network_bytes,
            _ => measure.of(self.reads_per_second, self.writes_per_second),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub measure: Measure,
    /// The cluster's load, and the most a primary should serve of it.
    pub total: f64,
    pub target: f64,
    pub moves: Vec<Move>,
    /// In the input's order.
    pub nodes: Vec<NodeOutcome>,
    pub advice: Vec<Advice>,
    /// `Options::max_moves` stopped the plan before the target was reached.
    pub cut_short: bool,
    /// The cluster's load is under `Options::min_total`: nothing moves.
    pub too_light: bool,
}

impl Plan {
    /// `load`'s part of the cluster's, 0 to 1.
    pub fn share(&self, load: f64) -> f64 {
        if self.total > 0.0 {
            load / self.total
        } else {
            0.0
        }
    }

    /// Once carried out, does every primary serve at most the target?
    pub fn reaches_target(&self) -> bool {
        let slack = slack(self.total);
        self.nodes.iter().all(|n| n.after <= self.target + slack)
    }

    pub fn keys_moved(&self) -> u64 {
        self.moves.iter().map(|m| m.keys).sum()
    }
}

/// The moves that bring every primary to the target (or as near as slot
/// moves can), and the advice for the rest.
pub fn plan(input: &Input, options: &Options) -> Plan {
    // Sampled rates shrunk toward their primary's mean: see `shrinkage`.
    let shrunk = crate::shrinkage::shrink(input);
    let input = &shrunk;
    let total = input.total(options.measure);
    let target = options.target(total, input.nodes.len());
    let too_light = total < options.min_total;
    let mut ledger = Ledger::new(input, options, target);
    let mut moves = Vec::new();
    let mut cut_short = false;
    let donors = if too_light {
        Vec::new()
    } else {
        ledger.donors()
    };
    'donors: for donor in donors {
        while let Some(excess) = ledger.excess(donor) {
            if options.max_moves.is_some_and(|most| moves.len() >= most) {
                cut_short = true;
                break 'donors;
            }
            let Some(done) = (ledger.best_move(donor, excess))
                .and_then(|(slot, receiver)| ledger.apply(donor, slot, receiver))
            else {
                break;
            };
            moves.push(done);
        }
    }
    let nodes = ledger.outcomes();
    let advice = if too_light {
        Vec::new()
    } else {
        advise(input, options.measure, total, target, &nodes)
    };
    Plan {
        measure: options.measure,
        total,
        target,
        moves,
        nodes,
        advice,
        cut_short,
        too_light,
    }
}

/// Where one primary stands as moves are chosen.
struct Standing<'a> {
    node: &'a crate::load::NodeSlots,
    before: f64,
    load: f64,
    /// The most it can be brought down to: the target, or the load of its
    /// slots that no primary could take without going over it.
    floor: f64,
    /// Is it over the target beyond its bounds (a primary whose lower
    /// bound is under the target gives nothing)?
    surely_over: bool,
    /// Per slot of its input: moved already.
    moved: Vec<bool>,
}

/// Where each primary stands as moves are chosen.
struct Ledger<'a> {
    measure: Measure,
    /// Slots that may not move now.
    frozen: &'a std::collections::BTreeSet<Slot>,
    target: f64,
    slack: f64,
    /// In the input's order: a primary is its index here.
    nodes: Vec<Standing<'a>>,
}

impl<'a> Ledger<'a> {
    fn new(input: &'a Input, options: &'a Options, target: f64) -> Self {
        let measure = options.measure;
        let slack = slack(input.total(measure));
        let standing = |node: &'a crate::load::NodeSlots| {
            let fixed: f64 = (node.slots.iter().map(|s| s.load(measure)))
                .filter(|&load| load > target + slack)
                .sum();
            let before = node.load(measure);
            Standing {
                node,
                before,
                load: before,
                floor: fixed.max(target),
                surely_over: node
                    .least(measure)
                    .is_none_or(|least| least > target + slack),
                moved: vec![false; node.slots.len()],
            }
        };
        Ledger {
            measure,
            frozen: &options.frozen,
            target,
            slack,
            nodes: input.nodes.iter().map(standing).collect(),
        }
    }

    /// The primaries over their floor, the furthest over first.
    fn donors(&self) -> Vec<usize> {
        let mut donors: Vec<(usize, f64)> = (0..self.nodes.len())
            .filter_map(|n| Some((n, self.excess(n)?)))
            .collect();
        donors.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        donors.into_iter().map(|(n, _)| n).collect()
    }

    /// How much `node` serves above its floor, if anything (nothing for a
    /// primary that its bounds do not put over the target).
    fn excess(&self, node: usize) -> Option<f64> {
        let n = self.nodes.get(node)?;
        let excess = n.load - n.floor;
        (n.surely_over && excess > self.slack).then_some(excess)
    }

    /// The primary with the most room under the target, and that room.
    fn roomiest(&self, except: usize) -> Option<(usize, f64)> {
        (self.nodes.iter().enumerate())
            .filter(|&(n, _)| n != except)
            .map(|(n, standing)| (n, self.target - standing.load))
            .filter(|&(_, room)| room > self.slack)
            .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))
    }

    /// The slot of `donor` to move next (an index into its input) and where.
    fn best_move(&self, donor: usize, excess: f64) -> Option<(usize, usize)> {
        let (receiver, room) = self.roomiest(donor)?;
        let standing = self.nodes.get(donor)?;
        let movable: Vec<(usize, &SlotLoad)> = (standing.node.slots.iter().enumerate())
            .filter(|&(i, s)| {
                !standing.moved.get(i).copied().unwrap_or(true) && !self.frozen.contains(&s.slot)
            })
            .filter(|&(_, s)| {
                s.least(self.measure) > 0.0 && s.load(self.measure) <= room + self.slack
            })
            .collect();
        // Ranked by `rank`, accounted by `load`: see `SlotLoad::earlier`.
        let rank = |s: &SlotLoad| s.rank(self.measure);
        let finishing = (movable.iter().copied()).filter(|&(_, s)| rank(s) >= excess - self.slack);
        let fewest_keys = finishing.min_by(|&(_, a), &(_, b)| {
            (a.keys.cmp(&b.keys))
                .then(rank(a).total_cmp(&rank(b)))
                .then(a.slot.cmp(&b.slot))
        });
        let chosen = fewest_keys.or_else(|| {
            movable.iter().copied().max_by(|&(_, a), &(_, b)| {
                (rank(a).total_cmp(&rank(b)))
                    .then(b.keys.cmp(&a.keys))
                    .then(b.slot.cmp(&a.slot))
            })
        })?;
        Some((chosen.0, receiver))
    }

    fn apply(&mut self, donor: usize, slot: usize, receiver: usize) -> Option<Move> {
        let to = self.nodes.get(receiver)?.node.node.clone();
        let from = self.nodes.get_mut(donor)?;
        let s: &SlotLoad = from.node.slots.get(slot)?;
        let load = s.load(self.measure);
        *from.moved.get_mut(slot)? = true;
        from.load -= load;
        let done = Move {
            slot: s.slot,
            from: from.node.node.clone(),
            to,
            reads_per_second: s.reads_per_second,
            writes_per_second: s.writes_per_second,
            stats: s.stats,
            keys: s.keys,
        };
        self.nodes.get_mut(receiver)?.load += load;
        Some(done)
    }

    fn outcomes(&self) -> Vec<NodeOutcome> {
        (self.nodes.iter())
            .map(|n| NodeOutcome {
                node: n.node.node.clone(),
                before: n.before,
                after: n.load.max(0.0),
                surely_over: n.surely_over && n.before > self.target + self.slack,
            })
            .collect()
    }
}
