//! The two tie rules side by side (`Ties::ByItem`, `HK.RESERVE`'s, and
//! `Ties::RedisBloom`, `TOPK.RESERVE`'s): the same streams, seed and shape,
//! only the rule differs. Precision, how often a member is expelled, and
//! whether a listing depends on the order the same arrivals came in.

use crate::accuracy::score;
use crate::contenders::{Contender, OursSketch};
use crate::workloads::Workload;
use heavykeeper_sketch::{HeavyKeeper, Params, Ties};
use std::fmt::Write;

const SEED: u64 = 11;

pub struct TieRow {
    pub workload: String,
    pub k: usize,
    pub shape: &'static str,
    pub by_item: RuleFigures,
    pub redisbloom: RuleFigures,
}

pub struct RuleFigures {
    pub precision: f64,
    pub expulsions: u64,
    /// Listings of one small stream, sent in several orders, that differ
    /// from the first order's.
    pub order_dependent: usize,
}

pub struct TieFigures {
    pub rows: Vec<TieRow>,
    pub orders: usize,
}

fn shapes(k: usize) -> [(&'static str, Params); 2] {
    let ours = Params::for_k(k as u32, SEED);
    let redisbloom = Params {
        width: 8,
        depth: 7,
        decay: 0.9,
        ..ours
    };
    [("default", ours), ("TOPK default 8x7", redisbloom)]
}

/// Fails only if a sketch of these small fixed shapes cannot be allocated.
pub fn measure(loads: &[Workload], quick: bool) -> Result<TieFigures, String> {
    let orders = if quick { 5 } else { 20 };
    let mut rows = Vec::new();
    let chosen = |w: &&Workload| {
        w.name == "zipf-1"
            || w.name == "uniform"
            || (w.is_realistic() && !w.name.starts_with("zipf"))
    };
    for w in loads.iter().filter(chosen) {
        let index = w.index();
        for k in [10usize, 100] {
            for (shape, params) in shapes(k) {
                let run = |ties| -> Result<RuleFigures, String> {
                    let mut hk = HeavyKeeper::try_new_with_ties(params, 0, ties)
                        .map_err(|e| e.to_string())?;
                    let mut expulsions = 0u64;
                    for item in w.arrivals() {
                        expulsions += u64::from(hk.add(item, 1, 0).is_some());
                    }
                    Ok(RuleFigures {
                        precision: score(w, &index, k, &OursSketch(hk).top()).0,
                        expulsions,
                        order_dependent: order_dependence(params, ties, orders)?,
                    })
                };
                rows.push(TieRow {
                    workload: w.name.clone(),
                    k,
                    shape,
                    by_item: run(Ties::ByItem)?,
                    redisbloom: run(Ties::RedisBloom)?,
                });
            }
        }
    }
    Ok(TieFigures { rows, orders })
}

/// A small stream with many equal counts (every item 1-4 times), sent in
/// `orders` shuffles: how many listings differ from the first one's.
fn order_dependence(params: Params, ties: Ties, orders: usize) -> Result<usize, String> {
    let mut stream: Vec<String> = (0..60)
        .flat_map(|i| vec![format!("t{i}"); 1 + i % 4])
        .collect();
    let wide = Params {
        width: 4096,
        ..params
    };
    let listing = |stream: &[String]| -> Result<Vec<Vec<u8>>, String> {
        let mut hk = HeavyKeeper::try_new_with_ties(wide, 0, ties).map_err(|e| e.to_string())?;
        for item in stream {
            hk.add(item.as_bytes(), 1, 0);
        }
        Ok(hk.ranked(0).iter().map(|r| r.item.to_vec()).collect())
    };
    let first = listing(&stream)?;
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut differing = 0;
    for _ in 1..orders {
        for i in (1..stream.len()).rev() {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            stream.swap(i, (state % (i as u64 + 1)) as usize);
        }
        if listing(&stream)? != first {
            differing += 1;
        }
    }
    Ok(differing)
}

impl TieFigures {
    pub fn markdown(&self) -> String {
        let mut md = format!(include_str!("../prose/ties-intro.md"), self.orders);
        for r in &self.rows {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {:.3} | {:.3} | {} | {} | {} | {} |",
                r.workload,
                r.k,
                r.shape,
                r.by_item.precision,
                r.redisbloom.precision,
                r.by_item.expulsions,
                r.redisbloom.expulsions,
                r.by_item.order_dependent,
                r.redisbloom.order_dependent,
            );
        }
        md
    }
}
