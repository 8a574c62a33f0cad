//! Independent rows (reference section 1): how many item pairs share their
//! column in every row, against the independent expectation `pairs * w^-d`,
//! and what the old double-hashed layout cost in precision.

use crate::accuracy::score;
use crate::contenders::{Contender, OursSketch, SEED};
use crate::workloads::Workload;
use heavykeeper_sketch::item_hash::pairs_sharing_all_columns;
use heavykeeper_sketch::{HeavyKeeper, ItemHash, Params, RowLayout};
use std::fmt::Write;

pub struct Collisions {
    pub items: u64,
    pub width: usize,
    pub depth: usize,
    pub expected: f64,
    pub double_hash: u64,
    pub remixed: u64,
}

pub struct LayoutPrecision {
    pub workload: String,
    pub k: usize,
    pub width: u32,
    pub double_hash: f64,
    pub remixed: f64,
}

pub struct LayoutFigures {
    pub collisions: Vec<Collisions>,
    pub precision: Vec<LayoutPrecision>,
}

pub fn measure(loads: &[Workload]) -> LayoutFigures {
    let items = 200_000u64;
    let collisions = [(512usize, 3usize), (2048, 3), (512, 2)]
        .into_iter()
        .map(|(width, depth)| {
            let hashes = || (0..items).map(|i| ItemHash::of(format!("item:{i}").as_bytes(), SEED));
            let pairs = (items * (items - 1) / 2) as f64;
            let sharing = |layout| pairs_sharing_all_columns(hashes(), layout, width, depth);
            Collisions {
                items,
                width,
                depth,
                expected: pairs / (width as f64).powi(depth as i32),
                double_hash: sharing(RowLayout::DoubleHash),
                remixed: sharing(RowLayout::Remixed),
            }
        })
        .collect();
    let mut precision = Vec::new();
    for w in loads.iter().filter(|w| w.is_realistic()) {
        let index = w.index();
        // The default width, and a tight one where collisions matter more.
        for (k, width) in [
            (100usize, Params::default_width(100, false)),
            (100, 128),
            (1000, Params::default_width(1000, false)),
            (1000, 650),
        ] {
            let run = |layout| {
                let params = Params {
                    width,
                    layout,
                    ..Params::for_k(k as u32, SEED)
                };
                let mut sketch = OursSketch(HeavyKeeper::new(params, 0));
                sketch.feed(w);
                score(w, &index, k, &sketch.top()).0
            };
            precision.push(LayoutPrecision {
                workload: w.name.clone(),
                k,
                width,
                double_hash: run(RowLayout::DoubleHash),
                remixed: run(RowLayout::Remixed),
            });
        }
    }
    LayoutFigures {
        collisions,
        precision,
    }
}

impl LayoutFigures {
    pub fn markdown(&self) -> String {
        let mut md = String::from("\n## Independent rows\n\nPairs of items (`item:0` .. `item:199999`) whose columns coincide in every row, against `pairs * width^-depth` for independent rows. Encoding version 1 used plain double hashing; version 2 remixes every row (version-1 sketches keep their layout when loaded).\n\n| items | width x depth | expected | double hashing (v1) | remixed (v2) |\n|---|---|---|---|---|\n");
        for c in &self.collisions {
            let _ = writeln!(
                md,
                "| {} | {} x {} | {:.0} | {} | {} |",
                c.items, c.width, c.depth, c.expected, c.double_hash, c.remixed
            );
        }
        let _ = write!(md, "\nPrecision@k, default depth ({}) and decay ({}), the same streams and seed, only the row layout differs:\n\n| workload | k | width | double hashing (v1) | remixed (v2) |\n|---|---|---|---|---|\n", Params::DEFAULT_DEPTH, Params::DEFAULT_DECAY);
        for p in &self.precision {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {:.3} | {:.3} |",
                p.workload, p.k, p.width, p.double_hash, p.remixed
            );
        }
        md
    }
}
