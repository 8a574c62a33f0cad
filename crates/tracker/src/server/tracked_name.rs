//! The name a key is tracked under: long keys are cut to a bounded,
//! still distinct name.

use std::borrow::Cow;

/// The longest key name the tracker keeps as it is. A longer one is counted
/// under its first bytes, a marker and a hash of the whole name, so that
/// neither the batches nor the tracker's top-k hold a client's megabyte
/// key, and two long keys that share a prefix stay apart.
pub const MAX_TRACKED_KEY_BYTES: usize = 1024;

/// What separates a long key's kept prefix from its hash.
const LONG_KEY_MARKER: &[u8] = b"...#";

/// The key itself, or for a key longer than [`MAX_TRACKED_KEY_BYTES`],
/// `prefix...#hash` of exactly that length.
pub fn tracked_name(key: &[u8]) -> Cow<'_, [u8]> {
    if key.len() <= MAX_TRACKED_KEY_BYTES {
        return Cow::Borrowed(key);
    }
    let hash = format!("{:016x}", xxhash_rust::xxh3::xxh3_64(key));
    let keep = MAX_TRACKED_KEY_BYTES - LONG_KEY_MARKER.len() - hash.len();
    let mut name = Vec::with_capacity(MAX_TRACKED_KEY_BYTES);
    name.extend_from_slice(key.get(..keep).unwrap_or(key));
    name.extend_from_slice(LONG_KEY_MARKER);
    name.extend_from_slice(hash.as_bytes());
    Cow::Owned(name)
}

/// The part of a tracked name that is the key's own bytes: all of it, but
/// for a long key's name, whose marker and hash are no part of the key (a
/// key prefix cut from them would match no key).
pub fn own_bytes(name: &[u8]) -> &[u8] {
    let keep = MAX_TRACKED_KEY_BYTES - LONG_KEY_MARKER.len() - 16;
    let shortened = name.len() == MAX_TRACKED_KEY_BYTES
        && name.get(keep..keep + LONG_KEY_MARKER.len()) == Some(LONG_KEY_MARKER)
        && name
            .get(keep + LONG_KEY_MARKER.len()..)
            .is_some_and(|hash| hash.iter().all(u8::is_ascii_hexdigit));
    if shortened {
        name.get(..keep).unwrap_or(name)
    } else {
        name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_keys_are_tracked_under_a_bounded_distinct_name() {
        let short = vec![b'k'; MAX_TRACKED_KEY_BYTES];
        assert_eq!(&*tracked_name(&short), short.as_slice());
        let mut a = vec![b'x'; 1 << 20];
        let b = a.clone();
        a[(1 << 20) - 1] = b'y';
        let (na, nb) = (tracked_name(&a), tracked_name(&b));
        assert_eq!(na.len(), MAX_TRACKED_KEY_BYTES);
        assert_ne!(na, nb, "two long keys with one prefix stay apart");
        assert!(na.starts_with(&a[..512]));
        assert_eq!(own_bytes(&na), &a[..1004]);
        assert_eq!(own_bytes(&short), short.as_slice());
        assert_eq!(own_bytes(b"tenant:1:x"), b"tenant:1:x");
    }
}
