//! The `width * depth` buckets of a sketch, in as few bytes as their counts
//! allow.
//!
//! A sketch without fading counts whole arrivals, and almost every bucket
//! stays far below 2^31: it keeps a 32-bit fingerprint and a 32-bit count,
//! 8 bytes a bucket. A count that does not fit (2^31 arrivals or more, up to
//! the 2^53 every count stops at) moves, exact, to a side table of `f64`s
//! that the bucket's word then points into. Nothing is rounded: every value
//! reads back exactly as it was written, so counts stay lower bounds, the
//! encoding is unchanged and replicas stay byte-identical.
//!
//! A fading sketch stores forward-decay masses, which are not integers: its
//! buckets keep the whole `f64` (12 bytes). A 32-bit float would lose
//! arrivals for good once a count passes 2^24 (each one rounds away) or
//! round up, above the truth.

use crate::bucket::Bucket;
use crate::out_of_memory::{try_copy, OutOfMemory};

/// A word at or above this points into the side table.
const WIDE: u32 = 1 << 31;

/// The sketch's buckets, in the layout its counts need.
#[derive(Clone, Debug)]
pub(crate) enum BucketArray {
    /// Whole counts (no fading): 8 bytes a bucket.
    Counting(CountingCells),
    /// Forward-decay masses: 12 bytes a bucket.
    Fading(Vec<Bucket>),
}

/// One bucket of a counting sketch: its count, or where its count lives.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub(crate) struct CountingCell {
    fingerprint: u32,
    word: u32,
}

#[derive(Clone, Debug, Default)]
pub(crate) struct CountingCells {
    cells: Vec<CountingCell>,
    /// Counts too large for a word, pointed at by `word - WIDE`.
    wide: Vec<f64>,
    /// Entries of `wide` no bucket points at any more.
    free: Vec<u32>,
}

impl BucketArray {
    /// Bytes one bucket takes in a sketch with (or without) fading.
    pub(crate) const fn bucket_bytes(fading: bool) -> usize {
        if fading {
            Bucket::BYTES
        } else {
            std::mem::size_of::<CountingCell>()
        }
    }

    /// `cells` empty buckets; an allocation the allocator refuses is an error.
    pub(crate) fn try_new(cells: usize, fading: bool) -> Result<Self, OutOfMemory> {
        let mut array = Self::try_with_capacity(cells, fading)?;
        match &mut array {
            Self::Counting(c) => c.cells.resize(cells, CountingCell::default()),
            Self::Fading(b) => b.resize(cells, Bucket::default()),
        }
        Ok(array)
    }

    /// No buckets yet, room for `cells` of them (for [`Self::push`]).
    pub(crate) fn try_with_capacity(cells: usize, fading: bool) -> Result<Self, OutOfMemory> {
        Ok(if fading {
            let mut buckets = Vec::new();
            buckets.try_reserve_exact(cells)?;
            Self::Fading(buckets)
        } else {
            let mut counting = CountingCells::default();
            counting.cells.try_reserve_exact(cells)?;
            Self::Counting(counting)
        })
    }

    /// A copy, or an error where `clone` would abort.
    pub(crate) fn try_clone(&self) -> Result<Self, OutOfMemory> {
        Ok(match self {
            Self::Counting(c) => Self::Counting(CountingCells {
                cells: try_copy(&c.cells)?,
                wide: try_copy(&c.wide)?,
                free: try_copy(&c.free)?,
            }),
            Self::Fading(b) => Self::Fading(try_copy(b)?),
        })
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        match self {
            Self::Counting(c) => c.cells.len(),
            Self::Fading(b) => b.len(),
        }
    }

    #[inline]
    pub(crate) fn get(&self, index: usize) -> Option<Bucket> {
        match self {
            Self::Counting(c) => c.cell(index),
            Self::Fading(b) => b.cell(index),
        }
    }

    /// Stores `bucket` at `index` (out of range: nothing happens).
    #[inline]
    pub(crate) fn set(&mut self, index: usize, bucket: Bucket) {
        match self {
            Self::Counting(c) => c.put(index, bucket),
            Self::Fading(b) => b.put(index, bucket),
        }
    }

    /// Appends a bucket (decoding; within the capacity reserved).
    pub(crate) fn push(&mut self, bucket: Bucket) {
        match self {
            Self::Counting(c) => {
                c.cells.push(CountingCell::default());
                c.put(c.cells.len() - 1, bucket);
            }
            Self::Fading(b) => b.push(bucket),
        }
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = Bucket> + '_ {
        (0..self.len()).filter_map(|i| self.get(i))
    }

    /// Applies `f` to every count.
    pub(crate) fn map_counts(&mut self, mut f: impl FnMut(usize, f64) -> f64) {
        for i in 0..self.len() {
            if let Some(mut bucket) = self.get(i) {
                let count = f(i, bucket.count);
                if count.to_bits() != bucket.count.to_bits() {
                    bucket.count = count;
                    self.set(i, bucket);
                }
            }
        }
    }

