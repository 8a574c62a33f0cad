//! `INFO heavykeeper` (section `heavykeeper_tracking`): what the tracker
//! holds, what it sees and what it costs. Every field names the tracker, so
//! that none could be mistaken for a figure of the sketches.

use super::config;
use super::routing::Routing;
use super::time_slots::SlotFigures;
use crate::host::info::{self, number};
use heavykeeper_tracker::Tally;
use redis_module::{InfoContext, InfoContextBuilderFieldBottomLevelValue as Value};

/// What INFO reads. The node's rates wait for the worker's step (they are
/// what a rebalance plans from); nothing else waits, and in a crash report
/// nothing at all: figures that are busy right now read as 0.
#[derive(Default)]
struct Figures {
    every: u32,
    keep_one_in: u32,
    /// What each counted access stands for beyond its slot's weight.
    correction: f64,
    seen: super::state::Figures,
    slots: SlotFigures,
    hash_slots_served: Option<(usize, bool)>,
    /// Accesses dropped as not let in, checks made, clients refused.
    auth: (u64, u64, u64),
    thinned_ms: u64,
    rates: (Tally, Tally),
    memory: u64,
    /// The worker's own heap: its size, what is in use, overflows.
    worker_heap: crate::host::thread_heap::HeapFigures,
    /// Rows whose senders are counted, and the bytes that takes.
    clients: (u64, u64),
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
            Figures {
                every: t.slots().every(),
                keep_one_in: t.slots().keep_one_in(),
                correction: t.slots().correction(),
                seen: t.figures(),
                slots: t.slots().figures(),
                hash_slots_served: t.routing().and_then(Routing::served),
                auth: t.senders().auth().figures(),
                thinned_ms: t.worker().thinned_ms(),
                rates,
                memory: t.try_memory_bytes().unwrap_or(0) as u64,
                worker_heap: crate::host::allocator::worker_heap_figures(),
                keys_counted: t
                    .worker()
                    .try_counting()
                    .map_or(0, |c| c.tracker().keys_counted()),
                clients: (t.worker().try_counting())
                    .and_then(|c| c.tracker().clients().map(|a| (a.rows(), a.heap_bytes())))
                    .map_or((0, 0), |(rows, bytes)| (rows as u64, bytes as u64)),
                cost: t.cost().budget().recent_cost(),
                parts: t.cost().recent_shares(),
                cost_counting_all: t.cost().budget().cost_when_counting().unwrap_or(0.0),
                spent_ns: t.cost().budget().spent_ns(),
                totals: t.cost().budget().totals(),
                default_open: t.senders().auth().default_open(),
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
    let (reads, writes) = (f.rates.0, f.rates.1);
    let (slots, counted) = (f.slots.begun, f.slots.counted);
    let uncounted_ns = f.slots.ns.saturating_sub(f.slots.counted_ns);
    let cluster_state = match f.hash_slots_served {
        None => "none",
        Some((_, true)) => "ok",
        Some((_, false)) => "fail",
    };
    let halflife = (shape.half_life_ms / 1000.0) as i64;
    let kept = format!("{:.4}", 1.0 / f64::from(f.keep_one_in.max(1)));
    let all = percent(f.cost_counting_all);
    let served = f.hash_slots_served.map_or(0, |(n, _)| n as i64);
    let thinned = seconds(f.thinned_ms * 1_000_000);
    let uncounted = mean_ms(uncounted_ns, slots.saturating_sub(counted));
    let counted_mean = mean_ms(f.slots.counted_ns, counted);
    let redirected = number(f.seen.commands_redirected);
    // Below 1 by chance only (kept at 0.95 or more, not at 1: see the
    // tracker's `served_shortfall`); 1 when tracking is off.
    let correction = if f.correction > 0.0 {
        f.correction
    } else {
        1.0
    };
    let fields: [(&str, Value); 47] = [
        ("enabled", i64::from(super::counting()).into()),
        ("k", i64::from(shape.k).into()),
        ("halflife_seconds", halflife.into()),
        ("sample", sample.into()),
        ("share_counted", format!("{share:.4}").into()),
        ("accesses_kept_share", kept.into()),
        ("counted_correction", format!("{correction:.4}").into()),
        ("cpu_percent", percent(f.cost).into()),
        ("cpu_main_percent", percent(f.parts.0 + f.parts.1).into()),
        ("cpu_worker_percent", percent(f.parts.2).into()),
        ("cpu_percent_counting_all", all.into()),
        ("cpu_budget_percent", percent(config::cpu_budget()).into()),
        ("cpu_seconds", seconds(f.spent_ns).into()),
        ("cpu_seconds_main", seconds(f.totals.main_ns).into()),
        ("cpu_seconds_worker", seconds(f.totals.worker_ns).into()),
        ("seconds_counted", seconds(f.totals.counted_ns).into()),
        ("reads_per_second", rate(reads.per_second).into()),
        ("writes_per_second", rate(writes.per_second).into()),
        ("reads_per_second_low", rate(reads.bounds().low).into()),
        ("reads_per_second_high", rate(reads.bounds().high).into()),
        ("writes_per_second_low", rate(writes.bounds().low).into()),
        ("writes_per_second_high", rate(writes.bounds().high).into()),
        ("memory_bytes", number(f.memory).into()),
        ("client_rows", number(f.clients.0).into()),
        ("client_rows_memory_bytes", number(f.clients.1).into()),
        (
            "worker_heap_bytes",
            number(f.worker_heap.bytes as u64).into(),
        ),
        (
            "worker_heap_used_bytes",
            number(f.worker_heap.used_bytes as u64).into(),
        ),
        (
            "worker_heap_overflows",
            number(f.worker_heap.overflows).into(),
        ),
        ("keys_counted", number(f.keys_counted).into()),
        ("commands_seen", number(f.seen.commands_seen).into()),
        ("commands_redirected", redirected.into()),
        ("cluster_state", cluster_state.into()),
        ("cluster_slots_served", served.into()),
        ("accesses_dropped", number(f.seen.accesses_dropped).into()),
        ("worker_thinned_seconds", thinned.into()),
        ("misses", i64::from(config::misses_on()).into()),
        ("misses_seen", number(f.seen.misses_seen).into()),
        ("auth_check", auth.into()),
        ("unauthenticated_dropped", number(f.auth.0).into()),
        ("auth_checks", number(f.auth.1).into()),
        ("auth_refused", number(f.auth.2).into()),
        ("slots", number(slots).into()),
        ("slots_counted", number(counted).into()),
        ("uncounted_slot_mean_ms", uncounted.into()),
        ("counted_slot_mean_ms", counted_mean.into()),
        ("slots_discarded", number(f.slots.discarded).into()),
        ("slots_first_passes", number(f.slots.first_passes).into()),
    ];
    info::add_section(ctx, "tracking", "tracker_", fields);
}
