//! HeavyKeeper: the k most frequent items of an endless stream, in a few KB,
//! with counts that never over-estimate (barring fingerprint collisions) and,
//! optionally, fade with a half-life.
//!
//! Plain Rust: nothing here knows about Redis.

pub mod arrived;
pub mod bucket;
pub(crate) mod bucket_array;
pub(crate) mod bucket_update;
pub mod count_bound;
pub mod decay;
pub mod encoding;
pub mod fading;
pub mod heavykeeper;
pub mod item_arena;
pub mod item_hash;
pub mod merge;
pub mod out_of_memory;
pub mod params;
pub mod ties;
pub mod topk;
pub mod watch;
mod watched;

pub use arrived::Arrived;
pub use count_bound::MAX_COUNT;
pub use encoding::{decode, encode, DecodeError, ENCODING_VERSION};
pub use fading::MAX_TIMESTAMP_MS;
pub use heavykeeper::{HeavyKeeper, Ranked, Upcoming};
pub use item_hash::{ItemHash, RowLayout};
pub use merge::MergeError;
pub use out_of_memory::OutOfMemory;
pub use params::{ParamError, Params};
pub use ties::Ties;
pub use watch::{EventKind, WatchEvent, WatchSpec, WatchState};
