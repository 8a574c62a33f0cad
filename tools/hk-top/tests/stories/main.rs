//! hk-top as its users run it, against real servers and clusters: the live
//! view, `--once` and `--json`, filters, misses, clusters, the Prometheus
//! exporter and its series, the dashboard and the alert rules, and the
//! rebalance on real clusters (its decisions are tested on a scripted
//! cluster in `src/rebalance/`: CONTRIBUTING.md, "The rebalance"). One test
//! binary (one build, one link) with a file per story.

// A test: a panic is how it fails (clippy.toml allows these in test
// functions; the stories' helpers are test code too).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod picture;
mod promkit;
mod support;

mod alert_rules;
mod clients;
mod cluster;
mod console;
mod dashboard;
mod exporter_cost;
mod exporter_series;
mod filters;
mod misses;
mod prometheus;
mod real_servers;
mod rebalance;
mod rebalance_faults;
mod rebalance_slot_stats;
mod rebalance_watch;
