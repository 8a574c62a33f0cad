//! The plan: the greedy of the crate's docs, over a ledger of what each
//! primary would serve once the moves chosen so far are made.

use crate::advice::{advise, Advice};
use crate::load::{Input, Measure, Slot, SlotLoad, SlotStats};
use crate::outcome::NodeOutcome;
use crate::target::{slack, Options};

/// One slot to move.
#[derive(Clone, Debug, PartialEq)]
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
            let Some((slot, receiver)) = ledger.best_move(donor, excess) else {
                break;
            };
            moves.push(ledger.apply(donor, slot, receiver));
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

/// Where each primary stands as moves are chosen.
struct Ledger<'a> {
    input: &'a Input,
    measure: Measure,
    /// Slots that may not move now.
    frozen: &'a std::collections::BTreeSet<Slot>,
    target: f64,
    slack: f64,
    before: Vec<f64>,
    loads: Vec<f64>,
    /// The most each primary can be brought down to: the target, or the
    /// load of its slots that no primary could take without going over it.
    floors: Vec<f64>,
    /// Per primary, per slot of its input: moved already.
    moved: Vec<Vec<bool>>,
    /// Per primary: is it over the target beyond its bounds (a primary
    /// whose lower bound is under the target gives nothing)?
    surely_over: Vec<bool>,
}

impl<'a> Ledger<'a> {
    fn new(input: &'a Input, options: &'a Options, target: f64) -> Self {
        let measure = options.measure;
        let slack = slack(input.total(measure));
        let before: Vec<f64> = input.nodes.iter().map(|n| n.load(measure)).collect();
        let floors = input
            .nodes
            .iter()
            .map(|n| {
                let fixed: f64 = (n.slots.iter().map(|s| s.load(measure)))
                    .filter(|&load| load > target + slack)
                    .sum();
                fixed.max(target)
            })
            .collect();
        Ledger {
            input,
            measure,
            frozen: &options.frozen,
            target,
            slack,
            loads: before.clone(),
            before,
            floors,
            moved: input
                .nodes
                .iter()
                .map(|n| vec![false; n.slots.len()])
                .collect(),
            surely_over: input
                .nodes
                .iter()
                .map(|n| n.least(measure).is_none_or(|least| least > target + slack))
                .collect(),
        }
    }

    /// The primaries over their floor, the furthest over first.
    fn donors(&self) -> Vec<usize> {
        let mut donors: Vec<usize> = (0..self.loads.len())
            .filter(|&n| self.excess(n).is_some())
            .collect();
        let over = |n: usize| self.loads[n] - self.floors[n];
        donors.sort_by(|&a, &b| over(b).total_cmp(&over(a)).then(a.cmp(&b)));
        donors
    }

    /// How much `node` serves above its floor, if anything (nothing for a
    /// primary that its bounds do not put over the target).
    fn excess(&self, node: usize) -> Option<f64> {
        let excess = self.loads[node] - self.floors[node];
        (self.surely_over[node] && excess > self.slack).then_some(excess)
    }

    /// The primary with the most room under the target, and that room.
    fn roomiest(&self, except: usize) -> Option<(usize, f64)> {
        (0..self.loads.len())
            .filter(|&n| n != except)
            .map(|n| (n, self.target - self.loads[n]))
            .filter(|&(_, room)| room > self.slack)
            .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))
    }

    /// The slot of `donor` to move next (an index into its input) and where.
    fn best_move(&self, donor: usize, excess: f64) -> Option<(usize, usize)> {
        let (receiver, room) = self.roomiest(donor)?;
        let slots = &self.input.nodes[donor].slots;
        let load = |i: usize| slots[i].load(self.measure);
        let movable: Vec<usize> = (0..slots.len())
            .filter(|&i| !self.moved[donor][i] && !self.frozen.contains(&slots[i].slot))
            .filter(|&i| slots[i].least(self.measure) > 0.0 && load(i) <= room + self.slack)
            .collect();
        // Ranked by `rank`, accounted by `load`: see `SlotLoad::earlier`.
        let rank = |i: usize| slots[i].rank(self.measure);
        let finishing = movable
            .iter()
            .copied()
            .filter(|&i| rank(i) >= excess - self.slack);
        let fewest_keys = finishing.min_by(|&a, &b| {
            (slots[a].keys.cmp(&slots[b].keys))
                .then(rank(a).total_cmp(&rank(b)))
                .then(slots[a].slot.cmp(&slots[b].slot))
        });
        let chosen = fewest_keys.or_else(|| {
            movable.iter().copied().max_by(|&a, &b| {
                (rank(a).total_cmp(&rank(b)))
                    .then(slots[b].keys.cmp(&slots[a].keys))
                    .then(slots[b].slot.cmp(&slots[a].slot))
            })
        })?;
        Some((chosen, receiver))
    }

    fn apply(&mut self, donor: usize, slot: usize, receiver: usize) -> Move {
        let s: &SlotLoad = &self.input.nodes[donor].slots[slot];
        let load = s.load(self.measure);
        self.moved[donor][slot] = true;
        self.loads[donor] -= load;
        self.loads[receiver] += load;
        Move {
            slot: s.slot,
            from: self.input.nodes[donor].node.clone(),
            to: self.input.nodes[receiver].node.clone(),
            reads_per_second: s.reads_per_second,
            writes_per_second: s.writes_per_second,
            stats: s.stats,
            keys: s.keys,
        }
    }

    fn outcomes(&self) -> Vec<NodeOutcome> {
        (self.input.nodes.iter().enumerate())
            .map(|(i, n)| NodeOutcome {
                node: n.node.clone(),
                before: self.before[i],
                after: self.loads[i].max(0.0),
                surely_over: self.surely_over[i] && self.before[i] > self.target + self.slack,
            })
            .collect()
    }
}
