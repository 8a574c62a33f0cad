//! Key accesses waiting to be counted: gathered where they are seen (a
//! server's command filter, where every instruction is paid by every
//! command) and counted elsewhere in one go.
//!
//! So an access costs the gathering side one copy of its key and one word:
//! no timestamp and no weight per access. Every access of a batch was
//! gathered in the same slot of time ([`KeyBatch::time_slot`]) and stands
//! for the same number of accesses (its weight), and the batch knows when its first
//! access came and when it was sealed: the counting side spreads the
//! accesses evenly over that span, which is exact for steady traffic and off
//! by at most the span (milliseconds) for any other.

use crate::access::Access;
use crate::sampling::time_slot::TimeSlot;
use crate::server::tracked_name::{tracked_name, MAX_TRACKED_KEY_BYTES};

/// Past this many bytes of items a batch takes no more accesses (its end
/// offsets are 30 bits). Gatherers hand batches over long before.
const MAX_ITEM_BYTES: usize = 1 << 30;

#[derive(Clone, Debug, Default)]
pub struct KeyBatch {
    /// Each access's item: its database (2 bytes, big-endian), then its key.
    items: Vec<u8>,
    /// Each access's end in `items`, shifted left by 2, with its
    /// [`Access`] code in the low bits.
    entries: Vec<u32>,
    /// Who sent them (Redis 7.2+, Valkey), in runs: from entry `.0` on,
    /// client `.1`. One run per pipeline, not a word per access.
    clients: Vec<(u32, Client)>,
    /// The client of the run open now (0: none said).
    client: Client,
    time_slot: TimeSlot,
    first_ms: i64,
    sealed_ms: i64,
}

/// Who sent an access: a connection (its client id; 0 where the server
/// does not say, as Redis 7.0) and its host (an id the gathering side gave
/// the address without its port).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Client {
    pub id: u64,
    pub host: u32,
}

/// One access of a batch, as the counting side reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchAccess<'a> {
    /// Database (2 bytes, big-endian) and key: what the tracker counts.
    pub item: &'a [u8],
    pub access: Access,
    pub time_ms: i64,
    /// The client that sent it.
    pub client: Client,
}

impl KeyBatch {
    /// Adds one access of `key` in `db`, gathered in `time_slot`. The first
    /// access of a batch sets its slot and its start time (`now` is called
    /// only then): a batch holds the accesses of one slot. A key
    /// past [`MAX_TRACKED_KEY_BYTES`] is added under its [`tracked_name`].
    #[inline(always)]
    pub fn push(
        &mut self,
        db: u16,
        key: &[u8],
        access: Access,
        time_slot: TimeSlot,
        now: impl FnOnce() -> i64,
    ) {
        if self.entries.is_empty() {
            self.begin(time_slot, now());
        }
        if key.len() > MAX_TRACKED_KEY_BYTES {
            return self.push_long(db, key, access);
        }
        self.push_item(db, key, access);
    }

    #[cold]
    fn begin(&mut self, time_slot: TimeSlot, now_ms: i64) {
        self.time_slot = time_slot;
        self.first_ms = now_ms;
        self.sealed_ms = now_ms;
    }

    /// Apart, so that the common path stays small enough to inline.
    #[cold]
    #[inline(never)]
    fn push_long(&mut self, db: u16, key: &[u8], access: Access) {
        self.push_item(db, &tracked_name(key), access);
    }

    #[inline(always)]
    fn push_item(&mut self, db: u16, key: &[u8], access: Access) {
        let start = self.items.len();
        let end = start + 2 + key.len();
        if end >= MAX_ITEM_BYTES {
            return;
        }
        self.items.reserve(2 + key.len());
        let db = db.to_be_bytes();
        // SAFETY: `reserve` made room for `2 + key.len()` bytes past `start`;
        // both copies write exactly those bytes before the length covers them.
        unsafe {
            let dst = self.items.as_mut_ptr().add(start);
            std::ptr::copy_nonoverlapping(db.as_ptr(), dst, 2);
            copy_small(key, dst.add(2));
            self.items.set_len(end);
        }
        self.entries.push((end as u32) << 2 | access.code());
    }

