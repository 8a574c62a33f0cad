//! One insert into the tracker's sketches, as the counting side hands it
//! over: what the coalescing and the thinning made of a key's accesses.

use crate::access::Access;
use heavykeeper_sketch::ItemHash;

/// One insert into the sketches: a key's accesses over a horizon, thinned
/// or not.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Insert<'a> {
    pub item: &'a [u8],
    pub hash: ItemHash,
    pub access: Access,
    /// The accesses it stands for.
    pub weight: u64,
    /// Of `weight`, what sampled accesses stand for (the rest were counted
    /// one by one).
    pub sampled: u64,
    /// What one access seen stood for: HeavyKeeper's decay plays in the
    /// sample's own units (see the sketch's `add_sampled`).
    pub scale: f64,
    pub time_ms: i64,
    /// The variance of `weight` as an estimate of the true accesses.
    pub variance: f64,
}
