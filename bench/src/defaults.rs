//! Our sketch with the defaults `HK.RESERVE key k` picks, on every workload
//! that a user's stream resembles (Zipf and the real texts).

use crate::accuracy;
use crate::contenders::{ours_default, Contender};
use crate::workloads::Workload;

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

pub fn default_parameters(loads: &[Workload], ks: &[usize]) -> Vec<DefaultRun> {
    let mut out = Vec::new();
    for w in loads.iter().filter(|w| w.is_realistic()) {
        let index = w.index();
        for &k in ks {
            let mut sketch = ours_default(k);
            sketch.feed(w);
            let (precision, relative_error, _, overestimates) =
                accuracy::score(w, &index, k, &sketch.top());
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
