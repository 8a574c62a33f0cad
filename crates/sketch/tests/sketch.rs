//! Behaviour of the whole sketch: honesty of counts, precision, weighted
//! increments, determinism, fading and persistence.

// A test: a panic is how it fails (clippy.toml allows these in test
// functions; this file's helpers are test code too).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use heavykeeper_sketch::{
    decode, encode, DecodeError, HeavyKeeper, ItemHash, Params, ENCODING_VERSION, MAX_COUNT,
};
use proptest::prelude::*;
use std::collections::{HashMap, HashSet};
use test_streams::{exact_counts, precision_at_k, zipf_stream};

fn sketch(k: u32) -> HeavyKeeper {
    HeavyKeeper::new(Params::for_k(k, 11), 0)
}

/// One arrival of each item, in order, at time 0.
fn add_each(hk: &mut HeavyKeeper, stream: &[Vec<u8>]) {
    for item in stream {
        hk.add(item, 1, 0);
    }
}

fn fading_sketch(k: u32, half_life_ms: f64, start_ms: i64) -> HeavyKeeper {
    let params = Params {
        half_life_ms: Some(half_life_ms),
        ..Params::for_k(k, 11)
    };
    HeavyKeeper::new(params, start_ms)
}

#[test]
fn counts_never_exceed_the_truth_without_fingerprint_collisions() {
    let params = Params {
        width: 64,
        depth: 2,
        ..Params::for_k(20, 5)
    };
    let mut hk = HeavyKeeper::new(params, 0);
    let stream = zipf_stream(0.9, 2_000, 50_000, 3);
    let exact = exact_counts(&stream);
    add_each(&mut hk, &stream);
    let mut by_fingerprint: HashMap<u32, usize> = HashMap::new();
    for item in exact.keys() {
        *by_fingerprint
            .entry(ItemHash::of(item, 5).fingerprint())
            .or_default() += 1;
    }
    let mut checked = 0;
    for (item, &truth) in &exact {
        if by_fingerprint[&ItemHash::of(item, 5).fingerprint()] == 1 {
            assert!(hk.count(item, 0) <= truth as f64, "{:?}", item);
            checked += 1;
        }
    }
    assert!(checked > 1_900);
    for r in hk.ranked(0) {
        assert!(r.count <= exact[r.item] as f64);
        assert!(r.count >= 1.0, "no member with count 0");
    }
}

#[test]
fn default_k100_finds_the_true_top_100_of_a_zipf_stream() {
    let stream = zipf_stream(1.0, 100_000, 1_000_000, 42);
    let exact = exact_counts(&stream);
    let mut hk = sketch(100);
    add_each(&mut hk, &stream);
    let listed: Vec<&[u8]> = hk.ranked(0).iter().map(|r| r.item).collect();
    let precision = precision_at_k(&listed, &exact, 100);
    assert!(precision >= 0.99, "precision {precision}");
    assert!(hk.memory_bytes() < 64 * 1024, "{} bytes", hk.memory_bytes());
}

#[test]
fn the_listed_count_is_the_queried_count_for_members() {
    let mut hk = sketch(10);
    add_each(&mut hk, &zipf_stream(1.1, 500, 20_000, 9));
    for r in hk.ranked(0) {
        assert_eq!(hk.count(r.item, 0), r.count);
        assert!(hk.contains(r.item, 0));
    }
    assert!(!hk.contains(b"never seen", 0));
    assert_eq!(hk.count(b"never seen", 0), 0.0);
}

#[test]
fn a_huge_increment_costs_what_a_few_adds_cost() {
    let mut hk = sketch(10);
    for i in 0..5_000u32 {
        hk.add(&i.to_le_bytes(), 1, 0);
    }
    // Into a full sketch, where it must decay its way in: one draw per level
    // of the smallest bucket, not one per arrival (that would be 2e9 words).
    let words = hk.random_words_used();
    hk.add(b"whale", 1_000_000_000, 0);
    let spent = hk.random_words_used() - words;
    assert!(
        spent <= 200,
        "{spent} random words for one weighted arrival"
    );
    let count = hk.count(b"whale", 0);
    assert!(count > 999_000_000.0 && count <= 1e9, "{count}");
    assert_eq!(hk.ranked(0)[0].item, b"whale");
}

