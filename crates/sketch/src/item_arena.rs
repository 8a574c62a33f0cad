//! The member items' bytes, back to back in one allocation: no allocation per
//! admission, no allocator rounding per item, one place to account for.
//! An evicted item leaves a hole; holes are squeezed out once they pass a
//! quarter of the live bytes (each compaction copies the live bytes, so that
//! is at most four bytes copied per byte evicted), and the arena grows by a
//! quarter at a time: it holds at most about 1.5 times the live bytes.

use crate::out_of_memory::{try_copy, OutOfMemory};

/// Where one item's bytes sit in the arena.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ItemRef {
    start: u32,
    len: u32,
}

impl ItemRef {
    pub fn len(self) -> usize {
        self.len as usize
    }

    pub fn is_empty(self) -> bool {
        self.len == 0
    }
}

#[derive(Clone, Debug, Default)]
pub struct ItemArena {
    bytes: Vec<u8>,
    /// Bytes of items no longer referenced.
    dead: usize,
}

/// Offsets are 32 bits: members' items may hold up to 4 GiB in all.
const MAX_BYTES: usize = u32::MAX as usize;

impl ItemArena {
    pub fn get(&self, item: ItemRef) -> &[u8] {
        let start = item.start as usize;
        self.bytes
            .get(start..start + item.len())
            .unwrap_or_default()
    }

    /// Bytes held, free room included.
    pub fn heap_bytes(&self) -> usize {
        self.bytes.capacity()
    }

    /// Live bytes.
    pub fn live(&self) -> usize {
        self.bytes.len() - self.dead
    }

    /// Marks an item's bytes as a hole.
    pub fn release(&mut self, item: ItemRef) {
        self.dead += item.len();
    }

    /// Would `extra` more bytes fit without compaction?
    pub fn must_compact_for(&self, extra: usize) -> bool {
        let overflow = self.bytes.len() + extra > MAX_BYTES;
        let wasteful = self.dead > self.live() / 4 && self.dead >= 64;
        overflow || wasteful
    }

    /// Can `extra` more bytes fit at all (after a compaction if need be)?
    pub fn has_room_for(&self, extra: usize) -> bool {
        self.live() + extra <= MAX_BYTES
    }

    /// Room for `extra` more bytes, or an error: for a caller that must not
    /// abort (a merge builds its top-k before it replaces anything).
    pub fn try_reserve(&mut self, extra: usize) -> Result<(), OutOfMemory> {
        self.bytes.try_reserve_exact(extra)?;
        Ok(())
    }

    /// A copy, or an error where `clone` would abort.
    pub fn try_clone(&self) -> Result<Self, OutOfMemory> {
        Ok(Self {
            bytes: try_copy(&self.bytes)?,
            dead: self.dead,
        })
    }

    /// Appends `item`; the caller checked [`Self::has_room_for`] and
    /// compacted if [`Self::must_compact_for`] said so.
    pub fn push(&mut self, item: &[u8]) -> ItemRef {
        let start = self.bytes.len();
        if self.bytes.capacity() - start < item.len() {
            // Grow by a quarter, not double: the arena is most of a large
            // top-k's memory, and growth is rare once the top-k is full.
            let room = item.len().max(self.bytes.len() / 4).max(64);
            self.bytes.reserve_exact(room);
        }
        self.bytes.extend_from_slice(item);
        ItemRef {
            start: start as u32,
            len: item.len() as u32,
        }
    }

    /// Rewrites the arena with only the live items, updating their refs.
    pub fn compact<'a>(&mut self, live: impl Iterator<Item = &'a mut ItemRef>) {
        let mut packed = Vec::with_capacity(self.live() + self.live() / 4);
        for item in live {
            let start = packed.len();
            packed.extend_from_slice(self.get(*item));
            *item = ItemRef {
                start: start as u32,
                len: item.len,
            };
        }
        self.bytes = packed;
        self.dead = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_survive_compaction_and_holes_are_reclaimed() {
        let mut arena = ItemArena::default();
        let mut refs: Vec<ItemRef> = (0..1000)
            .map(|i| arena.push(format!("item-{i}").as_bytes()))
            .collect();
        for r in refs.drain(..600) {
            arena.release(r);
        }
        assert!(arena.must_compact_for(0));
        arena.compact(refs.iter_mut());
        assert!(!arena.must_compact_for(0));
        for (i, r) in refs.iter().enumerate() {
            assert_eq!(arena.get(*r), format!("item-{}", i + 600).as_bytes());
        }
        assert_eq!(arena.live(), refs.iter().map(|r| r.len()).sum::<usize>());
    }

    #[test]
    fn empty_items_and_out_of_range_refs_read_as_empty() {
        let mut arena = ItemArena::default();
        let empty = arena.push(b"");
        assert_eq!(arena.get(empty), b"");
        let bogus = ItemRef { start: 10, len: 5 };
        assert_eq!(arena.get(bogus), b"");
    }
}
