//! Where the watched sketches are and when each is next worth a look.
//!
//! The watch timer asks only for the keys that are due, so a tick costs in
//! proportion to them, not to the number of watched sketches: 100,000 idle
//! watches cost one look at the earliest time per tick. Plain data, no
//! Redis: the watching layer keeps it in step with every path a key takes
//! (load, copy, rename, move, swap, flush, delete).

use std::collections::{BTreeSet, HashMap};

/// A database number as the server numbers them.
pub type Db = i32;

/// The watched keys of every database, each with the time the timer should
/// next visit it (`i64::MAX`: only an arrival can make it due).
#[derive(Default)]
pub struct Schedule {
    /// Per database: key name -> due time.
    keys: HashMap<Db, HashMap<Vec<u8>, i64>>,
    /// `(due, db, key)` for every finite due time, earliest first.
    queue: BTreeSet<(i64, Db, Vec<u8>)>,
}

impl Schedule {
    /// Watched keys known, due or not.
    pub fn len(&self) -> usize {
        self.keys.values().map(HashMap::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.values().all(HashMap::is_empty)
    }

    /// Keys waiting for a time (the rest wait for an arrival).
    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    pub fn contains(&self, db: Db, key: &[u8]) -> bool {
        self.keys
            .get(&db)
            .is_some_and(|keys| keys.contains_key(key))
    }

    /// Visit `key` at `due` (or earlier, if it is due earlier already).
    pub fn at(&mut self, db: Db, key: &[u8], due: i64) {
        let keys = self.keys.entry(db).or_default();
        match keys.get_mut(key) {
            Some(current) if *current <= due => {}
            Some(current) => {
                let before = std::mem::replace(current, due);
                self.queue.remove(&(before, db, key.to_vec()));
                self.enqueue(db, key, due);
            }
            None => {
                keys.insert(key.to_vec(), due);
                self.enqueue(db, key, due);
            }
        }
    }

    /// Visit `key` at `due` exactly, later than before if need be (after a
    /// visit found out when it is next worth one).
    pub fn reschedule(&mut self, db: Db, key: &[u8], due: i64) {
        self.remove(db, key);
        self.at(db, key, due);
    }

    fn enqueue(&mut self, db: Db, key: &[u8], due: i64) {
        if due != i64::MAX {
            self.queue.insert((due, db, key.to_vec()));
        }
    }

    /// Forgets `key`; true if it was known.
    pub fn remove(&mut self, db: Db, key: &[u8]) -> bool {
        let Some(keys) = self.keys.get_mut(&db) else {
            return false;
        };
        let Some(due) = keys.remove(key) else {
            return false;
        };
        if keys.is_empty() {
            self.keys.remove(&db);
        }
        if due != i64::MAX {
            self.queue.remove(&(due, db, key.to_vec()));
        }
        true
    }

    /// Takes up to `limit` keys due by `now_ms`, earliest first. They stay
    /// known, waiting for an arrival, until rescheduled or removed.
    pub fn take_due(&mut self, now_ms: i64, limit: usize) -> Vec<(Db, Vec<u8>)> {
        let mut due = Vec::new();
        while due.len() < limit && self.queue.first().is_some_and(|(at, _, _)| *at <= now_ms) {
            let Some((_, db, key)) = self.queue.pop_first() else {
                break;
            };
            if let Some(at) = self.keys.get_mut(&db).and_then(|keys| keys.get_mut(&key)) {
                *at = i64::MAX;
            }
            due.push((db, key));
        }
        due
    }

    /// `SWAPDB a b`: the keys of each database now live in the other.
    pub fn swap_dbs(&mut self, a: Db, b: Db) {
        let swap = |db: Db| match db {
            d if d == a => b,
            d if d == b => a,
            d => d,
        };
        self.keys = std::mem::take(&mut self.keys)
            .into_iter()
            .map(|(db, keys)| (swap(db), keys))
            .collect();
        self.queue = std::mem::take(&mut self.queue)
            .into_iter()
            .map(|(due, db, key)| (due, swap(db), key))
            .collect();
    }

    /// `FLUSHDB` (`Some(db)`) or `FLUSHALL` (`None`).
    pub fn flush(&mut self, db: Option<Db>) {
        match db {
            None => *self = Schedule::default(),
            Some(db) => {
                self.keys.remove(&db);
                self.queue.retain(|(_, d, _)| *d != db);
            }
        }
    }

    /// Every key known, for tests and diagnostics.
    pub fn keys(&self) -> impl Iterator<Item = (Db, &[u8])> {
        self.keys
            .iter()
            .flat_map(|(db, keys)| keys.keys().map(move |k| (*db, k.as_slice())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_due_keys_are_taken_earliest_first() {
        let mut s = Schedule::default();
        s.at(0, b"late", 300);
        s.at(0, b"early", 100);
        s.at(1, b"idle", i64::MAX);
        assert_eq!((s.len(), s.queued()), (3, 2));
        assert!(s.take_due(99, 10).is_empty());
        assert_eq!(
            s.take_due(1_000, 10),
            vec![(0, b"early".to_vec()), (0, b"late".to_vec())]
        );
        // Taken keys stay known, waiting for an arrival.
        assert_eq!((s.len(), s.queued()), (3, 0));
        assert!(s.contains(0, b"early"));
    }

    #[test]
    fn an_earlier_time_wins_and_reschedule_may_postpone() {
        let mut s = Schedule::default();
        s.at(0, b"k", 500);
        s.at(0, b"k", 900);
        assert!(s.take_due(499, 10).is_empty());
        s.at(0, b"k", 200);
        assert_eq!(s.queued(), 1);
        s.reschedule(0, b"k", 800);
        assert!(s.take_due(799, 10).is_empty());
        assert_eq!(s.take_due(800, 10).len(), 1);
    }

    #[test]
    fn the_limit_leaves_the_rest_for_the_next_tick() {
        let mut s = Schedule::default();
        for i in 0..10u8 {
            s.at(0, &[i], i64::from(i));
        }
        assert_eq!(s.take_due(100, 4).len(), 4);
        assert_eq!(s.queued(), 6);
        assert_eq!(s.take_due(100, 100).len(), 6);
    }

    #[test]
    fn keys_follow_swaps_and_flushes() {
        let mut s = Schedule::default();
        s.at(0, b"a", 10);
        s.at(1, b"b", 20);
        s.at(2, b"c", i64::MAX);
        s.swap_dbs(0, 1);
        assert!(s.contains(1, b"a") && s.contains(0, b"b"));
        assert_eq!(s.take_due(10, 10), vec![(1, b"a".to_vec())]);
        s.flush(Some(0));
        assert!(!s.contains(0, b"b") && s.queued() == 0);
        s.flush(None);
        assert!(s.is_empty());
    }

    #[test]
    fn removing_forgets_the_time_too() {
        let mut s = Schedule::default();
        s.at(3, b"\x00k", 10);
        assert!(s.remove(3, b"\x00k"));
        assert!(!s.remove(3, b"\x00k"));
        assert!(s.take_due(i64::MAX, 10).is_empty());
        assert!(s.is_empty());
    }
}