    /// Asks the CPU to start loading the bucket at `index` (a hint: nothing
    /// changes, nothing waits for it).
    #[inline]
    pub(crate) fn prefetch(&self, index: usize) {
        let address = match self {
            Self::Counting(c) => c
                .cells
                .get(index)
                .map(|c| c as *const CountingCell as *const i8),
            Self::Fading(b) => b.get(index).map(|b| b as *const Bucket as *const i8),
        };
        #[cfg(target_arch = "x86_64")]
        if let Some(address) = address {
            // SAFETY: a prefetch never faults and has no effect on the
            // program's state; the address is inside the array besides.
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(address)
            };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = address;
    }

    /// Bytes of the buckets themselves (without wide counts).
    #[inline]
    pub(crate) fn bytes(&self) -> usize {
        self.len() * Self::bucket_bytes(matches!(self, Self::Fading(_)))
    }

    /// Bytes held on the heap.
    pub(crate) fn heap_bytes(&self) -> usize {
        match self {
            Self::Counting(c) => {
                c.cells.capacity() * std::mem::size_of::<CountingCell>()
                    + c.wide.capacity() * std::mem::size_of::<f64>()
                    + c.free.capacity() * std::mem::size_of::<u32>()
            }
            Self::Fading(b) => b.capacity() * Bucket::BYTES,
        }
    }
}

/// Read and write access to buckets of one layout.
pub(crate) trait Cells {
    fn cell(&self, index: usize) -> Option<Bucket>;
    /// Stores `bucket` at `index` (out of range: nothing happens).
    fn put(&mut self, index: usize, bucket: Bucket);
}

impl Cells for Vec<Bucket> {
    #[inline]
    fn cell(&self, index: usize) -> Option<Bucket> {
        self.get(index).copied()
    }

    #[inline]
    fn put(&mut self, index: usize, bucket: Bucket) {
        if let Some(slot) = self.get_mut(index) {
            *slot = bucket;
        }
    }
}

impl Cells for CountingCells {
    #[inline]
    fn cell(&self, index: usize) -> Option<Bucket> {
        let cell = self.cells.get(index)?;
        let count = if cell.word < WIDE {
            f64::from(cell.word)
        } else {
            self.wide.get((cell.word - WIDE) as usize).copied()?
        };
        Some(Bucket {
            fingerprint: cell.fingerprint,
            count,
        })
    }

    #[inline]
    fn put(&mut self, index: usize, bucket: Bucket) {
        let Some(cell) = self.cells.get_mut(index) else {
            return;
        };
        let old = cell.word;
        let count = bucket.count;
        // Saturating cast: only a whole count below WIDE reads back the same
        // bits (-0.0 does not: it goes to the side table like any other).
        let word = count as u32;
        if word < WIDE && f64::from(word).to_bits() == count.to_bits() {
            *cell = CountingCell {
                fingerprint: bucket.fingerprint,
                word,
            };
            if old >= WIDE && self.free.try_reserve(1).is_ok() {
                // (Without room to remember it, the entry merely stays unused.)
                self.free.push(old - WIDE);
            }
            return;
        }
        self.set_wide(index, old, bucket);
    }
}

impl CountingCells {
    /// The fingerprint and whole count of the bucket at `index`, if its count
    /// lives in its word (below 2^31): what one unit arrival reads.
    #[inline]
    pub(crate) fn narrow(&self, index: usize) -> Option<(u32, u32)> {
        self.cells
            .get(index)
            .filter(|cell| cell.word < WIDE)
            .map(|cell| (cell.fingerprint, cell.word))
    }

    /// Stores a whole count below 2^31 over a bucket whose count lives in
    /// its word ([`Self::narrow`] said so): no side table to mind.
    #[inline]
    pub(crate) fn put_narrow(&mut self, index: usize, fingerprint: u32, count: u32) {
        match self.cells.get_mut(index) {
            Some(cell) if cell.word < WIDE && count < WIDE => {
                *cell = CountingCell {
                    fingerprint,
                    word: count,
                }
            }
            _ => self.put(
                index,
                Bucket {
                    fingerprint,
                    count: f64::from(count),
                },
            ),
        }
    }

