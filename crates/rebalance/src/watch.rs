//! Leaving the rebalance running (`hk-top rebalance --watch`): each round
//! measures and plans, and this decides whether the round moves anything.
//! Like the balancers operators trust elsewhere, it acts only on an
//! imbalance that lasts: a primary surely over the target (its lower bound
//! above it, see the crate's "No move on noise") in `confirm` rounds in a
//! row, so that a burst that passes moves nothing; and it waits while a
//! node the moves would touch is over a CPU line (moving slots costs the
//! source and the target work of their own). What it moves in one round
//! is bounded by the planner's `max_moves`, and what it moved is frozen for
//! a while by the [`crate::Cooldown`].

use crate::plan::Plan;

/// What a round does.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// No primary is surely over the target (or the load is too light).
    Balanced,
    /// Over the target, not yet for long enough.
    Confirming { rounds: usize, needed: usize },
    /// Over the target for long enough, but nothing may move (every slot
    /// that would help is in its cooldown, or too hot to move).
    Stuck,
    /// A node the moves touch is over the CPU line: wait.
    Paused { node: String, cpu: f64 },
    /// Carry the plan out.
    Act,
}

#[derive(Clone, Debug)]
pub struct Watch {
    confirm: usize,
    cpu_line: f64,
    streak: usize,
}

impl Watch {
    /// Acting after `confirm` rounds over the target in a row (at least
    /// one), pausing while a node is above `cpu_line` (a share of a core).
    pub fn new(confirm: usize, cpu_line: f64) -> Self {
        Watch {
            confirm: confirm.max(1),
            cpu_line,
            streak: 0,
        }
    }

    /// One round's plan in; `cpu(node)` is a node's CPU now (a share of a
    /// core; `None` unknown).
    pub fn observe(&mut self, plan: &Plan, cpu: impl Fn(&str) -> Option<f64>) -> Verdict {
        let over = !plan.too_light && plan.nodes.iter().any(|n| n.surely_over);
        if !over {
            self.streak = 0;
            return Verdict::Balanced;
        }
        self.streak += 1;
        if self.streak < self.confirm {
            return Verdict::Confirming {
                rounds: self.streak,
                needed: self.confirm,
            };
        }
        if plan.moves.is_empty() {
            return Verdict::Stuck;
        }
        let touched = (plan.moves.iter()).flat_map(|m| [m.from.as_str(), m.to.as_str()]);
        // The busiest over the line (the first named, of equals).
        let busiest = (touched.filter_map(|node| Some((node, cpu(node)?))))
            .filter(|&(_, load)| load > self.cpu_line)
            .reduce(|busiest, next| if next.1 > busiest.1 { next } else { busiest });
        match busiest {
            Some((node, cpu)) => Verdict::Paused {
                node: node.to_string(),
                cpu,
            },
            None => Verdict::Act,
        }
    }

    /// The round's moves were made: the next imbalance is confirmed afresh
    /// (the loads need rounds to show what the moves did).
    pub fn acted(&mut self) {
        self.streak = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::NodeOutcome;
    use crate::plan::Move;
    use crate::Measure;

    fn plan(over: bool, moves: usize) -> Plan {
        let node = |name: &str, surely_over: bool| NodeOutcome {
            node: name.into(),
            before: 1.0,
            after: 1.0,
            surely_over,
        };
        Plan {
            measure: Measure::Total,
            total: 100.0,
            target: 40.0,
            moves: (0..moves)
                .map(|i| Move {
                    slot: i as u16,
                    from: "hot".into(),
                    to: "cool".into(),
                    reads_per_second: 1.0,
                    keys: 1,
                    ..Move::default()
                })
                .collect(),
            nodes: vec![node("hot", over), node("cool", false)],
            advice: Vec::new(),
            cut_short: false,
            too_light: false,
        }
    }

    #[test]
    fn an_imbalance_acts_only_once_it_has_lasted() {
        let mut w = Watch::new(3, 0.9);
        let idle = |_: &str| Some(0.1);
        assert_eq!(
            w.observe(&plan(true, 2), idle),
            Verdict::Confirming {
                rounds: 1,
                needed: 3
            }
        );
        // A round in balance starts the count again: a burst moves nothing.
        assert_eq!(w.observe(&plan(false, 0), idle), Verdict::Balanced);
        for rounds in 1..3 {
            assert_eq!(
                w.observe(&plan(true, 2), idle),
                Verdict::Confirming { rounds, needed: 3 }
            );
        }
        assert_eq!(w.observe(&plan(true, 2), idle), Verdict::Act);
        w.acted();
        assert!(matches!(
            w.observe(&plan(true, 2), idle),
            Verdict::Confirming { rounds: 1, .. }
        ));
    }

    #[test]
    fn a_busy_node_pauses_the_moves_and_a_frozen_plan_is_stuck() {
        let mut w = Watch::new(1, 0.9);
        let busy = |node: &str| Some(if node == "cool" { 0.95 } else { 0.5 });
        assert_eq!(
            w.observe(&plan(true, 1), busy),
            Verdict::Paused {
                node: "cool".into(),
                cpu: 0.95
            }
        );
        assert_eq!(w.observe(&plan(true, 1), |_| None), Verdict::Act);
        assert_eq!(w.observe(&plan(true, 0), |_| None), Verdict::Stuck);
        let mut light = plan(true, 1);
        light.too_light = true;
        assert_eq!(w.observe(&light, |_| None), Verdict::Balanced);
    }
}