    /// The accesses pushed from now on are client `id`'s.
    #[inline(always)]
    pub fn set_client(&mut self, id: Client) {
        if id != self.client {
            self.client_changed(id);
        }
    }

    #[cold]
    #[inline(never)]
    fn client_changed(&mut self, id: Client) {
        let at = self.entries.len() as u32;
        match self.clients.last_mut() {
            // The run before took no access: it is replaced.
            Some(run) if run.0 == at => run.1 = id,
            _ => self.clients.push((at, id)),
        }
        self.client = id;
    }

    /// Adds every access of `other` (gathered in the same slot) after this
    /// batch's own.
    pub fn append(&mut self, other: &KeyBatch) {
        if other.is_empty() {
            return;
        }
        if self.is_empty() {
            self.begin(other.time_slot, other.first_ms);
        }
        let shift = self.items.len();
        if shift + other.items.len() >= MAX_ITEM_BYTES {
            return;
        }
        self.items.extend_from_slice(&other.items);
        let first = self.entries.len() as u32;
        if self.clients.last().is_some_and(|run| run.0 == first) {
            self.clients.pop();
        }
        if other.clients.first().is_none_or(|run| run.0 > 0) {
            // `other` begins with accesses of no client said.
            self.clients.push((first, Client::default()));
        }
        (self.clients).extend(other.clients.iter().map(|&(at, id)| (at + first, id)));
        self.client = other.client;
        self.entries
            .extend(other.entries.iter().map(|&e| e + ((shift as u32) << 2)));
    }

    /// Accesses held.
    #[inline]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Bytes of items held.
    #[inline]
    pub fn item_bytes(&self) -> usize {
        self.items.len()
    }

    /// What each access stands for.
    pub fn weight(&self) -> u64 {
        self.time_slot.access_weight()
    }

    /// The slot they were gathered in was kept standing for `weight`
    /// slots: its own and those discarded ([`crate::sampling::kept_time_slots::KeptTimeSlots`]).
    pub fn stand_for(&mut self, weight: u32) {
        self.time_slot = self.time_slot.standing_for(weight);
    }

    /// The slot of time the accesses were gathered in.
    pub fn time_slot(&self) -> TimeSlot {
        self.time_slot
    }

    /// Accesses held times their weight: the accesses they stand for.
    pub fn weighted_len(&self) -> u64 {
        self.len() as u64 * self.weight()
    }

    /// The batch is complete at `now_ms`: its accesses are spread up to then.
    pub fn seal(&mut self, now_ms: i64) {
        self.sealed_ms = now_ms.max(self.first_ms);
    }

    /// When the first access came, and when the batch was sealed.
    pub fn span_ms(&self) -> (i64, i64) {
        (self.first_ms, self.sealed_ms)
    }

    /// Every access in the order it came, spread over the batch's span.
    pub fn iter(&self) -> impl Iterator<Item = BatchAccess<'_>> + '_ {
        let n = self.entries.len().max(1) as i64;
        let span = self.sealed_ms.saturating_sub(self.first_ms).max(0);
        // Access i comes at first + span · i / n: stepped, not divided, per
        // access (whole ms, and the remainder carried).
        let (step, rest) = (span / n, span % n);
        let (mut time, mut carried) = (self.first_ms, 0i64);
        let mut start = 0usize;
        let mut runs = self.clients.iter().peekable();
        let mut client = Client::default();
        self.entries.iter().enumerate().map(move |(i, &entry)| {
            while let Some(&(_, id)) = runs.next_if(|run| run.0 as usize <= i) {
                client = id;
            }
            let end = (entry >> 2) as usize;
            let item = self.items.get(start..end).unwrap_or_default();
            start = end;
            let access = BatchAccess {
                item,
                access: Access::from_code(entry),
                time_ms: time,
                client,
            };
            time += step;
            carried += rest;
            if carried >= n {
                carried -= n;
                time += 1;
            }
            access
        })
    }

