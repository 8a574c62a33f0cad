//! The rebalance planner: given what each primary of a cluster serves, slot
//! by slot (the rates the heavykeeper tracker measures, `HK.HOTSLOTS`, and
//! the keys in each slot, `CLUSTER COUNTKEYSINSLOT`), which slots to move
//! from which primary to which so that none serves much more than its share;
//! and, for what no slot move can fix (one key with half the traffic), what
//! to do instead. Plain Rust: no server, no I/O, so every rule below is a
//! unit or property test (`tests/properties.rs`).
//!
//! # "Much more than its share": the target
//!
//! A primary's share is its load over the cluster's (load: reads plus
//! writes per second by default, or reads or writes alone, [`Measure`]).
//! The target is the mean load times `1 + tolerance`, with a tolerance of
//! 0.2 by default ([`Options::tolerance`]): 40% of the traffic for three
//! primaries, 24% for five, 12% for ten. Why 20% and not less: the rates
//! are estimates (sampled under load, faded with the tracker's half-life,
//! the spread in docs/tracker.md), and traffic moves on its own; a target
//! inside that noise would move slots back and forth between runs. Why not
//! more: with three primaries 20% above the mean is 40%, clear of the 45%
//! the project promises with room for the estimate's spread.
//!
//! # The objective
//!
//! Every primary at or under the target, moving as few slots as possible,
//! and then as few keys as possible (a slot's keys are what a migration
//! copies; the number of slots is how many times clients are redirected
//! and the cluster's configuration changes). A primary at or under the
//! target gives nothing away, slots without measured traffic never move,
//! and no slot moves twice.
//!
//! # The algorithm
//!
//! Greedy, one primary over the target at a time, hottest first. Its
//! excess is what it serves above the target; among its slots that the
//! primary with the most room left can take (staying at or under the
//! target):
//! - if some of them alone cover the excess, the one with the fewest keys
//!   (then the least traffic: the least overshoot) goes, and the primary is
//!   done;
//! - otherwise the one with the most traffic goes (fewest keys on ties),
//!   and the excess is looked at again.
//!
//! Taking the largest slots first sheds the excess in the fewest slots
//! there can be (the `k` largest carry the most any `k` can), and choosing
//! the last one by its keys keeps the keys moved low without a slot more.
//! When every slot is small next to the tolerance (at most `tolerance ×
//! mean`, the usual case: 16,384 slots) the plan always reaches the
//! target: while some primary is over it, another is under the mean and
//! has room for any slot.
//!
//! # No move on noise
//!
//! The rates are estimates, and where the measurement says how far off
//! they may be (the tracker's 95% bounds) the plan acts only on what the
//! bounds leave certain: a primary gives slots away only if even its lower
//! bound is over the target (a primary over it by less than its own error
//! bar may not be over it at all), and a slot moves only if its lower bound
//! is above 0 (a slot whose traffic may be nothing gains nothing moved).
//! What it sheds is its estimate's excess over the target: the best guess
//! of what is too much. Without bounds (counted exactly, or a measurement
//! that gives none) the estimates are taken as they are.
//!
//! And a sampled rate is shrunk toward its primary's mean by its own noise
//! before the slots are ranked and accounted (`shrinkage`): the slots
//! measured hottest among alike ones are those whose noise ran high, and
//! moving them would carry less than planned (the winner's curse).
//!
//! # Not on a whim: floor, cooldown, hysteresis
//!
//! Under [`Options::min_total`] (the cluster's whole load) nothing moves:
//! a cluster serving a handful of commands a second is "unbalanced" by
//! chance. A slot moved lately is frozen ([`Cooldown`], [`Options::frozen`]):
//! it is not moved again within its cooldown, whatever the load does. Left
//! running, [`Watch`] acts only on an imbalance that lasts several
//! measurements, and waits while a node the moves touch is busy. And a
//! plan from a file is checked whole ([`check_plan`]) before its first move.
//!
//! # What no move can fix
//!
//! A slot that alone carries more than the target would put any primary
//! that serves it over: it stays where it is, its primary's target becomes
//! that slot's load (its other slots may still go), and the plan's
//! [`Advice`] says what to do. A single key above the target is named with
//! remedies by the way it is used ([`Remedy`]): a near cache or read
//! replicas for a key that is mostly read, splitting it into copies on
//! different slots for one that is written (`examples/split_key.py`). A hot
//! slot with no single hot key is many keys sharing a hash tag: spread the
//! tag.

mod advice;
mod cooldown;
mod load;
mod outcome;
mod plan;
mod plan_check;
mod shrinkage;
mod target;
mod watch;

pub use advice::{Advice, Remedy};
pub use cooldown::{Cooldown, Moved};
pub use load::{
    Bounds, HotKey, Input, LoadBounds, Measure, Measured, NodeSlots, Slot, SlotLoad, SlotStats,
};
pub use outcome::NodeOutcome;
pub use plan::{plan, Move, Plan};
pub use plan_check::{check_plan, PlanProblem};
pub use target::Options;
pub use watch::{Verdict, Watch};
