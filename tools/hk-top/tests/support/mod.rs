//! What the hk-top tests share.

/// Module arguments for a tracker that counts every command (no windows)
/// and keeps rates for an hour: what a test sends is what it lists.
pub const TRACKING: &[&str] = &[
    "track",
    "yes",
    "track-sample",
    "1",
    "track-halflife",
    "3600",
];