    /// Heap bytes held (what it holds now or held before it was emptied).
    pub fn heap_bytes(&self) -> usize {
        self.items.capacity()
            + self.entries.capacity() * std::mem::size_of::<u32>()
            + self.clients.capacity() * std::mem::size_of::<(u32, Client)>()
    }

    /// Empties the batch, keeping its memory.
    pub fn clear(&mut self) {
        self.items.clear();
        self.entries.clear();
        self.clients.clear();
        self.client = Client::default();
    }

    /// Empties the batch and gives back memory past `max_bytes` of items
    /// and `max_accesses` accesses: one batch of huge keys must not keep
    /// its size for good.
    pub fn clear_within(&mut self, max_bytes: usize, max_accesses: usize) {
        self.clear();
        self.items.shrink_to(max_bytes);
        self.entries.shrink_to(max_accesses);
        self.clients.shrink_to(max_accesses / 16);
    }
}

/// The database and key of a batch item.
pub fn split_item(item: &[u8]) -> Option<(u16, &[u8])> {
    let (db, key) = item.split_at_checked(2)?;
    Some((u16::from_be_bytes(db.try_into().ok()?), key))
}

/// Copies `src` to `dst` with at most two loads and two stores for keys up
/// to 32 bytes (most keys): a call to `memcpy` costs more than the copy.
///
/// # Safety
/// `dst` must be valid for `src.len()` bytes of writes, not overlapping `src`.
#[inline(always)]
unsafe fn copy_small(src: &[u8], dst: *mut u8) {
    let n = src.len();
    let s = src.as_ptr();
    // SAFETY: (every branch) each load reads `width` bytes at offset 0 or
    // `n - width` with `n >= width`, inside `src`; each store writes the same
    // offsets of `dst`, inside its `n` bytes. Overlapping stores write the
    // same bytes twice.
    unsafe {
        match n {
            16..=32 => copy_ends::<u128>(s, dst, n),
            8..=15 => copy_ends::<u64>(s, dst, n),
            4..=7 => copy_ends::<u32>(s, dst, n),
            1..=3 => {
                *dst = *s;
                *dst.add(n / 2) = *s.add(n / 2);
                *dst.add(n - 1) = *s.add(n - 1);
            }
            0 => {}
            _ => std::ptr::copy_nonoverlapping(s, dst, n),
        }
    }
}

