//! What counting every command may overspend for a moment: the budget is a
//! share of a core over seconds, not over each tick.
//!
//! While every command is counted, each tick's allowance that went unspent
//! is kept, up to [`CAP_S`] seconds of it, and a tick that spends more
//! draws on it ([`Standing`]). Counting every command is left only once the
//! credit is overdrawn; a try of it passes only while the credit stays at
//! or above what it started with (it spent no more than its allowance,
//! bursts and all). So a load that costs more than the budget for good is
//! still cut within a few ticks (a flood at its first, or after a long
//! lull its second), while a burst that
//! ended within a tick (a pipeline of thousands of commands beside a light
//! load) does not turn the tracker to sampling time for the seconds after
//! it. It did: at ~20,000 commands a second on Valkey
//! 9.1, each of a key's three pipelines of 3,200 `GET`s passed three
//! budgets in its tick, time was sampled after it, and the key's next
//! pipeline fell in that sampled time: it read 0.34 of its truth in one
//! reading (two of its three pipelines in no counted slot), its bounds
//! saying 0.95 to 1.04.

/// The most unspent allowance kept, in seconds of it.
pub const CAP_S: f64 = 2.0;
/// What counting every command starts with each time it begins, in seconds
/// of allowance: a try that floods is cut at its first tick all the same.
pub const START_S: f64 = 1.0;

/// Where the credit stands after a tick.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Standing {
    /// At or above what it started with.
    Ahead,
    /// Below that, not overdrawn.
    Drawing,
    Overdrawn,
}

/// Unspent allowance, in ns of CPU (negative: overdrawn).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BurstCredit {
    ns: f64,
}

impl BurstCredit {
    /// Credit for counting every command that begins now, at an allowance
    /// of `allowed` of a core.
    pub fn starting(allowed: f64) -> Self {
        Self {
            ns: START_S * 1e9 * allowed,
        }
    }

    /// A tick of `elapsed_ns` that spent `spent_ns` at an allowance of
    /// `allowed` of a core.
    pub fn after_tick(&mut self, elapsed_ns: f64, spent_ns: f64, allowed: f64) -> Standing {
        let cap = CAP_S * 1e9 * allowed;
        self.ns = (self.ns + elapsed_ns * allowed - spent_ns).min(cap);
        if self.ns >= START_S * 1e9 * allowed {
            Standing::Ahead
        } else if self.ns >= 0.0 {
            Standing::Drawing
        } else {
            Standing::Overdrawn
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Standing::*;
    use super::*;

    const TICK: f64 = 100e6;
    const ALLOWED: f64 = 0.006;

    #[test]
    fn a_burst_within_what_went_unspent_is_taken_and_a_lasting_overspend_is_not() {
        let mut c = BurstCredit::starting(ALLOWED);
        // Half the allowance for two seconds: the credit fills to its cap
        // (two seconds of allowance, 12 ms), no further.
        for _ in 0..20 {
            assert_eq!(c.after_tick(TICK, TICK * ALLOWED / 2.0, ALLOWED), Ahead);
        }
        // A burst of 4 ms in one tick leaves it ahead, one of 5 ms more draws
        // on it.
        assert_eq!(c.after_tick(TICK, 4e6, ALLOWED), Ahead);
        assert_eq!(c.after_tick(TICK, 5e6, ALLOWED), Drawing);
        // Twice the allowance from then on: overdrawn within a few ticks.
        let ticks = (1..100)
            .find(|_| c.after_tick(TICK, 2.0 * TICK * ALLOWED, ALLOWED) == Overdrawn)
            .unwrap();
        assert!((3..=10).contains(&ticks), "{ticks}");
    }

    #[test]
    fn a_flood_overdraws_it_in_its_first_tick_or_after_a_long_lull_its_second() {
        // Counting every command of a saturated node: 12% of a core.
        let flood = TICK * 0.12;
        let mut c = BurstCredit::starting(ALLOWED);
        assert_eq!(c.after_tick(TICK, flood, ALLOWED), Overdrawn);
        let mut c = BurstCredit::starting(ALLOWED);
        for _ in 0..100 {
            c.after_tick(TICK, 0.0, ALLOWED);
        }
        assert_eq!(c.after_tick(TICK, flood, ALLOWED), Drawing);
        assert_eq!(c.after_tick(TICK, flood, ALLOWED), Overdrawn);
    }
}
