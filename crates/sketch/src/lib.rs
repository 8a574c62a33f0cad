//! HeavyKeeper: the k most frequent items of an endless stream, in a few KB,
//! with counts that never over-estimate (barring fingerprint collisions) and,
//! optionally, fade with a half-life.
//!
//! Plain Rust: nothing here knows about Redis.

pub mod bucket;
pub mod decay;
pub mod encoding;
pub mod fading;
pub mod heavykeeper;
pub mod item_hash;
pub mod merge;
pub mod params;
pub mod topk;
pub mod zipf;

pub use encoding::{decode, encode, DecodeError, ENCODING_VERSION};
pub use heavykeeper::{HeavyKeeper, Ranked};
pub use item_hash::ItemHash;
pub use merge::MergeError;
pub use params::{ParamError, Params};