#[test]
fn counts_stop_at_two_to_the_53_and_never_round_above_it() {
    let mut hk = sketch(3);
    hk.add(b"x", (1 << 53) - 1, 0);
    hk.add(b"x", 4, 0);
    assert_eq!(hk.count(b"x", 0), MAX_COUNT);
    hk.add(b"y", 1 << 53, 0);
    hk.add(b"y", 3, 0);
    assert_eq!(
        hk.count(b"y", 0),
        MAX_COUNT,
        "2^53 + 3 must not become 2^53 + 4"
    );
    assert_eq!(hk.ranked(0)[0].count, MAX_COUNT);
    let back = decode(&encode(&hk), u64::MAX).unwrap();
    assert_eq!(encode(&back), encode(&hk));
}

#[test]
fn decay_one_drains_a_bucket_deterministically_and_at_once() {
    let params = Params {
        width: 1,
        depth: 1,
        decay: 1.0,
        ..Params::for_k(2, 3)
    };
    let mut hk = HeavyKeeper::new(params, 0);
    hk.add(b"resident", 1 << 52, 0);
    // Every arrival decrements: 2^52 of them empty the bucket, the rest
    // count (the one that emptied it included). No coin is needed.
    let words = hk.random_words_used();
    hk.add(b"newcomer", (1 << 52) + 5, 0);
    assert_eq!(hk.random_words_used(), words);
    assert_eq!(hk.count(b"newcomer", 0), 6.0);
    assert!(hk.contains(b"newcomer", 0));
}

#[test]
fn a_huge_weight_from_the_distant_past_ends_at_once() {
    let start = 1_700_000_000_000;
    let params = Params {
        width: 1,
        depth: 1,
        half_life_ms: Some(1_000.0),
        ..Params::for_k(2, 3)
    };
    let mut hk = HeavyKeeper::new(params, start);
    hk.add(b"resident", 5, start + 200_000);
    // 2^50 arrivals from 100 half-lives ago: each weighs 2^-100 now, and
    // each decay costs the resident a whole current unit: at most five
    // decays, a few draws each.
    let words = hk.random_words_used();
    hk.add(b"ancient", 1 << 50, start + 100_000);
    assert!(hk.random_words_used() - words <= 24);
    assert!(hk.count(b"ancient", start + 200_000) < 1e-10);
    hk.check_invariants().unwrap();
}

#[test]
fn weighted_increments_match_repeated_adds_in_distribution() {
    // A bucket holding count 3 in a 1x1 sketch, then 20 arrivals of another
    // item: weighted or one by one, it takes the bucket about equally often.
    let take_rate = |weighted: bool| {
        let mut taken = 0;
        for seed in 0..2_000 {
            let params = Params {
                width: 1,
                depth: 1,
                decay: 0.5,
                ..Params::for_k(1, seed)
            };
            let mut hk = HeavyKeeper::new(params, 0);
            hk.add(b"resident", 3, 0);
            if weighted {
                hk.add(b"newcomer", 20, 0);
            } else {
                for _ in 0..20 {
                    hk.add(b"newcomer", 1, 0);
                }
            }
            if hk.contains(b"newcomer", 0) {
                taken += 1;
            }
        }
        taken as f64 / 2_000.0
    };
    let (weighted, single) = (take_rate(true), take_rate(false));
    assert!((weighted - single).abs() < 0.05, "{weighted} vs {single}");
    assert!(weighted > 0.2 && weighted < 0.95, "{weighted}");
}

#[test]
fn the_same_operations_give_byte_identical_sketches() {
    let stream = zipf_stream(1.0, 5_000, 30_000, 1);
    let mut a = sketch(50);
    let mut b = sketch(50);
    for (i, item) in stream.iter().enumerate() {
        let weight = 1 + (i % 7) as u64 * 1000;
        assert_eq!(a.add(item, weight, 0), b.add(item, weight, 0));
    }
    assert_eq!(encode(&a), encode(&b));
    let mut c = HeavyKeeper::new(Params::for_k(50, 12), 0);
    add_each(&mut c, &stream);
    assert_ne!(encode(&a), encode(&c));
}

