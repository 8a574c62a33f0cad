//! The data type: a key holding a sketch. Its callbacks (persistence,
//! memory, copy, free), opening such a key with the standard errors, the
//! limits a client's sketch is held to, and the module's figures of them.
//! It stands on the host and knows nothing of the features.

pub mod callbacks;
pub mod lifecycle;
pub mod limits;
pub mod sketch_key;
pub mod stats;

pub use callbacks::HK_TYPE;
