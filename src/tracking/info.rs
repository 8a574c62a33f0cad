//! `INFO heavykeeper` (section `heavykeeper_tracking`): what the tracker
//! holds, what it sees and what it costs. Every field names the tracker, so
//! that none could be mistaken for a figure of the sketches.

use super::config;
use crate::host::info::number;
use heavykeeper_tracker::Tally;
use redis_module::InfoContext;

/// What INFO reads. The node's rates wait for the worker's step (they are
/// what a rebalance plans from); nothing else waits, and in a crash report
/// nothing at all: figures that are busy right now read as 0.
#[derive(Default)]
struct Figures {
    every: u32,
    keep_one_in: u32,
    seen: u64,
    redirected: u64,
    hash_slots_served: Option<(usize, bool)>,
    dropped: u64,
    unauthenticated: u64,
    checks: u64,
    refused: u64,
    time_slots_discarded: u64,
    time_slots: (u64, u64, u64, u64),
    misses_seen: u64,
    thinned_ms: u64,
    rates: (Tally, Tally),
    memory: u64,
    keys_counted: u64,
    cost: f64,
    /// The last tick's shares of a core: filter, clocks, worker.
    parts: (f64, f64, f64),
    cost_counting_all: f64,
    spent_ns: u64,
    totals: heavykeeper_tracker::budget::cost_budget::Totals,
    default_open: Option<bool>,
}

fn figures(for_crash_report: bool) -> Figures {
    super::with_state(|state| {
        state.as_mut().map(|t| {
            let rates = t.rates(!for_crash_report);
            let (f, slots) = (t.figures(), t.slots().figures());
            let (unauthenticated, checks, refused) = t.auth().figures();
            Figures {
                every: t.slots().every(),
                keep_one_in: t.slots().keep_one_in(),
                seen: f.commands_seen,
                redirected: f.commands_redirected,
                hash_slots_served: t.hash_slots_served(),
                dropped: f.accesses_dropped,
                unauthenticated,
                checks,
                refused,
                time_slots_discarded: slots.discarded,
                time_slots: (slots.begun, slots.counted, slots.ns, slots.counted_ns),
                misses_seen: f.misses_seen,
                thinned_ms: t.worker().thinned_ms(),
                rates,
                memory: t.try_memory_bytes().unwrap_or(0) as u64,
                keys_counted: t
                    .worker()
                    .try_counting()
                    .map_or(0, |c| c.tracker().keys_counted()),
                cost: t.cost().budget().recent_cost(),
                parts: t.cost().recent_shares(),
                cost_counting_all: t.cost().budget().cost_when_counting().unwrap_or(0.0),
                spent_ns: t.cost().budget().spent_ns(),
                totals: t.cost().budget().totals(),
                default_open: t.auth().default_open(),
            }
        })
    })
    .flatten()
    .unwrap_or_default()
}

fn mean_ms(ns: u64, n: u64) -> String {
    format!("{:.3}", ns as f64 / 1e6 / n.max(1) as f64)
}

/// A rate (requests a second) as INFO text.
fn rate(per_second: f64) -> String {
    format!("{per_second:.1}")
}

fn seconds(ns: u64) -> String {
    format!("{:.3}", ns as f64 / 1e9)
}

/// A share as a percentage with two decimals (INFO fields are text).
fn percent(share: f64) -> String {
    format!("{:.2}", 100.0 * share)
}

