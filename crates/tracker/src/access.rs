//! How a command used a key.

/// One key access, as the tracker counts it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    Read,
    Write,
    /// A read of a key that did not exist (the server's key-miss event).
    /// Also counted as a read by the command that made it.
    Miss,
    /// A read or write of a key under a prefix (hot tenants): derived by
    /// the counting side, never gathered.
    Prefix,
}

impl Access {
    /// Two bits, for packing beside a batch entry's end offset.
    pub(crate) fn code(self) -> u32 {
        match self {
            Access::Read => 0,
            Access::Write => 1,
            Access::Miss => 2,
            Access::Prefix => 3,
        }
    }

    pub(crate) fn from_code(code: u32) -> Self {
        match code & 3 {
            1 => Access::Write,
            2 => Access::Miss,
            3 => Access::Prefix,
            _ => Access::Read,
        }
    }
}
