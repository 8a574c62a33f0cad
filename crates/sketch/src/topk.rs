//! The top-k store: the k items with the largest counts, with O(1) membership
//! and O(log k) access to the minimum.
//!
//! Members live in a dense table and never move while they stay; a binary
//! min-heap of `(count, member)` pairs orders them, and each member records
//! where it sits in the heap. A sift therefore swaps two small pairs and two
//! positions, never touching the hash index. The index maps an item to its
//! member id, keyed by the item's sketch hash (already computed for every
//! arrival, so a membership test hashes nothing again).

use crate::item_arena::{ItemArena, ItemRef};
use crate::out_of_memory::{try_copy, OutOfMemory};
use crate::ties::Ties;
use hashbrown::HashTable;

/// A member of the top-k, as evicted or persisted.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub item: Box<[u8]>,
    pub hash: u64,
    /// Stored (forward-decay) mass, in the same units as the buckets.
    pub count: f64,
}

/// Stable handle of a member while it stays in the top-k.
pub type MemberId = usize;

/// Packed to 12 bytes: a sift moves these, and k of them is much of a
/// large top-k's memory.
#[derive(Clone, Copy, Debug)]
#[repr(C, packed(4))]
struct HeapSlot {
    count: f64,
    member: u32,
}

/// 20 bytes: the item's bytes live in the arena. Its heap position sits
/// beside its hash, so raising a member found by the index reads no other
/// table first (at a large k each table read can be a cache miss).
#[derive(Clone, Copy, Debug)]
#[repr(C, packed(4))]
struct Member {
    hash: u64,
    item: ItemRef,
    /// Position in `heap`.
    place: u32,
}

/// The member of a heap slot that holds none (a [`Ties::RedisBloom`] heap
/// has all k slots from the start; empty ones count 0).
const EMPTY: u32 = u32::MAX;

const EMPTY_SLOT: HeapSlot = HeapSlot {
    count: 0.0,
    member: EMPTY,
};

/// Min-heap of at most `capacity` members, indexed by item.
#[derive(Clone, Debug)]
pub struct TopK {
    capacity: usize,
    ties: Ties,
    heap: Vec<HeapSlot>,
    members: Vec<Member>,
    index: HashTable<u32>,
    items: ItemArena,
}

/// `a == b`, without a call into the C library for the short items most
/// streams carry (keys, IPs, tokens): half of a member's lookup was that
/// call (measured, `cargo bench`).
#[inline]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let word = |s: &[u8], at: usize| {
        s.get(at..at + 8)
            .and_then(|w| w.try_into().ok())
            .map(u64::from_ne_bytes)
    };
    let half = |s: &[u8], at: usize| {
        s.get(at..at + 4)
            .and_then(|w| w.try_into().ok())
            .map(u32::from_ne_bytes)
    };
    // Two overlapping loads cover every length from one load's size to twice it.
    match a.len() {
        0..=3 => a.iter().zip(b).all(|(x, y)| x == y),
        4..=7 => {
            let last = a.len() - 4;
            half(a, 0) == half(b, 0) && half(a, last) == half(b, last)
        }
        8..=16 => {
            let last = a.len() - 8;
            word(a, 0) == word(b, 0) && word(a, last) == word(b, last)
        }
        _ => a == b,
    }
}

/// The listing order: highest count first, ties by item bytes, so the
/// order is the same on every server.
pub fn rank_order(a: &(&[u8], f64), b: &(&[u8], f64)) -> std::cmp::Ordering {
    b.1.total_cmp(&a.1).then_with(|| a.0.cmp(b.0))
}

impl TopK {
    /// Fixed bytes per member, items aside: heap slot, member and
    /// index (hashbrown keeps at most 7/8 full and rounds up to a power of
    /// two: up to twice 4 + 1 bytes).
    pub const BYTES_PER_MEMBER: usize =
        std::mem::size_of::<HeapSlot>() + std::mem::size_of::<Member>() + 2 * (4 + 1);

