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
    fn coins_keep_one_in_n() {
        let mut rng = 0x1234_5678_9abc_def1u64;
        let kept = (0..160_000).filter(|_| keep(&mut rng, 16)).count();
        assert!((kept as f64 / 10_000.0 - 1.0).abs() < 0.05, "{kept}");
        assert!((0..100).all(|_| keep(&mut rng, 1)));
    }
}
