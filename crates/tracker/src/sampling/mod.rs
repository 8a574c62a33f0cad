//! Which accesses are counted, and what each stands for: slots of time and
//! their coverage, one access in `n` by its coin, a key's accesses
//! coalesced, and the lightest keys thinned without bias.

pub mod access_coins;
pub mod access_thinning;
pub mod coalescer;
pub mod coverage;
pub mod kept_time_slots;
pub mod thinning;
pub mod time_slot;
