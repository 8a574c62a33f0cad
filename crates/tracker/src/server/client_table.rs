//! What the tracker knows of each client, by client id (Redis 7.2+ and
//! Valkey say which client sent a command; 7.0 does not, and none of this
//! is used there): the database its commands run in, and whether it has
//! been seen to be let in.
//!
//! The database: the only way to learn it is `RM_GetClientInfoById`, which
//! also fills in the client's address (a `getpeername` and a `printf`), so
//! it is asked once per client and again only after a command that may
//! change it (`SELECT`, `RESET`, an `EXEC` that may hold a `SELECT`).
//! Between counted slots the filter sees nothing, not a `SELECT` either:
//! each slot after an uncounted one is a new epoch, in which every client
//! is asked again at its first command.
//!
//! Trust: a command filter runs before the server checks authentication,
//! so a client that never logged in would be counted like any other. A
//! client is counted once one of its commands was seen to pass that check
//! ([`Trust::Verified`], see the module's `tracking/auth.rs`); a client refused is not
//! asked about again for a while ([`Trust::RefusedUntil`]).

use hashbrown::HashMap;

/// Whether a client's commands may be counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trust {
    /// Not known to be let in.
    Unverified,
    /// One of its commands passed the server's authentication check.
    Verified,
    /// It was refused; not checked again before this time (ms).
    RefusedUntil(i64),
}

/// What the server said of a client's database: a connection in database
/// `db`, or no connection (`None`: a script's or a module's client, whose
/// keys are not counted).
pub type Db = Option<u16>;

#[derive(Clone, Copy, Debug)]
struct Client {
    /// The database, and the epoch it was learnt in (`None`: unknown).
    db: Option<(Db, u64)>,
    trust: Trust,
}

/// More clients than this at once, and the memory is taken back (each is
/// asked again): a safety net, as disconnections remove their own entries.
const MAX_CLIENTS: usize = 1 << 20;

#[derive(Default)]
pub struct ClientTable {
    known: HashMap<u64, Client>,
    epoch: u64,
    /// The last client looked up in this epoch, apart: a pipeline's
    /// commands come one client at a time, so most lookups stop here.
    last: Option<(u64, Db, Trust)>,
}

impl ClientTable {
    /// The client's database and trust, asking the server for the
    /// database (`ask`) only if it is not known in this epoch; `None` if
    /// the server could not say.
    #[inline(always)]
    pub fn get(&mut self, id: u64, ask: impl FnOnce() -> Option<Db>) -> Option<(Db, Trust)> {
        if let Some((last, db, trust)) = self.last {
            if last == id {
                return Some((db, trust));
            }
        }
        let (db, trust) = self.lookup(id, ask)?;
        self.last = Some((id, db, trust));
        Some((db, trust))
    }

    #[cold]
    #[inline(never)]
    fn lookup(&mut self, id: u64, ask: impl FnOnce() -> Option<Db>) -> Option<(Db, Trust)> {
        let epoch = self.epoch;
        let known = self.known.get(&id).copied();
        let trust = known.map_or(Trust::Unverified, |c| c.trust);
        if let Some(Client {
            db: Some((db, learnt)),
            ..
        }) = known
        {
            if learnt == epoch {
                return Some((db, trust));
            }
        }
        let db = ask()?;
        if self.known.len() >= MAX_CLIENTS && known.is_none() {
            self.known = HashMap::new();
        }
        self.known.insert(
            id,
            Client {
                db: Some((db, epoch)),
                trust,
            },
        );
        Some((db, trust))
    }

    /// Commands went by unseen: any client may have changed database.
    pub fn new_epoch(&mut self) {
        self.epoch += 1;
        self.last = None;
    }

    /// The client may be in another database now.
    pub fn forget_db(&mut self, id: u64) {
        if let Some(client) = self.known.get_mut(&id) {
            client.db = None;
        }
        self.forget_last(id);
    }

    /// The client ran `RESET`: another database, and logged out.
    pub fn reset(&mut self, id: u64) {
        self.known.remove(&id);
        self.forget_last(id);
    }

    pub fn set_trust(&mut self, id: u64, trust: Trust) {
        if let Some(client) = self.known.get_mut(&id) {
            client.trust = trust;
        } else {
            self.known.insert(id, Client { db: None, trust });
        }
        self.forget_last(id);
    }

    /// The client disconnected (ids are never reused).
    pub fn remove(&mut self, id: u64) {
        self.known.remove(&id);
        self.forget_last(id);
    }

    fn forget_last(&mut self, id: u64) {
        if self.last.is_some_and(|(last, _, _)| last == id) {
            self.last = None;
        }
    }

    pub fn heap_bytes(&self) -> usize {
        self.known.allocation_size()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_is_asked_once_per_client_until_it_may_have_changed() {
        let mut t = ClientTable::default();
        let mut asked = 0;
        let mut ask = |db: Db| {
            asked += 1;
            Some(db)
        };
        let u = Trust::Unverified;
        assert_eq!(t.get(7, || ask(Some(3))), Some((Some(3), u)));
        assert_eq!(t.get(7, || ask(Some(9))), Some((Some(3), u)));
        assert_eq!(t.get(8, || ask(None)), Some((None, u)));
        assert_eq!(t.get(8, || ask(Some(1))), Some((None, u)));
        t.forget_db(7);
        assert_eq!(t.get(7, || ask(Some(5))), Some((Some(5), u)));
        // The server could not say: nothing is remembered.
        assert_eq!(t.get(9, || None), None);
        assert!(!t.known.contains_key(&9));
        // After unseen commands, every client is asked again, once.
        t.new_epoch();
        assert_eq!(t.get(7, || ask(Some(6))), Some((Some(6), u)));
        assert_eq!(t.get(7, || ask(Some(8))), Some((Some(6), u)));
        assert_eq!(asked, 4);
    }

    #[test]
    fn trust_outlives_epochs_and_database_changes_but_not_a_reset() {
        let mut t = ClientTable::default();
        t.get(1, || Some(Some(0)));
        t.set_trust(1, Trust::Verified);
        assert_eq!(t.get(1, || Some(Some(0))), Some((Some(0), Trust::Verified)));
        t.new_epoch();
        t.forget_db(1);
        assert_eq!(t.get(1, || Some(Some(4))), Some((Some(4), Trust::Verified)));
        t.reset(1);
        assert_eq!(
            t.get(1, || Some(Some(0))),
            Some((Some(0), Trust::Unverified))
        );
        // Trust set before the database is known is kept when it is learnt.
        t.set_trust(2, Trust::RefusedUntil(99));
        assert_eq!(
            t.get(2, || Some(Some(1))),
            Some((Some(1), Trust::RefusedUntil(99)))
        );
        t.remove(2);
        assert_eq!(
            t.get(2, || Some(Some(1))),
            Some((Some(1), Trust::Unverified))
        );
    }
}
