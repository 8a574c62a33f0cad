//! A key's cluster hash slot, as the cluster computes it: CRC-16 (XMODEM)
//! of the key, or of its hash tag (the bytes between the first `{` and the
//! first `}` after it, when there are any), modulo 16384.

const SLOTS: u16 = 16384;
const CRC16: crc::Crc<u16> = crc::Crc::<u16>::new(&crc::CRC_16_XMODEM);

pub fn key_slot(key: &[u8]) -> u16 {
    CRC16.checksum(hash_tag(key).unwrap_or(key)) % SLOTS
}

/// The part of the key that decides its slot, if it has a hash tag.
pub fn hash_tag(key: &[u8]) -> Option<&[u8]> {
    let open = key.iter().position(|&b| b == b'{')?;
    let after = &key[open + 1..];
    let close = after.iter().position(|&b| b == b'}')?;
    (close > 0).then(|| &after[..close])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_and_hash_tags_as_the_cluster_has_them() {
        // Figures from the cluster specification and CLUSTER KEYSLOT.
        assert_eq!(key_slot(b"123456789"), 0x31c3 % SLOTS);
        assert_eq!(key_slot(b"foo"), 12182);
        assert_eq!(key_slot(b"{user1000}.following"), key_slot(b"user1000"));
        assert_eq!(
            hash_tag(b"foo{}{bar}"),
            None,
            "an empty first tag: the whole key"
        );
        assert_eq!(hash_tag(b"foo{{bar}}zap"), Some(&b"{bar"[..]));
        assert_eq!(hash_tag(b"no tag"), None);
    }
}
