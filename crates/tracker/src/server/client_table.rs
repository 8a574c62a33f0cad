//! What the tracker knows of each client, by client id (Redis 7.2+ and
//! Valkey say which client sent a command; 7.0 does not, and none of this
//! is used there): the database its commands run in, and whether it has
//! been seen to be let in.
//!
//! The database: the only way to learn it is `RM_GetClientInfoById`, which
//! also fills in the client's address (a `getpeername` and a `printf`,
//! ~1.6 µs), so it is asked once per client and again only after a command
//! that may change it (`SELECT`, `RESET`, an `EXEC` that may hold a
//! `SELECT`). Between counted slots the filter sees nothing, not a
//! `SELECT` either: each tick is a new epoch, in which every client is
//! asked again at its first counted command, and a client seen changing
//! its database is asked again in every counted slot after an uncounted
//! one (a new window). Asked in every window, every client, a counted
//! slot on Valkey 9.1 beside `GET -P16 -c8` paid ~13 µs of questions at
//! its opening, and served 1/1.15-1/1.22 of what an uncounted one did,
//! where asking once a tick left 1/1.10-1/1.13 and ~14% more slots counted
//! within the budget (`INFO` after 8 and 16 s, two runs each); at ~20,000
//! commands a second from ~30 connections, one slot in 4-14 counted instead
//! of one in 8-20 (`make bench --only bounds`). So
//! a client that changes database while uncounted, never seen doing so
//! before, may have its keys counted in its former database until the next
//! tick (at most ~100 ms); once a change of its is seen, it is asked in
//! every window.
//! The same answer says the client's address: its host is numbered here
//! ([`HostNumbers`]), for the counts of who sends what.
//!
//! Trust: a command filter runs before the server checks authentication,
//! so a client that never logged in would be counted like any other. A
//! client is counted once one of its commands was seen to pass that check
//! ([`Trust::Verified`], see the module's `tracking/auth.rs`); a client refused is not
//! asked about again for a while ([`Trust::RefusedUntil`]).

use super::client_names::HostNumbers;
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

/// What the server says of a client when asked: its database and its
/// address without the port.
pub type Asked = (Db, Vec<u8>);

/// What the table knows of a client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seen {
    pub db: Db,
    pub trust: Trust,
    /// Its host's number ([`HostNumbers`]).
    pub host: u32,
}

#[derive(Clone, Copy, Debug)]
struct Client {
    /// The database, and the epoch and window it was learnt in (`None`:
    /// unknown).
    db: Option<(Db, Learnt)>,
    trust: Trust,
    host: u32,
    /// Seen changing its database: asked again in every window.
    switches_db: bool,
}

impl Client {
    /// A client heard of before its database was asked.
    fn unasked(trust: Trust) -> Self {
        Self {
            db: None,
            trust,
            host: super::client_names::OTHER_HOSTS,
            switches_db: false,
        }
    }
}

/// When a client's database was learnt: the epoch (tick) and the window.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Learnt {
    epoch: u64,
    window: u64,
}

/// More clients than this at once, and the memory is taken back (each is
/// asked again): a safety net, as disconnections remove their own entries.
const MAX_CLIENTS: usize = 1 << 20;

#[derive(Default)]
pub struct ClientTable {
    known: HashMap<u64, Client>,
    now: Learnt,
    /// The last client looked up in this epoch, apart: a pipeline's
    /// commands come one client at a time, so most lookups stop here.
    last: Option<(u64, Seen)>,
    hosts: HostNumbers,
}

impl ClientTable {
    /// What is known of the client, asking the server (`ask`) only if its
    /// database is not known in this epoch; `None` if the server could not
    /// say.
    #[inline(always)]
    pub fn get(&mut self, id: u64, ask: impl FnOnce() -> Option<Asked>) -> Option<Seen> {
        if let Some((last, seen)) = self.last {
            if last == id {
                return Some(seen);
            }
        }
        let seen = self.lookup(id, ask)?;
        self.last = Some((id, seen));
        Some(seen)
    }

