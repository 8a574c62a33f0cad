//! Forward decay (Cormode et al., ICDE 2009): old arrivals weigh less, so an
//! item that stopped arriving fades out of the top-k by itself.
//!
//! An arrival at time `t` is stored with weight `g(t) = 2^((t - L) / H)` for
//! half-life `H`; the current count of a stored mass `S` is `S / g(now)`.
//! All stored values share the same factor, so comparisons never go stale.
//! The landmark `L` is kept as a whole number of "epochs" of
//! [`RENORMALISE_HALF_LIVES`] half-lives, so that moving it rescales the stored
//! masses by an exact power of two: no reply can tell that it happened.
//!
//! Every function here that shapes stored state is computed with `libm`, not
//! the platform's C library: a replica on another CPU must store the same bits.

/// Half-lives between landmark moves: stored masses never exceed 2^32 times a
/// current count, far from the edge of an `f64`.
pub const RENORMALISE_HALF_LIVES: f64 = 32.0;

/// Latest time a sketch accepts, in milliseconds since the Unix epoch: the
/// end of the year 9999. Earliest: the epoch itself.
pub const MAX_TIMESTAMP_MS: i64 = 253_402_300_799_999;

/// A time in the range every sketch accepts.
pub fn clamp_time(time_ms: i64) -> i64 {
    time_ms.clamp(0, MAX_TIMESTAMP_MS)
}

/// The fading clock of a sketch.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fading {
    half_life_ms: f64,
    /// The landmark, in units of `RENORMALISE_HALF_LIVES` half-lives since the Unix epoch.
    epoch: i64,
}

impl Fading {
    /// A clock whose landmark is the last epoch boundary before `now_ms`.
    pub fn starting_at(half_life_ms: f64, now_ms: i64) -> Self {
        let mut fading = Self::from_parts(half_life_ms, 0);
        fading.epoch = fading.epoch_at(now_ms);
        fading
    }

    pub fn from_parts(half_life_ms: f64, epoch: i64) -> Self {
        Self {
            half_life_ms,
            epoch,
        }
    }

    pub fn half_life_ms(&self) -> f64 {
        self.half_life_ms
    }

    pub fn epoch(&self) -> i64 {
        self.epoch
    }

    /// `λ` in 1/second: the rate of an item is `λ · count`.
    pub fn lambda_per_second(&self) -> f64 {
        std::f64::consts::LN_2 * 1000.0 / self.half_life_ms
    }

    fn half_lives_since_epoch0(&self, time_ms: i64) -> f64 {
        clamp_time(time_ms) as f64 / self.half_life_ms
    }

    /// The epoch a clock at `time_ms` has its landmark in: the one a sketch
    /// whose latest arrival is at `time_ms` always holds. Times are clamped
    /// to `0..=MAX_TIMESTAMP_MS` and half-lives are at least 1 ms, so this
    /// is below 2^43.
    pub fn epoch_at(&self, time_ms: i64) -> i64 {
        let epochs = (self.half_lives_since_epoch0(time_ms) / RENORMALISE_HALF_LIVES).floor();
        if epochs.is_finite() && epochs > 0.0 {
            epochs as i64
        } else {
            0
        }
    }

    /// `g(t)`: the stored weight of one arrival at `time_ms`.
    pub fn weight(&self, time_ms: i64) -> f64 {
        // Exact: both terms are multiples of the first one's ulp.
        let exponent =
            self.half_lives_since_epoch0(time_ms) - RENORMALISE_HALF_LIVES * self.epoch as f64;
        libm::exp2(exponent)
    }

    /// The epoch to move to before applying an arrival at `time_ms`, if the
    /// landmark has fallen more than `RENORMALISE_HALF_LIVES` behind, together
    /// with the exact factor every stored mass must be multiplied by.
    pub fn renormalisation(&self, time_ms: i64) -> Option<(i64, f64)> {
        let target = self.epoch_at(time_ms);
        (target > self.epoch).then(|| (target, Self::epoch_factor(self.epoch, target)))
    }

    /// The exact factor that moves a stored mass from epoch `from` to a
    /// later epoch `to`: 2^-(32 (to - from)), 0 once that underflows.
    pub fn epoch_factor(from: i64, to: i64) -> f64 {
        let shift = to.saturating_sub(from) as f64 * RENORMALISE_HALF_LIVES;
        // A huge shift underflows to 0, the right answer for counts that
        // have faded for thousands of half-lives.
        if shift > 2000.0 {
            0.0
        } else {
            libm::exp2(-shift)
        }
    }

    pub fn move_to_epoch(&mut self, epoch: i64) {
        self.epoch = epoch;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renormalisation_is_an_exact_power_of_two() {
        let start = 1_700_000_000_123;
        let mut fading = Fading::starting_at(1500.0, start);
        assert!((1.0..2f64.powi(32)).contains(&fading.weight(start)));
        let now = start + 150_000;
        let before = fading.weight(now);
        let (epoch, factor) = fading.renormalisation(now).expect("far from the landmark");
        fading.move_to_epoch(epoch);
        let after = fading.weight(now);
        assert_eq!(before * factor, after);
        assert!((1.0..2f64.powi(32)).contains(&after));
        assert!(fading.renormalisation(now).is_none());
    }

    #[test]
    fn times_out_of_range_are_clamped_not_overflowed() {
        let fading = Fading::starting_at(1.0, 0);
        assert_eq!(fading.epoch_at(i64::MIN), 0);
        assert_eq!(fading.epoch_at(i64::MAX), fading.epoch_at(MAX_TIMESTAMP_MS));
        assert!(fading.epoch_at(MAX_TIMESTAMP_MS) < 1 << 43);
        let far = Fading::from_parts(1.0, i64::MIN);
        assert_eq!(far.renormalisation(0), Some((0, 0.0)));
        assert_eq!(Fading::epoch_factor(i64::MIN, i64::MAX), 0.0);
    }
}
