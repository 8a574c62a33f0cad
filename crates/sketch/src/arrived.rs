//! What one arrival did to the top-k: what a watch needs to announce it.

/// What one arrival did to the top-k, in stored units (see
/// [`crate::HeavyKeeper::unit_at`]): for whoever watches the sketch.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Arrived {
    /// The item's hash (its identity in the top-k).
    pub hash: u64,
    /// The member this arrival pushed out, with its hash and count.
    pub expelled: Option<(Box<[u8]>, u64, f64)>,
    /// The item's count before (0 if it just entered) and after, if it is
    /// a member now.
    pub member: Option<(f64, f64)>,
    /// What the arrival weighed, stored (its weight times its unit).
    pub mass: f64,
}
