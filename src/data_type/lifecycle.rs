//! A watched sketch's life outside commands: loaded (RDB, a replica's sync,
//! `RESTORE`, `DEBUG RELOAD`) or unlinked (deleted, overwritten, expired,
//! evicted, renamed away). The data type's callbacks see these; what must
//! hear of them (the watch schedule) registers here at load, so the data
//! type needs to know nothing of watches.

use std::sync::OnceLock;

/// A key, by database and name.
pub type KeyHook = fn(db: i32, key: &[u8]);

pub struct WatchedKeyHooks {
    /// A watched sketch now lies at this key.
    pub loaded: KeyHook,
    /// The watched sketch at this key is gone from it.
    pub unlinked: KeyHook,
}

static HOOKS: OnceLock<WatchedKeyHooks> = OnceLock::new();

/// Sets the hooks (once, at load; a second call is ignored).
pub fn register(hooks: WatchedKeyHooks) {
    let _ = HOOKS.set(hooks);
}

pub(super) fn watched_loaded(db: i32, key: &[u8]) {
    if let Some(hooks) = HOOKS.get() {
        (hooks.loaded)(db, key);
    }
}

pub(super) fn watched_unlinked(db: i32, key: &[u8]) {
    if let Some(hooks) = HOOKS.get() {
        (hooks.unlinked)(db, key);
    }
}
