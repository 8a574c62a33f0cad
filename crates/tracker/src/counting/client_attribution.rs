//! Who made each row's count: a [`ClientShares`] for every member of the
//! tracker's sketches (a key's reads, writes, misses; a prefix), and one
//! for the node's accesses as a whole (the hottest clients, whatever keys
//! they use).
//!
//! Each count is kept twice: by connection (its client id), and by host
//! (the address without its port): a service's pool of connections may be
//! more than the bins, but its hosts are few, so the default grouping
//! stays exact where the connections would be sampled.
//!
//! A cluster node's hottest hash slots ([`WATCHED_HASH_SLOTS`], chosen
//! again each second) count their senders too, from when they are chosen.
//!
//! A member's clients are counted from when it joins its sketch until it
//! leaves: a row's shares are those of the accesses since it joined, its
//! rate the row's own. The rows are few (the top-k of each sketch); what
//! the counting side pays per access is one look into a table of bits
//! indexed by the item's hash, and a bin's update only for accesses of a
//! member.

use super::client_shares::ClientShares;
use crate::access::Access;
use crate::sampling::time_slot::Counted;
use crate::worker::key_batch::Client;
use hashbrown::HashMap;

/// Clients named per row: a row made by more shares the rest unbiased.
pub const CLIENTS_PER_ROW: usize = 16;
/// Clients named for the node as a whole.
pub const CLIENTS_OVERALL: usize = 128;
/// Hash slots whose senders are counted: the hottest, chosen each second.
pub const WATCHED_HASH_SLOTS: usize = 32;
const CHOOSE_SLOTS_EVERY_MS: i64 = 1_000;

/// Buckets of the members' table of bits (a count each, so that a member
/// leaving clears only its own).
const WATCH_BUCKETS: usize = 1 << 14;

/// Who made one count: by connection and by host.
#[derive(Clone, Debug)]
pub struct RowSenders {
    pub connections: ClientShares,
    pub hosts: ClientShares,
}

impl RowSenders {
    fn new(capacity: usize, half_life_ms: f64, now_ms: i64) -> Self {
        Self {
            connections: ClientShares::new(capacity, half_life_ms, now_ms),
            hosts: ClientShares::new(capacity, half_life_ms, now_ms),
        }
    }

    #[inline]
    fn add(&mut self, client: Client, counted: Counted, time_ms: i64) {
        (self.connections).add(client.id, counted, time_ms);
        (self.hosts).add(u64::from(client.host), counted, time_ms);
    }

    /// The count by host, or by connection.
    pub fn by(&self, by_host: bool) -> &ClientShares {
        if by_host {
            &self.hosts
        } else {
            &self.connections
        }
    }

    fn heap_bytes(&self) -> usize {
        self.connections.heap_bytes() + self.hosts.heap_bytes()
    }
}

#[derive(Clone, Debug)]
pub struct ClientAttribution {
    rows: HashMap<(u64, u8), RowSenders>,
    /// Members per bucket of their hash.
    watched: Vec<u16>,
    overall: RowSenders,
    half_life_ms: f64,
    hash_slots: HashMap<u16, RowSenders>,
    /// When the hash slots were last chosen.
    slots_chosen_ms: Option<i64>,
}

impl ClientAttribution {
    pub fn new(half_life_ms: f64, now_ms: i64) -> Self {
        Self {
            rows: HashMap::new(),
            watched: vec![0; WATCH_BUCKETS],
            overall: RowSenders::new(CLIENTS_OVERALL, half_life_ms, now_ms),
            half_life_ms,
            hash_slots: HashMap::new(),
            slots_chosen_ms: None,
        }
    }

    fn bucket(hash: u64) -> usize {
        (hash >> 50) as usize % WATCH_BUCKETS
    }

    /// The item of `hash` joined the sketch of `access`.
    pub fn join(&mut self, access: Access, hash: u64, now_ms: i64) {
        let entry = self.rows.entry((hash, access.code() as u8));
        if let hashbrown::hash_map::Entry::Vacant(vacant) = entry {
            vacant.insert(RowSenders::new(CLIENTS_PER_ROW, self.half_life_ms, now_ms));
            if let Some(bucket) = self.watched.get_mut(Self::bucket(hash)) {
                *bucket = bucket.saturating_add(1);
            }
        }
    }

    /// The item of `hash` left the sketch of `access`.
    pub fn leave(&mut self, access: Access, hash: u64) {
        if self.rows.remove(&(hash, access.code() as u8)).is_some() {
            if let Some(bucket) = self.watched.get_mut(Self::bucket(hash)) {
                *bucket = bucket.saturating_sub(1);
            }
        }
    }

