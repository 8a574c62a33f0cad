//! The shape of a sketch, validated before anything is allocated.

use crate::bucket_array::BucketArray;
use crate::item_hash::RowLayout;
use crate::topk::TopK;
use std::fmt;

/// The user-facing parameters of a HeavyKeeper sketch.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Params {
    pub k: u32,
    pub width: u32,
    pub depth: u32,
    /// Probability base `1/b` of the decay coin, in `(0, 1]`.
    pub decay: f64,
    pub seed: u64,
    /// Forward-decay half-life; `None` means counts never fade.
    pub half_life_ms: Option<f64>,
    /// How the item hash picks a column per row (fixed at creation).
    pub layout: RowLayout,
}

/// Why a set of parameters was refused.
#[derive(Clone, Debug, PartialEq)]
pub struct ParamError(pub String);

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ParamError {}

impl Params {
    pub const MAX_K: u32 = 10_000_000;
    pub const MAX_DEPTH: u32 = 16;
    pub const MAX_WIDTH: u32 = 1 << 30;
    /// A century: longer half-lives are indistinguishable from no fading.
    pub const MAX_HALF_LIFE_MS: f64 = 100.0 * 365.25 * 86_400_000.0;
    pub const DEFAULT_DEPTH: u32 = 4;
    /// Close to 1, so that a first-comer's bucket (no fading: its count never
    /// falls) stays within reach of a later heavy item; the realistic streams
    /// do not tell 0.95-0.995 apart (docs/benchmarks.md, "Choosing the default shape").
    pub const DEFAULT_DECAY: f64 = 0.995;
    /// Above this (and below 1) a decay coin succeeds so often that one
    /// weighted arrival can take a bucket down level by level for as long
    /// as its weight lasts: such sketches take weights up to
    /// [`Self::CLOSE_DECAY_MAX_WEIGHT`] only.
    pub const MAX_FRACTIONAL_DECAY: f64 = 0.999;
    /// RedisBloom's own cap on one `TOPK.INCRBY` increment: at most this
    /// many coins per bucket and arrival.
    pub const CLOSE_DECAY_MAX_WEIGHT: u64 = 100_000;

    /// The width used when the user gives none, with [`Self::DEFAULT_DEPTH`]
    /// rows and [`Self::DEFAULT_DECAY`]. Chosen by measurement (docs/benchmarks.md,
    /// "Choosing the default shape") on Zipf streams and on real text with many
    /// near-ties at the k-th count: k=100 within 32 KiB, k=1000 within
    /// 140 KB, with a floor for small k. A fading sketch's buckets take 12
    /// bytes, not 8: it gets the width that spends the same bytes.
    pub fn default_width(k: u32, fading: bool) -> u32 {
        let counting = (k.saturating_mul(5) / 2).clamp(750, Self::MAX_WIDTH);
        if fading {
            counting / 3 * 2
        } else {
            counting
        }
    }

    /// The half-life equivalent to a per-second smoothing factor `alpha`
    /// (`count <- count * (1 - alpha) + arrivals`): `ln 2 / -ln(1 - alpha)`
    /// seconds. With `libm`, so every server derives the same bits.
    pub fn half_life_ms_from_alpha(alpha: f64) -> f64 {
        std::f64::consts::LN_2 / -libm::log1p(-alpha) * 1000.0
    }

    /// Defaults for everything the caller leaves out.
    pub fn for_k(k: u32, seed: u64) -> Self {
        Self {
            k,
            width: Self::default_width(k, false),
            depth: Self::DEFAULT_DEPTH,
            decay: Self::DEFAULT_DECAY,
            seed,
            half_life_ms: None,
            layout: RowLayout::default(),
        }
    }

    /// Checks every field, and the fixed footprint against `max_bytes`.
    pub fn validate(&self, max_bytes: u64) -> Result<(), ParamError> {
        self.validate_shape()?;
        self.check_size(max_bytes)
    }

