//! Whatever bytes a client or a damaged file hands the decoder, what it
//! accepts can be used by every operation (add, list, merge, encode again)
//! without a panic, a hang or a state that cannot be loaded back; and every
//! state the operations reach round-trips through the encoding.
//!
//! These properties also run in release mode (`make test`), where integer
//! overflow would otherwise wrap silently if overflow checks were off.

// A test: a panic is how it fails (clippy.toml allows these in test
// functions; this file's helpers are test code too).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use heavykeeper_sketch::{decode, encode, HeavyKeeper, Params, Ties, MAX_COUNT, MAX_TIMESTAMP_MS};
use proptest::prelude::*;

const TIMES: [i64; 7] = [
    i64::MIN,
    -1,
    0,
    1_700_000_000_000,
    MAX_TIMESTAMP_MS,
    MAX_TIMESTAMP_MS + 1,
    i64::MAX,
];
const WEIGHTS: [u64; 5] = [1, 2, 1_000, 1 << 40, 1 << 53];

/// Valid payloads in several shapes: fading or not, empty or full, at the
/// edges of time and count.
fn valid_payload(kind: u8, seed: u64) -> Vec<u8> {
    let fading = kind % 2 == 1;
    let params = Params {
        width: 1 + (kind as u32 % 5),
        depth: 1 + (kind as u32 % 3),
        decay: [0.9, 0.5, 1.0, 0.999][kind as usize % 4],
        half_life_ms: fading.then_some([1.0, 1_000.0, 3.6e6][kind as usize % 3]),
        ..Params::for_k(3, seed)
    };
    let start = [0, 1_700_000_000_000, MAX_TIMESTAMP_MS][kind as usize % 3];
    // Half the payloads hold a RedisBloom heap, with its empty slots.
    let ties = [Ties::ByItem, Ties::RedisBloom][(kind as usize / 4) % 2];
    let mut hk = HeavyKeeper::try_new_with_ties(params, start, ties).unwrap();
    if kind % 3 == 0 {
        hk.set_watch(Some(heavykeeper_sketch::WatchSpec {
            channel: vec![kind; kind as usize % 4],
            members: kind % 2 == 0,
            above: Some(5.0),
            below: (kind % 4 == 0).then_some(1.0),
        }));
    }
    for i in 0..(kind as u64 % 4) * 5 {
        let weight = WEIGHTS[(i % 5) as usize];
        hk.add(
            format!("i{}", i % 7).as_bytes(),
            weight,
            start + i as i64 * 100,
        );
    }
    encode(&hk)
}

/// Overwrites the 8 bytes at `at` (or fewer at the end) with `value`.
fn poke(bytes: &mut [u8], at: usize, value: [u8; 8]) {
    let at = at % bytes.len();
    let end = (at + 8).min(bytes.len());
    bytes[at..end].copy_from_slice(&value[..end - at]);
}

fn extreme(choice: u8, random: u64) -> [u8; 8] {
    match choice % 10 {
        0 => i64::MIN.to_le_bytes(),
        1 => i64::MAX.to_le_bytes(),
        2 => f64::NAN.to_le_bytes(),
        3 => f64::INFINITY.to_le_bytes(),
        4 => (MAX_COUNT * 2f64.powi(40)).to_le_bytes(),
        5 => (-1.0f64).to_le_bytes(),
        6 => 0u64.to_le_bytes(),
        7 => MAX_TIMESTAMP_MS.to_le_bytes(),
        8 => f64::MIN_POSITIVE.to_le_bytes(),
        _ => random.to_le_bytes(),
    }
}

