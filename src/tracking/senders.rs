//! Who sent a command, as far as the tracker needs to know: each client's
//! database and whether it is let in (7.2+; [`AuthWatch`]), whether a
//! script is running (7.0), and so where a command's keys count, if
//! anywhere: the batch, the keys held while their client is checked, or
//! nowhere.

use super::auth::{Admission, AuthWatch};
use super::keys::FilteredCommand;
use super::sketches::Sketches;
use super::time_slots::{Closed, TimeSlots};
use crate::host::{clock, module_context};
use heavykeeper_tracker::server::client_names::{ClientInfo, GoneClients, HostNumbers};
use heavykeeper_tracker::server::client_table::{ClientTable, Trust};
use heavykeeper_tracker::server::name_effect::NameEffect;
use heavykeeper_tracker::server::script_watch::ScriptWatch;
use heavykeeper_tracker::worker::key_batch::{Client, KeyBatch};
use redis_module::Context;
use std::cell::Cell;

pub struct Senders {
    clients: ClientTable,
    scripts: ScriptWatch,
    auth: AuthWatch,
    /// Does the server's filter say which client sent a command (7.2+)?
    names_clients: bool,
    gone: GoneClients,
    /// Clients asked about as they left, this tick (see [`GONE_ASKED_PER_TICK`]).
    gone_asked: Cell<u32>,
}

/// At most this many leaving clients are asked their names a tick (1,000 a
/// second): a storm of short connections must not cost a `CLIENT LIST` each.
/// Past it, a gone client reads `id=N (gone)`.
pub const GONE_ASKED_PER_TICK: u32 = 100;

impl Senders {
    pub fn new(names_clients: bool) -> Self {
        Self {
            clients: ClientTable::default(),
            scripts: ScriptWatch::default(),
            auth: AuthWatch::default(),
            names_clients,
            gone: GoneClients::default(),
            gone_asked: Cell::new(0),
        }
    }

    /// Unit tests: no server to ask, everyone taken as let in.
    #[cfg(test)]
    pub fn assume_everyone_let_in(&mut self) {
        self.auth.assume_everyone_let_in();
    }

    pub fn auth(&self) -> &AuthWatch {
        &self.auth
    }

    pub fn names_clients(&self) -> bool {
        self.names_clients
    }

    /// Redis 7.0 with a password: is each counted slot checked for refusals?
    pub fn checks_slots(&self) -> bool {
        self.auth.checks_slots(self.names_clients)
    }

