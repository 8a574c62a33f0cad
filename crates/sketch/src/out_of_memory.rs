//! An allocation the allocator refused: reported, never an abort, when the
//! size came from a client.

use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutOfMemory;

impl fmt::Display for OutOfMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("not enough memory for the sketch")
    }
}

impl std::error::Error for OutOfMemory {}

impl From<std::collections::TryReserveError> for OutOfMemory {
    fn from(_: std::collections::TryReserveError) -> Self {
        OutOfMemory
    }
}

impl From<hashbrown::TryReserveError> for OutOfMemory {
    fn from(_: hashbrown::TryReserveError) -> Self {
        OutOfMemory
    }
}

/// A copy of `items` with the same room to grow (a sketch reserves its
/// tables once, at their full size), or an error where `clone` would abort.
pub(crate) fn try_copy<T: Clone>(items: &Vec<T>) -> Result<Vec<T>, OutOfMemory> {
    let mut copy = Vec::new();
    copy.try_reserve_exact(items.capacity())?;
    copy.extend_from_slice(items);
    Ok(copy)
}
