//! Merging sketches of the same shape (reference section 7): shards of one
//! stream, counted on different servers, combined into one top-k.
//!
//! Buckets: the same fingerprint (or one side empty) adds up; different
//! fingerprints keep the larger count (ties to the larger fingerprint, so
//! merging is commutative). Never subtract: that would model Misra-Gries and
//! under-count the elephants. Top-k: every member of either side is a
//! candidate, scored by the larger of its merged-bucket estimate and the sum
//! of both sides' estimates; the k best stay. Counts remain lower bounds as
//! long as the sources counted disjoint sub-streams, and saturate at the
//! bound of [`crate::count_bound`], like every other count.

use crate::bucket::Bucket;
use crate::count_bound::saturating_sum;
use crate::fading::Fading;
use crate::heavykeeper::HeavyKeeper;
use crate::item_hash::ItemHash;
use crate::topk::TopK;
use std::collections::HashSet;
use std::fmt;

/// Why two sketches cannot be merged.
#[derive(Clone, Debug, PartialEq)]
pub struct MergeError(pub &'static str);

impl fmt::Display for MergeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl std::error::Error for MergeError {}

impl HeavyKeeper {
    /// Folds `other` into `self`. Both must share width, depth, seed, decay,
    /// half-life and row layout (the same hash layout and the same units);
    /// `self` keeps its k and its random state.
    pub fn merge(&mut self, other: &HeavyKeeper) -> Result<(), MergeError> {
        self.check_mergeable(other)?;
        let other_factor = self.align_epochs(other);
        self.clock_ms = self.clock_ms.max(other.clock_ms);
        self.created_ms = self.created_ms.min(other.created_ms);
        self.arrivals = self.arrivals.saturating_add(other.arrivals);
        let candidates = self.candidates(other, other_factor);
        self.merge_buckets(other, other_factor);
        self.keep_best(candidates);
        self.lower_buckets_outside_topk();
        Ok(())
    }

    /// Can `other` be merged into `self`?
    pub fn check_mergeable(&self, other: &HeavyKeeper) -> Result<(), MergeError> {
        let (a, b) = (&self.params, &other.params);
        if a.width != b.width || a.depth != b.depth {
            return Err(MergeError("sketches differ in WIDTH or DEPTH"));
        }
        if a.seed != b.seed {
            return Err(MergeError("sketches differ in SEED"));
        }
        if a.decay.to_bits() != b.decay.to_bits() {
            return Err(MergeError("sketches differ in DECAY"));
        }
        let half_life = |p: &crate::Params| p.half_life_ms.map(f64::to_bits);
        if half_life(a) != half_life(b) {
            return Err(MergeError("sketches differ in HALFLIFE"));
        }
        if a.layout != b.layout {
            return Err(MergeError(
                "sketches differ in row layout (one was saved by encoding version 1)",
            ));
        }
        Ok(())
    }

    /// A new, empty merge destination: `template`'s shape and k, its clocks.
    pub fn empty_like(template: &HeavyKeeper) -> HeavyKeeper {
        let mut empty = HeavyKeeper::new(template.params, template.created_ms);
        empty.fading = template.fading;
        empty.clock_ms = template.clock_ms;
        empty
    }

    /// Empties an existing merge destination in place, keeping its k, its
    /// random state and its allocations, with `template`'s clocks (the
    /// destination becomes the merge of its sources, nothing of its own).
    /// `template` must be mergeable with `self`.
    pub fn clear_like(&mut self, template: &HeavyKeeper) {
        self.buckets.clear();
        self.topk.clear();
        self.fading = template.fading;
        self.clock_ms = template.clock_ms;
        self.created_ms = template.created_ms;
        self.arrivals = 0;
    }

    /// Brings `self` to the later of both landmarks; returns the factor that
    /// brings `other`'s stored masses there too.
    fn align_epochs(&mut self, other: &HeavyKeeper) -> f64 {
        let (Some(mine), Some(theirs)) = (self.fading, other.fading) else {
            return 1.0;
        };
        let target = mine.epoch().max(theirs.epoch());
        if target > mine.epoch() {
            let mut moved = mine;
            moved.move_to_epoch(target);
            self.fading = Some(moved);
            self.rescale(Fading::epoch_factor(mine.epoch(), target));
        }
        Fading::epoch_factor(theirs.epoch(), target)
    }

    fn merge_buckets(&mut self, other: &HeavyKeeper, other_factor: f64) {
        let cap = self.mass_cap();
        for (i, theirs) in other.buckets.iter().enumerate() {
            let theirs = Bucket {
                fingerprint: theirs.fingerprint,
                count: (theirs.count * other_factor).min(cap),
            };
            let Some(mine) = self.buckets.get(i) else {
                continue;
            };
            if let Some(merged) = merged_bucket(mine, theirs, cap) {
                self.buckets.set(i, merged);
            }
        }
    }

    /// Every member of either side with the sum of both sides' own
    /// estimates, taken before the buckets merge.
    fn candidates(&self, other: &HeavyKeeper, other_factor: f64) -> Vec<(Vec<u8>, f64)> {
        let cap = self.mass_cap();
        let mut seen = HashSet::new();
        let items = self.topk.heap_order().chain(other.topk.heap_order());
        items
            .filter(|(item, _)| seen.insert(*item))
            .map(|(item, _)| {
                let hash = ItemHash::of(item, self.params.seed);
                let sum = saturating_sum(
                    self.stored_estimate(item, hash),
                    other.stored_estimate(item, hash) * other_factor,
                    cap,
                );
                (item.to_vec(), sum)
            })
            .collect()
    }

    /// The k candidates with the best score, the larger of their merged
    /// bucket estimate and their summed estimate; ties by item bytes.
    fn keep_best(&mut self, candidates: Vec<(Vec<u8>, f64)>) {
        let mut scored: Vec<(Vec<u8>, f64)> = candidates
            .into_iter()
            .map(|(item, sum)| {
                let hash = ItemHash::of(&item, self.params.seed);
                let score = self.bucket_estimate(hash).max(sum);
                (item, score)
            })
            .filter(|(_, score)| *score > 0.0)
            .collect();
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        scored.truncate(self.params.k as usize);
        let mut topk = TopK::with_ties(self.params.k as usize, self.topk.ties());
        for (item, score) in scored {
            topk.insert(&item, ItemHash::of(&item, self.params.seed).value(), score);
        }
        self.topk = topk;
    }

    /// Selective increment trusts that no bucket outside the top-k counts
    /// more than `nmin` (one that does must be a fingerprint shared with a
    /// member). Merged buckets can break that: an item just outside both
    /// sides' top-k can sum past the new minimum. Its arrivals would then be
    /// dropped forever. Lowering such buckets to `nmin` (emptying them while
    /// the top-k has room) keeps every count a lower bound and lets the item
    /// in at its next arrival.
    fn lower_buckets_outside_topk(&mut self) {
        let nmin = self.nmin();
        let mut held: Vec<usize> = Vec::with_capacity(self.topk.len() * self.params.depth as usize);
        for (item, _) in self.topk.heap_order() {
            let hash = ItemHash::of(item, self.params.seed);
            let fingerprint = hash.fingerprint();
            held.extend(
                self.columns(hash)
                    .filter(|&i| self.buckets.get(i).is_some_and(|b| b.holds(fingerprint))),
            );
        }
        held.sort_unstable();
        self.buckets.map_counts(|i, count| {
            if count > nmin && held.binary_search(&i).is_err() {
                nmin
            } else {
                count
            }
        });
    }
}

/// One bucket of a merge, if it changes: same fingerprint or one side empty,
/// the counts add; otherwise the larger count wins (ties by fingerprint, so
/// the merge is commutative).
fn merged_bucket(mine: Bucket, theirs: Bucket, cap: f64) -> Option<Bucket> {
    if theirs.is_empty() {
        return None;
    }
    if mine.is_empty() {
        return Some(theirs);
    }
    if mine.fingerprint == theirs.fingerprint {
        return Some(Bucket {
            count: saturating_sum(mine.count, theirs.count, cap),
            ..mine
        });
    }
    let theirs_larger = (theirs.count, theirs.fingerprint) > (mine.count, mine.fingerprint);
    theirs_larger.then_some(theirs)
}
