//! Each key's rates at every refresh, for the table's sparklines and the
//! longer chart in a key's details.
//!
//! Only refreshes in which a key was listed are stored (a key missing from
//! one reads as zero then): memory follows what the trackers list, whatever
//! the churn of keys, and a key leaves with its last sample.

use crate::reading::hot_keys::KeyId;
use crate::reading::metric::Rates;
use std::collections::{HashMap, VecDeque};

pub struct History {
    /// Refreshes recorded so far.
    tick: u64,
    /// How many of the last refreshes are kept.
    span: usize,
    samples: HashMap<KeyId, VecDeque<(u64, Rates)>>,
}

impl History {
    pub fn new(span: usize) -> Self {
        History {
            tick: 0,
            span,
            samples: HashMap::new(),
        }
    }

    /// One refresh: every key listed, with its rates.
    pub fn record(&mut self, keys: &[(KeyId, Rates)]) {
        self.tick += 1;
        for (id, rates) in keys {
            let samples = self.samples.entry(id.clone()).or_default();
            samples.push_back((self.tick, *rates));
        }
        let oldest_kept = self.tick.saturating_sub(self.span as u64 - 1);
        self.samples.retain(|_, samples| {
            while samples.front().is_some_and(|&(tick, _)| tick < oldest_kept) {
                samples.pop_front();
            }
            !samples.is_empty()
        });
    }

    /// The key's rates at the last `n` refreshes (at most the span), oldest
    /// first; zero where it was not listed or before it was recorded.
    pub fn last(&self, id: &KeyId, n: usize) -> Vec<Rates> {
        let n = n.min(self.span);
        let mut out = vec![Rates::default(); n];
        let Some(samples) = self.samples.get(id) else {
            return out;
        };
        for &(tick, rates) in samples {
            let age = (self.tick - tick) as usize;
            // The newest refresh is the last entry; one older than `n` has none.
            if let Some(entry) = out.iter_mut().rev().nth(age) {
                *entry = rates;
            }
        }
        out
    }

    /// How many keys have samples (for the tests' memory check).
    #[cfg(test)]
    fn keys_held(&self) -> usize {
        self.samples.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reading::metric::Metric;

    fn key(name: &str) -> KeyId {
        crate::fixtures::key_id("n:1", 0, name.as_bytes())
    }

    fn reads(per_second: f64) -> Rates {
        Rates::only(Metric::Reads, per_second)
    }

    #[test]
    fn absent_refreshes_read_as_zero_oldest_first() {
        let mut history = History::new(5);
        history.record(&[(key("a"), reads(1.0))]);
        history.record(&[]);
        history.record(&[(key("a"), reads(3.0))]);
        let last = history.last(&key("a"), 4);
        let totals: Vec<f64> = last.iter().map(Rates::total).collect();
        assert_eq!(totals, [0.0, 1.0, 0.0, 3.0]);
        assert_eq!(history.last(&key("unknown"), 2), vec![Rates::default(); 2]);
    }

    #[test]
    fn only_the_span_is_kept_and_gone_keys_are_forgotten() {
        let mut history = History::new(3);
        history.record(&[(key("gone"), reads(9.0))]);
        for i in 0..5 {
            history.record(&[(key("stays"), reads(i as f64))]);
        }
        assert_eq!(history.keys_held(), 1);
        let last = history.last(&key("stays"), 10);
        let totals: Vec<f64> = last.iter().map(Rates::total).collect();
        assert_eq!(totals, [2.0, 3.0, 4.0]);
    }
}
