//! `INFO heavykeeper` (section `heavykeeper_tracking`): what the tracker
//! holds and what it has seen. Every field names the tracker, so that none
//! could be mistaken for a figure of the sketches.

use super::config;
use crate::module_stats::info_number as number;
use redis_module::InfoContext;

/// What INFO reads, without waiting for anything (INFO can run from a
/// crash report): figures that are busy right now read as 0.
#[derive(Default)]
struct Figures {
    seen: u64,
    sampled: u64,
    dropped: u64,
    memory: u64,
    keys_counted: u64,
}

pub fn add_section(ctx: &InfoContext) {
    let shape = config::shape();
    let figures = super::with_state(|state| {
        state.as_ref().map(|t| Figures {
            seen: t.commands_seen,
            sampled: t.commands_sampled,
            dropped: t.accesses_dropped,
            memory: t.try_memory_bytes().unwrap_or(0) as u64,
            keys_counted: t.worker.try_tracker().map_or(0, |k| k.keys_counted()),
        })
    })
    .flatten()
    .unwrap_or_default();
    let _ = ctx
        .builder()
        .add_section("tracking")
        .field("tracker_enabled", i64::from(super::windows::counting()))
        .and_then(|s| s.field("tracker_k", i64::from(shape.k)))
        .and_then(|s| {
            s.field(
                "tracker_halflife_seconds",
                (shape.half_life_ms / 1000.0) as i64,
            )
        })
        .and_then(|s| s.field("tracker_sample", number(config::sample())))
        .and_then(|s| s.field("tracker_memory_bytes", number(figures.memory)))
        .and_then(|s| s.field("tracker_keys_counted", number(figures.keys_counted)))
        .and_then(|s| s.field("tracker_commands_seen", number(figures.seen)))
        .and_then(|s| s.field("tracker_commands_sampled", number(figures.sampled)))
        .and_then(|s| s.field("tracker_accesses_dropped", number(figures.dropped)))
        .and_then(|s| s.build_section())
        .and_then(|b| b.build_info());
}
