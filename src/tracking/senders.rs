//! Who sent a command, as far as the tracker needs to know: each client's
//! database and whether it is let in (7.2+), whether a script is running
//! (7.0), and so where a command's keys count, if anywhere.

use super::auth::{Admission, AuthWatch};
use super::keys::FilteredCommand;
use crate::host::{clock, module_context};
use heavykeeper_tracker::server::client_table::{ClientTable, Trust};
use heavykeeper_tracker::server::name_effect::NameEffect;
use heavykeeper_tracker::server::script_watch::ScriptWatch;

#[derive(Default)]
pub struct Senders {
    clients: ClientTable,
    scripts: ScriptWatch,
}

impl Senders {
    /// The database to count a command's keys in, and whether to hold them
    /// (their client is being checked); `None` when they are not counted:
    /// from a client that is no connection (a script's: its own command
    /// counted the keys it declared; a module's `RM_Call`), or one not let
    /// in.
    #[inline(always)]
    pub fn destination(
        &mut self,
        cmd: &impl FilteredCommand,
        client: Option<u64>,
        auth: &mut AuthWatch,
    ) -> Option<(u16, bool)> {
        let Some(id) = client else {
            // Redis 7.0: every key in database 0, but a script's.
            if self.scripts.may_run() {
                if cmd.in_script() {
                    return None;
                }
                self.scripts.none_running();
            }
            return Some((0, false));
        };
        let (db, trust) = self.clients.get(id, || cmd.client_db(id))?;
        let db = db?;
        if auth.all_let_in() || trust == Trust::Verified {
            return Some((db, false));
        }
        admit(auth, id, trust).map(|hold| (db, hold))
    }

    /// What a command's name alone says of its client (after its keys are
    /// counted: a `SELECT` moves the client's next command, not this one).
    pub fn note_effect(&mut self, id: u64, effect: NameEffect) {
        match effect {
            NameEffect::Database => self.clients.forget_db(id),
            NameEffect::Reset => self.clients.reset(id),
            // A refused client may be let in now: check it again.
            NameEffect::Login => {
                if let Some((_, Trust::RefusedUntil(_))) = self.clients.get(id, || None) {
                    self.clients.set_trust(id, Trust::Unverified);
                }
            }
            _ => {}
        }
    }

    /// A client's check concluded.
    pub fn set_trust(&mut self, id: u64, trust: Trust) {
        self.clients.set_trust(id, trust);
    }

    /// A script starts (Redis 7.0: its commands pass the filter too).
    pub fn script_started(&mut self) {
        self.scripts.script_started();
    }

    /// Commands went by unseen (the filter was not registered): a `SELECT`,
    /// a script's start.
    pub fn commands_unseen(&mut self) {
        self.clients.new_epoch();
        self.scripts.commands_unseen();
    }

    pub fn forget_client(&mut self, id: u64) {
        self.clients.remove(id);
    }

    pub fn heap_bytes(&self) -> usize {
        self.clients.heap_bytes()
    }
}

/// A client not known to be let in: check it, or drop its keys. Whether
/// its keys are held (`Some(true)`), counted, or dropped (`None`).
#[cold]
#[inline(never)]
fn admit(auth: &mut AuthWatch, id: u64, trust: Trust) -> Option<bool> {
    let ctx = module_context::get()?;
    match auth.admit(&ctx, id, trust, clock::now_ms()) {
        Admission::Count => Some(false),
        Admission::Hold => Some(true),
        Admission::Drop => {
            auth.dropped(1);
            None
        }
    }
}
