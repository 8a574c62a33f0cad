//! `INFO heavykeeper` (section `heavykeeper_tracking`): what the tracker
//! holds and what it has seen.

use super::{config, filter};
use redis_module::InfoContext;

pub fn add_section(ctx: &InfoContext) {
    let shape = config::shape();
    let number = crate::module_stats::info_number;
    // (seen, sampled, memory, keys counted), read without waiting: INFO can
    // run from a crash report.
    let figures = super::with_state(|state| {
        state.as_ref().map(|t| {
            let tracker = t.worker.try_tracker();
            (
                t.commands_seen,
                t.commands_sampled,
                tracker.as_ref().map_or(0, |k| k.memory_bytes() as u64),
                tracker.as_ref().map_or(0, |k| k.keys_counted()),
            )
        })
    })
    .flatten()
    .unwrap_or_default();
    let _ = ctx
        .builder()
        .add_section("tracking")
        .field("enabled", i64::from(filter::is_registered()))
        .and_then(|s| s.field("k", i64::from(shape.k)))
        .and_then(|s| s.field("halflife_seconds", (shape.half_life_ms / 1000.0) as i64))
        .and_then(|s| s.field("sample", number(config::sample())))
        .and_then(|s| s.field("memory_bytes", number(figures.2)))
        .and_then(|s| s.field("keys_counted", number(figures.3)))
        .and_then(|s| s.field("commands_seen", number(figures.0)))
        .and_then(|s| s.field("commands_sampled", number(figures.1)))
        .and_then(|s| s.build_section())
        .and_then(|b| b.build_info());
}
