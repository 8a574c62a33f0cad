//! Keeping one access in `n` within counted slots of time, when counting
//! every one would cost more than the tracker's budget: each access by its
//! own coin, so that a burst that falls in a counted slot is thinned access
//! by access (what it stands for stays right), and the gatherer (the
//! command filter) copies fewer keys and the worker takes fewer in.
//!
//! The coins themselves are [`crate::sampling::access_coins`].
//!
//! Thinning accesses is the cheaper way to fit a budget than counting
//! fewer slots: for a steady key both add the same kind of noise, but a key
//! that comes in bursts is counted or not by the slot its burst falls in,
//! so every slot counted more keeps its bursts in view. `n` is a power of
//! two, at most [`MAX_KEEP_ONE_IN`]: [`crate::budget::cost_budget::CostBudget`] says which, or,
//! where the share of time counted is fixed, [`ThinningWithinShare`].

/// The thinnest access thinning: beyond it, fewer slots are counted.
pub const MAX_KEEP_ONE_IN: u32 = 16;

/// How much of each tick the running cost of taking every access in
/// takes: about a second's memory at ten ticks a second.
const FOLLOW: f64 = 0.1;

/// The burst the worker may take in whole before it thins: this many
/// seconds of its share. The fixed share is a bound over seconds, not over
/// a tick: a flood of 300,000 commands at a million a second is counted
/// whole, a saturation that lasts is thinned within a second or so.
pub const BURST_SECONDS: f64 = 10.0;

/// Where the share of time counted is fixed (`track-sample N`): one access
/// in how many to keep so that taking them in fits the worker's share.
///
/// When to thin is a credit (a token bucket of [`BURST_SECONDS`] of the
/// share): a burst is taken in whole while it lasts. How far to thin is
/// the running cost of taking in *every* access (each tick's cost times
/// the thinning in force then), so that thinning does not feed on itself:
/// a mean of costs measured before a thinning, multiplied by it, would
/// count it twice and thin ever further after the load has gone.
#[derive(Clone, Copy, Debug, Default)]
pub struct ThinningWithinShare {
    /// Running cost of taking every access in, a share of one core.
    whole: f64,
    /// What may still be spent over the share, in core-seconds (`None`:
    /// full, as at the start).
    credit: Option<f64>,
}

impl ThinningWithinShare {
    /// One tick of `elapsed_s`: taking accesses in cost `absorb` (a share
    /// of one core) while one in `current` was kept; `share` is what it may
    /// take. The thinning to keep from now on.
    pub fn observe(&mut self, absorb: f64, elapsed_s: f64, current: u32, share: f64) -> u32 {
        if !(absorb.is_finite() && absorb >= 0.0 && elapsed_s.is_finite() && elapsed_s >= 0.0) {
            return current;
        }
        let whole = absorb * f64::from(current.max(1));
        self.whole += FOLLOW * (whole - self.whole);
        let most = share.max(0.0) * BURST_SECONDS;
        let credit = (self.credit.unwrap_or(most) + (share - absorb) * elapsed_s).min(most);
        self.credit = Some(credit);
        if current <= 1 && credit > 0.0 {
            return 1;
        }
        keep_one_in_within(self.whole, share, current)
    }
}

/// The least `n` at which taking accesses in fits `share` of a core, when
/// taking every one in costs `whole`: every access where it fits. With
/// hysteresis: thinned further once over the share, back only as far as
/// stays under 0.4 of it.
pub fn keep_one_in_within(whole: f64, share: f64, current: u32) -> u32 {
    if share.is_nan() || share <= 0.0 || !whole.is_finite() {
        return current;
    }
    let least_within = |bound: f64| least_keep_one_in(|n| whole / f64::from(n) <= bound);
    let fitting = least_within(share);
    let well_under = least_within(0.4 * share);
    if fitting > current {
        fitting
    } else if well_under < current {
        well_under
    } else {
        current
    }
}

