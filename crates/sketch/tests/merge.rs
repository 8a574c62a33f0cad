//! Merging shards of one stream gives (nearly) the sketch of the whole.

// A test: a panic is how it fails (clippy.toml allows these in test
// functions; this file's helpers are test code too).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use heavykeeper_sketch::{
    encode, HeavyKeeper, ItemHash, MergeError, Params, RowLayout, Ties, MAX_COUNT,
};
use proptest::prelude::*;
use std::collections::HashMap;
use test_streams::{exact_counts, precision_at_k, zipf_stream};

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
    let mut a = HeavyKeeper::new(params(20), 0);
    let mut b = HeavyKeeper::new(params(20), 0);
    for (i, item) in stream.iter().enumerate() {
        [&mut a, &mut b][usize::from(i % 3 != 0)].add(item, 1, 0);
    }
    let mut ab = a.try_clone().unwrap();
    ab.merge(&b).unwrap();
    let mut ba = b.try_clone().unwrap();
    ba.merge(&a).unwrap();
    assert_eq!(ab.ranked(0), ba.ranked(0));
}

#[test]
fn different_shapes_are_refused_and_nothing_changes() {
    let mut a = HeavyKeeper::new(params(10), 0);
    a.add(b"x", 5, 0);
    let before = encode(&a);
    let changed = |change: fn(&mut Params)| {
        let mut p = params(10);
        change(&mut p);
        p
    };
    for p in [
        changed(|p| p.width = 999),
        changed(|p| p.seed = 22),
        changed(|p| p.decay = 0.8),
        changed(|p| p.half_life_ms = Some(1000.0)),
    ] {
        let other = HeavyKeeper::new(p, 0);
        assert!(
            matches!(a.merge(&other), Err(MergeError::Mismatch(_))),
            "{p:?}"
        );
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
    for (dest, src) in [
        (early.try_clone().unwrap(), late.try_clone().unwrap()),
        (late.try_clone().unwrap(), early.try_clone().unwrap()),
    ] {
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

fn round_trips(hk: &HeavyKeeper) -> bool {
    heavykeeper_sketch::decode(&encode(hk), u64::MAX).is_ok_and(|back| encode(&back) == encode(hk))
}

#[test]
fn repeated_self_merges_and_cycles_saturate_and_still_load() {
    let mut a = HeavyKeeper::new(params(5), 0);
    let mut b = HeavyKeeper::new(params(5), 0);
    for item in zipf_stream(1.0, 50, 2_000, 9) {
        a.add(&item, 1, 0);
        b.add(&item, 1_000_000, 0);
    }
    for _ in 0..1_100 {
        let copy = a.try_clone().unwrap();
        a.merge(&copy).unwrap();
        a.merge(&b).unwrap();
        b.merge(&a).unwrap();
    }
    for hk in [&a, &b] {
        assert!(hk.ranked(0).iter().all(|r| r.count <= MAX_COUNT));
        assert_eq!(hk.ranked(0)[0].count, MAX_COUNT);
        assert!(round_trips(hk), "a state the merge reached must load");
        hk.check_invariants().unwrap();
    }
}

#[test]
fn a_merged_bucket_above_the_new_minimum_does_not_lock_its_item_out() {
    // Each side: ten members at 100 and "z" at 50-60 just outside its top-k.
    let side = |prefix: &str, z: u64| {
        let mut hk = HeavyKeeper::new(
            Params {
                width: 4096,
                ..params(10)
            },
            0,
        );
        for i in 0..10 {
            hk.add(format!("{prefix}{i}").as_bytes(), 100, 0);
        }
        for _ in 0..z {
            hk.add(b"z", 1, 0);
        }
        assert!(!hk.contains(b"z", 0));
        hk
    };
    let (east, west) = (side("east", 50), side("west", 60));
    let mut all = HeavyKeeper::empty_like(&east);
    all.merge(&east).unwrap();
    all.merge(&west).unwrap();
    // z's merged bucket (110) beats the new minimum (100), but z is no member.
    assert!(!all.contains(b"z", 0));
    for _ in 0..100 {
        all.add(b"z", 1, 0);
    }
    assert!(
        all.contains(b"z", 0),
        "z is locked out: {:?}",
        all.ranked(0)
    );
    // Still a lower bound of its 210 arrivals.
    assert!(all.count(b"z", 0) <= 210.0 && all.count(b"z", 0) >= 100.0);
}

#[test]
fn a_destination_becomes_the_merge_of_its_sources_whatever_it_held() {
    let stream = zipf_stream(1.0, 500, 20_000, 4);
    let mut east = HeavyKeeper::new(params(20), 0);
    let mut west = HeavyKeeper::new(params(20), 0);
    for (i, item) in stream.iter().enumerate() {
        [&mut east, &mut west][i % 2].add(item, 1, 0);
    }
    let mut fresh = HeavyKeeper::empty_like(&east);
    fresh.merge(&east).unwrap();
    fresh.merge(&west).unwrap();
    // An existing destination full of other counts ends with the same top-k.
    let mut reused = HeavyKeeper::new(params(20), 0);
    for item in zipf_stream(1.2, 50, 5_000, 5) {
        reused.add(&item, 7, 0);
    }
    // Merging the same sources again gives the same answer: no double count.
    for _ in 0..2 {
        reused = reused.try_cleared_like(&east).unwrap();
        reused.merge(&east).unwrap();
        reused.merge(&west).unwrap();
        assert_eq!(fresh.ranked(0), reused.ranked(0));
        assert_eq!(reused.arrivals(), 20_000);
    }
}

#[test]
fn a_new_destination_settles_ties_as_its_first_source() {
    let mut source = HeavyKeeper::try_new_with_ties(params(5), 0, Ties::RedisBloom).unwrap();
    for item in [b"a", b"b", b"c", b"a"] {
        source.add(item, 1, 0);
    }
    let mut merged = HeavyKeeper::try_empty_like(&source).unwrap();
    merged.merge(&source).unwrap();
    assert_eq!(merged.ties(), Ties::RedisBloom);
    assert_eq!(merged.ranked(0), source.ranked(0));
}

#[test]
fn a_copy_is_the_same_sketch() {
    let mut a = HeavyKeeper::try_new_with_ties(params(5), 0, Ties::RedisBloom).unwrap();
    for item in zipf_stream(1.0, 50, 2_000, 9) {
        a.add(&item, 1, 0);
    }
    let mut copy = a.try_clone().unwrap();
    assert_eq!(encode(&copy), encode(&a));
    copy.check_invariants().unwrap();
    // It counts on as the original does.
    for item in zipf_stream(1.0, 50, 500, 10) {
        a.add(&item, 1, 0);
        copy.add(&item, 1, 0);
    }
    assert_eq!(encode(&copy), encode(&a));
}

/// Every parameter a sketch is made with: [`Params`] and the tie rule.
fn any_shape() -> impl Strategy<Value = (Params, Ties)> {
    (
        (1u32..40, 1u32..200, 1u32..=Params::MAX_DEPTH),
        (0.5f64..=1.0, any::<u64>()),
        proptest::option::of(1.0f64..1e9),
        prop_oneof![Just(RowLayout::Remixed), Just(RowLayout::DoubleHash)],
        prop_oneof![Just(Ties::ByItem), Just(Ties::RedisBloom)],
    )
        .prop_map(
            |((k, width, depth), (decay, seed), half_life_ms, layout, ties)| {
                let params = Params {
                    k,
                    width,
                    depth,
                    decay,
                    seed,
                    half_life_ms,
                    layout,
                };
                (params, ties)
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn a_new_destination_keeps_every_parameter_of_its_source(
        (params, ties) in any_shape(),
        created_ms in 0i64..4_000_000_000_000,
        items in proptest::collection::vec(0u8..30, 0..60),
    ) {
        let mut source = HeavyKeeper::try_new_with_ties(params, created_ms, ties).unwrap();
        for item in items {
            source.add(&[item], 1, created_ms);
        }
        let mut merged = HeavyKeeper::try_empty_like(&source).unwrap();
        merged.merge(&source).unwrap();
        prop_assert_eq!(merged.params(), source.params());
        prop_assert_eq!(merged.ties(), source.ties());
        prop_assert_eq!(merged.fading(), source.fading());
        prop_assert_eq!(merged.clock_ms(), source.clock_ms());
        prop_assert_eq!(merged.created_ms(), source.created_ms());
        prop_assert_eq!(merged.arrivals(), source.arrivals());
        merged.check_invariants().unwrap();
    }
}
