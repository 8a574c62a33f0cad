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
