//! The database a client's commands run in, remembered per client id.
//!
//! On servers whose filter says which client sent a command (Redis 7.2+,
//! Valkey) the only way to learn that client's database is
//! `RedisModule_GetClientInfoById`, which also fills in the client's
//! address: a `getpeername` system call and a `printf` per command, which
//! doubled the cost of a `GET`. The answer only changes when the client
//! runs `SELECT`, `RESET`, or an `EXEC` that may hold a `SELECT` (client ids
//! are never reused), so it is asked once per client and asked again after
//! one of those: the count lands in the same database as if it had been
//! asked every time. Between counting windows the filter sees nothing, not
//! a `SELECT` either: each window is a new epoch, in which every client is
//! asked again at its first command.

use hashbrown::HashMap;

/// What the server said of a client: a connection in database `db`, or no
/// connection (a script's or a module's client: its keys are not counted).
pub type Answer = Option<u16>;

/// More clients than this at once, and the memory is taken back (the next
/// command of each asks again): a safety net, as disconnections remove
/// their own entries.
const MAX_CLIENTS: usize = 1 << 20;

#[derive(Default)]
pub struct ClientDbs {
    /// Each client's answer, and the epoch it was given in.
    known: HashMap<u64, (Answer, u64)>,
    epoch: u64,
    /// The client of the last answer in this epoch: a pipeline's commands
    /// come one client at a time, so most lookups stop here.
    last: Option<(u64, Answer)>,
}

impl ClientDbs {
    /// The client's database, asking the server (`ask`) only if it is not
    /// known in this epoch. `ask` returns `None` if the server could not
    /// say at all.
    #[inline]
    pub fn get(&mut self, client: u64, ask: impl FnOnce() -> Option<Answer>) -> Answer {
        match self.last {
            Some((id, answer)) if id == client => answer,
            _ => {
                let answer = self.lookup(client, ask)?;
                self.last = Some((client, answer));
                answer
            }
        }
    }

    fn lookup(&mut self, client: u64, ask: impl FnOnce() -> Option<Answer>) -> Option<Answer> {
        if let Some(&(answer, epoch)) = self.known.get(&client) {
            if epoch == self.epoch {
                return Some(answer);
            }
        }
        let answer = ask()?;
        if self.known.len() >= MAX_CLIENTS {
            self.known = HashMap::new();
        }
        self.known.insert(client, (answer, self.epoch));
        Some(answer)
    }

    /// Commands went by unseen: any client may have changed database.
    pub fn new_epoch(&mut self) {
        self.epoch += 1;
        self.last = None;
    }

    /// The client may be in another database now (or gone).
    pub fn forget(&mut self, client: u64) {
        self.known.remove(&client);
        if self.last.is_some_and(|(id, _)| id == client) {
            self.last = None;
        }
    }

    pub fn heap_bytes(&self) -> usize {
        self.known.allocation_size()
    }
}

/// Does a command named `name` move its client to another database?
/// `SELECT`, `RESET`, and `EXEC` (whose transaction may hold a `SELECT`,
/// seen by the filter when it was queued but run only now).
#[inline]
pub fn may_change_db(name: &[u8]) -> bool {
    match name.len() {
        4 => name.eq_ignore_ascii_case(b"exec"),
        5 => name.eq_ignore_ascii_case(b"reset"),
        6 => name.eq_ignore_ascii_case(b"select"),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_is_asked_once_per_client_until_it_may_have_changed() {
        let mut dbs = ClientDbs::default();
        let mut asked = 0;
        let mut ask = |answer: Answer| {
            asked += 1;
            Some(answer)
        };
        assert_eq!(dbs.get(7, || ask(Some(3))), Some(3));
        assert_eq!(dbs.get(7, || ask(Some(9))), Some(3));
        assert_eq!(dbs.get(8, || ask(None)), None);
        assert_eq!(dbs.get(8, || ask(Some(1))), None);
        dbs.forget(7);
        assert_eq!(dbs.get(7, || ask(Some(5))), Some(5));
        // The server could not say: nothing is remembered.
        assert_eq!(dbs.get(9, || None), None);
        assert!(!dbs.known.contains_key(&9));
        // After unseen commands, every client is asked again, once.
        dbs.new_epoch();
        assert_eq!(dbs.get(7, || ask(Some(6))), Some(6));
        assert_eq!(dbs.get(7, || ask(Some(8))), Some(6));
        // The client just answered (the one remembered apart) is forgotten too.
        dbs.forget(7);
        assert_eq!(dbs.get(7, || ask(Some(2))), Some(2));
        assert_eq!(asked, 5);
    }

    #[test]
    fn only_select_reset_and_exec_move_a_client() {
        for name in [&b"SELECT"[..], b"select", b"Reset", b"EXEC"] {
            assert!(may_change_db(name), "{name:?}");
        }
        for name in [
            &b"GET"[..],
            b"SELECTX",
            b"MULTI",
            b"EXECS",
            b"",
            b"\x00\x00\x00\x00",
        ] {
            assert!(!may_change_db(name), "{name:?}");
        }
    }
}
