//! One file per command family. Handlers parse every argument before they
//! touch a key, so a failing command changes nothing and replicates nothing.

pub mod add;
pub mod hotkeys;
pub mod info;
pub mod list;
pub mod load_state;
pub mod merge;
pub mod query;
pub mod reserve;
pub mod watch;
