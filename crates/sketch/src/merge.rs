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
use crate::out_of_memory::OutOfMemory;
use crate::topk::TopK;
use crate::watch::WatchSpec;
use std::fmt;

/// Why two sketches were not merged. Either way the destination is left
/// as it was.
#[derive(Clone, Debug, PartialEq)]
pub enum MergeError {
    /// The sketches differ in something both must share; the text says what.
    Mismatch(&'static str),
    /// The allocator refused the room the merge needs.
    OutOfMemory,
}

impl fmt::Display for MergeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MergeError::Mismatch(why) => f.write_str(why),
            MergeError::OutOfMemory => f.write_str("not enough memory to merge the sketches"),
        }
    }
}

impl std::error::Error for MergeError {}

impl From<OutOfMemory> for MergeError {
    fn from(_: OutOfMemory) -> Self {
        MergeError::OutOfMemory
    }
}

impl HeavyKeeper {
    /// Folds `other` into `self`. Both must share width, depth, seed, decay,
    /// half-life and row layout (the same hash layout and the same units);
    /// `self` keeps its k, its tie rule and its random state. Everything
    /// the merge allocates is reserved first: on an error nothing changed.
    pub fn merge(&mut self, other: &HeavyKeeper) -> Result<(), MergeError> {
        self.check_mergeable(other)?;
        let mut candidates = Candidates::try_collect(self, other)?;
        let mut topk = TopK::try_with_ties(self.params().k as usize, self.ties())?;
        topk.try_reserve_items(candidates.largest_bytes(self.params().k as usize))?;
        let mut held = Vec::new();
        held.try_reserve_exact(self.params().k as usize * self.params().depth as usize)
            .map_err(OutOfMemory::from)?;

        let other_factor = self.align_epochs(other);
        self.absorb_history(other);
        candidates.sum_estimates(self, other, other_factor);
        self.merge_buckets(other, other_factor);
        self.keep_best(candidates, topk);
        self.lower_buckets_outside_topk(held);
        Ok(())
    }

    /// Can `other` be merged into `self`?
    pub fn check_mergeable(&self, other: &HeavyKeeper) -> Result<(), MergeError> {
        let (a, b) = (self.params(), other.params());
        let differ = |what| Err(MergeError::Mismatch(what));
        if a.width != b.width || a.depth != b.depth {
            return differ("sketches differ in WIDTH or DEPTH");
        }
        if a.seed != b.seed {
            return differ("sketches differ in SEED");
        }
        if a.decay.to_bits() != b.decay.to_bits() {
            return differ("sketches differ in DECAY");
        }
        let half_life = |p: &crate::Params| p.half_life_ms.map(f64::to_bits);
        if half_life(a) != half_life(b) {
            return differ("sketches differ in HALFLIFE");
        }
        if a.layout != b.layout {
            return differ("sketches differ in row layout (one was saved by encoding version 1)");
        }
        Ok(())
    }

    /// A new, empty merge destination: every parameter of `template` (its
    /// shape, k and tie rule), its clocks.
    pub fn empty_like(template: &HeavyKeeper) -> HeavyKeeper {
        match Self::try_empty_like(template) {
            Ok(sketch) => sketch,
            Err(_) => std::alloc::handle_alloc_error(std::alloc::Layout::new::<Bucket>()),
        }
    }

    /// As [`Self::empty_like`], an allocation the allocator refuses an error.
    pub fn try_empty_like(template: &HeavyKeeper) -> Result<HeavyKeeper, OutOfMemory> {
        let mut empty =
            Self::try_new_with_ties(*template.params(), template.created_ms(), template.ties())?;
        empty.take_clocks_of(template);
        Ok(empty)
    }

    /// What an existing merge destination becomes before its sources are
    /// folded in: its own k, tie rule, random state and watch, nothing of
    /// its counts, `template`'s clocks (the destination becomes the merge
    /// of its sources). Built beside `self`, which stays as it is until the
    /// merge has succeeded. `template` must be mergeable with `self`.
    pub fn try_cleared_like(&self, template: &HeavyKeeper) -> Result<HeavyKeeper, OutOfMemory> {
        let mut cleared =
            Self::try_new_with_ties(*self.params(), template.created_ms(), self.ties())?;
        cleared.continue_random_stream_of(self);
        cleared.set_watch(self.watch().map(WatchSpec::try_clone).transpose()?);
        cleared.take_clocks_of(template);
        Ok(cleared)
    }

    /// Brings `self` to the later of both landmarks; returns the factor that
    /// brings `other`'s stored masses there too.
    fn align_epochs(&mut self, other: &HeavyKeeper) -> f64 {
        let (Some(mine), Some(theirs)) = (self.fading().copied(), other.fading().copied()) else {
            return 1.0;
        };
        let target = mine.epoch().max(theirs.epoch());
        if target > mine.epoch() {
            self.move_landmark_to(target);
        }
        Fading::epoch_factor(theirs.epoch(), target)
    }

