//! One cell of the sketch: a fingerprint and the mass counted for it.

/// A bucket of the HeavyKeeper array.
///
/// `count` is the stored (forward-decay) mass: without fading it is a plain
/// integer count held exactly in an `f64` (exact up to 2^53, and it saturates
/// rather than wrapping beyond that). A bucket with `count <= 0` is empty.
///
/// Packed to 4-byte alignment so a bucket costs 12 bytes, not 16.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[repr(C, packed(4))]
pub struct Bucket {
    pub fingerprint: u32,
    pub count: f64,
}

impl Bucket {
    pub const BYTES: usize = std::mem::size_of::<Bucket>();

    pub fn is_empty(&self) -> bool {
        let count = self.count;
        count <= 0.0
    }

    pub fn holds(&self, fingerprint: u32) -> bool {
        !self.is_empty() && self.fingerprint == fingerprint
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_bucket_holds_nothing() {
        let empty = Bucket::default();
        assert!(empty.is_empty());
        assert!(!empty.holds(0));
        let held = Bucket {
            fingerprint: 0,
            count: 1.0,
        };
        assert!(held.holds(0));
        assert!(!held.holds(1));
    }
}
