//! Every sketch under test behind one interface, sized to a memory budget,
//! and how fast each runs in-process.
//!
//! Memory is counted the way `MEMORY USAGE` counts ours: everything the
//! structure holds, item bytes included. The `heavykeeper` crate reports its
//! own (`mem_bytes`); for `FilteredSpaceSaving`, which does not, we add up its
//! parts (see `FssSketch::memory_bytes`).

use crate::redis_phase::median;
use crate::workloads::Workload;
use heavykeeper_sketch::{HeavyKeeper, Params};
use std::hash::Hash;
use std::time::Instant;

pub const SEED: u64 = 0x5EED;

pub trait Contender {
    fn add(&mut self, item: &[u8]);
    /// The reported top-k, highest first.
    fn top(&self) -> Vec<(Vec<u8>, u64)>;
    fn memory_bytes(&self) -> usize;

    /// Every arrival of `w`, in order.
    fn feed(&mut self, w: &Workload) {
        for item in w.arrivals() {
            self.add(item);
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    Ours,
    CrateTopK,
    CrateCuckoo,
    SpaceSaving,
}

impl Kind {
    pub const ALL: [Kind; 4] = [
        Kind::Ours,
        Kind::CrateTopK,
        Kind::CrateCuckoo,
        Kind::SpaceSaving,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Kind::Ours => "heavykeeper-redis (ours)",
            Kind::CrateTopK => "heavykeeper crate TopK",
            Kind::CrateCuckoo => "heavykeeper crate CuckooTopK",
            Kind::SpaceSaving => "topk FilteredSpaceSaving",
        }
    }

    pub fn short(self) -> &'static str {
        match self {
            Kind::Ours => "ours",
            Kind::CrateTopK => "hk TopK",
            Kind::CrateCuckoo => "hk Cuckoo",
            Kind::SpaceSaving => "FSS",
        }
    }

    /// A sketch of this kind for `k` whose memory, once it holds `k` items of
    /// `item_len` bytes, comes closest to `budget` without exceeding it.
    pub fn sized(self, k: usize, budget: usize, item_len: usize) -> Option<Box<dyn Contender>> {
        // Memory once it holds `held` items, from its empty size.
        let fits_holding = |held: usize, empty: usize| empty + held * item_len <= budget;
        let fits = |empty: usize| fits_holding(k, empty);
        match self {
            Kind::Ours => Some(Box::new(ours(k, ours_width(k, budget, item_len)?))),
            Kind::CrateTopK => {
                let width = largest(|w| fits(crate_topk(k, w).memory_bytes()))?;
                Some(Box::new(crate_topk(k, width)))
            }
            Kind::CrateCuckoo => {
                // Power-of-two widths are its fast path.
                let exp = largest(|e| e < 31 && fits(crate_cuckoo(k, 1 << e).memory_bytes()))?;
                Some(Box::new(crate_cuckoo(k, 1 << exp)))
            }
            Kind::SpaceSaving => {
                // Space-Saving holds all m monitored items, not just k.
                let fss = |m: usize| {
                    let m = m.max(k);
                    FssSketch {
                        k,
                        m,
                        inner: topk::FilteredSpaceSaving::new(m),
                    }
                };
                let m = largest(|m| fits_holding(m.max(k), fss(m).memory_bytes()))?;
                Some(Box::new(fss(m)))
            }
        }
    }
}

