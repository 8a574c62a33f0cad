//! Writing `INFO` fields.

/// A counter as an INFO field (INFO integers are signed).
pub fn number(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}