#[test]
fn truncated_or_newer_payloads_are_refused() {
    let mut hk = sketch(5);
    add_each(&mut hk, &zipf_stream(1.0, 100, 1_000, 4));
    let bytes = encode(&hk);
    for len in 0..bytes.len() {
        assert!(decode(&bytes[..len], u64::MAX).is_err(), "prefix of {len}");
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(decode(&longer, u64::MAX).is_err());
    let mut newer = bytes.clone();
    newer[0] = ENCODING_VERSION + 1;
    assert_eq!(
        decode(&newer, u64::MAX).unwrap_err(),
        DecodeError::NewerVersion(ENCODING_VERSION + 1)
    );
    assert!(
        matches!(decode(&bytes, 100), Err(DecodeError::TooLarge(_))),
        "over the size cap, and not corrupt"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn invariants_hold_through_random_operations(
        ops in proptest::collection::vec((0u8..40, 1u64..50, 0i64..5_000), 1..400),
        fading in any::<bool>(),
    ) {
        let mut hk = if fading { fading_sketch(5, 300.0, 0) } else {
            HeavyKeeper::new(Params { width: 8, depth: 2, ..Params::for_k(5, 1) }, 0)
        };
        let mut time = 0;
        for (item, weight, dt) in ops {
            time += dt % 700;
            let weight = if weight > 45 { weight * 1_000_000 } else { weight };
            hk.add(&[item], weight, time);
            prop_assert!(hk.check_invariants().is_ok());
            let ranked = hk.ranked(time);
            prop_assert!(ranked.len() <= 5);
            let distinct: HashSet<&[u8]> = ranked.iter().map(|r| r.item).collect();
            prop_assert_eq!(distinct.len(), ranked.len());
            prop_assert!(ranked.windows(2).all(|w| w[0].count >= w[1].count));
            prop_assert!(ranked.iter().all(|r| r.count >= 1.0));
        }
    }
}

#[test]
fn a_fading_count_halves_every_half_life() {
    let start = 1_700_000_000_000;
    let mut hk = fading_sketch(10, 10_000.0, start);
    hk.add(b"hot", 1_000, start);
    let now = hk.count(b"hot", start);
    let later = hk.count(b"hot", start + 10_000);
    assert!((now - 1000.0).abs() < 1e-9, "{now}");
    assert!((later - 500.0).abs() < 1e-9, "{later}");
}

#[test]
fn a_steady_rate_is_reported_as_that_rate() {
    let start = 1_700_000_000_000;
    let mut hk = fading_sketch(10, 5_000.0, start);
    // 200 arrivals per second, one every 5 ms, for 10 half-lives.
    let mut t = start;
    while t < start + 50_000 {
        hk.add(b"steady", 1, t);
        t += 5;
    }
    let count = hk.count(b"steady", t);
    let rate = hk.rate(count, t);
    assert!((rate - 200.0).abs() < 20.0, "rate {rate}");
}

#[test]
fn an_old_hot_set_fades_out_and_everything_leaves_after_traffic_stops() {
    let start = 1_700_000_000_000;
    let half_life = 1_000.0;
    let mut hk = fading_sketch(5, half_life, start);
    for i in 0..5_000 {
        hk.add(format!("old{}", i % 5).as_bytes(), 1, start + i);
    }
    for i in 0..5_000 {
        hk.add(format!("new{}", i % 5).as_bytes(), 1, start + 5_000 + i);
    }
    let listed: Vec<&[u8]> = hk.ranked(start + 10_000).iter().map(|r| r.item).collect();
    assert!(listed.iter().all(|i| i.starts_with(b"new")), "{listed:?}");
    assert_eq!(listed.len(), 5);
    // A count of at most 1000*... fades below one within log2(count) half-lives.
    assert!(hk.ranked(start + 10_000 + 30 * 1_000).is_empty());
    assert_eq!(hk.members(start + 10_000 + 30 * 1_000), 0);
}

#[test]
fn days_of_fading_renormalise_invisibly() {
    let start = 1_700_000_000_000;
    let half_life = 1_000.0;
    let day = 86_400_000;
    let mut hk = fading_sketch(3, half_life, start);
    let mut t = start;
    while t < start + 3 * day {
        hk.add(b"steady", 1, t);
        t += 1_000;
    }
    // One arrival a second with a 1 s half-life converges to 1/(1 - 1/2) = 2.
    let count = hk.count(b"steady", t - 1_000);
    assert!((count - 2.0).abs() < 1e-9, "{count}");
    let bytes = encode(&hk);
    let back = decode(&bytes, u64::MAX).unwrap();
    assert_eq!(back.count(b"steady", t), hk.count(b"steady", t));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Saving and loading at any point (a restart, DEBUG RELOAD, a replica's
    /// full sync) changes nothing that happens afterwards.
    #[test]
    fn a_reload_anywhere_changes_no_future(
        ops in proptest::collection::vec((0u8..60, 1u64..4, 0i64..400), 1..300),
        reload_at in 0usize..300,
        fading in any::<bool>(),
    ) {
        let make = || if fading { fading_sketch(6, 500.0, 0) } else {
            HeavyKeeper::new(Params { width: 16, depth: 2, ..Params::for_k(6, 2) }, 0)
        };
        let (mut straight, mut reloaded) = (make(), make());
        let mut time = 0;
        for (i, (item, weight, dt)) in ops.into_iter().enumerate() {
            if i == reload_at {
                reloaded = decode(&encode(&reloaded), u64::MAX).unwrap();
            }
            time += dt;
            let weight = if weight == 3 { 1_000_000 } else { weight };
            prop_assert_eq!(straight.add(&[item], weight, time), reloaded.add(&[item], weight, time));
        }
        prop_assert_eq!(encode(&straight), encode(&reloaded));
    }
}

#[test]
fn the_n_highest_are_the_head_of_the_full_ranking() {
    let mut sketch = HeavyKeeper::new(Params::for_k(200, 11), 0);
    for i in 0..20_000u64 {
        // Many equal counts, so ties by item bytes matter.
        let item = format!("item-{}", (i * 7919) % 500 % (1 + i % 97));
        sketch.add(item.as_bytes(), 1, 0);
    }
    let all = sketch.ranked(0);
    assert!(all.len() > 50);
    for n in [0, 1, 2, 10, 49, all.len(), all.len() + 10] {
        let top = sketch.top(0, n);
        assert_eq!(top, all[..n.min(all.len())], "n = {n}");
    }
}

#[test]
fn try_new_builds_what_new_builds() {
    let params = Params::for_k(100, 3);
    let a = HeavyKeeper::try_new(params, 5).expect("a small sketch allocates");
    let b = HeavyKeeper::new(params, 5);
    assert_eq!(encode(&a), encode(&b));
    assert_eq!(a.memory_bytes(), b.memory_bytes());
}

#[test]
fn a_member_costs_its_slot_and_its_bytes_and_memory_says_so() {
    let k = 1000;
    let mut sketch = HeavyKeeper::new(Params::for_k(k, 3), 0);
    let empty = sketch.memory_bytes();
    // 1000 distinct 40-byte items, each twice: all of them become members.
    for round in 0..2 {
        for i in 0..k {
            let item = format!("{i:0>40}");
            sketch.add(item.as_bytes(), 1 + round, 0);
        }
    }
    assert_eq!(sketch.ranked(0).len(), k as usize);
    let grown = sketch.memory_bytes() - empty;
    // The slots were reserved empty: what grows is the items' bytes, held
    // once in the arena (with at most a quarter of room to grow).
    assert!(grown >= 40 * k as usize, "{grown}");
    assert!(grown <= 40 * k as usize * 3 / 2 + 1024, "{grown}");
}

#[test]
fn the_defaults_fit_their_memory_budgets_before_any_item() {
    for (k, budget) in [(100u32, 32 * 1024u64), (1000, 140_000)] {
        let p = Params::for_k(k, 1);
        let bytes = HeavyKeeper::new(p, 0).memory_bytes() as u64;
        // Room left for the items themselves: about ten bytes each, as in
        // the benchmark's streams (the bench measures the real figure).
        assert!(bytes + 12 * u64::from(k) < budget, "k={k}: {bytes} B empty");
        assert!(
            p.fixed_bytes() <= bytes,
            "k={k}: fixed {} > {bytes}",
            p.fixed_bytes()
        );
    }
}

#[test]
fn a_counting_bucket_takes_eight_bytes_and_a_fading_one_twelve() {
    // What a sketch holds, and what its parameters say it will hold.
    let bytes = |width: u32, half_life_ms: Option<f64>| {
        let params = Params {
            width,
            depth: 4,
            half_life_ms,
            ..Params::for_k(10, 1)
        };
        let held = HeavyKeeper::new(params, 0).memory_bytes();
        (held, params.fixed_bytes() as usize)
    };
    for (half_life_ms, per_bucket) in [(None, 8), (Some(60_000.0), 12)] {
        let (wide, narrow) = (bytes(1100, half_life_ms), bytes(100, half_life_ms));
        assert_eq!(wide.0 - narrow.0, 1000 * 4 * per_bucket, "{half_life_ms:?}");
        assert_eq!(wide.1 - narrow.1, 1000 * 4 * per_bucket, "{half_life_ms:?}");
    }
    // The defaults spend the same bytes on buckets either way.
    for k in [10, 100, 1000, 10_000] {
        let counting = Params::default_width(k, false) * 8;
        let fading = Params::default_width(k, true) * 12;
        assert!(fading <= counting && fading + 24 >= counting, "k={k}");
    }
}

#[test]
fn counts_past_32_bits_stay_exact_through_merge_and_encoding() {
    // A bucket word holds counts below 2^31; larger ones live beside it.
    let big = 3_000_000_000u64;
    let mut a = sketch(3);
    let mut b = sketch(3);
    a.add(b"elephant", big, 0);
    a.add(b"elephant", 1, 0);
    b.add(b"elephant", big * 1000, 0);
    b.add(b"mouse", 7, 0);
    assert_eq!(a.count(b"elephant", 0), (big + 1) as f64);
    let mut merged = a.try_clone().unwrap();
    merged.merge(&b).unwrap();
    assert_eq!(merged.count(b"elephant", 0), (big * 1001 + 1) as f64);
    assert_eq!(merged.count(b"mouse", 0), 7.0);
    let back = decode(&encode(&merged), u64::MAX).unwrap();
    assert_eq!(encode(&back), encode(&merged));
    assert_eq!(back.count(b"elephant", 0), (big * 1001 + 1) as f64);
    // Every weight, small or wide, reads back exactly after a round trip.
    let mut c = sketch(50);
    for (i, w) in [1u64, (1 << 31) - 1, 1 << 31, 1 << 32, (1 << 53) - 5]
        .iter()
        .enumerate()
    {
        c.add(format!("w{i}").as_bytes(), *w, 0);
        assert_eq!(c.count(format!("w{i}").as_bytes(), 0), *w as f64);
    }
    let back = decode(&encode(&c), u64::MAX).unwrap();
    assert_eq!(encode(&back), encode(&c));
}

#[test]
fn hashing_ahead_counts_exactly_what_adding_counts() {
    let stream = zipf_stream(1.0, 5_000, 40_000, 8);
    let mut plain = sketch(100);
    let mut ahead = sketch(100);
    add_each(&mut plain, &stream);
    let mut items = stream.iter();
    let mut next = items.next().map(|i| ahead.upcoming(i));
    while let Some(item) = next {
        next = items.next().map(|i| ahead.upcoming(i));
        ahead.add_upcoming(item, 1, 0);
    }
    assert_eq!(encode(&ahead), encode(&plain));

    // Hashed by a sketch with another seed: counted under this one's hash.
    let other = HeavyKeeper::new(Params::for_k(100, 999), 0);
    let mut mine = sketch(100);
    mine.add_upcoming(other.upcoming(b"x"), 3, 0);
    assert_eq!(mine.count(b"x", 0), 3.0);
}

/// Without a half-life a count never falls, so the default decay is what
/// decides whether a bucket first taken stays within reach of a later heavy
/// item (the *shifting* stream of the benchmark).
#[test]
fn a_quiet_resident_does_not_lock_out_a_hotter_newcomer() {
    for seed in 0..8 {
        // One column per row: every item maps to the same four buckets.
        let params = Params {
            width: 1,
            ..Params::for_k(5, seed)
        };
        let mut hk = HeavyKeeper::new(params, 0);
        let residents: Vec<Vec<u8>> = (0..4).map(|r| format!("old:{r}").into_bytes()).collect();
        for _ in 0..400 {
            for resident in &residents {
                hk.add(resident, 1, 0);
            }
        }
        for resident in &residents {
            assert_eq!(
                hk.count(resident, 0),
                400.0,
                "seed {seed}: a resident of its own bucket"
            );
        }
        // Taking a bucket from a holder of C costs about sum(decay^-c) arrivals
        // (c up to C): ~1,300 at 0.995 for C = 400, but ~162,000 at 0.98.
        for _ in 0..4_000 {
            hk.add(b"new", 1, 0);
        }
        let count = hk.count(b"new", 0);
        assert!(
            hk.contains(b"new", 0),
            "seed {seed}: the newcomer is not listed"
        );
        assert!((2_000.0..=4_000.0).contains(&count), "seed {seed}: {count}");
    }
}
