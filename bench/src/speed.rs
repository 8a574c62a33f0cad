//! In-process throughput: one thread, a pre-generated stream, nothing else running.

use crate::contenders::{ours_default, Contender, Kind};
use crate::redis_phase::median;
use crate::workloads::Workload;
use std::time::Instant;

/// Million arrivals per second, median of `rounds` runs on fresh sketches;
/// `None` when `make` makes none.
pub fn mops(
    w: &Workload,
    rounds: usize,
    make: impl Fn() -> Option<Box<dyn Contender>>,
) -> Option<f64> {
    let mut runs: Vec<f64> = (0..rounds.max(1))
        .map(|_| {
            let mut sketch = make()?;
            let start = Instant::now();
            sketch.feed(w);
            let seconds = start.elapsed().as_secs_f64();
            std::hint::black_box(sketch.top());
            Some(w.stream.len() as f64 / seconds / 1e6)
        })
        .collect::<Option<_>>()?;
    median(&mut runs)
}

#[derive(Clone, Debug)]
pub struct Throughput {
    pub kind: Kind,
    pub memory: usize,
    pub mops: f64,
}

/// Every contender at the same memory budget.
pub fn at_equal_memory(w: &Workload, k: usize, budget: usize, rounds: usize) -> Vec<Throughput> {
    let item_len = w.hot_item_len();
    Kind::ALL
        .iter()
        .filter_map(|&kind| {
            let memory = kind.sized(k, budget, item_len)?.memory_bytes();
            let mops = mops(w, rounds, || kind.sized(k, budget, item_len))?;
            Some(Throughput { kind, memory, mops })
        })
        .collect()
}

/// Nanoseconds per arrival of our default sketch for each k.
pub fn ns_by_k(w: &Workload, ks: &[usize], rounds: usize) -> Vec<(usize, f64)> {
    ks.iter()
        .filter_map(|&k| {
            // Our default sketch is always made: every k has its figure.
            let mops = mops(w, rounds, || Some(Box::new(ours_default(k))))?;
            Some((k, 1e3 / mops))
        })
        .collect()
}
