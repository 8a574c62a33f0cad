//! Byte-identity across hosts: a fixed sequence of operations must give the
//! exact bytes recorded in `fixtures/golden.txt`, on every machine. Every
//! floating-point function whose result enters the stored state (exp, exp2,
//! ln, ln_1p) comes from `libm`; if one came from the platform's C library,
//! which picks CPU-specific variants, a primary and its replica on different
//! hardware could drift, and this test would fail on one of them.
//!
//! After a deliberate change of the encoding or the algorithm, record the new
//! digests with `HK_BLESS_GOLDEN=1 cargo test -p heavykeeper-sketch --test golden`.

// A test: a panic is how it fails (clippy.toml allows these in test
// functions; this file's helpers are test code too).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use heavykeeper_sketch::{encode, HeavyKeeper, Params};
use std::path::Path;
use xxhash_rust::xxh3::xxh3_64;

/// A skewed stream from integer arithmetic only (no floating point that a
/// platform could round differently): small ids are far more frequent.
fn stream(n: usize, seed: u64) -> Vec<(Vec<u8>, u64)> {
    let mut state = seed;
    (0..n)
        .map(|i| {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            let bits = (z >> 59) as u32; // 0..32
            let id = (z & 0xffff_ffff) % (1u64 << bits.min(20)).max(1);
            let weight = [1, 1, 1, 7, 1_000][i % 5];
            (format!("key:{id}").into_bytes(), weight)
        })
        .collect()
}

fn golden_sketches() -> Vec<(&'static str, HeavyKeeper)> {
    let start = 1_700_000_000_000;
    // Shapes pinned (not the defaults, which may be retuned): the recorded
    // bytes have stayed the same since they were first recorded.
    let fading_params = Params {
        width: 512,
        depth: 3,
        decay: 0.925,
        half_life_ms: Some(Params::half_life_ms_from_alpha(0.05)),
        ..Params::for_k(50, 42)
    };
    let mut fading = HeavyKeeper::new(fading_params, start);
    fading.set_watch(Some(heavykeeper_sketch::WatchSpec {
        channel: b"golden-events".to_vec(),
        members: true,
        above: Some(50.0),
        below: Some(20.0),
    }));
    for (i, (item, weight)) in stream(30_000, 1).into_iter().enumerate() {
        // Mostly forward in time, some backfilled, and one jump of days
        // (a landmark move) halfway.
        let jump = if i >= 15_000 { 3 * 86_400_000 } else { 0 };
        let time = start + jump + (i as i64) * 3 - if i % 11 == 0 { 5_000 } else { 0 };
        fading.add(&item, weight, time);
    }
    let plain_params = Params {
        width: 300,
        depth: 3,
        decay: 0.9,
        ..Params::for_k(30, 7)
    };
    let mut east = HeavyKeeper::new(plain_params, start);
    let mut west = HeavyKeeper::new(plain_params, start);
    for (i, (item, weight)) in stream(30_000, 2).into_iter().enumerate() {
        [&mut east, &mut west][i % 2].add(&item, weight * 3, 0);
    }
    let mut merged = HeavyKeeper::empty_like(&east);
    merged.merge(&east).expect("same shape");
    merged.merge(&west).expect("same shape");
    vec![("fading", fading), ("plain", east), ("merged", merged)]
}

#[test]
fn a_fixed_sequence_gives_the_recorded_bytes_on_every_host() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/golden.txt");
    let digests: String = golden_sketches()
        .iter()
        .map(|(name, sketch)| format!("{name} {:016x}\n", xxh3_64(&encode(sketch))))
        .collect();
    if std::env::var_os("HK_BLESS_GOLDEN").is_some() {
        std::fs::write(&path, &digests).expect("write the golden digests");
    }
    let recorded = std::fs::read_to_string(&path).expect("tests/fixtures/golden.txt");
    assert_eq!(
        digests, recorded,
        "the stored bytes differ from the recorded ones"
    );
}
