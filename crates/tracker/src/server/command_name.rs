//! Command names packed for lookup: a name of at most 7 bytes (nearly
//! every command) as one word, lowercased in place, so that finding a
//! command costs one integer hash, no copy and no byte comparison.

/// A name of at most 7 bytes as sent, with its length in the top byte, as
/// one word (so that no two names share one, NUL bytes and all); `None` for
/// a longer name.
#[inline(always)]
pub fn as_sent(name: &[u8]) -> Option<u64> {
    if name.is_empty() || name.len() > 7 {
        return None;
    }
    Some(little_endian(name) | (name.len() as u64) << 56)
}

/// A word of [`as_sent`], its letters lowercased; `None` for a name with a
/// byte outside ASCII.
#[inline]
pub fn lowercased(word: u64) -> Option<u64> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    let bytes = word & 0x00ff_ffff_ffff_ffff;
    if bytes & (0x80 * ONES) != 0 {
        return None;
    }
    // SWAR: the high bit of each byte says whether it lies in 'A'..='Z'
    // (bytes below 0x80: no carry crosses a byte), then 0x20 is added to those.
    let upper = (bytes + (0x80 - b'A' as u64) * ONES) & !(bytes + (0x80 - b'Z' as u64 - 1) * ONES);
    let lower = bytes | ((upper & (0x80 * ONES)) >> 2);
    Some(lower | (word & !0x00ff_ffff_ffff_ffff))
}

/// A name of at most 7 bytes, lowercased, with its length in the top byte
/// (the table's key); `None` for a longer name or one outside ASCII.
#[inline]
pub fn packed(name: &[u8]) -> Option<u64> {
    lowercased(as_sent(name)?)
}

/// One to seven bytes as a little-endian word (zeros above), read as two
/// overlapping loads rather than a copy of variable length: the bytes both
/// loads see land in the same place, so OR-ing them is exact.
#[inline(always)]
pub fn little_endian(bytes: &[u8]) -> u64 {
    let n = bytes.len();
    let u32_at = |at: usize| {
        bytes
            .get(at..at + 4)
            .and_then(|b| <[u8; 4]>::try_from(b).ok())
            .map_or(0, |b| u64::from(u32::from_le_bytes(b)))
    };
    let u16_at = |at: usize| {
        bytes
            .get(at..at + 2)
            .and_then(|b| <[u8; 2]>::try_from(b).ok())
            .map_or(0, |b| u64::from(u16::from_le_bytes(b)))
    };
    match n {
        4..=7 => u32_at(0) | u32_at(n - 4) << (8 * (n - 4)),
        2..=3 => u16_at(0) | u16_at(n - 2) << (8 * (n - 2)),
        1 => bytes.first().map_or(0, |&b| u64::from(b)),
        _ => 0,
    }
}

/// `parts` joined and lowercased in `buffer`; `None` if too long to be a
/// command name.
pub fn lowercase_into<'b>(buffer: &'b mut [u8; 64], parts: &[&[u8]]) -> Option<&'b [u8]> {
    let mut len = 0;
    for part in parts {
        let end = len + part.len();
        let target = buffer.get_mut(len..end)?;
        target.copy_from_slice(part);
        target.make_ascii_lowercase();
        len = end;
    }
    buffer.get(..len)
}

#[cfg(test)]
mod tests {
    use super::{little_endian, packed};

    #[test]
    fn short_names_pack_lowercase_and_apart() {
        assert_eq!(packed(b"GET"), packed(b"get"));
        assert_eq!(packed(b"GeT"), packed(b"gEt"));
        assert_ne!(packed(b"get"), packed(b"get\x00"));
        assert_ne!(packed(b"get"), packed(b"gets"));
        // Only letters change case: '@' and '[' sit just outside 'A'..='Z'.
        assert_ne!(packed(b"@"), packed(b"`"));
        assert_ne!(packed(b"["), packed(b"{"));
        assert_eq!(packed(b"ZSCAN"), packed(b"zscan"));
        assert_eq!(packed(b"x_1-z.Y"), packed(b"X_1-Z.y"));
        for long_or_foreign in [&b""[..], b"getrange", b"g\xc3\xa9t"] {
            assert_eq!(packed(long_or_foreign), None);
        }
    }

    #[test]
    fn overlapping_loads_read_every_byte_once_in_place() {
        let bytes = [0x11u8, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77];
        for n in 0..=7 {
            let mut expected = [0u8; 8];
            expected[..n].copy_from_slice(&bytes[..n]);
            assert_eq!(
                little_endian(&bytes[..n]),
                u64::from_le_bytes(expected),
                "{n}"
            );
        }
    }
}