/// Uses a sketch every way a command can, then checks it still saves and loads.
fn exercise(hk: &mut HeavyKeeper, ops: &[(u8, u8, u8)]) -> Result<(), TestCaseError> {
    let mut events = Vec::new();
    for &(item, weight, time) in ops {
        let time = TIMES[time as usize % TIMES.len()];
        hk.add_watched(
            &[item % 9],
            WEIGHTS[weight as usize % WEIGHTS.len()],
            time,
            &mut events,
        );
        prop_assert!(hk.check_invariants().is_ok());
        if hk.watch_due(time) {
            hk.sweep_watch(time, &mut events);
        }
    }
    prop_assert!(events
        .iter()
        .all(|e| e.count.is_finite() && e.rate.is_finite() || e.count == 0.0));
    for now in TIMES {
        for r in hk.ranked(now) {
            prop_assert!(r.count.is_finite() && r.count <= MAX_COUNT * 1.000_001);
            prop_assert!(hk.rate(r.count, now).is_finite());
        }
        hk.count(&[1], now);
        hk.contains(&[1], now);
        hk.members(now);
    }
    let copy = hk.try_clone().unwrap();
    hk.merge(&copy)
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let mut fresh = HeavyKeeper::empty_like(hk);
    fresh
        .merge(hk)
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    for sketch in [&*hk, &fresh] {
        prop_assert!(sketch.check_invariants().is_ok());
        let bytes = encode(sketch);
        let back = decode(&bytes, u64::MAX);
        prop_assert!(
            back.is_ok(),
            "a reachable state did not load: {:?}",
            back.err()
        );
        prop_assert_eq!(encode(&back.unwrap()), bytes);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn damaged_payloads_are_refused_or_fully_usable(
        kind in 0u8..24,
        seed in any::<u64>(),
        pokes in proptest::collection::vec((any::<usize>(), any::<u8>(), any::<u64>()), 0..4),
        flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..3),
        ops in proptest::collection::vec((any::<u8>(), any::<u8>(), any::<u8>()), 1..30),
    ) {
        let mut bytes = valid_payload(kind, seed);
        for (at, choice, random) in pokes {
            poke(&mut bytes, at, extreme(choice, random));
        }
        for (at, value) in flips {
            let i = at % bytes.len();
            bytes[i] ^= value | 1;
        }
        if let Ok(mut hk) = decode(&bytes, 1 << 24) {
            exercise(&mut hk, &ops)?;
        }
    }

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        if let Ok(mut hk) = decode(&bytes, 1 << 24) {
            exercise(&mut hk, &[(1, 0, 2)])?;
        }
    }

    #[test]
    fn every_state_commands_reach_round_trips(
        fading in any::<bool>(),
        ops in proptest::collection::vec((0u8..6, any::<u8>(), any::<u8>(), any::<u8>()), 1..120),
    ) {
        let params = Params {
            width: 8,
            depth: 2,
            half_life_ms: fading.then_some(500.0),
            ..Params::for_k(4, 3)
        };
        let mut hk = HeavyKeeper::new(params, 1_000);
        let mut other = HeavyKeeper::new(params, 1_000);
        let mut time = 1_000i64;
        for (op, item, weight, dt) in ops {
            time = time.saturating_add(i64::from(dt) * [1, 1_000, 1 << 40][dt as usize % 3]);
            let weight = WEIGHTS[weight as usize % WEIGHTS.len()];
            match op {
                0 | 1 => { hk.add(&[item % 12], weight, time); }
                2 => { other.add(&[item % 12], weight, time); }
                3 => { let copy = hk.try_clone().unwrap(); hk.merge(&copy).unwrap(); }
                4 => { hk.merge(&other).unwrap(); }
                _ => { other.merge(&hk).unwrap(); }
            }
            for sketch in [&hk, &other] {
                let bytes = encode(sketch);
                let back = decode(&bytes, u64::MAX);
                prop_assert!(back.is_ok(), "{:?}", back.err());
                prop_assert_eq!(encode(&back.unwrap()), bytes);
            }
        }
    }
}

/// Without fading every count is a number of arrivals: a payload with a
/// fraction in a bucket or a member is refused (it would also cost a
/// side-table entry per bucket beyond the sketch's declared size).
#[test]
fn fractional_counts_without_fading_are_refused() {
    let mut hk = HeavyKeeper::new(Params::for_k(4, 9), 0);
    hk.add(b"x", 5, 0);
    let bytes = encode(&hk);
    let five = 5.0f64.to_le_bytes();
    let at: Vec<usize> = (0..bytes.len() - 8)
        .filter(|&i| bytes[i..i + 8] == five)
        .collect();
    // The item's buckets (one per row) and its member record.
    assert!(at.len() >= 2, "{at:?}");
    for &i in [at[0], at[at.len() - 1]].iter() {
        let mut damaged = bytes.clone();
        poke(&mut damaged, i, 5.5f64.to_le_bytes());
        let refused = decode(&damaged, u64::MAX).map(|_| ()).unwrap_err();
        assert!(refused.to_string().contains("whole number"), "{refused}");
    }
    assert!(decode(&bytes, u64::MAX).is_ok());
}
