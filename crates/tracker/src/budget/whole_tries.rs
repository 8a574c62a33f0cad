//! Counting every command tried again while time is sampled: its cost is
//! then measured, not worked out from sampled time.
//!
//! Sampled, a counted second costs more than one counted whole (each slot's
//! edges, a cold cache at each opening, a batch handed over per slot): at
//! ~20,000 commands a second the main thread spent as much counting one
//! slot in three as counting them all, so the cost of counting every
//! command, worked out from sampled time, read 1.0-1.5% of a core where
//! counting them all cost 0.35-0.5%: after a flood the tracker went on
//! sampling one slot in three to six for good, and a key read in three
//! bursts was missed whole two times in three. Two things start a try:
//! - **time**: sampling lightly, a try after [`FIRST_WAIT_NS`], doubled
//!   after each try that failed, up to [`LONGEST_WAIT_NS`] (a load at the
//!   boundary tries a few times a minute, not every few seconds);
//! - **a load that fell**: the main thread's CPU fell several times below
//!   its recent mean, two ticks in a row (a flood that ended). The cost worked out from the
//!   flood's sums would otherwise keep the tracker sampling for seconds
//!   after it, while the light load that followed fits whole: at ~20,000
//!   commands a second right after a saturating one, a key read in three
//!   bursts read 0.66 of its truth in 2 of 6 readings (Valkey 9.1), a burst
//!   in no counted slot. Such tries keep a spacing of their own, doubled
//!   after each that failed.
//!
//! A try that goes back to sampling failed; one that counted every command
//! for [`PASSED_NS`], having spent no more than its allowance, passed.

/// How long sampling lightly lasts before the first try, and after a try
/// that passed.
pub const FIRST_WAIT_NS: f64 = 3e9;
pub const LONGEST_WAIT_NS: f64 = 48e9;
/// A try counted every command this long without going back to sampling:
/// it passed.
pub const PASSED_NS: f64 = 2e9;
/// The least time between tries started by a fall in load, while they pass.
pub const FALL_SPACING_NS: f64 = 1e9;

/// What started a try.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cause {
    Time,
    LoadFell,
}

#[derive(Clone, Copy, Debug)]
struct Try {
    cause: Cause,
    /// How long it has counted every command, ns.
    whole_ns: f64,
}

/// When counting every command is next tried, and how the last try went.
#[derive(Clone, Copy, Debug)]
pub struct WholeTries {
    /// Sampling lightly since the last try, ns.
    waited_ns: f64,
    /// How long to wait before the next try by time.
    wait_ns: f64,
    /// Since the last try ended, ns.
    since_try_ns: f64,
    /// The least time between tries on a fall in load.
    fall_spacing_ns: f64,
    trying: Option<Try>,
}

impl Default for WholeTries {
    fn default() -> Self {
        Self {
            waited_ns: 0.0,
            wait_ns: FIRST_WAIT_NS,
            since_try_ns: f64::INFINITY,
            fall_spacing_ns: FALL_SPACING_NS,
            trying: None,
        }
    }
}

/// What a tick saw, for the tries.
#[derive(Clone, Copy, Debug, Default)]
pub struct Seen {
    pub elapsed_ns: f64,
    /// Time is sampled now (one slot in more than one).
    pub sampling: bool,
    /// Sampling lightly, where counting every command might fit.
    pub light: bool,
    /// The load fell far below its recent mean, and counting every command
    /// at the load now would likely fit.
    pub load_fell: bool,
    /// Counting every command has spent no more than its allowance since it
    /// began (bursts and all).
    pub within_allowance: bool,
}

impl WholeTries {
    /// After a tick: true when a try begins now (count every command, and
    /// forget what sampling cost).
    pub fn after_tick(&mut self, seen: Seen) -> bool {
        if let Some(t) = self.trying.as_mut() {
            t.whole_ns += seen.elapsed_ns;
            if seen.sampling {
                self.end_try(false);
            } else if t.whole_ns >= PASSED_NS && seen.within_allowance {
                self.end_try(true);
            }
            return false;
        }
        self.since_try_ns += seen.elapsed_ns;
        self.waited_ns = if seen.light {
            self.waited_ns + seen.elapsed_ns
        } else {
            0.0
        };
        let cause = if seen.sampling && seen.load_fell && self.since_try_ns >= self.fall_spacing_ns
        {
            Some(Cause::LoadFell)
        } else if self.waited_ns >= self.wait_ns {
            Some(Cause::Time)
        } else {
            None
        };
        let Some(cause) = cause else {
            return false;
        };
        self.waited_ns = 0.0;
        self.trying = Some(Try {
            cause,
            whole_ns: 0.0,
        });
        true
    }

