//! Keeping one access in `n` within counted slots of time, when counting
//! every one would cost more than the tracker's budget: each access by its
//! own coin, so that a burst that falls in a counted slot is thinned access
//! by access (what it stands for stays right), and the gatherer (the
//! command filter) copies fewer keys and the worker takes fewer in.
//!
//! Thinning accesses is the cheaper way to fit a budget than counting
//! fewer slots: for a steady key both add the same kind of noise, but a key
//! that comes in bursts is counted or not by the slot its burst falls in,
//! so every slot counted more keeps its bursts in view. `n` is a power of
//! two (a coin is a mask of random bits), at most [`MAX_KEEP_ONE_IN`];
//! [`crate::CostBudget`] says which.

/// The thinnest access thinning: beyond it, fewer slots are counted.
pub const MAX_KEEP_ONE_IN: u32 = 16;

/// Where the share of time counted is fixed (`track-sample N`), the least
/// `n` at which taking accesses in fits `share` of a core, from what it
/// costs now (`absorb`, a share of a core, at `current`): every access
/// where it fits. With hysteresis: thinned further once over, back once
/// under 0.4 of it.
pub fn keep_one_in_within(absorb: f64, share: f64, current: u32) -> u32 {
    if share.is_nan() || share <= 0.0 || !absorb.is_finite() {
        return current;
    }
    let whole = absorb * f64::from(current.max(1));
    let mut fitting = 1;
    while fitting < MAX_KEEP_ONE_IN && whole / f64::from(fitting) > share {
        fitting *= 2;
    }
    let over = whole / f64::from(current.max(1)) > share;
    let well_under = whole / f64::from(fitting) <= 0.4 * share;
    if (fitting > current && over) || (fitting < current && well_under) {
        fitting
    } else {
        current
    }
}

/// One coin: keep this access? (`rng` a xorshift state, `keep_one_in` a
/// power of two.)
#[inline(always)]
pub fn keep(rng: &mut u64, keep_one_in: u32) -> bool {
    if keep_one_in <= 1 {
        return true;
    }
    *rng ^= *rng << 13;
    *rng ^= *rng >> 7;
    *rng ^= *rng << 17;
    (*rng >> 40) & u64::from(keep_one_in - 1) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fixed_share_of_time_thins_what_the_worker_cannot_take() {
        // Taking every access in costs 10% of a core, 3% allowed: 1 in 4.
        assert_eq!(keep_one_in_within(0.10, 0.03, 1), 4);
        // At 1 in 4 it costs 2.5%: stays.
        assert_eq!(keep_one_in_within(0.025, 0.03, 4), 4);
        // The load halves (1.25% at 1 in 4, 5% whole): 2 would cost 2.5%,
        // not under 0.4 of the share: stays at 4.
        assert_eq!(keep_one_in_within(0.0125, 0.03, 4), 4);
        // A light load: every access again.
        assert_eq!(keep_one_in_within(0.001, 0.03, 4), 1);
        assert_eq!(keep_one_in_within(0.01, 0.03, 1), 1);
    }

    #[test]
    fn coins_keep_one_in_n() {
        let mut rng = 0x1234_5678_9abc_def1u64;
        let kept = (0..160_000).filter(|_| keep(&mut rng, 16)).count();
        assert!((kept as f64 / 10_000.0 - 1.0).abs() < 0.05, "{kept}");
        assert!((0..100).all(|_| keep(&mut rng, 1)));
    }
}
