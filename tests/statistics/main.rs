//! The tracker's figures an operator acts on (counts, bounds, the rows a list
//! picks, what refused commands cannot plant, the hot slots and tenants at
//! the defaults), measured against real servers. They count against the
//! clock and the tracker's CPU budget, so they mean something on the module
//! that ships and with the machine to themselves: `make test` runs them on
//! the release module, one test at a time (`--test-threads=1`), once on
//! Redis 7.0 and once on Valkey 9.1.

// A test: a panic is how it fails (clippy.toml allows these in test
// functions; the helpers are test code too).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod tracking_accuracy;
mod tracking_clients;
mod tracking_shards;
mod tracking_trust;
