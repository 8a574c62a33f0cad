//! What hk-top reads from the trackers and how it is chosen: the hot keys,
//! prefixes and slots of every node ([`hot_keys`], [`hot_slots`]), who
//! sends them ([`senders`]), the nodes' balance, and the filters and orders
//! the views apply to them. The live view, the exports and the rebalance
//! all stand on it.

pub mod balance;
pub mod filter;
pub mod hot_keys;
pub mod hot_slots;
pub mod metric;
pub mod pattern;
pub mod senders;
pub mod sort;