    /// A count a word cannot hold: into the side table, reusing the
    /// bucket's own entry or a freed one.
    #[cold]
    fn set_wide(&mut self, index: usize, old: u32, bucket: Bucket) {
        let entry = if old >= WIDE {
            Some(old - WIDE)
        } else if let Some(entry) = self.free.pop() {
            Some(entry)
        } else if self.wide.len() < (u32::MAX - WIDE) as usize && self.wide.try_reserve(1).is_ok() {
            self.wide.push(0.0);
            Some((self.wide.len() - 1) as u32)
        } else {
            None
        };
        let Some(cell) = self.cells.get_mut(index) else {
            return;
        };
        match entry.and_then(|e| self.wide.get_mut(e as usize).map(|slot| (e, slot))) {
            Some((entry, slot)) => {
                *slot = bucket.count;
                *cell = CountingCell {
                    fingerprint: bucket.fingerprint,
                    word: WIDE + entry,
                };
            }
            // No memory for the entry: the count rounded down to what a
            // word holds is still a lower bound.
            None => {
                *cell = CountingCell {
                    fingerprint: bucket.fingerprint,
                    word: (bucket.count as u32).min(WIDE - 1),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bucket(fingerprint: u32, count: f64) -> Bucket {
        Bucket { fingerprint, count }
    }

    #[test]
    fn every_count_reads_back_exactly() {
        let mut array = BucketArray::try_new(4, false).unwrap();
        let counts = [
            0.0,
            1.0,
            f64::from(WIDE - 1),
            f64::from(WIDE),
            4_294_967_296.0,
            crate::MAX_COUNT,
            crate::MAX_COUNT - 1.0,
            0.5,
            -1.0,
            -0.0,
            1e300,
        ];
        for (n, &count) in counts.iter().enumerate() {
            let i = n % 4;
            array.set(i, bucket(n as u32, count));
            let got = array.get(i).unwrap();
            let (fingerprint, bits) = (got.fingerprint, got.count.to_bits());
            assert_eq!((fingerprint, bits), (n as u32, count.to_bits()), "{count}");
        }
    }

    #[test]
    fn a_wide_entry_is_reused_when_its_count_shrinks_or_moves() {
        let mut array = BucketArray::try_new(3, false).unwrap();
        let big = 3e9;
        array.set(0, bucket(1, big));
        array.set(0, bucket(1, big + 1.0)); // same entry
        array.set(1, bucket(2, big));
        array.set(0, bucket(3, 5.0)); // entry 0 freed
        array.set(2, bucket(4, big * 2.0)); // takes it again
        let BucketArray::Counting(c) = &array else {
            panic!("a sketch without fading counts")
        };
        assert_eq!(c.wide.len(), 2);
        assert_eq!(array.get(0), Some(bucket(3, 5.0)));
        assert_eq!(array.get(1), Some(bucket(2, big)));
        assert_eq!(array.get(2), Some(bucket(4, big * 2.0)));
        // A copy reads the same, side table included.
        let copy = array.try_clone().unwrap();
        assert!(copy.iter().eq(array.iter()));
    }

    #[test]
    fn fading_buckets_keep_fractional_masses() {
        let mut array = BucketArray::try_new(2, true).unwrap();
        array.set(1, bucket(9, 1234.5678));
        assert_eq!(array.get(1), Some(bucket(9, 1234.5678)));
        assert_eq!(array.heap_bytes(), 24);
    }

    #[test]
    fn out_of_range_is_nothing() {
        let mut array = BucketArray::try_new(2, false).unwrap();
        array.set(7, bucket(1, 1.0));
        assert_eq!(array.get(7), None);
        assert_eq!(array.iter().count(), 2);
    }

    fn any_count() -> impl proptest::strategy::Strategy<Value = f64> {
        use proptest::prelude::*;
        prop_oneof![
            (0u32..1000).prop_map(f64::from),
            ((WIDE - 3)..=(WIDE + 3)).prop_map(f64::from),
            (0u64..(1 << 53)).prop_map(|c| c as f64),
            (0.0f64..1e6),
            Just(-0.0),
        ]
    }

    proptest::proptest! {
        /// Whatever is written, in whatever order, reads back bit for bit as
        /// a plain array of buckets would, and the side table never holds
        /// more entries than there are buckets.
        #[test]
        fn a_counting_array_behaves_as_a_plain_one(
            writes in proptest::collection::vec((0usize..8, proptest::prelude::any::<u32>(), any_count()), 0..200)
        ) {
            let mut array = BucketArray::try_new(8, false).unwrap();
            let mut plain = [Bucket::default(); 8];
            for (i, fingerprint, count) in writes {
                array.set(i, bucket(fingerprint, count));
                plain[i] = bucket(fingerprint, count);
                for (j, want) in plain.iter().enumerate() {
                    let got = array.get(j).unwrap();
                    let (gf, gc, wf, wc) = (got.fingerprint, got.count, want.fingerprint, want.count);
                    proptest::prop_assert_eq!((gf, gc.to_bits()), (wf, wc.to_bits()));
                }
                let BucketArray::Counting(c) = &array else {
                    panic!("a sketch without fading counts")
                };
                proptest::prop_assert!(c.wide.len() <= 8);
            }
        }
    }
}