    /// The database to count a command's keys in, and the batch to put them
    /// in (the keys held while their client is checked, or `sketches`'s);
    /// `None` when they are not counted: from a client that is no connection
    /// (a script's: its own command counted the keys it declared; a
    /// module's `RM_Call`), or one not let in.
    #[inline(always)]
    pub fn destination<'a>(
        &'a mut self,
        cmd: &impl FilteredCommand,
        client: Option<u64>,
        sketches: &'a mut Sketches,
    ) -> Option<(u16, &'a mut KeyBatch)> {
        let Some(id) = client else {
            // Redis 7.0: every key in database 0, but a script's.
            if self.scripts.may_run() {
                if cmd.in_script() {
                    return None;
                }
                self.scripts.none_running();
            }
            return Some((0, sketches.batch()));
        };
        let seen = self.clients.get(id, || cmd.client_db(id))?;
        let db = seen.db?;
        let batch = if self.auth.all_let_in() || seen.trust == Trust::Verified {
            sketches.batch()
        } else {
            match admit(&mut self.auth, id, seen.trust)? {
                true => self.auth.held(),
                false => sketches.batch(),
            }
        };
        batch.set_client(Client {
            id,
            host: seen.host,
        });
        Some((db, batch))
    }

    /// The checked client's command has run (if one is checked): trust it
    /// or not.
    #[inline]
    pub fn conclude_check(&mut self, batch: &mut KeyBatch) {
        if self.auth.is_checking() {
            self.conclude(batch);
        }
    }

    #[cold]
    #[inline(never)]
    fn conclude(&mut self, batch: &mut KeyBatch) {
        let Some(ctx) = module_context::get() else {
            return;
        };
        if let Some(verdict) = self.auth.conclude(&ctx, batch, clock::now_ms()) {
            self.clients.set_trust(verdict.client, verdict.trust);
        }
    }

    /// What a command's name alone says of its client (after its keys are
    /// counted: a `SELECT` moves the client's next command, not this one).
    pub fn note_effect(
        &mut self,
        client: Option<u64>,
        effect: NameEffect,
        sketches: &mut Sketches,
    ) {
        match (effect, client) {
            (NameEffect::Users, _) => self.users_may_have_changed(sketches),
            (NameEffect::Database, Some(id)) => self.clients.forget_db(id),
            (NameEffect::Reset, Some(id)) => self.clients.reset(id),
            // A refused client may be let in now: check it again.
            (NameEffect::Login, Some(id)) => {
                let seen = self.clients.get(id, || None);
                if seen.is_some_and(|s| matches!(s.trust, Trust::RefusedUntil(_))) {
                    self.clients.set_trust(id, Trust::Unverified);
                }
            }
            _ => {}
        }
    }

    /// Who needs a password may have changed (an `ACL` or `CONFIG` command,
    /// a config change): trust no one until the server is asked again.
    /// What was gathered while no one needed a password stays counted; from
    /// now on a client (7.2+) or a slot (7.0) must prove itself.
    pub fn users_may_have_changed(&mut self, sketches: &mut Sketches) {
        if self.auth.all_let_in() {
            sketches.submit();
        }
        self.auth.users_may_have_changed();
    }

    /// Asks the server again who needs a password.
    pub fn refresh(&mut self, ctx: &Context) {
        self.auth.refresh(ctx);
    }

    /// A tick (`slots`: time is cut into slots): a client refused while
    /// everyone was thought let in means who needs a password changed
    /// unseen, and what the tick gathered may hold its keys.
    pub fn tick(&mut self, ctx: &Context, slots: bool, batch: &mut KeyBatch) {
        self.gone_asked.set(0);
        // Each client's database is asked again, once a tick (what a
        // client changed unseen is seen within one).
        self.clients.new_epoch();
        if self.auth.all_let_in() && self.auth.refused_while_open(ctx) {
            self.auth.discard(batch);
            self.auth.users_may_have_changed();
        }
        self.auth.tick(ctx, slots);
    }

    /// A counted slot opened; commands went by `unseen` before it (the
    /// filter not registered): a `SELECT`, a script's start.
    pub fn slot_opened(&mut self, ctx: &Context, unseen: bool) {
        if unseen {
            self.commands_unseen();
        }
        if self.checks_slots() {
            self.auth.slot_opened(ctx);
        }
    }

    /// The current slot closes (`whole`: counting every command ends): its
    /// accesses go to the worker, or are discarded (Redis 7.0 with a
    /// password: someone was refused in it).
    pub fn close_slot(
        &mut self,
        ctx: &Context,
        slots: &mut TimeSlots,
        whole: bool,
        sketches: &mut Sketches,
    ) {
        let checked = self.checks_slots();
        match slots.close(whole, checked, || self.auth.slot_clean(ctx)) {
            Closed::Kept(stands_for) => {
                if let Some(weight) = stands_for {
                    sketches.batch().stand_for(weight);
                }
                sketches.submit();
            }
            Closed::Discarded => self.auth.discard(sketches.batch()),
            Closed::Uncounted => {}
        }
    }

    /// Commands went by unseen (the filter was not registered).
    pub fn commands_unseen(&mut self) {
        self.clients.new_window();
        self.scripts.commands_unseen();
    }

    /// A script starts (Redis 7.0: its commands pass the filter too).
    pub fn script_started(&mut self) {
        self.scripts.script_started();
    }

    /// Counting afresh: the keys held for a check go too.
    pub fn reset(&mut self) {
        self.auth.held().clear();
    }

    /// Is client `id`, leaving, to be asked its names (its accesses are
    /// counted by client, and this tick's allowance is not spent)?
    pub fn asks_leaving(&self, id: u64) -> bool {
        let asked = self.gone_asked.get();
        let asks = self.names_clients && self.clients.knows(id) && asked < GONE_ASKED_PER_TICK;
        self.gone_asked.set(asked + u32::from(asks));
        asks
    }

    /// A client disconnected: what it was called (`info`, as `CLIENT LIST`
    /// said) is kept a while, as its accesses may still be in a row.
    pub fn forget_client(&mut self, id: u64, info: Option<(u64, ClientInfo)>) {
        if let Some((listed, info)) = info.filter(|(listed, _)| *listed == id) {
            self.gone.gone(listed, info);
        }
        self.clients.remove(id);
    }

    /// The hosts by number, and the clients gone.
    pub fn names(&self) -> (&HostNumbers, &GoneClients) {
        (self.clients.hosts(), &self.gone)
    }

    pub fn heap_bytes(&self) -> usize {
        self.clients.heap_bytes() + self.gone.heap_bytes()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leaving_clients_are_asked_their_names_within_a_ticks_allowance() {
        let mut senders = Senders::new(true);
        for id in 0..200 {
            senders
                .clients
                .get(id, || Some((Some(0), b"10.0.0.1".to_vec())));
        }
        let asked = (0..200).filter(|&id| senders.asks_leaving(id)).count();
        assert_eq!(asked, GONE_ASKED_PER_TICK as usize);
        // A client never counted, or a server that names none: never asked.
        senders.gone_asked.set(0);
        assert!(!senders.asks_leaving(999));
        let mut unnamed = Senders::new(false);
        unnamed.clients.get(1, || Some((Some(0), Vec::new())));
        assert!(!unnamed.asks_leaving(1));
    }
}