    /// An empty store of `capacity` members (a RedisBloom heap with all its
    /// slots), reporting an allocation failure instead of aborting: k comes
    /// from a client.
    pub fn try_with_ties(capacity: usize, ties: Ties) -> Result<Self, OutOfMemory> {
        let mut store = Self::from_parts(capacity, 0, ties);
        store.heap.try_reserve_exact(capacity)?;
        store.members.try_reserve_exact(capacity)?;
        store.index.try_reserve(capacity, |_| 0)?;
        if ties == Ties::RedisBloom {
            store.heap.resize(capacity, EMPTY_SLOT);
        }
        Ok(store)
    }

    /// Room for members whose items take `item_bytes` in all: inserting
    /// them then allocates nothing.
    pub fn try_reserve_items(&mut self, item_bytes: usize) -> Result<(), OutOfMemory> {
        self.items.try_reserve(item_bytes)
    }

    /// A copy, or an error where `clone` would abort. The index is built
    /// anew: it is only ever looked up, never walked, so its layout is
    /// nobody's concern.
    pub fn try_clone(&self) -> Result<Self, OutOfMemory> {
        let mut copy = Self {
            capacity: self.capacity,
            ties: self.ties,
            heap: try_copy(&self.heap)?,
            members: try_copy(&self.members)?,
            index: HashTable::new(),
            items: self.items.try_clone()?,
        };
        copy.index.try_reserve(self.index.capacity(), |_| 0)?;
        for id in 0..copy.members.len() {
            if let Some(hash) = copy.members.get(id).map(|m| m.hash) {
                copy.index_insert(hash, id as u32);
            }
        }
        Ok(copy)
    }

    fn from_parts(capacity: usize, n: usize, ties: Ties) -> Self {
        Self {
            capacity,
            ties,
            heap: Vec::with_capacity(n),
            members: Vec::with_capacity(n),
            index: HashTable::with_capacity(n),
            items: ItemArena::default(),
        }
    }

    pub fn ties(&self) -> Ties {
        self.ties
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    pub fn len(&self) -> usize {
        self.members.len()
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    pub fn is_full(&self) -> bool {
        self.members.len() >= self.capacity
    }

    /// The smallest count (0 while a RedisBloom heap has an empty slot).
    pub fn min_count(&self) -> Option<f64> {
        self.heap.first().map(|s| s.count)
    }

    /// Heap positions of the empty slots (only a RedisBloom heap has any).
    pub fn empty_slots(&self) -> impl Iterator<Item = usize> + '_ {
        self.heap
            .iter()
            .enumerate()
            .filter(|(_, s)| s.member == EMPTY)
            .map(|(place, _)| place)
    }

    /// `(item, count)` in heap order, the order persistence keeps.
    pub fn heap_order(&self) -> impl Iterator<Item = (&[u8], f64)> + '_ {
        self.members().map(|(item, _, count)| (item, count))
    }

