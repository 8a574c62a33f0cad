//! One file per command family. Handlers parse every argument before they
//! touch a key, so a failing command changes nothing and replicates nothing.
//! Each file declares its commands' specs (flags, arity, keys, ACL, docs)
//! beside their handlers.

#![deny(unsafe_code)]

pub mod add;
pub mod clients;
pub mod hotkeys;
pub mod hotslots;
pub mod info;
pub mod list;
pub mod load_state;
pub mod merge;
pub mod query;
pub mod reserve;
pub mod topk_compat;
pub mod watch;

use crate::host::command_spec::CommandSpec;

/// Every `HK.*` command.
pub fn all() -> impl Iterator<Item = &'static CommandSpec> {
    const SINGLE: [&CommandSpec; 8] = [
        &reserve::SPEC,
        &list::SPEC,
        &info::SPEC,
        &merge::SPEC,
        &load_state::SPEC,
        &hotkeys::SPEC,
        &hotslots::SPEC,
        &clients::SPEC,
    ];
    SINGLE
        .into_iter()
        .chain(add::SPECS.iter())
        .chain(query::SPECS.iter())
        .chain(watch::SPECS.iter())
}
