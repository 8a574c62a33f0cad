//! Counting a server's own key accesses, within a CPU budget, without bias.
//!
//! The pieces, in the order an access meets them:
//! - [`Coverage`]: which slots of time are counted (a fresh coin per slot);
//! - [`KeptSlots`]: counted slots discarded for a refusal (Redis 7.0), and
//!   what the kept ones stand for;
//! - [`KeyBatch`]: the accesses of counted time, gathered cheaply;
//! - [`Thinning`]: when counting costs too much, accesses kept at random,
//!   each standing for more, without bias;
//! - [`Coalescer`]: a key's accesses summed into one insert;
//! - [`KeyTracker`]: fading HeavyKeeper sketches of reads, writes, misses
//!   and prefixes, and each cluster slot's load;
//! - [`CostBudget`]: how much time to count, from what counting costs.
//!
//! Plain Rust: nothing here knows about Redis.

pub mod access;
pub mod coalescer;
pub mod cost_budget;
pub mod counting;
pub mod coverage;
pub mod fading_counters;
pub mod hash_slot;
pub mod kept_slots;
pub mod key_batch;
pub mod key_tracker;
pub mod prefixes;
pub mod slot_load;
pub mod thinning;
pub mod tracked_name;

pub use access::Access;
pub use coalescer::Coalescer;
pub use cost_budget::{CostBudget, TickCost, Totals};
pub use counting::Counting;
pub use coverage::Coverage;
pub use hash_slot::hash_slot;
pub use kept_slots::KeptSlots;
pub use key_batch::{split_item, BatchAccess, KeyBatch};
pub use key_tracker::{item_of, HotKey, KeyTracker, Ranking, Tally, TrackerShape};
pub use prefixes::PrefixRule;
pub use slot_load::{SlotLoad, SlotRate};
pub use thinning::Thinning;
pub use tracked_name::{tracked_name, MAX_TRACKED_KEY_BYTES};