    #[cold]
    #[inline(never)]
    fn lookup(&mut self, id: u64, ask: impl FnOnce() -> Option<Asked>) -> Option<Seen> {
        let now = self.now;
        let known = self.known.get(&id).copied();
        let trust = known.map_or(Trust::Unverified, |c| c.trust);
        let switches_db = known.is_some_and(|c| c.switches_db);
        if let Some(Client {
            db: Some((db, learnt)),
            host,
            ..
        }) = known
        {
            let current =
                learnt.epoch == now.epoch && (!switches_db || learnt.window == now.window);
            if current {
                return Some(Seen { db, trust, host });
            }
        }
        let (db, addr) = ask()?;
        let host = self.hosts.number(&addr);
        if self.known.len() >= MAX_CLIENTS && known.is_none() {
            self.known = HashMap::new();
        }
        let client = Client {
            db: Some((db, now)),
            trust,
            host,
            switches_db,
        };
        self.known.insert(id, client);
        Some(Seen { db, trust, host })
    }

    /// The hosts numbered so far.
    pub fn hosts(&self) -> &HostNumbers {
        &self.hosts
    }

    /// Is the client known (its commands seen)?
    pub fn knows(&self, id: u64) -> bool {
        self.known.contains_key(&id)
    }

    /// A tick: every client is asked again at its next counted command.
    pub fn new_epoch(&mut self) {
        self.now.epoch += 1;
        self.now.window += 1;
        self.last = None;
    }

    /// Commands went by unseen: a client seen changing its database may
    /// have changed it again.
    pub fn new_window(&mut self) {
        self.now.window += 1;
        self.last = None;
    }

    /// The client may be in another database now; it changes databases, so
    /// it is asked in every window from now on.
    pub fn forget_db(&mut self, id: u64) {
        // Known or not yet (a `SELECT` before any key), it is asked at its
        // next command, and in every window after.
        let client = self
            .known
            .entry(id)
            .or_insert(Client::unasked(Trust::Unverified));
        client.db = None;
        client.switches_db = true;
        self.forget_last(id);
    }

    /// The client ran `RESET`: another database, and logged out.
    pub fn reset(&mut self, id: u64) {
        self.known.remove(&id);
        self.forget_last(id);
    }

    pub fn set_trust(&mut self, id: u64, trust: Trust) {
        self.known.entry(id).or_insert(Client::unasked(trust)).trust = trust;
        self.forget_last(id);
    }

    /// The client disconnected (ids are never reused).
    pub fn remove(&mut self, id: u64) {
        self.known.remove(&id);
        self.forget_last(id);
    }

    fn forget_last(&mut self, id: u64) {
        if self.last.is_some_and(|(last, _)| last == id) {
            self.last = None;
        }
    }