/// Largest `x >= 1` with `ok(x)`, assuming `ok` is monotone; `None` if even 1 fails.
fn largest(ok: impl Fn(usize) -> bool) -> Option<usize> {
    if !ok(1) {
        return None;
    }
    let (mut lo, mut hi) = (1usize, 2usize);
    while ok(hi) {
        lo = hi;
        hi *= 2;
        if hi > 1 << 26 {
            return Some(lo);
        }
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if ok(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some(lo)
}

/// Our default sketch's widest width that holds k items of `item_len`
/// bytes within `budget`.
pub fn ours_width(k: usize, budget: usize, item_len: usize) -> Option<usize> {
    largest(|w| ours(k, w).memory_bytes() + k * item_len <= budget)
}

pub fn ours(k: usize, width: usize) -> OursSketch {
    let params = Params {
        width: width as u32,
        ..Params::for_k(k as u32, SEED)
    };
    OursSketch(HeavyKeeper::new(params, 0))
}

pub fn ours_default(k: usize) -> OursSketch {
    OursSketch(HeavyKeeper::new(Params::for_k(k as u32, SEED), 0))
}

pub struct OursSketch(pub HeavyKeeper);

impl Contender for OursSketch {
    fn add(&mut self, item: &[u8]) {
        self.0.add(item, 1, 0);
    }
    fn top(&self) -> Vec<(Vec<u8>, u64)> {
        self.0
            .ranked(0)
            .into_iter()
            .map(|r| (r.item.to_vec(), r.count as u64))
            .collect()
    }
    fn memory_bytes(&self) -> usize {
        self.0.memory_bytes()
    }
}

/// The peers' own recommended depth and decay (their README: depth 4, 0.9).
const PEER_DEPTH: usize = 4;
const PEER_DECAY: f64 = 0.9;

pub fn crate_topk(k: usize, width: usize) -> heavykeeper::TopK<Vec<u8>> {
    heavykeeper::TopK::with_seed(k, width, PEER_DEPTH, PEER_DECAY, SEED)
}

pub fn crate_cuckoo(k: usize, width: usize) -> heavykeeper::CuckooTopK<Vec<u8>> {
    heavykeeper::CuckooTopK::with_seed(k, width, PEER_DEPTH, PEER_DECAY, SEED)
}

/// The `heavykeeper` crate's two sketches share one interface.
macro_rules! crate_contender {
    ($sketch:ty) => {
        impl Contender for $sketch {
            fn add(&mut self, item: &[u8]) {
                <$sketch>::add(self, item, 1);
            }
            fn top(&self) -> Vec<(Vec<u8>, u64)> {
                self.list().into_iter().map(|n| (n.item, n.count)).collect()
            }
            fn memory_bytes(&self) -> usize {
                self.mem_bytes(|v| v.capacity())
            }
        }
    };
}

crate_contender!(heavykeeper::TopK<Vec<u8>>);
crate_contender!(heavykeeper::CuckooTopK<Vec<u8>>);

/// Filtered Space-Saving monitoring `m >= k` counters, reporting the top k.
pub struct FssSketch {
    k: usize,
    m: usize,
    inner: topk::FilteredSpaceSaving<Vec<u8>>,
}

impl Contender for FssSketch {
    fn add(&mut self, item: &[u8]) {
        self.inner.insert(item.to_vec(), 1);
    }
    fn top(&self) -> Vec<(Vec<u8>, u64)> {
        let mut all: Vec<(Vec<u8>, u64)> = self
            .inner
            .iter()
            .map(|(item, c)| (item.clone(), c.estimated_count()))
            .collect();
        all.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        all.truncate(self.k);
        all
    }
    /// Per monitored counter: the item (`Vec` header and bytes), its counter
    /// (estimate and error, 16 bytes), the priority queue's index map entry
    /// (hash 8, table slot ~9.1) and heap positions (2 x 8); plus the filter's
    /// six alpha counters of 8 bytes per monitored slot.
    fn memory_bytes(&self) -> usize {
        let items: usize = self.inner.iter().map(|(item, _)| item.capacity()).sum();
        let per_counter = std::mem::size_of::<Vec<u8>>() + 16 + 8 + 10 + 16;
        self.m * per_counter + items + self.m * 6 * 8
    }
}

/// In-process throughput (one thread, a pre-generated stream, nothing else
/// running): million arrivals per second, median of `rounds` runs on fresh
/// sketches; `None` when `make` makes none.
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
