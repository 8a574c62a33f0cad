//! Seeded Zipf streams and exact scoring, shared by the accuracy tests and
//! the benchmark. Test data: neither the sketch nor the module depends on it.

// Test support: a panic here fails the test that called it, which is what
// it is for; the workspace's no-panic rules are for code a server runs.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use rand::distr::Distribution;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::Zipf;
use std::collections::HashMap;

/// `arrivals` draws of item ranks in `1..=distinct` with exponent `s`, as
/// decimal strings (rank 1 is the most frequent).
pub fn zipf_stream(s: f64, distinct: u64, arrivals: usize, seed: u64) -> Vec<Vec<u8>> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let zipf = Zipf::new(distinct as f64, s).expect("valid Zipf parameters");
    (0..arrivals)
        .map(|_| format!("item:{}", zipf.sample(&mut rng) as u64).into_bytes())
        .collect()
}

/// Exact counts of a stream.
pub fn exact_counts(stream: &[Vec<u8>]) -> HashMap<&[u8], u64> {
    let mut counts = HashMap::new();
    for item in stream {
        *counts.entry(item.as_slice()).or_insert(0) += 1;
    }
    counts
}

/// Fraction of `reported` items whose true count reaches the true k-th
/// largest count (an item tied with the k-th counts as correct).
pub fn precision_at_k(reported: &[&[u8]], exact: &HashMap<&[u8], u64>, k: usize) -> f64 {
    let mut counts: Vec<u64> = exact.values().copied().collect();
    counts.sort_unstable_by(|a, b| b.cmp(a));
    let threshold = counts.get(k.saturating_sub(1)).copied().unwrap_or(0);
    let hits = reported
        .iter()
        .filter(|item| exact.get(**item).copied().unwrap_or(0) >= threshold.max(1))
        .count();
    hits as f64 / k as f64
}
