//! Fading (issue: half-life): how fast a new hot set takes over the listing,
//! and how close the reported rate of a steady item is to its true rate.

use heavykeeper_sketch::{HeavyKeeper, Params};
use rand::distr::Distribution;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::Zipf;
use std::collections::HashMap;
use std::fmt::Write;

const K: usize = 100;
const HALF_LIFE_MS: f64 = 10_000.0;
const START_MS: i64 = 1_700_000_000_000;

pub struct FadingFigures {
    pub background_per_second: usize,
    /// (half-lives after the shift, fraction of k listed that are new-set
    /// items of the exact recent top-k, fraction of that top-k that is new)
    pub takeover: Vec<(f64, f64, f64)>,
    /// Half-lives until the listing reached 95% of the new recent top-k.
    pub takeover_half_lives: Option<f64>,
    /// Half-lives until the exact recent top-k itself was 95% new items: the
    /// floor any sketch with this half-life can reach.
    pub truth_half_lives: Option<f64>,
    /// (true rate, reported rate)
    pub rates: Vec<(f64, f64)>,
}

impl FadingFigures {
    pub fn markdown(&self) -> String {
        let half_lives =
            |h: Option<f64>| h.map_or("never (within 10)".into(), |h| format!("{h:.2}"));
        let mut md = format!(
            "\n## Fading (half-life)\n\nk = {K}, half-life {} s, Zipf(1.0) background of {} arrivals/s over two disjoint hot sets; the set switches after 10 half-lives. Precision is against the exact forward-decayed top-{K} at that moment.\n\nTakeover: the listing is >= 95% the new recent top-{K} after **{}** half-lives.\n\nFor reference, the exact recent top-{K} itself is >= 95% new items after {} half-lives: the listing can only follow the truth.\n\n| half-lives after the shift | listed new items in the exact recent top-k | new items in the exact recent top-k |\n|---|---|---|\n",
            HALF_LIFE_MS / 1000.0,
            self.background_per_second,
            half_lives(self.takeover_half_lives),
            half_lives(self.truth_half_lives),
        );
        for (h, p, t) in &self.takeover {
            let _ = writeln!(md, "| {h:.2} | {p:.3} | {t:.3} |");
        }
        md.push_str("\nSteady items, after 10 half-lives at a constant rate among the background:\n\n| true req/s | reported req/s | error |\n|---|---|---|\n");
        for (truth, reported) in &self.rates {
            let _ = writeln!(
                md,
                "| {truth:.0} | {reported:.1} | {:+.2}% |",
                (reported - truth) / truth * 100.0
            );
        }
        md
    }
}

/// `count` faded over `ms` milliseconds.
fn faded(count: f64, ms: i64) -> f64 {
    count * (-(ms as f64) / HALF_LIFE_MS).exp2()
}

/// Exact forward-decayed counts, for the truth: each item's count when it
/// last arrived, and when.
#[derive(Default)]
struct ExactDecay(HashMap<Vec<u8>, (f64, i64)>);

impl ExactDecay {
    fn add(&mut self, item: &[u8], t: i64) {
        let e = self.0.entry(item.to_vec()).or_insert((0.0, t));
        *e = (faded(e.0, t - e.1) + 1.0, t);
    }

    fn top(&self, k: usize, t: i64) -> Vec<(&[u8], f64)> {
        let mut all: Vec<(&[u8], f64)> = (self.0.iter())
            .map(|(item, &(c, last))| (item.as_slice(), faded(c, t - last)))
            .collect();
        all.sort_by(|a, b| b.1.total_cmp(&a.1));
        all.truncate(k);
        all
    }
}

/// Fails only if the background's fixed Zipf parameters were invalid.
pub fn measure(quick: bool) -> Result<FadingFigures, String> {
    let per_second = if quick { 2_000 } else { 10_000 };
    let per_ms = (per_second / 1000).max(1);
    let params = Params {
        half_life_ms: Some(HALF_LIFE_MS),
        ..Params::for_k(K as u32, 7)
    };
    let mut sketch = HeavyKeeper::new(params, START_MS);
    let mut exact = ExactDecay::default();
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    let zipf = Zipf::new(50_000.0, 1.0).map_err(|e| format!("fading's Zipf: {e}"))?;
    // `steady:20` at 20 a second, and so on.
    let steady =
        [20.0, 200.0, 2000.0].map(|rate: f64| (format!("steady:{rate}").into_bytes(), rate));
    let shift_at = START_MS + (10.0 * HALF_LIFE_MS) as i64;
    let end = shift_at + (10.0 * HALF_LIFE_MS) as i64;
    // A checkpoint every quarter of a half-life after the shift.
    let quarter = (0.25 * HALF_LIFE_MS) as i64;
    let mut takeover = Vec::new();
    let mut owed = vec![0.0f64; steady.len()];
    for t in START_MS..end {
        let set = if t < shift_at { "a" } else { "b" };
        for _ in 0..per_ms {
            let item = format!("{set}:{}", zipf.sample(&mut rng) as u64).into_bytes();
            sketch.add(&item, 1, t);
            exact.add(&item, t);
        }
        for ((item, rate), owed) in steady.iter().zip(&mut owed) {
            *owed += rate / 1000.0;
            while *owed >= 1.0 {
                *owed -= 1.0;
                sketch.add(item, 1, t);
                exact.add(item, t);
            }
        }
        if t >= shift_at && (t - shift_at) % quarter == 0 {
            let truth = exact.top(K, t);
            let threshold = truth.last().map_or(0.0, |x| x.1);
            let truth_counts: HashMap<&[u8], f64> = truth.iter().copied().collect();
            let is_new = |item: &[u8]| item.starts_with(b"b:");
            let listed = sketch.ranked(t);
            let hits = listed
                .iter()
                .filter(|r| {
                    is_new(r.item) && truth_counts.get(r.item).is_some_and(|&c| c >= threshold)
                })
                .count();
            let truth_new = truth.iter().filter(|(item, _)| is_new(item)).count();
            takeover.push((
                (t - shift_at) as f64 / HALF_LIFE_MS,
                hits as f64 / K as f64,
                truth_new as f64 / K as f64,
            ));
        }
    }
    // The first checkpoint where the listing (or the truth) was 95% new.
    let first = |new: fn(&(f64, f64, f64)) -> f64| takeover.iter().find(|x| new(x) >= 0.95);
    let takeover_half_lives = first(|x| x.1).map(|x| x.0);
    let truth_half_lives = first(|x| x.2).map(|x| x.0);
    let rates = steady
        .iter()
        .map(|(item, rate)| (*rate, sketch.rate(sketch.count(item, end - 1), end - 1)))
        .collect();
    Ok(FadingFigures {
        background_per_second: per_second,
        takeover,
        takeover_half_lives,
        truth_half_lives,
        rates,
    })
}
