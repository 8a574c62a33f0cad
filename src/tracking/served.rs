//! The commands the server served each tick, read while time is sampled:
//! against what the counted slots say it served, what a counted slot of a
//! saturated server lacks ([`heavykeeper_tracker::sampling::served_shortfall`]).

use crate::host::server_info;
use heavykeeper_tracker::sampling::served_shortfall::TickServed;
use redis_module::Context;

/// The server's count of commands served at the last tick time was
/// sampled through.
#[derive(Default)]
pub struct ServedCounts {
    last: Option<u64>,
}

impl ServedCounts {
    /// The tick that ended now, `elapsed_ns` long, the main thread wanting
    /// a CPU `wanted_ns` of it: what the server served, if time was `sampled` all
    /// through it (the server is asked only then, `INFO stats` once a
    /// tick) and the server can say.
    pub fn tick(
        &mut self,
        ctx: &Context,
        sampled: bool,
        elapsed_ns: u64,
        wanted_ns: u64,
    ) -> Option<TickServed> {
        let now = sampled
            .then(|| server_info::commands_processed(ctx))
            .flatten();
        let last = std::mem::replace(&mut self.last, now)?;
        Some(TickServed {
            elapsed_ns,
            wanted_ns,
            commands: now?.saturating_sub(last),
        })
    }
}