    pub fn heap_bytes(&self) -> usize {
        self.known.allocation_size() + self.hosts.heap_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The database and trust the table says, asking (if it asks) with
    /// `db` at host 10.0.0.1.
    fn get(t: &mut ClientTable, id: u64, db: Option<Db>) -> Option<(Db, Trust)> {
        let seen = t.get(id, || db.map(|db| (db, b"10.0.0.1".to_vec())));
        seen.map(|s| (s.db, s.trust))
    }

    #[test]
    fn the_server_is_asked_once_per_client_until_it_may_have_changed() {
        let mut t = ClientTable::default();
        let mut asked = 0;
        let mut ask = |db: Db| {
            asked += 1;
            Some((db, b"10.0.0.1".to_vec()))
        };
        let u = Trust::Unverified;
        let mut get = |t: &mut ClientTable, id, db| t.get(id, || ask(db)).map(|s| (s.db, s.trust));
        assert_eq!(get(&mut t, 7, Some(3)), Some((Some(3), u)));
        assert_eq!(get(&mut t, 7, Some(9)), Some((Some(3), u)));
        assert_eq!(get(&mut t, 8, None), Some((None, u)));
        assert_eq!(get(&mut t, 8, Some(1)), Some((None, u)));
        t.forget_db(7);
        assert_eq!(get(&mut t, 7, Some(5)), Some((Some(5), u)));
        // The server could not say: nothing is remembered.
        assert_eq!(t.get(9, || None), None);
        assert!(!t.known.contains_key(&9));
        // A tick later, every client is asked again, once.
        t.new_epoch();
        assert_eq!(get(&mut t, 7, Some(6)), Some((Some(6), u)));
        assert_eq!(get(&mut t, 7, Some(8)), Some((Some(6), u)));
        assert_eq!(asked, 4);
    }

    /// How often client `id` is asked its database at its first command in
    /// each of `windows` counted windows.
    fn asked_in_windows(t: &mut ClientTable, id: u64, windows: u32) -> u32 {
        let mut asked = 0;
        for _ in 0..windows {
            t.new_window();
            t.get(id, || {
                asked += 1;
                Some((Some(0), b"10.0.0.1".to_vec()))
            });
        }
        asked
    }

    #[test]
    fn a_client_is_asked_once_a_tick_unless_seen_changing_its_database() {
        let mut t = ClientTable::default();
        // Fifty counted windows in a tick: asked in the first only.
        assert_eq!(asked_in_windows(&mut t, 7, 50), 1);
        assert_eq!(asked_in_windows(&mut t, 7, 50), 0);
        t.new_epoch();
        assert_eq!(asked_in_windows(&mut t, 7, 50), 1);
        // Seen sending a SELECT: asked in every window after, ticks or not.
        t.forget_db(7);
        assert_eq!(asked_in_windows(&mut t, 7, 50), 50);
        t.new_epoch();
        assert_eq!(asked_in_windows(&mut t, 7, 50), 50);
        // Another client keeps its once a tick; one whose first command
        // was a SELECT, before any key, is asked in every window.
        assert_eq!(asked_in_windows(&mut t, 8, 50), 1);
        t.forget_db(9);
        assert_eq!(asked_in_windows(&mut t, 9, 50), 50);
        // Within a window a switching client is asked once (its pipeline).
        t.new_window();
        let mut asked = 0;
        for _ in 0..16 {
            t.get(7, || {
                asked += 1;
                Some((Some(2), b"10.0.0.1".to_vec()))
            });
        }
        assert_eq!(asked, 1);
    }

    #[test]
    fn trust_outlives_epochs_and_database_changes_but_not_a_reset() {
        let mut t = ClientTable::default();
        let (verified, unverified) = (Trust::Verified, Trust::Unverified);
        get(&mut t, 1, Some(Some(0)));
        t.set_trust(1, verified);
        assert_eq!(get(&mut t, 1, Some(Some(0))), Some((Some(0), verified)));
        t.new_epoch();
        t.forget_db(1);
        assert_eq!(get(&mut t, 1, Some(Some(4))), Some((Some(4), verified)));
        t.reset(1);
        assert_eq!(get(&mut t, 1, Some(Some(0))), Some((Some(0), unverified)));
        // Trust set before the database is known is kept when it is learnt.
        t.set_trust(2, Trust::RefusedUntil(99));
        let refused = Trust::RefusedUntil(99);
        assert_eq!(get(&mut t, 2, Some(Some(1))), Some((Some(1), refused)));
        t.remove(2);
        assert_eq!(get(&mut t, 2, Some(Some(1))), Some((Some(1), unverified)));
    }

    #[test]
    fn each_host_has_its_number_whatever_its_connections() {
        let mut t = ClientTable::default();
        let host = |t: &mut ClientTable, id, addr: &[u8]| {
            t.get(id, || Some((Some(0), addr.to_vec()))).unwrap().host
        };
        let (a, b) = (host(&mut t, 1, b"10.0.0.2"), host(&mut t, 2, b"10.0.0.3"));
        assert_ne!(a, b);
        assert_eq!(host(&mut t, 3, b"10.0.0.2"), a);
        assert_eq!(t.hosts().host(b), b"10.0.0.3");
    }
}