/// The least power of two `n` that `fits`, up to [`MAX_KEEP_ONE_IN`].
pub fn least_keep_one_in(fits: impl Fn(u32) -> bool) -> u32 {
    let mut n = 1;
    while n < MAX_KEEP_ONE_IN && !fits(n) {
        n *= 2;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fixed_share_of_time_thins_what_the_worker_cannot_take() {
        // Taking every access in costs 10% of a core, 3% allowed: 1 in 4.
        assert_eq!(keep_one_in_within(0.10, 0.03, 1), 4);
        // At 1 in 4 it costs 2.5%: stays.
        assert_eq!(keep_one_in_within(0.10, 0.03, 4), 4);
        // The load halves (5% whole, 1.25% at 1 in 4): 2 would cost 2.5%,
        // not under 0.4 of the share: stays at 4.
        assert_eq!(keep_one_in_within(0.05, 0.03, 4), 4);
        // From 1 in 16, down as far as stays under 0.4 of the share.
        assert_eq!(keep_one_in_within(0.05, 0.03, 16), 8);
        // A light load: every access again.
        assert_eq!(keep_one_in_within(0.004, 0.03, 4), 1);
        assert_eq!(keep_one_in_within(0.01, 0.03, 1), 1);
    }

    /// `ticks` ticks of 100 ms in which taking every access in would cost
    /// `whole` (the cost measured is what the thinning in force leaves),
    /// within a share of 1.8%.
    fn run(t: &mut ThinningWithinShare, n: &mut u32, whole: f64, ticks: usize) {
        for _ in 0..ticks {
            *n = t.observe(whole / f64::from(*n), 0.1, *n, 0.018);
        }
    }

    #[test]
    fn bursts_pass_whole_and_lasting_loads_settle_both_ways() {
        for (what, steps) in [
            // Ten times the share for half a second, then quiet: taken in
            // whole; the credit is back, so the next burst too.
            ("a burst", &[(0.18, 5, 1), (0.0, 50, 1), (0.18, 5, 1)][..]),
            // Twice the share, lasting: once the credit is spent (after
            // BURST_SECONDS), 1 in 2 fits and stays: thinning does not
            // feed on itself.
            ("twice the share", &[(0.036, 150, 2), (0.036, 400, 2)]),
            // Once the load is gone every access is kept again.
            ("a load gone", &[(0.18, 300, 16), (0.0, 300, 1)]),
        ] {
            let (mut t, mut n) = (ThinningWithinShare::default(), 1);
            for &(whole, ticks, expected) in steps {
                run(&mut t, &mut n, whole, ticks);
                assert_eq!(n, expected, "{what}: {whole} for {ticks} ticks");
            }
        }
    }

    #[test]
    fn a_lasting_saturation_is_thinned_within_a_second_or_so() {
        let (mut t, mut n) = (ThinningWithinShare::default(), 1);
        // Ten times the share: the credit (10 s of the share) lasts about
        // a second, then 1 in 16 fits (1 in 8 would take 1.25x).
        run(&mut t, &mut n, 0.18, 5);
        assert_eq!(n, 1);
        run(&mut t, &mut n, 0.18, 15);
        assert!(n >= 8, "{n} after 2 s");
        run(&mut t, &mut n, 0.18, 300);
        assert_eq!(n, 16);
        // Twice the share: back down as far as stays well under the share
        // (1 in 8; 1 in 4 would not) and no further.
        run(&mut t, &mut n, 0.036, 400);
        assert_eq!(n, 8);
    }

    #[test]
    fn over_time_the_worker_keeps_to_its_share_and_its_burst() {
        // Two seconds at ten times the share, two quiet, for a minute: what
        // taking accesses in cost over it is the share plus one burst at most.
        let (mut t, mut n) = (ThinningWithinShare::default(), 1);
        let mut spent = 0.0;
        for tick in 0..600 {
            let whole = if tick % 40 < 20 { 0.18 } else { 0.0 };
            spent += whole / f64::from(n) * 0.1;
            n = t.observe(whole / f64::from(n), 0.1, n, 0.018);
        }
        assert!(spent <= 0.018 * (60.0 + BURST_SECONDS), "{spent}");
    }
}
