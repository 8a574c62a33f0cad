//! Merged precision: the reference gives no bound, so we measure it. The
//! stream is dealt round-robin to shards, each counted by a default sketch,
//! then merged; compared with one sketch that saw everything.

use crate::accuracy::score;
use crate::contenders::{ours_default, Contender};
use crate::workloads::Workload;
use std::fmt::Write;

pub struct MergeRow {
    pub workload: String,
    pub k: usize,
    pub shards: usize,
    pub precision: f64,
    pub relative_error: f64,
}

pub fn measure(loads: &[Workload], ks: &[usize]) -> Vec<MergeRow> {
    let mut rows = Vec::new();
    for w in loads
        .iter()
        .filter(|w| w.name == "zipf-1" || w.name.starts_with("gcide"))
    {
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

pub fn markdown(rows: &[MergeRow]) -> String {
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
