//! The commands the server served, read about once a second while time is
//! sampled: against what the counted slots say it served, what a counted
//! slot of a saturated server lacks
//! ([`heavykeeper_tracker::sampling::served_shortfall`]).
//!
//! Read once a second, not each tick: `INFO stats` is the only way a module
//! learns the count, and it costs the server ~75 us of its main thread (a
//! saturated 2-core VM): read ten times a second, it took three fifths of
//! the CPU the tracker's clocks spent, out of the same budget counting
//! gets. The sums it feeds remember ~20 s.

use crate::host::server_info;
use heavykeeper_tracker::sampling::served_shortfall::{Served, ServedSpan};
use redis_module::Context;

/// Ticks between two readings of the server's count.
const READ_EVERY_TICKS: u32 = 10;

#[derive(Default)]
pub struct ServedCounts {
    /// The server's count at the last reading (`None`: none since time was
    /// last sampled all through a tick).
    last: Option<u64>,
    /// The span since that reading.
    since: ServedSpan,
    ticks: u32,
}

impl ServedCounts {
    /// The tick that ended now, `elapsed_ns` long, the main thread busy
    /// `busy_ns` of it: what the server served since the last reading, if
    /// time was `sampled` all through the ticks since and it is read now
    /// (the server is asked only while time is sampled).
    pub fn tick(&mut self, ctx: &Context, sampled: bool, elapsed_ns: u64, busy_ns: u64) -> Served {
        if !sampled {
            *self = Self::default();
            return Served::Unknown;
        }
        self.since.elapsed_ns += elapsed_ns;
        self.since.busy_ns += busy_ns;
        self.ticks += 1;
        if self.last.is_some() && self.ticks < READ_EVERY_TICKS {
            return Served::Unread;
        }
        let now = server_info::commands_processed(ctx);
        let last = std::mem::replace(&mut self.last, now);
        let span = std::mem::take(&mut self.since);
        self.ticks = 0;
        match (last, now) {
            (Some(last), Some(now)) => Served::Read(ServedSpan {
                commands: now.saturating_sub(last),
                ..span
            }),
            // The first reading (the slots gathered before it have no
            // count to be held against), or none to be had.
            _ => Served::Unknown,
        }
    }
}
