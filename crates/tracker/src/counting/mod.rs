//! The counts themselves: fading HeavyKeeper sketches of keys and prefixes,
//! fading counters of the node's totals and each hash slot's load, and what
//! each count is made of (its tally).

pub mod fading_counters;
pub mod hash_slot_load;
pub mod insert;
pub mod key_tracker;
pub mod member_spread;
pub mod prefixes;
pub mod sampled_counters;
pub mod tally;