    /// Checks every field, whatever the size.
    pub fn validate_shape(&self) -> Result<(), ParamError> {
        let err = |m: String| Err(ParamError(m));
        if self.k == 0 || self.k > Self::MAX_K {
            return err(format!("k must be between 1 and {}", Self::MAX_K));
        }
        if self.width == 0 || self.width > Self::MAX_WIDTH {
            return err(format!("WIDTH must be between 1 and {}", Self::MAX_WIDTH));
        }
        if self.depth == 0 || self.depth > Self::MAX_DEPTH {
            return err(format!("DEPTH must be between 1 and {}", Self::MAX_DEPTH));
        }
        if !(self.decay > 0.0 && self.decay <= 1.0) {
            return err("DECAY must be greater than 0 and at most 1".into());
        }
        if let Some(h) = self.half_life_ms {
            if !(1.0..=Self::MAX_HALF_LIFE_MS).contains(&h) {
                return err("the half-life must be between 1 millisecond and 100 years".into());
            }
        }
        Ok(())
    }

    /// The largest weight one arrival may carry. Every successful decay coin
    /// lowers a bucket by one level, so a weighted arrival costs up to
    /// `min(weight, levels within reach)` coins per row. Up to a decay of
    /// 0.999 the reach is at most ~37,000 levels; above it (and below 1,
    /// where no coin is drawn) the weight is what bounds the work.
    pub fn max_weight(&self) -> u64 {
        if self.decay > Self::MAX_FRACTIONAL_DECAY && self.decay < 1.0 {
            Self::CLOSE_DECAY_MAX_WEIGHT
        } else {
            u64::MAX
        }
    }

    /// Checks the fixed footprint against `max_bytes` (the client-facing cap).
    pub fn check_size(&self, max_bytes: u64) -> Result<(), ParamError> {
        let bytes = self.fixed_bytes();
        if bytes > max_bytes {
            return Err(ParamError(format!(
                "sketch would take {bytes} bytes, more than the {max_bytes} allowed by heavykeeper.max-sketch-bytes"
            )));
        }
        Ok(())
    }

    /// Bytes a sketch of this shape allocates before any item is stored.
    pub fn fixed_bytes(&self) -> u64 {
        let bucket_bytes = BucketArray::bucket_bytes(self.half_life_ms.is_some()) as u64;
        let buckets = u64::from(self.width) * u64::from(self.depth) * bucket_bytes;
        buckets + u64::from(self.k) * TopK::BYTES_PER_MEMBER as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid() {
        for k in [1, 10, 100, 1000, 100_000] {
            Params::for_k(k, 0).validate(u64::MAX).unwrap();
        }
    }

    #[test]
    fn only_decays_between_0_999_and_1_cap_the_weight() {
        let with = |decay| Params {
            decay,
            ..Params::for_k(10, 0)
        };
        for decay in [0.5, 0.9, 0.999, 1.0] {
            assert_eq!(with(decay).max_weight(), u64::MAX, "{decay}");
        }
        for decay in [0.9991, 0.99999, 1.0 - f64::EPSILON] {
            with(decay).validate(u64::MAX).unwrap();
            assert_eq!(with(decay).max_weight(), 100_000, "{decay}");
        }
    }

    #[test]
    fn every_field_is_checked() {
        let bad = |change: fn(&mut Params)| {
            let mut p = Params::for_k(10, 0);
            change(&mut p);
            assert!(p.validate(u64::MAX).is_err(), "{p:?}");
        };
        bad(|p| p.k = 0);
        bad(|p| p.width = 0);
        bad(|p| p.depth = 0);
        bad(|p| p.depth = 17);
        bad(|p| p.decay = 0.0);
        bad(|p| p.decay = 1.5);
        bad(|p| p.decay = f64::NAN);
        bad(|p| p.half_life_ms = Some(0.0));
        bad(|p| p.half_life_ms = Some(f64::INFINITY));
    }

    #[test]
    fn the_size_cap_is_enforced_before_allocation() {
        let huge = Params {
            width: Params::MAX_WIDTH,
            depth: Params::MAX_DEPTH,
            ..Params::for_k(10, 0)
        };
        let e = huge.validate(1 << 20).unwrap_err();
        assert!(e.0.contains("max-sketch-bytes"), "{e}");
    }
}
