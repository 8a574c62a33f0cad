//! The command filter's hook: every command a client sends passes here
//! before it runs, while the tracker counts. Key positions and read/write
//! flags come from the server's own command table, never from a list kept
//! here, so `MGET`, `EVAL` numkeys, `XREAD ... STREAMS`, `ZUNIONSTORE`
//! numkeys, `SORT ... STORE` and `MIGRATE ... KEYS` all count as the
//! server itself sees them.
//!
//! What is skipped: commands the server will refuse before they run
//! (unknown, wrong arity, a client not let in: see [`super::auth`]),
//! commands of a running script (its `EVAL`/`FCALL` already counted the
//! keys it declared), and clients that do not exist as connections (a
//! module's `RM_Call`). On servers that tell a filter which client sent the
//! command (Redis 7.2+, Valkey) the key is counted in that client's
//! database; Redis 7.0 does not, and counts every key as database 0.
//!
//! The server side is the host's port ([`command_filter`]); what a command
//! does to the tracker is [`super::state::Tracking::count_command`].

use super::keys::FilteredCommand;
use super::with_state;
use crate::host::command_filter::{self, FilterCall, KeyUse};
use crate::host::{client_info, events, module_context};
use heavykeeper_tracker::server::client_table::Asked;
use heavykeeper_tracker::server::command_table::CommandTable;
use heavykeeper_tracker::Access;

pub use command_filter::names_clients;

/// Hears of clients that disconnect (at load, once the module's context
/// exists).
pub fn attach(ctx: &redis_module::Context) -> Result<(), String> {
    events::on_client_gone(ctx, forget_client)
}

/// Registers the filter (`on`: every command comes to [`on_command`]) or
/// removes it.
pub fn set_registered(on: bool) {
    command_filter::set_registered::<Tracker>(on);
}

/// The tracker, as the filter's hook.
struct Tracker;

impl command_filter::Hook for Tracker {
    #[inline(always)]
    fn on_command(command: &FilterCall) {
        on_command(command);
    }
}

/// The server's command table, read through the module's context.
pub fn command_table() -> CommandTable {
    module_context::get().map_or_else(CommandTable::default, |ctx| {
        super::command_table::load(&ctx)
    })
}

#[inline(always)]
fn on_command(command: &FilterCall) {
    if cfg!(debug_assertions) {
        crate::host::fault::on_filter(command.arg(1));
    }
    with_state(|state| {
        let Some(tracking) = state.as_mut() else {
            return;
        };
        tracking.metered(|t| t.count_command(command));
    });
}

/// A client that disconnects is forgotten (ids are never reused); where
/// its accesses are counted by client, what it was called is kept a while
/// (asked outside the state: `CLIENT LIST` passes this filter).
fn forget_client(id: u64) {
    let named = with_state(|state| state.as_ref().is_some_and(|t| t.senders().asks_leaving(id)));
    let info = match (named, module_context::get()) {
        (Some(true), Some(ctx)) => client_info::list(&ctx, &[id]).pop(),
        _ => None,
    };
    with_state(|state| {
        if let Some(t) = state.as_mut() {
            t.forget_client(id, info);
        }
    });
}

impl FilteredCommand for FilterCall {
    #[inline(always)]
    fn client(&self) -> Option<u64> {
        FilterCall::client(self)
    }

    #[inline(always)]
    fn argc(&self) -> usize {
        FilterCall::argc(self)
    }

    #[inline(always)]
    fn arg(&self, i: usize) -> &[u8] {
        FilterCall::arg(self, i)
    }

    fn server_keys(&self) -> Vec<(usize, Option<Access>)> {
        let access = |used| match used {
            KeyUse::Read => Some(Access::Read),
            KeyUse::Write => Some(Access::Write),
            // The server did not say: the key spec it came from does.
            KeyUse::Unsaid => None,
        };
        let keys = FilterCall::server_keys(self).into_iter();
        keys.map(|(position, used)| (position, access(used)))
            .collect()
    }

    fn in_script(&self) -> bool {
        FilterCall::in_script(self)
    }

    fn client_db(&self, id: u64) -> Option<Asked> {
        FilterCall::client_db(self, id)
    }

    fn key_exists(&self, db: u16, key: &[u8]) -> bool {
        FilterCall::key_exists(self, db, key)
    }
}
