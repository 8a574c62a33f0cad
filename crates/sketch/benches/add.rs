//! The sketch alone: nanoseconds per arrival on a Zipf(1.0) stream held back
//! to back in memory, for several k. `cargo bench -p heavykeeper-sketch`;
//! `ARRIVALS`, `DEPTH` and `WIDTH` in the environment override the defaults.

// A test: a panic is how it fails (clippy.toml allows these in test
// functions; this file's helpers are test code too).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use heavykeeper_sketch::{HeavyKeeper, Params};
use std::time::Instant;
use test_streams::zipf_stream;

fn main() {
    let arrivals: usize = std::env::var("ARRIVALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_000_000);
    let stream = zipf_stream(1.0, 100_000, arrivals, 1);
    let (bytes, ends) = flatten(&stream);
    let ns = |s: f64| s * 1e9 / arrivals as f64;
    // The floor: walking the stream and hashing each item, nothing else.
    let start = Instant::now();
    let mut acc = 0u64;
    for item in items(&bytes, &ends) {
        acc ^= heavykeeper_sketch::ItemHash::of(item, 1).value();
    }
    std::hint::black_box(acc);
    println!(
        "hash only: {:.1} ns/arrival",
        ns(start.elapsed().as_secs_f64())
    );
    println!(
        "bucket floor (the insert's steps 2-4 alone, no top-k): {:.1} ns/arrival",
        ns(bucket_floor(&bytes, &ends, Params::for_k(100, 1)))
    );
    for k in [10u32, 100, 1000, 10_000] {
        let mut params = Params::for_k(k, 1);
        if let Some(d) = std::env::var("DEPTH").ok().and_then(|v| v.parse().ok()) {
            params.depth = d;
        }
        if let Some(w) = std::env::var("WIDTH").ok().and_then(|v| v.parse().ok()) {
            params.width = w;
        }
        let one_by_one = best_of_three(|| {
            let mut hk = HeavyKeeper::new(params, 0);
            for item in items(&bytes, &ends) {
                hk.add(item, 1, 0);
            }
            hk
        });
        // As `HK.ADD` feeds a batch: each item hashed (and its buckets
        // prefetched) while the one before is counted.
        let ahead = best_of_three(|| {
            let mut hk = HeavyKeeper::new(params, 0);
            let mut items = items(&bytes, &ends);
            let mut next = items.next().map(|i| hk.upcoming(i));
            while let Some(item) = next {
                next = items.next().map(|i| hk.upcoming(i));
                hk.add_upcoming(item, 1, 0);
            }
            hk
        });
        println!(
            "k={k:>6}: {:.1} ns/arrival ({:.1} M/s); one item ahead: {:.1} ns",
            ns(one_by_one),
            arrivals as f64 / one_by_one / 1e6,
            ns(ahead),
        );
    }
}

/// Fastest of three runs of `count`, in seconds.
fn best_of_three<T>(mut count: impl FnMut() -> T) -> f64 {
    let mut best = f64::MAX;
    for _ in 0..3 {
        let start = Instant::now();
        let counted = count();
        best = best.min(start.elapsed().as_secs_f64());
        std::hint::black_box(counted);
    }
    best
}

/// Seconds for the least a HeavyKeeper insert can do: the same hash, rows,
/// decay curve and coins as the sketch, on 8-byte buckets, with no top-k,
/// no selective increment, no fading and no wide counts. What the whole
/// sketch costs above this is the top-k and the guarantees.
fn bucket_floor(bytes: &[u8], ends: &[usize], params: Params) -> f64 {
    use heavykeeper_sketch::decay::DecayCurve;
    use rand::SeedableRng;
    let (width, depth) = (params.width as usize, params.depth as usize);
    let curve = DecayCurve::new(params.decay);
    best_of_three(|| {
        let mut buckets = vec![(0u32, 0u32); width * depth];
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(params.seed);
        for item in items(bytes, ends) {
            let hash = heavykeeper_sketch::ItemHash::of(item, params.seed);
            let fingerprint = hash.fingerprint();
            let (mut smallest, mut smallest_count, mut done) = (0, u32::MAX, false);
            for row in 0..depth {
                let i = row * width + hash.column(params.layout, row, width);
                let (held_by, count) = buckets[i];
                if count == 0 || held_by == fingerprint {
                    buckets[i] = (fingerprint, count + 1);
                    done = true;
                    break;
                }
                if count < smallest_count {
                    (smallest, smallest_count) = (i, count);
                }
            }
            if !done {
                let p = curve.decay_probability(f64::from(smallest_count));
                if DecayCurve::coin(p, &mut rng) {
                    let (held_by, count) = buckets[smallest];
                    buckets[smallest] = if count > 1 {
                        (held_by, count - 1)
                    } else {
                        (fingerprint, 1)
                    };
                }
            }
        }
        buckets
    })
}

/// The items of a flattened stream, in order.
fn items<'a>(bytes: &'a [u8], ends: &'a [usize]) -> impl Iterator<Item = &'a [u8]> + 'a {
    ends.iter().scan(0, |from, &end| {
        let item = &bytes[*from..end];
        *from = end;
        Some(item)
    })
}

fn flatten(stream: &[Vec<u8>]) -> (Vec<u8>, Vec<usize>) {
    let mut bytes = Vec::new();
    let mut ends = Vec::with_capacity(stream.len());
    for item in stream {
        bytes.extend_from_slice(item);
        ends.push(bytes.len());
    }
    (bytes, ends)
}