    fn merge_buckets(&mut self, other: &HeavyKeeper, other_factor: f64) {
        let cap = self.mass_cap();
        for (i, theirs) in other.buckets().iter().enumerate() {
            let theirs = Bucket {
                fingerprint: theirs.fingerprint,
                count: (theirs.count * other_factor).min(cap),
            };
            let Some(mine) = self.buckets().get(i) else {
                continue;
            };
            if let Some(merged) = merged_bucket(mine, theirs, cap) {
                self.set_bucket(i, merged);
            }
        }
    }

    /// The k candidates with the best score, the larger of their merged
    /// bucket estimate and their summed estimate; ties by item bytes. `topk`
    /// is empty, with room for them.
    fn keep_best(&mut self, mut candidates: Candidates, mut topk: TopK) {
        for candidate in &mut candidates.entries {
            candidate.score = self.bucket_estimate(candidate.hash).max(candidate.score);
        }
        candidates.entries.retain(|c| c.score > 0.0);
        candidates.rank();
        candidates.entries.truncate(self.params().k as usize);
        for candidate in &candidates.entries {
            let item = candidates.item(candidate);
            topk.insert(item, candidate.hash.value(), candidate.score);
        }
        self.replace_topk(topk);
    }

    /// Selective increment trusts that no bucket outside the top-k counts
    /// more than `nmin` (one that does must be a fingerprint shared with a
    /// member). Merged buckets can break that: an item just outside both
    /// sides' top-k can sum past the new minimum. Its arrivals would then be
    /// dropped forever. Lowering such buckets to `nmin` (emptying them while
    /// the top-k has room) keeps every count a lower bound and lets the item
    /// in at its next arrival. `held` is empty, with room for k * depth.
    fn lower_buckets_outside_topk(&mut self, mut held: Vec<usize>) {
        let nmin = self.nmin();
        for (item, _) in self.topk().heap_order() {
            let hash = ItemHash::of(item, self.params().seed);
            let fingerprint = hash.fingerprint();
            held.extend(
                self.columns(hash)
                    .filter(|&i| self.buckets().get(i).is_some_and(|b| b.holds(fingerprint))),
            );
        }
        held.sort_unstable();
        self.lower_buckets_except(&held, nmin);
    }
}

/// Every member of either side once, its bytes copied (both sides' top-k
/// change or go while the merge runs), with the score it will be ranked by.
struct Candidates {
    bytes: Vec<u8>,
    entries: Vec<Candidate>,
}

struct Candidate {
    start: usize,
    len: usize,
    hash: ItemHash,
    score: f64,
}

impl Candidates {
    /// Both sides' members, each once; allocated in one go or not at all.
    fn try_collect(mine: &HeavyKeeper, theirs: &HeavyKeeper) -> Result<Self, OutOfMemory> {
        let members = || mine.topk().heap_order().chain(theirs.topk().heap_order());
        let mut bytes = Vec::new();
        bytes.try_reserve_exact(members().map(|(item, _)| item.len()).sum())?;
        let mut entries = Vec::new();
        entries.try_reserve_exact(members().count())?;
        let seed = mine.params().seed;
        for (item, _) in members() {
            entries.push(Candidate {
                start: bytes.len(),
                len: item.len(),
                hash: ItemHash::of(item, seed),
                score: 0.0,
            });
            bytes.extend_from_slice(item);
        }
        let mut candidates = Self { bytes, entries };
        candidates.dedup();
        Ok(candidates)
    }

    fn item(&self, candidate: &Candidate) -> &[u8] {
        item_at(&self.bytes, candidate)
    }

    /// A member of both sides once (sorting allocates nothing, as a set would).
    fn dedup(&mut self) {
        let bytes = &self.bytes;
        self.entries
            .sort_unstable_by(|a, b| item_at(bytes, a).cmp(item_at(bytes, b)));
        self.entries
            .dedup_by(|a, b| item_at(bytes, a) == item_at(bytes, b));
    }

    /// The most bytes `k` of them can take: room enough for the new top-k.
    fn largest_bytes(&mut self, k: usize) -> usize {
        if k < self.entries.len() {
            self.entries
                .select_nth_unstable_by(k, |a, b| b.len.cmp(&a.len));
        }
        self.entries.iter().take(k).map(|c| c.len).sum()
    }

    /// Each one's score so far: the sum of both sides' own estimates, taken
    /// before the buckets merge (`mine` already at the merged landmark).
    fn sum_estimates(&mut self, mine: &HeavyKeeper, theirs: &HeavyKeeper, their_factor: f64) {
        let cap = mine.mass_cap();
        let bytes = &self.bytes;
        for candidate in &mut self.entries {
            let item = item_at(bytes, candidate);
            candidate.score = saturating_sum(
                mine.stored_estimate(item, candidate.hash),
                theirs.stored_estimate(item, candidate.hash) * their_factor,
                cap,
            );
        }
    }

    /// Best score first, ties by item bytes (items are distinct: one order).
    fn rank(&mut self) {
        let bytes = &self.bytes;
        self.entries.sort_unstable_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| item_at(bytes, a).cmp(item_at(bytes, b)))
        });
    }
}

fn item_at<'a>(bytes: &'a [u8], candidate: &Candidate) -> &'a [u8] {
    bytes
        .get(candidate.start..candidate.start + candidate.len)
        .unwrap_or_default()
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
