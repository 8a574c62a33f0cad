//! A plan checked whole against the cluster as it is now, before its first
//! move: each slot once, from the primary that serves it, to another
//! primary the cluster knows. A plan that fails is refused whole: moving
//! half of it and then failing would leave the cluster in neither the
//! state reviewed nor the one before.

use crate::load::Slot;
use crate::plan::Move;
use std::collections::BTreeSet;
use std::fmt;

/// Why a plan may not be carried out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PlanProblem {
    SlotOutOfRange {
        slot: Slot,
    },
    SlotTwice {
        slot: Slot,
    },
    /// `from` does not serve the slot now (the plan is stale).
    NotTheOwner {
        slot: Slot,
        from: String,
    },
    /// `to` is not a primary of the cluster, or is the slot's source.
    UnknownTarget {
        slot: Slot,
        to: String,
    },
}

impl fmt::Display for PlanProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlanProblem::SlotOutOfRange { slot } => {
                write!(f, "slot {slot} is not a cluster slot (0 to 16383)")
            }
            PlanProblem::SlotTwice { slot } => write!(f, "the plan moves slot {slot} twice"),
            PlanProblem::NotTheOwner { slot, from } => write!(
                f,
                "the plan is stale: {from} no longer serves slot {slot}; plan again"
            ),
            PlanProblem::UnknownTarget { slot, to } => write!(
                f,
                "the plan moves slot {slot} to {to}, which is not another primary"
            ),
        }
    }
}

/// Every problem of `moves` against the cluster now: `owner(slot)` names
/// the primary that serves a slot, `primaries` every primary.
pub fn check_plan(
    moves: &[Move],
    owner: impl Fn(Slot) -> Option<String>,
    primaries: &[String],
) -> Vec<PlanProblem> {
    let mut seen = BTreeSet::new();
    let mut problems = Vec::new();
    for m in moves {
        if m.slot >= 16384 {
            problems.push(PlanProblem::SlotOutOfRange { slot: m.slot });
            continue;
        }
        if !seen.insert(m.slot) {
            problems.push(PlanProblem::SlotTwice { slot: m.slot });
            continue;
        }
        if owner(m.slot).as_deref() != Some(m.from.as_str()) {
            problems.push(PlanProblem::NotTheOwner {
                slot: m.slot,
                from: m.from.clone(),
            });
        }
        if m.to == m.from || !primaries.contains(&m.to) {
            problems.push(PlanProblem::UnknownTarget {
                slot: m.slot,
                to: m.to.clone(),
            });
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mv(slot: Slot, from: &str, to: &str) -> Move {
        Move {
            slot,
            from: from.into(),
            to: to.into(),
            ..Move::default()
        }
    }

    #[test]
    fn each_slot_once_from_its_owner_to_another_primary() {
        let primaries = vec!["a".to_string(), "b".to_string()];
        let owner = |slot: Slot| Some(if slot < 100 { "a" } else { "b" }.to_string());
        assert!(check_plan(&[mv(1, "a", "b"), mv(200, "b", "a")], owner, &primaries).is_empty());
        let problems = check_plan(
            &[
                mv(1, "a", "b"),
                mv(1, "a", "b"),
                mv(2, "b", "a"),
                mv(3, "a", "c"),
                mv(4, "a", "a"),
                mv(16384, "a", "b"),
            ],
            owner,
            &primaries,
        );
        assert_eq!(
            problems,
            [
                PlanProblem::SlotTwice { slot: 1 },
                PlanProblem::NotTheOwner {
                    slot: 2,
                    from: "b".into()
                },
                PlanProblem::UnknownTarget {
                    slot: 3,
                    to: "c".into()
                },
                PlanProblem::UnknownTarget {
                    slot: 4,
                    to: "a".into()
                },
                PlanProblem::SlotOutOfRange { slot: 16384 },
            ]
        );
        assert!(problems[0].to_string().contains("twice"));
    }
}
