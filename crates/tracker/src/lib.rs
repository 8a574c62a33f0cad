//! Counting a server's own key accesses, within a CPU budget, without bias.
//!
//! The pieces, in the order an access meets them:
//! - [`Coverage`]: which slots of time are counted (one chosen at random in
//!   each block of about 20 ms), each a [`TimeSlot`];
//! - [`KeptTimeSlots`]: counted slots discarded for a refusal (Redis 7.0), and
//!   what the kept ones stand for;
//! - [`access_thinning`]: within counted slots, one access in `n` kept (by
//!   a coin each, [`access_coins`]) when counting every one would cost more
//!   than the budget, or than the worker's fixed share;
//! - [`KeyBatch`]: the accesses of counted time, gathered cheaply;
//! - [`Coalescer`]: a key's accesses over a horizon summed into one insert,
//!   with the variance the slots of time give it;
//! - [`thinning`]: when inserts cost more than the budget, the keys that
//!   weigh least thinned without bias (threshold sampling);
//! - [`KeyTracker`]: fading HeavyKeeper sketches of reads, writes, misses
//!   and prefixes, each member's spread beside them, and the node's and
//!   each cluster hash slot's load;
//! - [`error_bar`]: every estimate's 95% interval;
//! - [`noise_floor`]: the rows a list picks out of many, told apart from the
//!   background's noise and bounded as picked;
//! - [`CostBudget`]: how much time to count, from what counting costs.
//!
//! Plain Rust: nothing here knows about Redis.

pub mod access;
pub mod access_coins;
pub mod access_thinning;
pub mod client_table;
pub mod coalescer;
pub mod command_name;
pub mod command_reply;
pub mod command_table;
pub mod cost_budget;
pub mod cost_meter;
pub mod counting;
pub mod coverage;
pub mod error_bar;
pub mod fading_counters;
pub mod hash_slot;
pub mod hash_slot_load;
pub mod hash_slot_map;
pub mod insert;
pub mod insert_allowance;
pub mod insert_budget;
pub mod kept_time_slots;
pub mod key_batch;
pub mod key_spec;
pub mod key_tracker;
pub mod member_spread;
pub mod name_effect;
pub mod noise_floor;
pub mod prefixes;
pub mod sampled_counters;
pub mod script_watch;
pub mod tally;
pub mod thinning;
pub mod thread_clock;
pub mod time_slot;
pub mod tracked_name;
pub mod worker;

pub use access::Access;
pub use coalescer::Coalescer;
pub use cost_budget::{CostBudget, TickCost, Totals};
pub use counting::{Counting, Work};
pub use coverage::Coverage;
pub use error_bar::Bounds;
pub use hash_slot::hash_slot;
pub use hash_slot_load::{HashSlotLoad, HashSlotRate};
pub use hash_slot_map::{HashSlotMap, Route};
pub use insert::Insert;
pub use insert_budget::{InsertBudget, PeriodCost};
pub use kept_time_slots::KeptTimeSlots;
pub use key_batch::{split_item, BatchAccess, KeyBatch};
pub use key_tracker::{item_of, HotKey, KeyTracker, Picked, Ranking, TrackerShape};
pub use prefixes::PrefixRule;
pub use tally::Tally;
pub use thinning::Thinning;
pub use time_slot::TimeSlot;
pub use tracked_name::{tracked_name, MAX_TRACKED_KEY_BYTES};
pub use worker::Worker;
