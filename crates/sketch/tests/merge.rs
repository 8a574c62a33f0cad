//! Merging shards of one stream gives (nearly) the sketch of the whole.

use heavykeeper_sketch::zipf::{exact_counts, precision_at_k, zipf_stream};
use heavykeeper_sketch::{encode, HeavyKeeper, ItemHash, MergeError, Params};
use std::collections::HashMap;

fn params(k: u32) -> Params {
    Params::for_k(k, 21)
}

/// The stream dealt round-robin to `shards` sketches, merged into the first.
fn merged_shards(stream: &[Vec<u8>], shards: usize, k: u32) -> HeavyKeeper {
    let mut sketches: Vec<HeavyKeeper> = (0..shards)
        .map(|_| HeavyKeeper::new(params(k), 0))
        .collect();
    for (i, item) in stream.iter().enumerate() {
        sketches[i % shards].add(item, 1, 0);
    }
    let mut merged = sketches.remove(0);
    for shard in &sketches {
        merged.merge(shard).unwrap();
    }
    merged.check_invariants().unwrap();
    merged
}

#[test]
fn merged_shards_find_the_top_k_of_the_whole_stream() {
    let stream = zipf_stream(1.0, 100_000, 1_000_000, 8);
    let exact = exact_counts(&stream);
    for shards in [2, 4] {
        let merged = merged_shards(&stream, shards, 100);
        let listed: Vec<&[u8]> = merged.ranked(0).iter().map(|r| r.item).collect();
        let precision = precision_at_k(&listed, &exact, 100);
        assert!(precision >= 0.97, "{shards} shards: precision {precision}");
        assert_eq!(merged.arrivals(), 1_000_000);
    }
}

#[test]
fn merged_counts_stay_lower_bounds() {
    let stream = zipf_stream(0.9, 5_000, 100_000, 3);
    let exact = exact_counts(&stream);
    let merged = merged_shards(&stream, 3, 50);
    let mut fingerprints: HashMap<u32, usize> = HashMap::new();
    for item in exact.keys() {
        *fingerprints
            .entry(ItemHash::of(item, 21).fingerprint())
            .or_default() += 1;
    }
    for r in merged.ranked(0) {
        if fingerprints[&ItemHash::of(r.item, 21).fingerprint()] == 1 {
            assert!(r.count <= exact[r.item] as f64, "{:?}", r.item);
        }
    }
}

#[test]
fn merging_is_commutative() {
    let stream = zipf_stream(1.0, 2_000, 40_000, 5);
    let (mut a, mut b) = (
        HeavyKeeper::new(params(20), 0),
        HeavyKeeper::new(params(20), 0),
    );
    for (i, item) in stream.iter().enumerate() {
        if i % 3 == 0 {
            a.add(item, 1, 0)
        } else {
            b.add(item, 1, 0)
        };
    }
    let mut ab = a.clone();
    ab.merge(&b).unwrap();
    let mut ba = b.clone();
    ba.merge(&a).unwrap();
    assert_eq!(ab.ranked(0), ba.ranked(0));
}

#[test]
fn different_shapes_are_refused_and_nothing_changes() {
    let mut a = HeavyKeeper::new(params(10), 0);
    a.add(b"x", 5, 0);
    let before = encode(&a);
    let others = [
        Params {
            width: 999,
            ..params(10)
        },
        Params {
            seed: 22,
            ..params(10)
        },
        Params {
            decay: 0.8,
            ..params(10)
        },
        Params {
            half_life_ms: Some(1000.0),
            ..params(10)
        },
    ];
    for p in others {
        let other = HeavyKeeper::new(p, 0);
        assert!(matches!(a.merge(&other), Err(MergeError(_))), "{p:?}");
        assert_eq!(encode(&a), before);
    }
    // A different k is fine: the destination keeps its own.
    let mut b = HeavyKeeper::new(params(3), 0);
    b.add(b"y", 7, 0);
    a.merge(&b).unwrap();
    assert_eq!(a.count(b"y", 0), 7.0);
}

#[test]
fn fading_sketches_merge_across_landmarks() {
    let start = 1_700_000_000_000;
    let day = 86_400_000;
    let p = Params {
        half_life_ms: Some(60_000.0),
        ..params(10)
    };
    // `early` last moved its landmark ten half-lives before the end of the
    // day; `late` was created at the end of it: their landmarks differ.
    let mut early = HeavyKeeper::new(p, start);
    early.add(b"mid", 1024, start + day - 600_000);
    let mut late = HeavyKeeper::new(p, start + day);
    late.add(b"new", 32, start + day);
    for (dest, src) in [(early.clone(), late.clone()), (late.clone(), early.clone())] {
        let mut merged = dest;
        merged.merge(&src).unwrap();
        let end = start + day;
        assert!(
            (merged.count(b"mid", end) - 1.0).abs() < 1e-9,
            "{}",
            merged.count(b"mid", end)
        );
        assert!((merged.count(b"new", end) - 32.0).abs() < 1e-9);
        merged.check_invariants().unwrap();
    }
}