    /// `(item, hash, count)` of every member, in heap order.
    pub fn members(&self) -> impl Iterator<Item = (&[u8], u64, f64)> + '_ {
        self.heap.iter().filter_map(|s| {
            self.members
                .get(s.member as usize)
                .map(|m| (self.items.get(m.item), m.hash, s.count))
        })
    }

    /// The member holding `item`, if any.
    #[inline]
    pub fn find(&self, hash: u64, item: &[u8]) -> Option<MemberId> {
        let (members, items) = (&self.members, &self.items);
        self.index
            .find(hash, |&id| {
                members
                    .get(id as usize)
                    .is_some_and(|m| m.hash == hash && same_bytes(items.get(m.item), item))
            })
            .map(|&id| id as usize)
    }

    pub fn count(&self, id: MemberId) -> Option<f64> {
        let place = self.members.get(id)?.place as usize;
        self.heap.get(place).map(|s| s.count)
    }

    /// Raises a member's count to `count` if that is larger. Returns the
    /// count before and after.
    pub fn raise(&mut self, id: MemberId, count: f64) -> Option<(f64, f64)> {
        let place = self.members.get(id)?.place as usize;
        let slot = self.heap.get_mut(place)?;
        let before = slot.count;
        let after = before.max(count);
        slot.count = after;
        // RedisBloom sifts a member it counted even when its count stayed.
        if count > before || self.ties == Ties::RedisBloom {
            self.sift_down(place);
        }
        Some((before, after))
    }

    /// Can an item of `len` bytes be admitted? Members' items hold at most
    /// 4 GiB in all (a few giant items could otherwise reach it).
    pub fn can_admit(&self, len: usize) -> bool {
        self.capacity > 0 && self.items.has_room_for(len)
    }

    /// Adds `item` (not a member; [`Self::can_admit`] said yes). When full,
    /// the minimum is evicted and returned.
    pub fn insert(&mut self, item: &[u8], hash: u64, count: f64) -> Option<Entry> {
        if !self.can_admit(item.len()) {
            return None;
        }
        if self.ties == Ties::RedisBloom {
            return self.replace_root(item, hash, count);
        }
        if self.is_full() {
            return self.replace_min(item, hash, count);
        }
        let id = self.new_member(item, hash, self.heap.len());
        self.heap.push(HeapSlot { count, member: id });
        self.sift_up(self.heap.len() - 1);
        None
    }

    /// Multiplies every count by `factor` (> 0, or 0): the order is unchanged.
    pub fn scale(&mut self, factor: f64) {
        for slot in &mut self.heap {
            slot.count *= factor;
        }
    }

    /// Rebuilds a store from entries in heap order, as persisted.
    /// Fails if the entries break the heap property, repeat an item or exceed
    /// the capacity.
    pub fn from_heap_order(capacity: usize, entries: Vec<Entry>) -> Result<Self, &'static str> {
        if entries.len() > capacity {
            return Err("more members than k");
        }
        // Sized by the entries actually present, not by k: a damaged payload
        // claiming a huge k allocates nothing for it.
        let mut store = Self::from_parts(capacity, entries.len(), Ties::ByItem);
        for entry in entries {
            store.push_slot(Some(entry))?;
        }
        Ok(store)
    }

    /// Rebuilds a RedisBloom heap from its k slots in heap order, as
    /// persisted (`None` for an empty slot). Fails as
    /// [`Self::from_heap_order`] does, or if the slots are not exactly k.
    pub fn from_slots(capacity: usize, slots: Vec<Option<Entry>>) -> Result<Self, &'static str> {
        if slots.len() != capacity {
            return Err("a RedisBloom heap must have k slots");
        }
        let members = slots.iter().flatten().count();
        let mut store = Self::from_parts(capacity, members, Ties::RedisBloom);
        store.heap.reserve_exact(capacity);
        for slot in slots {
            store.push_slot(slot)?;
        }
        Ok(store)
    }

    /// Appends a slot at the end of the heap, checking it against its parent.
    fn push_slot(&mut self, entry: Option<Entry>) -> Result<(), &'static str> {
        let place = self.heap.len();
        let count = entry.as_ref().map_or(0.0, |e| e.count);
        let parent = place.checked_sub(1).and_then(|p| self.heap.get(p / 2));
        if parent.is_some_and(|parent| parent.count > count) {
            return Err("members out of heap order");
        }
        let Some(entry) = entry else {
            self.heap.push(EMPTY_SLOT);
            return Ok(());
        };
        if self.find(entry.hash, &entry.item).is_some() {
            return Err("an item is listed twice");
        }
        if !self.items.has_room_for(entry.item.len()) {
            return Err("members' items exceed 4 GiB");
        }
        let id = self.new_member(&entry.item, entry.hash, place);
        self.heap.push(HeapSlot {
            count: entry.count,
            member: id,
        });
        Ok(())
    }

    /// Heap bytes held, items included.
    pub fn heap_bytes(&self) -> usize {
        self.heap.capacity() * std::mem::size_of::<HeapSlot>()
            + self.members.capacity() * std::mem::size_of::<Member>()
            + self.index.allocation_size()
            + self.items.heap_bytes()
    }

    /// A new member for `item`, indexed, to sit at heap position `place`
    /// (its heap slot is the caller's to write).
    fn new_member(&mut self, item: &[u8], hash: u64, place: usize) -> u32 {
        let id = self.members.len() as u32;
        let item = self.store(item);
        self.members.push(Member {
            hash,
            item,
            place: place as u32,
        });
        self.index_insert(hash, id);
        id
    }

    fn index_insert(&mut self, hash: u64, id: u32) {
        let members = &self.members;
        self.index.insert_unique(hash, id, |&m| {
            members.get(m as usize).map_or(0, |member| member.hash)
        });
    }

    /// Appends an item's bytes, squeezing out holes first if they outweigh
    /// the live bytes.
    fn store(&mut self, item: &[u8]) -> ItemRef {
        if self.items.must_compact_for(item.len()) {
            self.items
                .compact(self.members.iter_mut().map(|m| &mut m.item));
        }
        self.items.push(item)
    }

    /// RedisBloom's admission: the newcomer takes the root slot, expelling
    /// whoever held it, and sifts down.
    fn replace_root(&mut self, item: &[u8], hash: u64, count: f64) -> Option<Entry> {
        let root = *self.heap.first()?;
        if root.member != EMPTY {
            return self.replace_min(item, hash, count);
        }
        let id = self.new_member(item, hash, 0);
        if let Some(slot) = self.heap.first_mut() {
            *slot = HeapSlot { count, member: id };
        }
        self.sift_down(0);
        None
    }

    fn replace_min(&mut self, item: &[u8], hash: u64, count: f64) -> Option<Entry> {
        let root = *self.heap.first()?;
        let id = root.member;
        let evicted = *self.members.get(id as usize)?;
        let evicted_item: Box<[u8]> = self.items.get(evicted.item).into();
        self.items.release(evicted.item);
        // Empty while the new bytes are stored: a compaction skips it.
        if let Some(m) = self.members.get_mut(id as usize) {
            m.item = ItemRef::default();
        }
        let stored = self.store(item);
        if let Some(m) = self.members.get_mut(id as usize) {
            m.hash = hash;
            m.item = stored;
        }
        if let Ok(found) = self.index.find_entry(evicted.hash, |&m| m == id) {
            found.remove();
        }
        self.index_insert(hash, id);
        if let Some(slot) = self.heap.first_mut() {
            slot.count = count;
        }
        self.sift_down(0);
        Some(Entry {
            item: evicted_item,
            hash: evicted.hash,
            count: root.count,
        })
    }

    fn swap(&mut self, a: usize, b: usize) {
        if a == b || a >= self.heap.len() || b >= self.heap.len() {
            return;
        }
        self.heap.swap(a, b);
        for place in [a, b] {
            let member = self.heap.get(place).map_or(EMPTY, |slot| slot.member);
            if let Some(m) = self.members.get_mut(member as usize) {
                m.place = place as u32;
            }
        }
    }

    fn count_at(&self, place: usize) -> f64 {
        self.heap.get(place).map_or(f64::INFINITY, |s| s.count)
    }

    fn sift_up(&mut self, mut place: usize) {
        while place > 0 {
            let parent = (place - 1) / 2;
            if self.count_at(parent) <= self.count_at(place) {
                break;
            }
            self.swap(parent, place);
            place = parent;
        }
    }

    fn sift_down(&mut self, place: usize) {
        match self.ties {
            Ties::ByItem => self.sift_down_strict(place),
            Ties::RedisBloom => self.sift_down_redisbloom(place),
        }
    }

    /// RedisBloom's `heapifyDown`: the first step is taken on an equal
    /// count too, the following ones only on a smaller one; of two equal
    /// children the left goes first.
    fn sift_down_redisbloom(&mut self, start: usize) {
        let len = self.heap.len();
        let is_leaf = |place: usize| len < 2 || (len - 2) / 2 < place;
        let smaller_child = |s: &Self, place: usize| {
            let left = 2 * place + 1;
            if left + 1 < len && s.count_at(left) > s.count_at(left + 1) {
                left + 1
            } else {
                left
            }
        };
        if is_leaf(start) {
            return;
        }
        let mut child = smaller_child(self, start);
        let moving = self.count_at(start);
        if self.count_at(child) > moving {
            return;
        }
        let mut place = start;
        loop {
            self.swap(place, child);
            place = child;
            if is_leaf(place) {
                break;
            }
            child = smaller_child(self, place);
            if self.count_at(child) >= moving {
                break;
            }
        }
    }

    fn sift_down_strict(&mut self, mut place: usize) {
        let len = self.heap.len();
        loop {
            let left = 2 * place + 1;
            if left >= len {
                break;
            }
            let right = left + 1;
            let smaller = if right < len && self.count_at(right) < self.count_at(left) {
                right
            } else {
                left
            };
            if self.count_at(place) <= self.count_at(smaller) {
                break;
            }
            self.swap(place, smaller);
            place = smaller;
        }
    }

    /// Checks every invariant: heap order, places, index. For tests.
    pub fn check_invariants(&self) -> Result<(), String> {
        let n = self.members.len();
        if n > self.capacity {
            return Err("over capacity".into());
        }
        let slots_expected = match self.ties {
            Ties::ByItem => n,
            Ties::RedisBloom => self.capacity,
        };
        if self.heap.len() != slots_expected || self.empty_slots().count() != self.heap.len() - n {
            return Err(format!("{} slots for {n} members", self.heap.len()));
        }
        let item_bytes: usize = self.members.iter().map(|m| m.item.len()).sum();
        if item_bytes != self.items.live() {
            return Err(format!(
                "item bytes {item_bytes}, the arena holds {}",
                self.items.live()
            ));
        }
        if self.index.len() != n {
            return Err(format!("{n} members, {} indexed", self.index.len()));
        }
        for (place, slot) in self.heap.iter().enumerate() {
            let parent = place.checked_sub(1).and_then(|p| self.heap.get(p / 2));
            if parent.is_some_and(|parent| parent.count > slot.count) {
                return Err(format!("heap order broken at {place}"));
            }
            if slot.member == EMPTY {
                continue;
            }
            if self.members.get(slot.member as usize).map(|m| m.place) != Some(place as u32) {
                return Err(format!("place of member {} is stale", slot.member));
            }
        }
        for (id, m) in self.members.iter().enumerate() {
            if self.find(m.hash, self.items.get(m.item)) != Some(id) {
                return Err(format!("index does not find member {id}"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ItemHash;
    use proptest::prelude::*;

    #[test]
    fn short_and_long_items_compare_by_every_byte() {
        let items: Vec<Vec<u8>> = (0..40usize)
            .map(|len| (0..len).map(|i| (i * 7 + len) as u8).collect())
            .collect();
        for a in &items {
            assert!(same_bytes(a, &a.clone()));
            for b in &items {
                assert_eq!(same_bytes(a, b), a == b, "{a:?} {b:?}");
            }
            // One byte changed anywhere is a different item.
            for at in 0..a.len() {
                let mut c = a.clone();
                c[at] ^= 1;
                assert!(!same_bytes(a, &c), "{a:?} at {at}");
            }
        }
    }

    fn hash(item: &[u8]) -> u64 {
        ItemHash::of(item, 0).value()
    }

    fn entry(item: &[u8], count: f64) -> Entry {
        Entry {
            item: item.into(),
            hash: hash(item),
            count,
        }
    }

    fn store(capacity: usize, ties: Ties) -> TopK {
        TopK::try_with_ties(capacity, ties).unwrap()
    }

    /// The members as listed: highest count first, ties by item bytes (in
    /// heap order under [`Ties::RedisBloom`]), as `HeavyKeeper::top` lists.
    fn listed(topk: &TopK) -> Vec<Vec<u8>> {
        let mut members: Vec<(&[u8], f64)> = topk.heap_order().collect();
        match topk.ties {
            Ties::ByItem => members.sort_by(rank_order),
            // Stable: equal counts keep their heap order.
            Ties::RedisBloom => members.sort_by(|a, b| b.1.total_cmp(&a.1)),
        }
        members.iter().map(|m| m.0.to_vec()).collect()
    }

    #[test]
    fn keeps_the_largest_and_evicts_the_minimum() {
        let mut topk = store(2, Ties::ByItem);
        assert!(topk.insert(b"a", hash(b"a"), 5.0).is_none());
        assert!(topk.insert(b"b", hash(b"b"), 3.0).is_none());
        let evicted = topk.insert(b"c", hash(b"c"), 4.0).expect("full");
        assert_eq!(&*evicted.item, b"b");
        assert_eq!(listed(&topk), vec![b"a".to_vec(), b"c".to_vec()]);
        assert!(topk.find(hash(b"b"), b"b").is_none());
        topk.check_invariants().unwrap();
    }

    #[test]
    fn members_sharing_a_hash_are_told_apart() {
        let mut topk = store(4, Ties::ByItem);
        topk.insert(b"x", 1, 1.0);
        topk.insert(b"y", 1, 2.0);
        topk.insert(b"z", 1, 3.0);
        assert_eq!(topk.count(topk.find(1, b"y").unwrap()), Some(2.0));
        let slot = topk.find(1, b"x").unwrap();
        topk.raise(slot, 10.0);
        topk.check_invariants().unwrap();
        assert_eq!(topk.heap_order().next(), Some((&b"y"[..], 2.0)));
    }

    #[test]
    fn churning_members_keep_their_bytes_through_arena_compactions() {
        let mut topk = store(50, Ties::ByItem);
        let item = |i: u64| format!("{i:0>200}").into_bytes();
        for i in 0..5_000u64 {
            let evicted = topk.insert(&item(i), hash(&item(i)), i as f64);
            if let Some(e) = evicted {
                assert_eq!(&*e.item, &item(i - 50)[..]);
            }
            topk.check_invariants().unwrap();
        }
        for i in 4_950..5_000u64 {
            assert!(topk.find(hash(&item(i)), &item(i)).is_some());
        }
        // 50 live items of 200 bytes: the holes of 4,950 evictions are gone.
        assert!(
            topk.heap_bytes() < 50 * (200 + 64) * 3,
            "{}",
            topk.heap_bytes()
        );
    }

    #[test]
    fn ties_rank_by_item_bytes() {
        let mut ranked = [(&b"b"[..], 7.0), (b"c", 7.0), (b"a", 7.0), (b"d", 8.0)];
        ranked.sort_by(rank_order);
        let items: Vec<&[u8]> = ranked.iter().map(|e| e.0).collect();
        assert_eq!(items, vec![&b"d"[..], b"a", b"b", b"c"]);
    }

    /// RedisBloom's `test_list_info` (k = 2), step by step as its heap
    /// moves: ties rotate through the root, a newcomer equal to the
    /// minimum expels the root, and the list keeps heap order for ties.
    #[test]
    fn a_redisbloom_heap_settles_ties_as_redisbloom_does() {
        fn arrive(topk: &mut TopK, item: &[u8], count: f64) -> Option<Box<[u8]>> {
            match topk.find(hash(item), item) {
                Some(id) => {
                    topk.raise(id, count);
                    None
                }
                None if count >= topk.min_count().unwrap_or(0.0) => {
                    topk.insert(item, hash(item), count).map(|e| e.item)
                }
                None => None,
            }
        }
        let mut topk = store(2, Ties::RedisBloom);
        // Each arrival as `item:count`, the count the sketch estimated.
        let stream = "foo:1 bar:1 baz:1 42:1 foo:2 bar:2 baz:2 42:2 foo:3 baz:3 42:2 \
                      foo:4 baz:4 foo:5 bar:3 baz:5 foo:6 baz:6";
        for (item, count) in stream.split_whitespace().filter_map(|a| a.split_once(':')) {
            arrive(&mut topk, item.as_bytes(), count.parse().unwrap());
        }
        assert_eq!(listed(&topk), vec![b"foo".to_vec(), b"baz".to_vec()]);
        let expelled: Vec<Option<Box<[u8]>>> = (4..9)
            .map(|c| arrive(&mut topk, b"bar", f64::from(c)))
            .collect();
        assert_eq!(
            expelled,
            vec![None, None, Some(b"foo"[..].into()), None, None]
        );
        assert_eq!(listed(&topk), vec![b"bar".to_vec(), b"baz".to_vec()]);
        topk.check_invariants().unwrap();
    }

    #[test]
    fn rebuilding_keeps_empty_slots_and_rejects_broken_heaps_and_duplicates() {
        let slot = |item: &[u8], count| Some(entry(item, count));
        let topk = TopK::from_slots(3, vec![None, slot(b"a", 2.0), None]).unwrap();
        topk.check_invariants().unwrap();
        assert_eq!(topk.empty_slots().collect::<Vec<_>>(), vec![0, 2]);
        assert!(TopK::from_slots(3, vec![None, slot(b"a", 2.0)]).is_err());
        assert!(TopK::from_slots(2, vec![slot(b"a", 2.0), None]).is_err());
        assert!(TopK::from_heap_order(3, vec![entry(b"a", 2.0), entry(b"b", 1.0)]).is_err());
        assert!(TopK::from_heap_order(3, vec![entry(b"a", 1.0), entry(b"a", 2.0)]).is_err());
        assert!(TopK::from_heap_order(1, vec![entry(b"a", 1.0), entry(b"b", 2.0)]).is_err());
        let ok = TopK::from_heap_order(3, vec![entry(b"a", 1.0), entry(b"b", 2.0)]).unwrap();
        ok.check_invariants().unwrap();
    }

    #[derive(Debug, Clone)]
    enum Op {
        Insert(u8, u16),
        Raise(u8, u16),
        Scale,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (any::<u8>(), any::<u16>()).prop_map(|(i, c)| Op::Insert(i, c)),
            (any::<u8>(), any::<u16>()).prop_map(|(i, c)| Op::Raise(i, c)),
            Just(Op::Scale),
        ]
    }

    proptest! {
        #[test]
        fn invariants_hold_after_every_operation(
            capacity in 1usize..12,
            redisbloom in any::<bool>(),
            ops in proptest::collection::vec(op(), 1..300),
        ) {
            let ties = if redisbloom { Ties::RedisBloom } else { Ties::ByItem };
            let mut topk = store(capacity, ties);
            for op in ops {
                match op {
                    Op::Insert(i, c) => {
                        let item = [i % 32];
                        // Few distinct hashes, so colliding members are exercised.
                        let h = u64::from(i % 5);
                        if topk.find(h, &item).is_none() {
                            let min_before = topk.min_count();
                            let full = topk.is_full();
                            let evicted = topk.insert(&item, h, f64::from(c));
                            // RedisBloom replaces the root even while there is room,
                            // if a member (of count 0) sits there.
                            if ties == Ties::ByItem || full {
                                prop_assert_eq!(evicted.is_some(), full);
                            }
                            if let Some(e) = evicted {
                                prop_assert_eq!(Some(e.count), min_before);
                            }
                        }
                    }
                    Op::Raise(i, c) => {
                        let item = [i % 32];
                        if let Some(id) = topk.find(u64::from(i % 5), &item) {
                            let before = topk.count(id).unwrap();
                            topk.raise(id, f64::from(c));
                            let after = topk.find(u64::from(i % 5), &item).unwrap();
                            prop_assert_eq!(topk.count(after).unwrap(), before.max(f64::from(c)));
                        }
                    }
                    Op::Scale => topk.scale(0.5),
                }
                prop_assert!(topk.check_invariants().is_ok(), "{:?}", topk.check_invariants());
            }
        }
    }
}
