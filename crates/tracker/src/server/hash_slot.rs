//! A key's cluster hash slot, as Redis computes it: CRC-16 (XMODEM) of the
//! key, or of its hash tag (the part between the first `{` and the next
//! `}`, when not empty), modulo 16384.

use crc::{Crc, Table, CRC_16_XMODEM};

/// A `static`, not a `const`: a `const` table would be built into every
/// caller's stack frame at every call (512 bytes copied per key). Sixteen
/// lanes: a key is a few dozen bytes, read sixteen at a time.
static CRC16: Crc<u16, Table<16>> = Crc::<u16, Table<16>>::new(&CRC_16_XMODEM);

/// The number of slots of a cluster.
pub const SLOTS: usize = 16_384;

pub fn hash_slot(key: &[u8]) -> u16 {
    CRC16.checksum(hash_tag(key).unwrap_or(key)) % 16384
}

/// The part of the key that decides its slot, if it has a hash tag.
pub fn hash_tag(key: &[u8]) -> Option<&[u8]> {
    let open = key.iter().position(|&b| b == b'{')?;
    let rest = key.get(open + 1..)?;
    let close = rest.iter().position(|&b| b == b'}')?;
    (close > 0).then(|| rest.get(..close)).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_match_the_redis_cluster_specification() {
        // Values from the Redis cluster specification and `CLUSTER KEYSLOT`.
        // CRC-16/XMODEM check value of "123456789" (0x31C3, below 16384).
        assert_eq!(hash_slot(b"123456789"), 0x31c3);
        assert_eq!(hash_slot(b"foo"), 12182);
        assert_eq!(hash_slot(b"{user1000}.following"), hash_slot(b"user1000"));
        assert_eq!(
            hash_tag(b"foo{}{bar}"),
            None,
            "an empty first tag: the whole key"
        );
        assert_eq!(hash_tag(b"foo{{bar}}zap"), Some(&b"{bar"[..]));
        assert_eq!(hash_tag(b"no tag"), None);
        // An empty tag `{}` is no tag: the whole key is hashed. Expected
        // values from another CRC-16/XMODEM (Python's binascii.crc_hqx).
        assert_eq!(hash_slot(b"foo{}{bar}"), 8363);
        assert_ne!(hash_slot(b"foo{}{bar}"), hash_slot(b"bar"));
        // The tag ends at the first `}` after the first `{`: "{bar".
        assert_eq!(hash_slot(b"foo{{bar}}zap"), 4015);
        assert_eq!(hash_slot(b"{bar"), 4015);
        // Binary keys: NUL bytes are ordinary bytes.
        assert_eq!(hash_slot(b"a\x00{\x00}b"), hash_slot(b"\x00"));
        assert_eq!(hash_slot(b"\x00"), 0);
    }
}
