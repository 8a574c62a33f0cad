//! The one 64-bit hash an item gets: its fingerprint and its bucket in every row.

use xxhash_rust::xxh3::xxh3_64_with_seed;

/// xxh3 of an item under the sketch's seed.
///
/// The high 32 bits are the fingerprint; the low 32 bits start a double-hashing
/// sequence (`h1 + row * h2`) so that one hash serves all rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ItemHash(u64);

impl ItemHash {
    pub fn of(item: &[u8], seed: u64) -> Self {
        Self(xxh3_64_with_seed(item, seed))
    }

    pub fn value(self) -> u64 {
        self.0
    }

    pub fn fingerprint(self) -> u32 {
        (self.0 >> 32) as u32
    }

    /// Bucket of this item in `row`, in `0..width`.
    pub fn column(self, row: usize, width: usize) -> usize {
        let h1 = self.0 as u32;
        // Odd, so that successive rows never repeat the same offset.
        let h2 = self.fingerprint() | 1;
        let mixed = h1.wrapping_add((row as u32).wrapping_mul(h2));
        // Lemire's multiply-shift range reduction: no division on the hot path.
        ((u64::from(mixed) * width as u64) >> 32) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_stay_in_range_and_depend_on_seed() {
        for width in [1usize, 2, 7, 1000, 1 << 20] {
            for i in 0..200u32 {
                let h = ItemHash::of(&i.to_le_bytes(), 42);
                for row in 0..8 {
                    assert!(h.column(row, width) < width);
                }
            }
        }
        assert_ne!(ItemHash::of(b"x", 1), ItemHash::of(b"x", 2));
    }

    #[test]
    fn rows_spread_an_item_over_different_columns() {
        let width = 4096;
        let mut same = 0;
        for i in 0..1000u32 {
            let h = ItemHash::of(&i.to_le_bytes(), 7);
            if h.column(0, width) == h.column(1, width) {
                same += 1;
            }
        }
        // Independent columns would coincide about 1000/4096 times.
        assert!(same < 10, "{same} items share their column in rows 0 and 1");
    }
}