    /// May the item of `hash` be a member of a sketch? (False: surely not.)
    #[inline(always)]
    pub fn watches(&self, hash: u64) -> bool {
        self.watched
            .get(Self::bucket(hash))
            .is_some_and(|&n| n != 0)
    }

    /// `counted` accesses of the item of `hash` by `client`, if the item
    /// is a member of `access`'s sketch.
    #[inline]
    pub fn add(
        &mut self,
        access: Access,
        hash: u64,
        client: Client,
        counted: Counted,
        time_ms: i64,
    ) {
        if let Some(shares) = self.rows.get_mut(&(hash, access.code() as u8)) {
            shares.add(client, counted, time_ms);
        }
    }

    /// `counted` key accesses of `client`, whatever the keys.
    #[inline]
    pub fn add_overall(&mut self, client: Client, counted: Counted, time_ms: i64) {
        self.overall.add(client, counted, time_ms);
    }

    /// Is it time to choose the watched hash slots again?
    pub fn slots_due(&self, now_ms: i64) -> bool {
        self.slots_chosen_ms
            .is_none_or(|at| now_ms - at >= CHOOSE_SLOTS_EVERY_MS)
    }

    /// From now on the senders of `slots` are counted (those counted
    /// already go on; the others are forgotten).
    pub fn watch_slots(&mut self, slots: impl IntoIterator<Item = u16>, now_ms: i64) {
        let mut kept = HashMap::new();
        for slot in slots.into_iter().take(WATCHED_HASH_SLOTS) {
            let senders = self.hash_slots.remove(&slot);
            let fresh = || RowSenders::new(CLIENTS_PER_ROW, self.half_life_ms, now_ms);
            kept.insert(slot, senders.unwrap_or_else(fresh));
        }
        self.hash_slots = kept;
        self.slots_chosen_ms = Some(now_ms);
    }

    /// Are the senders of hash slot `slot` counted?
    #[inline]
    pub fn watches_slot(&self, slot: u16) -> bool {
        self.hash_slots.contains_key(&slot)
    }

    /// `counted` accesses of hash slot `slot` by `client`, if it is
    /// watched.
    #[inline]
    pub fn add_to_slot(&mut self, slot: u16, client: Client, counted: Counted, time_ms: i64) {
        if let Some(senders) = self.hash_slots.get_mut(&slot) {
            senders.add(client, counted, time_ms);
        }
    }

    /// The senders of hash slot `slot`, if it is watched.
    pub fn hash_slot(&self, slot: u16) -> Option<&RowSenders> {
        self.hash_slots.get(&slot)
    }

    /// The clients of the member of `hash` in `access`'s sketch.
    pub fn row(&self, access: Access, hash: u64) -> Option<&RowSenders> {
        self.rows.get(&(hash, access.code() as u8))
    }

    pub fn overall(&self) -> &RowSenders {
        &self.overall
    }

    /// Rows with clients counted.
    pub fn rows(&self) -> usize {
        self.rows.len()
    }

    pub fn heap_bytes(&self) -> usize {
        let rows: usize = (self.rows.values().chain(self.hash_slots.values()))
            .map(RowSenders::heap_bytes)
            .sum();
        rows + self.rows.allocation_size()
            + self.hash_slots.allocation_size()
            + self.watched.capacity() * 2
            + self.overall.heap_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sampling::time_slot::TimeSlot;

    #[test]
    fn only_members_count_their_clients_and_a_leaver_is_forgotten() {
        let mut a = ClientAttribution::new(1e12, 0);
        let (hot, cool) = (0xabcd_u64 << 40, 0x1234_u64 << 48);
        a.join(Access::Read, hot, 0);
        assert!(a.watches(hot) && !a.watches(cool));
        let c = Client { id: 7, host: 2 };
        let three = TimeSlot::WHOLE.counted(3);
        a.add(Access::Read, hot, c, three, 1);
        a.add(Access::Write, hot, c, three, 1);
        a.add(Access::Read, cool, c, three, 1);
        let row = a.row(Access::Read, hot).unwrap();
        assert_eq!(row.connections.parts(1)[0].client, 7);
        assert_eq!(row.hosts.parts(1)[0].client, 2);
        assert!((row.hosts.parts(1)[0].count - 3.0).abs() < 1e-9);
        assert!(a.row(Access::Write, hot).is_none() && a.rows() == 1);
        a.join(Access::Write, hot, 1);
        a.leave(Access::Read, hot);
        assert!(a.watches(hot), "still a member of the writes");
        a.leave(Access::Write, hot);
        assert!(!a.watches(hot) && a.rows() == 0);
    }
}
