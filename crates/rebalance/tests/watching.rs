//! `rebalance --watch`'s decisions, round after round, on a simulated
//! cluster whose hot set shifts from one primary to the next: each shift is
//! followed, a round acts only once the imbalance is confirmed, and no slot
//! moves twice within its cooldown (the rules the live watch test checked
//! over four 40 s phases; here in milliseconds).

// A test: a panic is how it fails (clippy.toml allows these in test
// functions; this file's helpers are test code too).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use heavykeeper_rebalance::{
    plan, Cooldown, Input, Moved, NodeSlots, Options, Plan, SlotLoad, Verdict, Watch,
};
use std::collections::{BTreeMap, HashMap};

const NODES: [&str; 3] = ["a:1", "a:2", "a:3"];
const ROUND_MS: i64 = 3_000;
const PHASE_ROUNDS: i64 = 13;
const COOLDOWN_MS: i64 = 60_000;
const CONFIRM: usize = 2;

/// 300 slots with keys, a hundred per primary; 60% of the reads on the
/// hot set, the rest spread evenly.
struct Sim {
    owner: BTreeMap<u16, usize>,
    hot: Vec<u16>,
}

impl Sim {
    fn input(&self) -> Input {
        let hot = |slot: &u16| f64::from(u8::from(self.hot.contains(slot))) * 0.6;
        let rate = |slot: &u16| {
            6000.0 * (0.4 / self.owner.len() as f64 + hot(slot) / self.hot.len() as f64)
        };
        let nodes = (0..NODES.len())
            .map(|n| NodeSlots {
                node: NODES[n].into(),
                slots: (self.owner.iter().filter(|(_, &o)| o == n))
                    .map(|(slot, _)| SlotLoad {
                        slot: *slot,
                        reads_per_second: rate(slot),
                        keys: 1,
                        ..SlotLoad::default()
                    })
                    .collect(),
                ..NodeSlots::default()
            })
            .collect();
        Input {
            nodes,
            hot_keys: Vec::new(),
        }
    }

    fn largest_share(&self) -> f64 {
        let plan = plan(&self.input(), &Options::default());
        (plan.nodes.iter())
            .map(|n| plan.share(n.before))
            .fold(0.0, f64::max)
    }
}

#[test]
fn a_watch_follows_a_hot_set_that_shifts_and_moves_no_slot_twice_within_its_cooldown() {
    let owner = (0..300u16)
        .map(|i| (i * 50, usize::from(i / 100)))
        .collect();
    let mut sim = Sim {
        owner,
        hot: Vec::new(),
    };
    let mut watch = Watch::new(CONFIRM, 0.9);
    let mut cooldown = Cooldown::new(COOLDOWN_MS, []);
    let mut last_moved: HashMap<u16, i64> = HashMap::new();
    let mut now = 0;
    for phase in 0..4 {
        let hot_node = phase % 3;
        sim.hot = (sim.owner.iter().filter(|(_, &o)| o == hot_node))
            .map(|(slot, _)| *slot)
            .collect();
        let mut shed = 0;
        for round in 0..PHASE_ROUNDS {
            now += ROUND_MS;
            let options = Options {
                max_moves: Some(64),
                frozen: cooldown.frozen(now),
                ..Options::default()
            };
            let planned: Plan = plan(&sim.input(), &options);
            let verdict = watch.observe(&planned, |_| None);
            if round < CONFIRM as i64 - 1 {
                assert_ne!(verdict, Verdict::Act, "acted unconfirmed in phase {phase}");
            }
            if verdict != Verdict::Act {
                continue;
            }
            for m in &planned.moves {
                if let Some(before) = last_moved.insert(m.slot, now) {
                    assert!(now - before >= COOLDOWN_MS, "slot {} moved again", m.slot);
                }
                let to = NODES.iter().position(|n| *n == m.to).unwrap();
                shed += usize::from(m.from == NODES[hot_node]);
                sim.owner.insert(m.slot, to);
                let (slot, at_ms) = (m.slot, now);
                cooldown.record(Moved { slot, at_ms });
            }
            watch.acted();
        }
        assert!(
            shed > 0,
            "{} shed nothing in phase {phase}",
            NODES[hot_node]
        );
        let largest = sim.largest_share();
        assert!(largest <= 0.5, "phase {phase} ends at {largest}");
    }
}
