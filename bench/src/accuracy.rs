//! Precision and count error of every sketch, at every memory budget; of
//! our sketch with the defaults `HK.RESERVE key k` picks; and of merged
//! default sketches.

use crate::contenders::{ours_default, Contender, Kind};
use crate::workloads::Workload;
use std::collections::HashMap;
use std::fmt::Write;
use std::sync::Mutex;

#[derive(Clone, Debug)]
pub struct Accuracy {
    pub workload: String,
    pub k: usize,
    pub budget: usize,
    pub kind: Kind,
    /// What the sketch held at the end, items included.
    pub memory: usize,
    pub precision: f64,
    /// Mean |reported - true| / true over the true top-k items that were reported.
    pub relative_error: f64,
    pub absolute_error: f64,
    /// Reported counts above the true count.
    pub overestimates: usize,
}

/// Scores a finished sketch against the truth.
pub fn score(
    w: &Workload,
    index: &HashMap<&[u8], u32>,
    k: usize,
    top: &[(Vec<u8>, u64)],
) -> (f64, f64, f64, usize) {
    let truth = w.top_ids(k);
    let threshold = truth.last().map_or(1, |&id| w.count(id)).max(1);
    let true_count = |item: &[u8]| index.get(item).map_or(0, |&id| w.count(id));
    let hits = top
        .iter()
        .take(k)
        .filter(|(item, _)| true_count(item) >= threshold)
        .count();
    let reported: HashMap<&[u8], u64> = top.iter().map(|(i, c)| (i.as_slice(), *c)).collect();
    let (mut rel, mut abs, mut n) = (0.0, 0.0, 0usize);
    for &id in &truth {
        if let Some(&est) = w.item(id).and_then(|item| reported.get(item)) {
            let t = w.count(id) as f64;
            rel += (est as f64 - t).abs() / t;
            abs += (est as f64 - t).abs();
            n += 1;
        }
    }
    let over = top.iter().filter(|(item, c)| *c > true_count(item)).count();
    let n = n.max(1) as f64;
    (hits as f64 / k as f64, rel / n, abs / n, over)
}

/// The whole grid, on `threads` threads; `progress` is told of each result.
pub fn grid(
    workloads: &[Workload],
    ks: &[usize],
    budgets: &[usize],
    threads: usize,
    progress: &(dyn Fn(usize, usize, &Accuracy) + Sync),
) -> Vec<Accuracy> {
    let indexes: Vec<HashMap<&[u8], u32>> = workloads.iter().map(Workload::index).collect();
    let mut jobs = Vec::new();
    for (w, index) in workloads.iter().zip(&indexes) {
        let item_len = w.hot_item_len();
        for &k in ks {
            for &budget in budgets {
                for kind in Kind::ALL {
                    jobs.push((w, index, k, budget, kind, item_len));
                }
            }
        }
    }
    let total = jobs.len();
    let queue = Mutex::new(jobs.into_iter());
    let results = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..threads.max(1) {
            scope.spawn(|| loop {
                let job = queue.lock().map(|mut q| q.next()).ok().flatten();
                let Some((w, index, k, budget, kind, item_len)) = job else {
                    break;
                };
                let row = kind.sized(k, budget, item_len).map(|mut sketch| {
                    sketch.feed(w);
                    let (precision, relative_error, absolute_error, overestimates) =
                        score(w, index, k, &sketch.top());
                    Accuracy {
                        workload: w.name.clone(),
                        k,
                        budget,
                        kind,
                        memory: sketch.memory_bytes(),
                        precision,
                        relative_error,
                        absolute_error,
                        overestimates,
                    }
                });
                if let (Ok(mut r), Some(row)) = (results.lock(), row) {
                    progress(r.len() + 1, total, &row);
                    r.push(row);
                }
            });
        }
    });
    let mut rows = results.into_inner().unwrap_or_default();
    rows.sort_by_key(|r| (r.workload.clone(), r.k, r.budget, r.kind));
    rows
}

pub struct DefaultRun {
    pub workload: String,
    pub k: usize,
    pub width: u32,
    pub depth: u32,
    pub memory: usize,
    pub precision: f64,
    pub relative_error: f64,
    pub overestimates: usize,
}

/// Our sketch with the defaults `HK.RESERVE key k` picks, on every
/// workload that a user's stream resembles (Zipf and the real texts).
pub fn default_parameters(loads: &[Workload], ks: &[usize]) -> Vec<DefaultRun> {
    let mut out = Vec::new();
    for w in loads.iter().filter(|w| w.is_realistic()) {
        let index = w.index();
        for &k in ks {
            let mut sketch = ours_default(k);
            sketch.feed(w);
            let (precision, relative_error, _, overestimates) = score(w, &index, k, &sketch.top());
            let p = sketch.0.params();
            out.push(DefaultRun {
                workload: w.name.clone(),
                k,
                width: p.width,
                depth: p.depth,
                memory: sketch.memory_bytes(),
                precision,
                relative_error,
                overestimates,
            });
        }
    }
    out
}

pub struct MergeRow {
    pub workload: String,
    pub k: usize,
    pub shards: usize,
    pub precision: f64,
    pub relative_error: f64,
}

/// Merged precision: the reference gives no bound, so we measure it. The
/// stream is dealt round-robin to shards, each counted by a default sketch,
/// then merged; compared with one sketch that saw everything.
pub fn merges(loads: &[Workload], ks: &[usize]) -> Vec<MergeRow> {
    let mut rows = Vec::new();
    let chosen = |w: &&Workload| w.name == "zipf-1" || w.name.starts_with("gcide");
    for w in loads.iter().filter(chosen) {
        let index = w.index();
        for &k in ks {
            for shards in [1usize, 2, 4, 8] {
                let mut sketches: Vec<_> = (0..shards).map(|_| ours_default(k)).collect();
                for (i, item) in w.arrivals().enumerate() {
                    // `i % shards` is always one of the `shards` sketches.
                    if let Some(sketch) = sketches.get_mut(i % shards) {
                        sketch.add(item);
                    }
                }
                let [merged, rest @ ..] = sketches.as_mut_slice() else {
                    continue; // never: there is at least one shard
                };
                for shard in rest.iter() {
                    // Same defaults and seed: always mergeable.
                    let _ = merged.0.merge(&shard.0);
                }
                let (precision, relative_error, _, _) = score(w, &index, k, &merged.top());
                rows.push(MergeRow {
                    workload: w.name.clone(),
                    k,
                    shards,
                    precision,
                    relative_error,
                });
            }
        }
    }
    rows
}

pub fn merges_markdown(rows: &[MergeRow]) -> String {
    let mut md = String::from("\n## Merging shards\n\nThe stream dealt round-robin to n default sketches, merged with `HK.MERGE` semantics (1 shard = no merge):\n\n| workload | k | shards | precision | rel. error |\n|---|---|---|---|---|\n");
    for r in rows {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {:.3} | {:.4} |",
            r.workload, r.k, r.shards, r.precision, r.relative_error
        );
    }
    md
}
