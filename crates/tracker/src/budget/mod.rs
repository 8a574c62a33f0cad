//! What counting costs, measured on the threads' CPU clocks, and so how much
//! of it the tracker can afford: the share of time counted, accesses kept,
//! and sketch inserts.

pub mod cost_budget;
pub mod cost_meter;
pub mod insert_allowance;
pub mod insert_budget;
pub mod thread_clock;
