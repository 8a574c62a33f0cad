//! The one bound every count saturates at.
//!
//! Counts are `f64`s so that a faded count and an exact integer count share
//! one representation. An `f64` holds every integer up to 2^53 exactly and
//! no further (2^53 + 1 rounds to 2^53, 2^53 + 3 to 2^53 + 4): past it, a sum
//! could round *up*, above the truth. So a count stops at 2^53 arrivals. The
//! arithmetic (arrivals, weighted arrivals), the merge and the decoder share
//! this bound, so every state the sketch can reach is a state it can load.
//!
//! With fading, stored masses are counts times the stored weight of one
//! arrival at the sketch's clock (`unit`, in `[1, 2^32)`), so the bound on a
//! stored mass is `MAX_COUNT * unit`.

/// Largest count a bucket or a member can reach, in arrivals: 2^53.
pub const MAX_COUNT: f64 = 9_007_199_254_740_992.0;

/// Largest stored mass when one arrival at the clock weighs `unit`.
#[inline]
pub fn max_mass(unit: f64) -> f64 {
    MAX_COUNT * unit
}

/// `a + b`, stopped at `cap`. A sum that is not a number (it never should
/// be) also stops at the cap rather than spreading.
#[inline]
pub fn saturating_sum(a: f64, b: f64, cap: f64) -> f64 {
    (a + b).min(cap)
}

/// Is `mass` a stored mass the sketch can hold under `cap`?
pub fn is_valid_mass(mass: f64, cap: f64) -> bool {
    mass.is_finite() && mass >= 0.0 && mass <= cap
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_stop_at_the_bound_and_never_round_above_it() {
        assert_eq!(saturating_sum(MAX_COUNT - 1.0, 4.0, MAX_COUNT), MAX_COUNT);
        assert_eq!(saturating_sum(MAX_COUNT, 3.0, MAX_COUNT), MAX_COUNT);
        assert_eq!(saturating_sum(5.0, 3.0, MAX_COUNT), 8.0);
        assert_eq!(saturating_sum(f64::NAN, 3.0, MAX_COUNT), MAX_COUNT);
        assert_eq!(saturating_sum(f64::INFINITY, 3.0, MAX_COUNT), MAX_COUNT);
    }

    #[test]
    fn every_integer_below_the_bound_is_exact() {
        // The two integers just below the bound add exactly.
        let a = MAX_COUNT - 2.0;
        assert_eq!(saturating_sum(a, 1.0, MAX_COUNT), MAX_COUNT - 1.0);
        assert!(is_valid_mass(MAX_COUNT, MAX_COUNT));
        assert!(!is_valid_mass(MAX_COUNT * 2.0, MAX_COUNT));
        assert!(!is_valid_mass(-1.0, MAX_COUNT));
        assert!(!is_valid_mass(f64::NAN, MAX_COUNT));
    }
}
