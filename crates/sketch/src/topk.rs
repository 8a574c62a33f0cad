//! The top-k store: the k items with the largest counts, with O(1) membership
//! and O(log k) access to the minimum.
//!
//! A binary min-heap of entries plus a hash index from item to heap slot. The
//! index is keyed by the item's sketch hash, which is already computed for
//! every arrival, so a membership test hashes nothing again.

use hashbrown::HashTable;

/// A member of the top-k.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub item: Box<[u8]>,
    pub hash: u64,
    /// Stored (forward-decay) mass, in the same units as the buckets.
    pub count: f64,
}

/// Min-heap of at most `capacity` entries, indexed by item.
#[derive(Clone, Debug)]
pub struct TopK {
    capacity: usize,
    heap: Vec<Entry>,
    index: HashTable<usize>,
}

/// Sentinel slot used while two index entries are being swapped.
const MOVING: usize = usize::MAX;

impl TopK {
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            capacity,
            heap: Vec::with_capacity(capacity),
            index: HashTable::with_capacity(capacity),
        }
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    pub fn is_full(&self) -> bool {
        self.heap.len() >= self.capacity
    }

    /// The entry with the smallest count.
    pub fn min(&self) -> Option<&Entry> {
        self.heap.first()
    }

    /// Entries in heap order (the order that persistence keeps).
    pub fn entries(&self) -> &[Entry] {
        &self.heap
    }

    /// The heap slot of `item`, if it is a member.
    pub fn find(&self, hash: u64, item: &[u8]) -> Option<usize> {
        self.index
            .find(hash, |&slot| {
                self.heap.get(slot).is_some_and(|e| *e.item == *item)
            })
            .copied()
    }

    pub fn get(&self, slot: usize) -> Option<&Entry> {
        self.heap.get(slot)
    }

    /// Raises a member's count to `count` if that is larger.
    pub fn raise(&mut self, slot: usize, count: f64) {
        if let Some(entry) = self.heap.get_mut(slot) {
            if count > entry.count {
                entry.count = count;
                self.sift_down(slot);
            }
        }
    }

    /// Adds `item`. When full, the minimum is evicted and returned.
    pub fn insert(&mut self, item: &[u8], hash: u64, count: f64) -> Option<Entry> {
        let entry = Entry {
            item: item.into(),
            hash,
            count,
        };
        if self.capacity == 0 {
            return None;
        }
        if self.is_full() {
            let evicted = self.replace_min(entry);
            return Some(evicted);
        }
        let slot = self.heap.len();
        self.heap.push(entry);
        self.index
            .insert_unique(hash, slot, |&s| self.heap.get(s).map_or(0, |e| e.hash));
        self.sift_up(slot);
        None
    }

    /// Removes and returns the minimum.
    pub fn pop_min(&mut self) -> Option<Entry> {
        let last = self.heap.len().checked_sub(1)?;
        self.swap(0, last);
        let min = self.heap.pop()?;
        self.unindex(min.hash, last);
        self.sift_down(0);
        Some(min)
    }

    /// Multiplies every count by `factor` (> 0, or 0): the order is unchanged.
    pub fn scale(&mut self, factor: f64) {
        for entry in &mut self.heap {
            entry.count *= factor;
        }
    }

    /// Members, highest count first; ties by item bytes, so the order is the
    /// same on every server.
    pub fn ranked(&self) -> Vec<&Entry> {
        let mut ranked: Vec<&Entry> = self.heap.iter().collect();
        ranked.sort_by(|a, b| {
            b.count
                .total_cmp(&a.count)
                .then_with(|| a.item.cmp(&b.item))
        });
        ranked
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
        let mut store = Self {
            capacity,
            heap: Vec::new(),
            index: HashTable::with_capacity(entries.len()),
        };
        for (slot, entry) in entries.iter().enumerate() {
            if slot > 0 && entries[(slot - 1) / 2].count > entry.count {
                return Err("members out of heap order");
            }
            if store.find_in(&entries, entry.hash, &entry.item).is_some() {
                return Err("an item is listed twice");
            }
            store
                .index
                .insert_unique(entry.hash, slot, |&s| entries.get(s).map_or(0, |e| e.hash));
        }
        store.heap = entries;
        Ok(store)
    }

    /// Heap bytes held, items included.
    pub fn heap_bytes(&self) -> usize {
        let items: usize = self.heap.iter().map(|e| e.item.len()).sum();
        self.heap.capacity() * std::mem::size_of::<Entry>() + self.index.allocation_size() + items
    }

    fn find_in(&self, entries: &[Entry], hash: u64, item: &[u8]) -> Option<usize> {
        self.index
            .find(hash, |&slot| {
                entries.get(slot).is_some_and(|e| *e.item == *item)
            })
            .copied()
    }

    fn replace_min(&mut self, entry: Entry) -> Entry {
        let hash = entry.hash;
        let evicted = std::mem::replace(&mut self.heap[0], entry); // panic-ok: called only when full and capacity > 0
        self.unindex(evicted.hash, 0);
        self.index
            .insert_unique(hash, 0, |&s| self.heap.get(s).map_or(0, |e| e.hash));
        self.sift_down(0);
        evicted
    }

    fn unindex(&mut self, hash: u64, slot: usize) {
        if let Ok(found) = self.index.find_entry(hash, |&s| s == slot) {
            found.remove();
        }
    }

    fn repoint(&mut self, hash: u64, from: usize, to: usize) {
        if let Some(slot) = self.index.find_mut(hash, |&s| s == from) {
            *slot = to;
        }
    }

    fn swap(&mut self, a: usize, b: usize) {
        if a == b {
            return;
        }
        let (hash_a, hash_b) = (self.heap[a].hash, self.heap[b].hash); // panic-ok: callers pass slots < len
                                                                       // Through a sentinel: two members may share a hash.
        self.repoint(hash_a, a, MOVING);
        self.repoint(hash_b, b, a);
        self.repoint(hash_a, MOVING, b);
        self.heap.swap(a, b);
    }

    fn sift_up(&mut self, mut slot: usize) {
        while slot > 0 {
            let parent = (slot - 1) / 2;
            if self.heap[parent].count <= self.heap[slot].count {
                // panic-ok: parent < slot < len
                break;
            }
            self.swap(parent, slot);
            slot = parent;
        }
    }

    fn sift_down(&mut self, mut slot: usize) {
        let len = self.heap.len();
        loop {
            let left = 2 * slot + 1;
            if left >= len {
                break;
            }
            let right = left + 1;
            let smaller = if right < len && self.heap[right].count < self.heap[left].count {
                // panic-ok: right < len
                right
            } else {
                left
            };
            if self.heap[slot].count <= self.heap[smaller].count {
                // panic-ok: slot < smaller < len
                break;
            }
            self.swap(slot, smaller);
            slot = smaller;
        }
    }

    /// Checks every invariant: heap order, index and heap agree. For tests.
    pub fn check_invariants(&self) -> Result<(), String> {
        if self.heap.len() > self.capacity {
            return Err("over capacity".into());
        }
        if self.index.len() != self.heap.len() {
            return Err(format!(
                "index {} vs heap {}",
                self.index.len(),
                self.heap.len()
            ));
        }
        for (slot, entry) in self.heap.iter().enumerate() {
            if slot > 0 && self.heap[(slot - 1) / 2].count > entry.count {
                return Err(format!("heap order broken at {slot}"));
            }
            if self.find(entry.hash, &entry.item) != Some(slot) {
                return Err(format!("index does not point at slot {slot}"));
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

    fn hash(item: &[u8]) -> u64 {
        ItemHash::of(item, 0).value()
    }

    #[test]
    fn keeps_the_largest_and_evicts_the_minimum() {
        let mut topk = TopK::with_capacity(2);
        assert!(topk.insert(b"a", hash(b"a"), 5.0).is_none());
        assert!(topk.insert(b"b", hash(b"b"), 3.0).is_none());
        let evicted = topk.insert(b"c", hash(b"c"), 4.0).expect("full");
        assert_eq!(&*evicted.item, b"b");
        let ranked: Vec<&[u8]> = topk.ranked().iter().map(|e| &*e.item).collect();
        assert_eq!(ranked, vec![&b"a"[..], &b"c"[..]]);
        assert!(topk.find(hash(b"b"), b"b").is_none());
        topk.check_invariants().unwrap();
    }

    #[test]
    fn members_sharing_a_hash_are_told_apart() {
        let mut topk = TopK::with_capacity(4);
        topk.insert(b"x", 1, 1.0);
        topk.insert(b"y", 1, 2.0);
        topk.insert(b"z", 1, 3.0);
        assert_eq!(topk.get(topk.find(1, b"y").unwrap()).unwrap().count, 2.0);
        let slot = topk.find(1, b"x").unwrap();
        topk.raise(slot, 10.0);
        topk.check_invariants().unwrap();
        assert_eq!(topk.pop_min().unwrap().item.as_ref(), b"y");
        topk.check_invariants().unwrap();
    }

    #[test]
    fn ties_rank_by_item_bytes() {
        let mut topk = TopK::with_capacity(3);
        for item in [&b"b"[..], b"c", b"a"] {
            topk.insert(item, hash(item), 7.0);
        }
        let ranked: Vec<&[u8]> = topk.ranked().iter().map(|e| &*e.item).collect();
        assert_eq!(ranked, vec![&b"a"[..], b"b", b"c"]);
    }

    #[test]
    fn rebuilding_rejects_broken_heaps_and_duplicates() {
        let entry = |item: &[u8], count| Entry {
            item: item.into(),
            hash: hash(item),
            count,
        };
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
        PopMin,
        Scale,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (any::<u8>(), any::<u16>()).prop_map(|(i, c)| Op::Insert(i, c)),
            (any::<u8>(), any::<u16>()).prop_map(|(i, c)| Op::Raise(i, c)),
            Just(Op::PopMin),
            Just(Op::Scale),
        ]
    }

    proptest! {
        #[test]
        fn invariants_hold_after_every_operation(
            capacity in 1usize..12,
            ops in proptest::collection::vec(op(), 1..300),
        ) {
            let mut topk = TopK::with_capacity(capacity);
            for op in ops {
                match op {
                    Op::Insert(i, c) => {
                        let item = [i % 32];
                        // Few distinct hashes, so colliding members are exercised.
                        let h = u64::from(i % 5);
                        if topk.find(h, &item).is_none() {
                            let min_before = topk.min().map(|e| e.count);
                            let full = topk.is_full();
                            let evicted = topk.insert(&item, h, f64::from(c));
                            prop_assert_eq!(evicted.is_some(), full);
                            if let Some(e) = evicted {
                                prop_assert_eq!(Some(e.count), min_before);
                            }
                        }
                    }
                    Op::Raise(i, c) => {
                        let item = [i % 32];
                        if let Some(slot) = topk.find(u64::from(i % 5), &item) {
                            let before = topk.get(slot).unwrap().count;
                            topk.raise(slot, f64::from(c));
                            let after = topk.find(u64::from(i % 5), &item).unwrap();
                            prop_assert_eq!(topk.get(after).unwrap().count, before.max(f64::from(c)));
                        }
                    }
                    Op::PopMin => {
                        let min = topk.heap.iter().map(|e| e.count).fold(f64::INFINITY, f64::min);
                        if let Some(e) = topk.pop_min() {
                            prop_assert_eq!(e.count, min);
                        }
                    }
                    Op::Scale => topk.scale(0.5),
                }
                prop_assert!(topk.check_invariants().is_ok(), "{:?}", topk.check_invariants());
            }
        }
    }
}
