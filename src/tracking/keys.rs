//! A command as the filter sees it, and its keys: found once, by one
//! function, whether the key specs say where they are or the server must.

use heavykeeper_tracker::server::client_table::Asked;
use heavykeeper_tracker::server::command_table::{Args, KeyUse};
use heavykeeper_tracker::server::hash_slot_map::{HashSlotMap, Request, Route};
use heavykeeper_tracker::{hash_slot, Access};

/// A command as the filter sees it: its client (where the server says) and
/// its arguments.
pub trait FilteredCommand {
    /// The client that sent it (Redis 7.2+, Valkey).
    fn client(&self) -> Option<u64>;
    fn argc(&self) -> usize;
    /// Argument `i` (empty past the end).
    fn arg(&self, i: usize) -> &[u8];
    /// The keys' positions and flags as the server finds them (for
    /// commands whose key specs cannot say), if any.
    fn server_keys(&self) -> Vec<(usize, Option<Access>)>;
    /// Is a script running (Redis 7.0: its commands pass the filter too)?
    fn in_script(&self) -> bool;
    /// The database of client `id`, as the server says (`None` for a
    /// client that is no connection), and its host; `None` if it cannot say.
    fn client_db(&self, id: u64) -> Option<Asked>;
    /// Does `key` exist in database `db` now? (Looked up without effects,
    /// for keys of a slot being migrated away.)
    fn key_exists(&self, db: u16, key: &[u8]) -> bool;
}

/// A key of the command, read only when wanted: reading an argument is two
/// calls into the server, and where accesses are thinned most are not kept.
pub struct KeyAt<'a, C> {
    cmd: &'a C,
    position: usize,
}

impl<'a, C: FilteredCommand> KeyAt<'a, C> {
    #[inline(always)]
    pub fn read(&self) -> &'a [u8] {
        self.cmd.arg(self.position)
    }
}

/// Calls `each(key, access)` for every key of the command, as the key specs
/// (or, where they cannot say, the server) find them.
#[inline(always)]
pub fn for_each_key<'a, C: FilteredCommand>(
    key_use: &KeyUse<'_>,
    cmd: &'a C,
    args: &Args<'a>,
    mut each: impl FnMut(KeyAt<'a, C>, Access),
) {
    // Most commands have one key: no search for more.
    match key_use.single_key() {
        Some(access) => each(KeyAt { cmd, position: 1 }, access),
        None => for_many_keys(key_use, cmd, args, each),
    }
}

/// [`for_each_key`] for a command with more than its first argument for a
/// key.
#[inline(never)]
fn for_many_keys<'a, C: FilteredCommand>(
    key_use: &KeyUse<'_>,
    cmd: &'a C,
    args: &Args<'a>,
    mut each: impl FnMut(KeyAt<'a, C>, Access),
) {
    let argc = cmd.argc();
    let mut each_present = |position: usize, access| {
        if position < argc {
            each(KeyAt { cmd, position }, access);
        }
    };
    if key_use.positions_known() {
        key_use.for_each_key(args, argc, each_present);
    } else {
        for (position, access) in cmd.server_keys() {
            each_present(
                position,
                access.unwrap_or_else(|| key_use.access(args, position)),
            );
        }
    }
}

/// Does this cluster node serve the command (its keys all in one hash slot
/// it serves, see [`HashSlotMap::route`])? Keys of a slot being migrated away
/// must all still be here.
#[inline]
pub fn served_here<'a>(
    map: &HashSlotMap,
    key_use: &KeyUse<'_>,
    cmd: &'a impl FilteredCommand,
    args: &Args<'a>,
    db: u16,
    asking: bool,
) -> bool {
    match key_use.single_key() {
        // Most commands have one key: no list of keys to gather.
        Some(access) => route(map, cmd, db, asking, &[(cmd.arg(1), access)]),
        None => {
            let mut keys: Vec<(&'a [u8], Access)> = Vec::new();
            for_many_keys(key_use, cmd, args, |key, access| {
                keys.push((key.read(), access))
            });
            route(map, cmd, db, asking, &keys)
        }
    }
}

/// Where `keys` are served (none: anywhere).
fn route(
    map: &HashSlotMap,
    cmd: &impl FilteredCommand,
    db: u16,
    asking: bool,
    keys: &[(&[u8], Access)],
) -> bool {
    let Some(&(first, _)) = keys.first() else {
        return true;
    };
    let slot = hash_slot(first);
    if keys
        .iter()
        .any(|(key, _)| *key != first && hash_slot(key) != slot)
    {
        return false; // CROSSSLOT
    }
    let request = Request {
        write: keys.iter().any(|(_, access)| *access == Access::Write),
        asking,
        multiple_keys: keys.iter().any(|(key, _)| *key != first),
    };
    match map.route(slot, request) {
        Route::Here => true,
        Route::Elsewhere => false,
        Route::IfKeysExist => keys.iter().all(|(key, _)| cmd.key_exists(db, key)),
    }
}
