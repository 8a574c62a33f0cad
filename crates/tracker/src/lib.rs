//! Counting a server's own key accesses, within a CPU budget, without bias.
//! Plain Rust: nothing here knows about Redis.
//!
//! | folder | what it holds |
//! | --- | --- |
//! | [`server`] | what the server tells: its command table (which keys a command reads or writes), clients, scripts, hash slots and their map, the name a key is tracked under |
//! | [`sampling`] | which accesses are counted: time slots and their coverage, what a saturated server's counted slots lack, slots kept for discarded ones, one access in `n` by coin, keys coalesced and thinned |
//! | [`worker`] | the batches the main thread fills and the worker thread that counts them |
//! | [`counting`] | the fading sketches and counters: [`KeyTracker`], tallies, prefixes, each member's spread, each hash slot's load |
//! | [`bounds`] | every estimate's 95% interval, and the rows a list picks told from the background's noise |
//! | [`budget`] | what counting costs (the thread clocks, the meter) and so how much to count and insert |
//!
//! The path of an access, from the command filter to a listed row:
//! [`server::command_table`] finds a command's keys; [`sampling::coverage`]
//! says whether its slot of time is counted, [`sampling::access_coins`]
//! whether the access is kept; [`worker::key_batch`] gathers it, and the
//! [`worker`] coalesces a key's accesses ([`sampling::coalescer`]), thins
//! the lightest within its allowance ([`sampling::thinning`],
//! [`budget::insert_allowance`]) and inserts the rest into the
//! [`KeyTracker`]; a list reads its rows there, each with its error bar
//! ([`bounds::error_bar`]), picked out of the noise ([`bounds::noise_floor`]).
//! [`budget::cost_budget`] closes the loop: from what all this cost, the
//! share of time counted and how thinly accesses are kept.

// The folders and their modules, as the table above lists them.
pub mod access;
pub mod server {
    pub mod client_names;
    pub mod client_table;
    pub mod command_name;
    pub mod command_reply;
    pub mod command_table;
    pub mod hash_slot;
    pub mod hash_slot_map;
    pub mod key_spec;
    pub mod name_effect;
    pub mod script_watch;
    pub mod tracked_name;
}
pub mod sampling {
    pub mod access_coins;
    pub mod access_thinning;
    pub mod coalescer;
    pub mod coverage;
    pub mod kept_time_slots;
    pub mod pass_weight;
    pub mod served_shortfall;
    pub mod thinning;
    pub mod time_slot;
}
pub mod worker;
pub mod counting {
    pub mod client_attribution;
    pub mod client_shares;
    pub mod fading_counters;
    pub mod hash_slot_load;
    pub mod insert;
    pub mod key_tracker;
    pub mod member_spread;
    pub mod prefixes;
    pub mod sampled_counters;
    pub mod tally;
}
pub mod bounds {
    pub mod error_bar;
    pub mod noise_floor;
    pub mod sender_rows;
}
pub mod budget {
    pub mod burst_credit;
    pub mod cost_budget;
    pub mod cost_meter;
    pub mod insert_allowance;
    pub mod insert_budget;
    pub mod mode_costs;
    pub mod thread_clock;
    pub mod whole_tries;
}

pub use access::Access;
pub use counting::key_tracker::{HotKey, KeyTracker, Picked, Ranking, TrackerShape};
pub use counting::tally::Tally;
pub use server::hash_slot::{self, hash_slot};
pub use worker::Worker;