/// The first and the last `size_of::<T>()` of `n` bytes, one load and one
/// store each. Safety: as [`copy_small`], and `size_of::<T>() <= n`.
#[inline(always)]
unsafe fn copy_ends<T>(s: *const u8, dst: *mut u8, n: usize) {
    let end = n - std::mem::size_of::<T>();
    // SAFETY: offsets 0 and `end` leave `size_of::<T>()` bytes inside `n`.
    unsafe {
        let (a, b) = (
            s.cast::<T>().read_unaligned(),
            s.add(end).cast::<T>().read_unaligned(),
        );
        dst.cast::<T>().write_unaligned(a);
        dst.add(end).cast::<T>().write_unaligned(b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_length_of_key_is_copied_exactly() {
        let mut batch = KeyBatch::default();
        let keys: Vec<Vec<u8>> = (0..80usize)
            .map(|n| (0..n).map(|i| (i * 7 + n) as u8).collect())
            .collect();
        for (i, key) in keys.iter().enumerate() {
            batch.push(i as u16, key, Access::Read, TimeSlot::WHOLE, || 0);
        }
        let read: Vec<_> = batch.iter().map(|a| split_item(a.item).unwrap()).collect();
        for (i, key) in keys.iter().enumerate() {
            assert_eq!(read[i], (i as u16, key.as_slice()), "length {i}");
        }
    }

    #[test]
    fn accesses_keep_their_kind_and_spread_over_the_span() {
        let mut batch = KeyBatch::default();
        let mut clock_reads = 0;
        let kinds = [Access::Read, Access::Write, Access::Miss, Access::Read];
        for (i, access) in kinds.into_iter().enumerate() {
            let key = format!("k{i}");
            batch.push(3, key.as_bytes(), access, TimeSlot::new(1, 16), || {
                clock_reads += 1;
                1_000
            });
        }
        assert_eq!(clock_reads, 1, "the clock is read once per batch");
        batch.seal(1_040);
        let read: Vec<_> = batch.iter().collect();
        assert_eq!(read.iter().map(|a| a.access).collect::<Vec<_>>(), kinds);
        assert_eq!(
            read.iter().map(|a| a.time_ms).collect::<Vec<_>>(),
            [1_000, 1_010, 1_020, 1_030]
        );
        assert_eq!((batch.weight(), batch.weighted_len()), (16, 64));
        // A batch emptied starts afresh: new weight, new start.
        batch.clear();
        batch.push(0, b"x", Access::Read, TimeSlot::WHOLE, || 5_000);
        assert_eq!((batch.weight(), batch.span_ms()), (1, (5_000, 5_000)));
    }

    #[test]
    fn a_batch_appended_keeps_every_access() {
        let (mut a, mut b) = (KeyBatch::default(), KeyBatch::default());
        let slot = TimeSlot::new(7, 4);
        a.push(1, b"one", Access::Read, slot, || 10);
        b.push(2, b"two", Access::Write, slot, || 20);
        b.push(3, b"three", Access::Miss, slot, || 20);
        a.append(&b);
        let got: Vec<_> = a
            .iter()
            .map(|x| (split_item(x.item).unwrap(), x.access))
            .collect();
        assert_eq!(
            got,
            [
                ((1, &b"one"[..]), Access::Read),
                ((2, &b"two"[..]), Access::Write),
                ((3, &b"three"[..]), Access::Miss)
            ]
        );
        let mut empty = KeyBatch::default();
        empty.append(&b);
        assert_eq!(
            (empty.len(), empty.time_slot(), empty.span_ms().0),
            (2, slot, 20)
        );
    }

    #[test]
    fn each_access_keeps_its_client_through_runs_and_appends() {
        let (mut a, mut b) = (KeyBatch::default(), KeyBatch::default());
        let slot = TimeSlot::WHOLE;
        a.push(0, b"before", Access::Read, slot, || 0);
        let c = |id| Client { id, host: 1 };
        a.set_client(c(7));
        a.set_client(c(8)); // took nothing: replaced
        a.push(0, b"x", Access::Read, slot, || 0);
        a.push(0, b"y", Access::Write, slot, || 0);
        b.push(0, b"unsaid", Access::Read, slot, || 0);
        b.set_client(c(9));
        b.push(0, b"z", Access::Miss, slot, || 0);
        a.append(&b);
        a.push(0, b"after", Access::Read, slot, || 0);
        let clients: Vec<u64> = a.iter().map(|x| x.client.id).collect();
        assert_eq!(clients, [0, 8, 8, 0, 9, 9]);
        a.clear();
        a.push(0, b"fresh", Access::Read, slot, || 0);
        assert_eq!(a.iter().next().unwrap().client, Client::default());
    }

    #[test]
    fn huge_keys_are_held_under_their_bounded_name() {
        let mut batch = KeyBatch::default();
        let huge = vec![b'h'; 1 << 20];
        for _ in 0..10 {
            batch.push(0, &huge, Access::Read, TimeSlot::WHOLE, || 0);
        }
        assert_eq!(batch.item_bytes(), 10 * (MAX_TRACKED_KEY_BYTES + 2));
        batch.clear_within(4096, 16);
        assert!(batch.heap_bytes() <= 4096 + 16 * 4);
    }
}