pub fn add_section(ctx: &InfoContext, for_crash_report: bool) {
    let shape = config::shape();
    let f = figures(for_crash_report);
    let share = if f.every == 0 {
        0.0
    } else {
        1.0 / f64::from(f.every)
    };
    let sample = config::TRACK_SAMPLE.load(std::sync::atomic::Ordering::Relaxed);
    let auth = match f.default_open {
        Some(true) => "none-needed",
        _ if super::filter::names_clients() => "per-client",
        _ => "per-slot",
    };
    let _ = ctx
        .builder()
        .add_section("tracking")
        .field("tracker_enabled", i64::from(super::counting()))
        .and_then(|s| s.field("tracker_k", i64::from(shape.k)))
        .and_then(|s| {
            s.field(
                "tracker_halflife_seconds",
                (shape.half_life_ms / 1000.0) as i64,
            )
        })
        .and_then(|s| s.field("tracker_sample", sample))
        .and_then(|s| s.field("tracker_share_counted", format!("{share:.4}")))
        .and_then(|s| {
            s.field(
                "tracker_accesses_kept_share",
                format!("{:.4}", 1.0 / f64::from(f.keep_one_in.max(1))),
            )
        })
        .and_then(|s| s.field("tracker_cpu_percent", percent(f.cost)))
        .and_then(|s| s.field("tracker_cpu_main_percent", percent(f.parts.0 + f.parts.1)))
        .and_then(|s| s.field("tracker_cpu_worker_percent", percent(f.parts.2)))
        .and_then(|s| {
            s.field(
                "tracker_cpu_percent_counting_all",
                percent(f.cost_counting_all),
            )
        })
        .and_then(|s| s.field("tracker_cpu_budget_percent", percent(config::cpu_budget())))
        .and_then(|s| {
            s.field(
                "tracker_cpu_seconds",
                format!("{:.3}", f.spent_ns as f64 / 1e9),
            )
        })
        .and_then(|s| s.field("tracker_cpu_seconds_main", seconds(f.totals.main_ns)))
        .and_then(|s| s.field("tracker_cpu_seconds_worker", seconds(f.totals.worker_ns)))
        .and_then(|s| s.field("tracker_seconds_counted", seconds(f.totals.counted_ns)))
        .and_then(|s| s.field("tracker_reads_per_second", rate(f.rates.0.per_second)))
        .and_then(|s| s.field("tracker_writes_per_second", rate(f.rates.1.per_second)))
        .and_then(|s| s.field("tracker_reads_per_second_low", rate(f.rates.0.bounds().low)))
        .and_then(|s| {
            s.field(
                "tracker_reads_per_second_high",
                rate(f.rates.0.bounds().high),
            )
        })
        .and_then(|s| {
            s.field(
                "tracker_writes_per_second_low",
                rate(f.rates.1.bounds().low),
            )
        })
        .and_then(|s| {
            s.field(
                "tracker_writes_per_second_high",
                rate(f.rates.1.bounds().high),
            )
        })
        .and_then(|s| s.field("tracker_memory_bytes", number(f.memory)))
        .and_then(|s| s.field("tracker_keys_counted", number(f.keys_counted)))
        .and_then(|s| s.field("tracker_commands_seen", number(f.seen)))
        .and_then(|s| s.field("tracker_commands_redirected", number(f.redirected)))
        .and_then(|s| {
            let state = match f.hash_slots_served {
                None => "none",
                Some((_, true)) => "ok",
                Some((_, false)) => "fail",
            };
            s.field("tracker_cluster_state", state)
        })
        .and_then(|s| {
            let served = f.hash_slots_served.map_or(0, |(n, _)| n as i64);
            s.field("tracker_cluster_slots_served", served)
        })
        .and_then(|s| s.field("tracker_accesses_dropped", number(f.dropped)))
        .and_then(|s| {
            s.field(
                "tracker_worker_thinned_seconds",
                seconds(f.thinned_ms * 1_000_000),
            )
        })
        .and_then(|s| s.field("tracker_misses", i64::from(config::misses_on())))
        .and_then(|s| s.field("tracker_misses_seen", number(f.misses_seen)))
        .and_then(|s| s.field("tracker_auth_check", auth))
        .and_then(|s| s.field("tracker_unauthenticated_dropped", number(f.unauthenticated)))
        .and_then(|s| s.field("tracker_auth_checks", number(f.checks)))
        .and_then(|s| s.field("tracker_auth_refused", number(f.refused)))
        .and_then(|s| s.field("tracker_slots", number(f.time_slots.0)))
        .and_then(|s| s.field("tracker_slots_counted", number(f.time_slots.1)))
        .and_then(|s| {
            let uncounted = f.time_slots.2.saturating_sub(f.time_slots.3);
            s.field(
                "tracker_uncounted_slot_mean_ms",
                mean_ms(uncounted, f.time_slots.0.saturating_sub(f.time_slots.1)),
            )
        })
        .and_then(|s| {
            s.field(
                "tracker_counted_slot_mean_ms",
                mean_ms(f.time_slots.3, f.time_slots.1),
            )
        })
        .and_then(|s| s.field("tracker_slots_discarded", number(f.time_slots_discarded)))
        .and_then(|s| s.build_section())
        .and_then(|b| b.build_info());
}
