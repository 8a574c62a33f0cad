//! The commands the server served, read while time is sampled: against
//! what the counted slots say it served, what a counted slot of a
//! saturated server lacks ([`heavykeeper_tracker::sampling::served_shortfall`]).

use heavykeeper_tracker::sampling::served_shortfall::TickServed;

/// The server is asked once in this many ticks. Its answer is a whole
/// `INFO stats` section, built and parsed: 80 µs on Redis 7.0 and 140 µs
/// on Valkey 9.1 beside a saturating load (`perf`, 2-core VM), 0.08-0.14%
/// of a core at ten a second, a quarter of what the tracker's budget
/// leaves counting there. The sums it feeds remember ~20 s.
const ASK_EVERY_TICKS: u32 = 4;

/// What a tick brought.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Served {
    /// The server was asked: what it served since it was last asked, time
    /// sampled all through.
    Asked(TickServed),
    /// Time sampled all through, the server not asked this tick.
    Pending,
    /// Time was not sampled all through the tick, or the server cannot
    /// say: what came before no longer says what the next slots lack.
    Unknown,
}

/// The server's count of commands served when last asked, and the ticks
/// since, all sampled.
#[derive(Default)]
pub struct ServedCounts {
    last: Option<u64>,
    since: TickServed,
    ticks: u32,
}

impl ServedCounts {
    /// The tick that ended now, `elapsed_ns` long, the main thread wanting
    /// a CPU `wanted_ns` of it, and time `sampled` all through it; `ask`
    /// asks the server its count of commands served.
    pub fn tick(
        &mut self,
        sampled: bool,
        elapsed_ns: u64,
        wanted_ns: u64,
        ask: impl FnOnce() -> Option<u64>,
    ) -> Served {
        if !sampled {
            *self = Self::default();
            return Served::Unknown;
        }
        self.since.elapsed_ns += elapsed_ns;
        self.since.wanted_ns += wanted_ns;
        self.ticks += 1;
        if self.last.is_some() && self.ticks < ASK_EVERY_TICKS {
            return Served::Pending;
        }
        let Some(now) = ask() else {
            *self = Self::default();
            return Served::Unknown;
        };
        let since = std::mem::take(&mut self.since);
        self.ticks = 0;
        match self.last.replace(now) {
            Some(last) => Served::Asked(TickServed {
                commands: now.saturating_sub(last),
                ..since
            }),
            // The first answer: where counting from; the slots that closed
            // before it have nothing to be held against.
            None => Served::Unknown,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TICK: u64 = 100_000_000;

    /// A server that served 500 commands a tick, and how often it was asked.
    #[derive(Default)]
    struct Server {
        served: u64,
        asked: u32,
    }

    impl Server {
        fn tick(&mut self, counts: &mut ServedCounts, sampled: bool) -> Served {
            self.served += 500;
            counts.tick(sampled, TICK, TICK / 2, || {
                self.asked += 1;
                Some(self.served)
            })
        }
    }

    #[test]
    fn the_server_is_asked_once_in_a_few_ticks_and_its_answer_covers_them() {
        let mut counts = ServedCounts::default();
        let mut server = Server::default();
        // The first answer is where counting starts from.
        assert_eq!(server.tick(&mut counts, true), Served::Unknown);
        for _ in 1..ASK_EVERY_TICKS {
            assert_eq!(server.tick(&mut counts, true), Served::Pending);
        }
        let span = u64::from(ASK_EVERY_TICKS);
        let whole = TickServed {
            elapsed_ns: span * TICK,
            wanted_ns: span * TICK / 2,
            commands: span * 500,
        };
        assert_eq!(server.tick(&mut counts, true), Served::Asked(whole));
        // A tick not sampled all through starts again.
        assert_eq!(server.tick(&mut counts, false), Served::Unknown);
        assert_eq!(server.tick(&mut counts, true), Served::Unknown);
        assert_eq!(server.tick(&mut counts, true), Served::Pending);
        assert_eq!(server.asked, 3);
    }

    #[test]
    fn a_server_that_cannot_say_starts_again() {
        let mut counts = ServedCounts::default();
        assert_eq!(counts.tick(true, TICK, 0, || Some(10)), Served::Unknown);
        for _ in 1..ASK_EVERY_TICKS {
            assert_eq!(counts.tick(true, TICK, 0, || Some(20)), Served::Pending);
        }
        assert_eq!(counts.tick(true, TICK, 0, || None), Served::Unknown);
        assert_eq!(counts.tick(true, TICK, 0, || Some(30)), Served::Unknown);
    }
}