    fn end_try(&mut self, passed: bool) {
        let Some(t) = self.trying.take() else {
            return;
        };
        self.since_try_ns = 0.0;
        match (passed, t.cause) {
            (true, _) => {
                self.wait_ns = FIRST_WAIT_NS;
                self.fall_spacing_ns = FALL_SPACING_NS;
            }
            (false, Cause::Time) => self.wait_ns = (2.0 * self.wait_ns).min(LONGEST_WAIT_NS),
            (false, Cause::LoadFell) => {
                self.fall_spacing_ns = (2.0 * self.fall_spacing_ns).min(LONGEST_WAIT_NS);
            }
        }
    }

    /// A try is under way.
    #[cfg(test)]
    fn trying(&self) -> bool {
        self.trying.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TICK: f64 = 100e6;

    fn tick(sampling: bool, light: bool, load_fell: bool) -> Seen {
        Seen {
            elapsed_ns: TICK,
            sampling,
            light,
            load_fell,
            within_allowance: !sampling,
        }
    }

    /// Ticks until a try begins (at most `limit`).
    fn ticks_to_try(t: &mut WholeTries, seen: Seen, limit: u32) -> Option<u32> {
        (1..=limit).find(|_| t.after_tick(seen))
    }

    #[test]
    fn sampling_lightly_tries_after_three_seconds_then_twice_as_long_after_each_failure() {
        let mut t = WholeTries::default();
        assert_eq!(
            ticks_to_try(&mut t, tick(true, true, false), 1_000),
            Some(30)
        );
        assert!(t.trying());
        // The try goes back to sampling at once: failed.
        assert!(!t.after_tick(tick(true, true, false)));
        assert!(!t.trying());
        assert_eq!(
            ticks_to_try(&mut t, tick(true, true, false), 1_000),
            Some(60)
        );
        // This one counts every command for two seconds: passed, the wait
        // back to three seconds.
        assert!((0..20).all(|_| !t.after_tick(tick(false, false, false))));
        assert!(!t.trying());
        assert_eq!(
            ticks_to_try(&mut t, tick(true, true, false), 1_000),
            Some(30)
        );
    }

    #[test]
    fn a_try_that_spends_more_than_its_allowance_has_not_passed() {
        let mut t = WholeTries::default();
        assert!(t.after_tick(tick(true, false, true)));
        let over = Seen {
            within_allowance: false,
            ..tick(false, false, false)
        };
        assert!((0..50).all(|_| !t.after_tick(over)));
        assert!(t.trying());
        assert!(!t.after_tick(tick(false, false, false)));
        assert!(!t.trying());
    }

    #[test]
    fn sampling_heavily_never_tries_by_time() {
        let mut t = WholeTries::default();
        assert_eq!(ticks_to_try(&mut t, tick(true, false, false), 1_000), None);
    }

    #[test]
    fn a_load_that_fell_tries_at_once_and_failures_space_such_tries_out() {
        let mut t = WholeTries::default();
        // Sampling heavily for a while: a flood.
        assert_eq!(ticks_to_try(&mut t, tick(true, false, false), 50), None);
        // It ended: a try at the next tick.
        assert!(t.after_tick(tick(true, false, true)));
        // It failed (the load came back): the next fall waits two seconds,
        // then four after another failure.
        assert!(!t.after_tick(tick(true, false, false)));
        assert_eq!(
            ticks_to_try(&mut t, tick(true, false, true), 1_000),
            Some(20)
        );
        assert!(!t.after_tick(tick(true, false, false)));
        assert_eq!(
            ticks_to_try(&mut t, tick(true, false, true), 1_000),
            Some(40)
        );
        // A try that passes brings the spacing back.
        assert!((0..20).all(|_| !t.after_tick(tick(false, false, false))));
        assert_eq!(
            ticks_to_try(&mut t, tick(true, false, true), 1_000),
            Some(10)
        );
    }

    #[test]
    fn a_fall_while_every_command_is_counted_starts_nothing() {
        let mut t = WholeTries::default();
        assert_eq!(ticks_to_try(&mut t, tick(false, false, true), 100), None);
    }
}
