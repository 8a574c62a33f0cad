//! The HeavyKeeper sketch ("Minimum" version, Gong et al., ToN 2019) with
//! selective increment, the `nmin + 1` admission rule, weighted increments by
//! geometric skipping, an in-sketch PRNG and optional forward-decay fading.

use crate::arrived::Arrived;
use crate::bucket::Bucket;
use crate::bucket_array::BucketArray;
use crate::bucket_update::{Arrival, BucketUpdate, Counted, Rows};
use crate::count_bound::max_mass;
use crate::decay::DecayCurve;
use crate::fading::{clamp_time, Fading};
use crate::item_hash::ItemHash;
use crate::out_of_memory::OutOfMemory;
use crate::params::Params;
use crate::ties::Ties;
use crate::topk::{rank_order, TopK};
use crate::watch::{Watch, WatchSpec};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// A member of the top-k as reported to users.
#[derive(Clone, Debug, PartialEq)]
pub struct Ranked<'a> {
    pub item: &'a [u8],
    /// Current count: arrivals, decayed to the read time when fading.
    pub count: f64,
}

/// The sketch: buckets, top-k store, PRNG and clock. Not `Clone`: a
/// sketch is as large as a client made it, and a copy that cannot be
/// allocated must be an error, never an abort ([`Self::try_clone`]).
#[derive(Debug)]
pub struct HeavyKeeper {
    params: Params,
    /// `depth` rows of `width` buckets, row after row.
    buckets: BucketArray,
    topk: TopK,
    rng: ChaCha8Rng,
    curve: DecayCurve,
    fading: Option<Fading>,
    /// Latest arrival time applied (fading sketches only; 0 otherwise).
    clock_ms: i64,
    created_ms: i64,
    /// Total weight of all arrivals, saturating.
    arrivals: u64,
    /// The weight of one arrival at the clock, remembered with the clock
    /// and landmark it was computed for: thousands of arrivals share one
    /// millisecond, and `exp2` is the largest cost of a fading arrival.
    /// Derived, never saved.
    clock_unit: ClockUnit,
    /// Who is told when items enter, leave, turn hot or cool (`HK.WATCH`).
    watch: Option<Watch>,
}

/// What a saved sketch holds, read back and checked by the decoder: the
/// one way into a sketch other than [`HeavyKeeper::try_new_with_ties`].
pub(crate) struct Saved {
    pub(crate) params: Params,
    pub(crate) buckets: BucketArray,
    pub(crate) topk: TopK,
    pub(crate) rng: ChaCha8Rng,
    pub(crate) fading: Option<Fading>,
    /// As saved: 0 without fading.
    pub(crate) clock_ms: i64,
    pub(crate) created_ms: i64,
    pub(crate) arrivals: u64,
    pub(crate) watch: Option<WatchSpec>,
}

/// Buckets from which [`HeavyKeeper::upcoming`] prefetches: past a core's
/// first-level cache and a good share of its second, where a server's
/// other work evicts them between commands.
const PREFETCH_FROM_BYTES: usize = 256 << 10;

/// An item hashed ahead of its arrival, its buckets on their way into the
/// cache ([`HeavyKeeper::upcoming`]). Only the sketch that made it may count it.
#[derive(Clone, Copy, Debug)]
pub struct Upcoming<'a> {
    item: &'a [u8],
    hash: ItemHash,
    /// Whose hash it is: another sketch hashes the item again.
    seed: u64,
}

impl<'a> Upcoming<'a> {
    pub fn item(&self) -> &'a [u8] {
        self.item
    }
}

/// `g(clock)` for one `(clock, epoch)`.
#[derive(Clone, Copy, Debug)]
struct ClockUnit {
    clock_ms: i64,
    epoch: i64,
    unit: f64,
}

impl ClockUnit {
    const UNKNOWN: Self = Self {
        clock_ms: i64::MIN,
        epoch: i64::MIN,
        unit: f64::NAN,
    };

    fn get(&mut self, fading: &Fading, clock_ms: i64) -> f64 {
        if self.clock_ms != clock_ms || self.epoch != fading.epoch() {
            *self = Self {
                clock_ms,
                epoch: fading.epoch(),
                unit: fading.weight(clock_ms),
            };
        }
        self.unit
    }
}

impl HeavyKeeper {
    /// An empty sketch. `params` must have passed [`Params::validate`].
    pub fn new(params: Params, created_ms: i64) -> Self {
        match Self::try_new(params, created_ms) {
            Ok(sketch) => sketch,
            Err(_) => std::alloc::handle_alloc_error(std::alloc::Layout::new::<Bucket>()),
        }
    }

    /// As [`Self::new`], but an allocation the allocator refuses is an
    /// error, not an abort: the sizes come from a client.
    pub fn try_new(params: Params, created_ms: i64) -> Result<Self, OutOfMemory> {
        Self::try_new_with_ties(params, created_ms, Ties::ByItem)
    }

    /// As [`Self::try_new`], settling ties by `ties` for good.
    pub fn try_new_with_ties(
        params: Params,
        created_ms: i64,
        ties: Ties,
    ) -> Result<Self, OutOfMemory> {
        let cells = params.width as usize * params.depth as usize;
        let buckets = BucketArray::try_new(cells, params.half_life_ms.is_some())?;
        let topk = TopK::try_with_ties(params.k as usize, ties)?;
        Ok(Self::with_parts(params, created_ms, buckets, topk))
    }

    fn with_parts(params: Params, created_ms: i64, buckets: BucketArray, topk: TopK) -> Self {
        let created_ms = clamp_time(created_ms);
        Self {
            buckets,
            topk,
            rng: ChaCha8Rng::seed_from_u64(params.seed),
            curve: DecayCurve::new(params.decay),
            fading: params
                .half_life_ms
                .map(|h| Fading::starting_at(h, created_ms)),
            clock_ms: params.half_life_ms.map_or(0, |_| created_ms),
            created_ms,
            arrivals: 0,
            clock_unit: ClockUnit::UNKNOWN,
            watch: None,
            params,
        }
    }

    /// How this sketch settles equal counts.
    pub fn ties(&self) -> Ties {
        self.topk.ties()
    }

    pub fn params(&self) -> &Params {
        &self.params
    }

    pub fn created_ms(&self) -> i64 {
        self.created_ms
    }

    /// Latest arrival time applied, for fading sketches.
    pub fn clock_ms(&self) -> Option<i64> {
        self.fading.map(|_| self.clock_ms)
    }

    pub fn arrivals(&self) -> u64 {
        self.arrivals
    }

    pub fn fading(&self) -> Option<&Fading> {
        self.fading.as_ref()
    }

    /// Counts `weight` arrivals of `item` at `time_ms` (ignored without
    /// fading). Returns the item this pushed out of the top-k, if any.
    pub fn add(&mut self, item: &[u8], weight: u64, time_ms: i64) -> Option<Box<[u8]>> {
        self.add_upcoming(self.hashed(item), weight, time_ms)
    }

    /// Hashes `item` and starts loading its buckets into the cache, for
    /// [`Self::add_upcoming`]: a batch that looks one item ahead overlaps
    /// that item's cache misses with the work on the one before (what makes a
    /// large sketch cost more per arrival than a small one).
    #[inline(always)]
    pub fn upcoming<'a>(&self, item: &'a [u8]) -> Upcoming<'a> {
        let upcoming = self.hashed(item);
        // A small sketch stays in cache: finding its columns twice would
        // cost more than it saves (measured, `cargo bench`).
        if self.buckets.bytes() >= PREFETCH_FROM_BYTES {
            for i in self.columns(upcoming.hash) {
                self.buckets.prefetch(i);
            }
        }
        upcoming
    }

    /// `item` with its hash, nothing prefetched: for an item counted at once.
    #[inline]
    pub(crate) fn hashed<'a>(&self, item: &'a [u8]) -> Upcoming<'a> {
        Upcoming {
            item,
            hash: ItemHash::of(item, self.params.seed),
            seed: self.params.seed,
        }
    }

    /// [`Self::add`] of an item hashed ahead by [`Self::upcoming`].
    pub fn add_upcoming(
        &mut self,
        item: Upcoming<'_>,
        weight: u64,
        time_ms: i64,
    ) -> Option<Box<[u8]>> {
        self.arrive(item, weight, time_ms)
            .expelled
            .map(|(item, _, _)| item)
    }

    /// `weight` arrivals of an item already hashed, from a sampled stream in
    /// which each arrival kept stands for `scale` (1: a stream counted
    /// whole). `hash` must be `ItemHash::of(item, params.seed)` (a caller
    /// that coalesces arrivals by hash need not hash twice).
    ///
    /// Counts stay in the stream's units (a weight of 16 adds 16), but the
    /// buckets' decay plays in the sample's: see the bucket update's `decay`.
    /// Returns what the arrival did to the top-k (for a caller that keeps
    /// something of its own per member).
    pub fn add_sampled(
        &mut self,
        item: &[u8],
        hash: ItemHash,
        weight: u64,
        time_ms: i64,
        scale: f64,
    ) -> Arrived {
        debug_assert_eq!(hash, ItemHash::of(item, self.params.seed));
        let upcoming = Upcoming {
            item,
            hash,
            seed: self.params.seed,
        };
        let scale = if scale.is_finite() {
            scale.clamp(1.0, weight.max(1) as f64)
        } else {
            1.0
        };
        self.arrive_scaled(upcoming, weight, time_ms, scale, true)
    }

    /// The insert, for an item whose hash is known.
    pub(crate) fn arrive(&mut self, upcoming: Upcoming<'_>, weight: u64, time_ms: i64) -> Arrived {
        self.arrive_scaled(upcoming, weight, time_ms, 1.0, false)
    }

    fn arrive_scaled(
        &mut self,
        upcoming: Upcoming<'_>,
        weight: u64,
        time_ms: i64,
        scale: f64,
        whole_levels: bool,
    ) -> Arrived {
        let item = upcoming.item;
        let hash = if upcoming.seed == self.params.seed {
            upcoming.hash
        } else {
            ItemHash::of(item, self.params.seed)
        };
        if weight == 0 {
            return Arrived::default();
        }
        self.arrivals = self.arrivals.saturating_add(weight);
        let (unit, now_unit) = self.advance_clock(time_ms);
        if unit.is_nan() || unit <= 0.0 {
            // So old that its weight underflowed: it no longer counts.
            return Arrived::default();
        }
        let arrival = Arrival {
            hash,
            weight,
            unit,
            now_unit,
            scale,
            whole_levels,
        };
        let nmin = self.nmin();
        match self.update_buckets(arrival, item, nmin) {
            Some(counted) => self.update_topk(item, arrival, nmin, counted),
            None => Arrived::default(),
        }
    }

    /// Step 5 of the insert: a member's count follows its estimate; a
    /// non-member is admitted when its estimate passes `nmin` by at most
    /// this arrival's mass, evicting the minimum if the top-k is full.
    fn update_topk(
        &mut self,
        item: &[u8],
        arrival: Arrival,
        nmin: f64,
        counted: Counted,
    ) -> Arrived {
        let Counted { estimate, member } = counted;
        let reaches = if self.topk.ties().admits_at_minimum() {
            estimate >= nmin
        } else {
            estimate > nmin
        };
        if !reaches {
            // A member already counts at least nmin; a non-member needs more.
            return Arrived::default();
        }
        // Membership is looked up only when the answer can matter: most
        // arrivals (the long tail) end in the buckets, never touching the index.
        let hash = arrival.hash.value();
        if let Some(id) = member.or_else(|| self.topk.find(hash, item)) {
            return Arrived {
                hash,
                expelled: None,
                member: self.topk.raise(id, estimate),
                mass: arrival.mass(),
            };
        }
        if estimate > nmin + arrival.mass() {
            // A jump past nmin + weight can only come from a fingerprint
            // shared with a member: ignoring it keeps counts honest.
            return Arrived::default();
        }
        if !self.topk.can_admit(item.len()) {
            return Arrived::default();
        }
        // Admitted: `can_admit` said the top-k has room for one at least.
        let expelled = self.topk.insert(item, hash, estimate);
        Arrived {
            hash,
            expelled: expelled.map(|e| (e.item, e.hash, e.count)),
            member: Some((0.0, estimate)),
            mass: arrival.mass(),
        }
    }

    /// The count a non-member must pass to enter: the real minimum of a full
    /// top-k (even one faded below a single arrival: fading scales every
    /// stored value alike, so non-member buckets still sit at or below it),
    /// 0 while there is room.
    pub(crate) fn nmin(&self) -> f64 {
        // A RedisBloom heap's root is an empty slot (0) while there is room.
        if self.topk.is_full() || self.topk.ties() == Ties::RedisBloom {
            self.topk.min_count().unwrap_or(0.0)
        } else {
            0.0
        }
    }

    /// Is `item` (hashed as the sketch hashes it) a member of the top-k,
    /// however faded?
    pub fn is_member(&self, item: &[u8], hash: ItemHash) -> bool {
        debug_assert_eq!(hash, ItemHash::of(item, self.params.seed));
        self.topk.find(hash.value(), item).is_some()
    }

    /// Is `item` in the top-k at `now_ms`?
    pub fn contains(&self, item: &[u8], now_ms: i64) -> bool {
        let hash = ItemHash::of(item, self.params.seed);
        self.member_count(item, hash)
            .is_some_and(|count| count >= self.unit_at(now_ms))
    }

    /// A member's stored count; `None` for an item that is no member.
    fn member_count(&self, item: &[u8], hash: ItemHash) -> Option<f64> {
        self.topk.count(self.topk.find(hash.value(), item)?)
    }

    /// Estimated current count of `item` (not cut off below one arrival, so
    /// that a fading rate stays meaningful): for a listed member, exactly what
    /// [`Self::ranked`] reports; otherwise a sketch estimate capped at the
    /// top-k minimum (a larger one could only be a fingerprint collision).
    pub fn count(&self, item: &[u8], now_ms: i64) -> f64 {
        let hash = ItemHash::of(item, self.params.seed);
        self.stored_estimate(item, hash) / self.unit_at(now_ms)
    }

    /// `count` in stored units: the member's count, or the bucket estimate
    /// capped at the top-k minimum.
    pub(crate) fn stored_estimate(&self, item: &[u8], hash: ItemHash) -> f64 {
        self.member_count(item, hash)
            .unwrap_or_else(|| self.bucket_estimate(hash).min(self.nmin()))
    }

    /// What taking a bucket would cost `item` now: the arrivals (their mean
    /// and variance) that decaying the cheapest of its mapped buckets held
    /// by others down to nothing takes, in the stream's units for a sample
    /// in which each arrival stands for `scale`. A measure of what an item
    /// may have lost before it held a bucket of its own: HeavyKeeper's
    /// undercount beside the decays it suffers once it holds one. 0 while a
    /// mapped bucket is empty.
    pub fn claim_cost(&self, item: &[u8], scale: f64, now_ms: i64) -> (f64, f64) {
        let hash = ItemHash::of(item, self.params.seed);
        let fingerprint = hash.fingerprint();
        let unit = self.unit_at(now_ms) * scale.max(1.0);
        let cheapest = self
            .columns(hash)
            .filter_map(|i| self.buckets.get(i))
            .filter(|b| !b.holds(fingerprint))
            .map(|b| if b.is_empty() { 0.0 } else { b.count / unit })
            .fold(f64::INFINITY, f64::min);
        if !cheapest.is_finite() || cheapest <= 0.0 {
            return (0.0, 0.0);
        }
        let (mut mean, mut variance) = (0.0, 0.0);
        let levels = (cheapest.ceil() as usize).min(self.curve.max_decays());
        for level in 1..=levels {
            let p = self.curve.decay_probability(level as f64);
            if p <= 0.0 {
                return (f64::INFINITY, f64::INFINITY);
            }
            mean += 1.0 / p;
            variance += (1.0 - p) / (p * p);
        }
        let scale = scale.max(1.0);
        (mean * scale, variance * scale * scale)
    }

    /// The largest count among the item's buckets holding its fingerprint.
    pub(crate) fn bucket_estimate(&self, hash: ItemHash) -> f64 {
        let fingerprint = hash.fingerprint();
        self.columns(hash)
            .filter_map(|i| self.buckets.get(i))
            .filter(|b| b.holds(fingerprint))
            .map(|b| b.count)
            .fold(0.0, f64::max)
    }

    /// The top-k at `now_ms`, highest count first, ties by item bytes; items
    /// faded below one arrival are left out.
    pub fn ranked(&self, now_ms: i64) -> Vec<Ranked<'_>> {
        self.top(now_ms, usize::MAX)
    }

    /// The `n` highest members at `now_ms`, in [`Self::ranked`]'s order,
    /// without sorting the rest: O(k + n log n).
    pub fn top(&self, now_ms: i64, n: usize) -> Vec<Ranked<'_>> {
        let now_unit = self.unit_at(now_ms);
        // Each member with its heap position: RedisBloom lists ties in heap order.
        let mut members: Vec<(usize, &[u8], f64)> = self
            .topk
            .heap_order()
            .enumerate()
            .filter(|&(_, (_, count))| count >= now_unit)
            .map(|(place, (item, count))| (place, item, count))
            .collect();
        let ties = self.topk.ties();
        let order = |a: &(usize, &[u8], f64), b: &(usize, &[u8], f64)| match ties {
            Ties::ByItem => rank_order(&(a.1, a.2), &(b.1, b.2)),
            Ties::RedisBloom => b.2.total_cmp(&a.2).then(a.0.cmp(&b.0)),
        };
        if n < members.len() {
            if n == 0 {
                return Vec::new();
            }
            members.select_nth_unstable_by(n - 1, order);
            members.truncate(n);
        }
        members.sort_unstable_by(order);
        members
            .into_iter()
            .map(|(_, item, count)| Ranked {
                item,
                count: count / now_unit,
            })
            .collect()
    }

    /// Arrivals per second that a current `count` stands for: `λ · count`
    /// with fading, else the average since the sketch was created.
    pub fn rate(&self, count: f64, now_ms: i64) -> f64 {
        match &self.fading {
            Some(f) => f.lambda_per_second() * count,
            None => {
                let elapsed_s = now_ms.saturating_sub(self.created_ms).max(1) as f64 / 1000.0;
                count / elapsed_s
            }
        }
    }

    /// Number of members listed at `now_ms`.
    pub fn members(&self, now_ms: i64) -> usize {
        let now_unit = self.unit_at(now_ms);
        self.topk
            .heap_order()
            .filter(|&(_, count)| count >= now_unit)
            .count()
    }

    /// Bytes held by the sketch, items included.
    pub fn memory_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.buckets.heap_bytes()
            + self.topk.heap_bytes()
            + self.curve.table_bytes()
            + self.watch.as_ref().map_or(0, Watch::bytes)
    }

    /// A copy, or an error where `clone` would abort: the buckets and the
    /// top-k are as large as a client made them. A watch's state (what was
    /// announced) is left to be derived afresh, as after a load.
    pub fn try_clone(&self) -> Result<Self, OutOfMemory> {
        Ok(Self {
            params: self.params,
            buckets: self.buckets.try_clone()?,
            topk: self.topk.try_clone()?,
            rng: self.rng.clone(),
            curve: self.curve.clone(),
            fading: self.fading,
            clock_ms: self.clock_ms,
            created_ms: self.created_ms,
            arrivals: self.arrivals,
            clock_unit: self.clock_unit,
            watch: self.watch.as_ref().map(Watch::try_clone_spec).transpose()?,
        })
    }

    /// A sketch as it was saved; its watch's state is derived afresh.
    pub(crate) fn restore(saved: Saved) -> Self {
        Self {
            rng: saved.rng,
            fading: saved.fading,
            clock_ms: saved.clock_ms,
            arrivals: saved.arrivals,
            watch: saved.watch.map(Watch::new),
            ..Self::with_parts(saved.params, saved.created_ms, saved.buckets, saved.topk)
        }
    }

    /// The clock as it is saved: 0 for a sketch without fading.
    pub(crate) fn stored_clock_ms(&self) -> i64 {
        self.clock_ms
    }

    /// The random stream as it is saved.
    pub(crate) fn rng(&self) -> &ChaCha8Rng {
        &self.rng
    }

    /// The watch the sketch holds: its own type, with its own rules.
    pub(crate) fn watch_held(&self) -> Option<&Watch> {
        self.watch.as_ref()
    }

    pub(crate) fn watch_slot(&mut self) -> &mut Option<Watch> {
        &mut self.watch
    }

    /// The watch, to change, with the top-k it reads.
    pub(crate) fn watch_and_topk(&mut self) -> (Option<&mut Watch>, &TopK) {
        (self.watch.as_mut(), &self.topk)
    }

    pub(crate) fn buckets(&self) -> &BucketArray {
        &self.buckets
    }

    pub(crate) fn topk(&self) -> &TopK {
        &self.topk
    }

    /// Takes the history of a sketch merged into this one: the later
    /// clock, the earlier creation, the arrivals of both.
    pub(crate) fn absorb_history(&mut self, other: &HeavyKeeper) {
        self.clock_ms = self.clock_ms.max(other.clock_ms);
        self.created_ms = self.created_ms.min(other.created_ms);
        self.arrivals = self.arrivals.saturating_add(other.arrivals);
    }

    /// Takes `template`'s clocks (a merge destination starts at its first
    /// source's time and landmark).
    pub(crate) fn take_clocks_of(&mut self, template: &HeavyKeeper) {
        self.fading = template.fading;
        self.clock_ms = template.clock_ms;
        self.created_ms = template.created_ms;
    }

    /// Draws on from where `other`'s random stream stands.
    pub(crate) fn continue_random_stream_of(&mut self, other: &HeavyKeeper) {
        self.rng = other.rng.clone();
    }

    /// Moves a fading sketch's landmark forward to `epoch`, every stored
    /// mass rescaled to it (a merge brings both sides to the later one).
    pub(crate) fn move_landmark_to(&mut self, epoch: i64) {
        let Some(mut fading) = self.fading else {
            return;
        };
        let from = fading.epoch();
        if epoch <= from {
            return;
        }
        fading.move_to_epoch(epoch);
        self.fading = Some(fading);
        self.rescale(Fading::epoch_factor(from, epoch));
    }

    pub(crate) fn set_bucket(&mut self, index: usize, bucket: Bucket) {
        self.buckets.set(index, bucket);
    }

    /// A new top-k of the same capacity and tie rule (a merge's).
    pub(crate) fn replace_topk(&mut self, topk: TopK) {
        debug_assert_eq!(topk.capacity(), self.topk.capacity());
        debug_assert_eq!(topk.ties(), self.topk.ties());
        self.topk = topk;
    }

    /// Lowers every bucket above `line` to it, but those at the sorted
    /// indexes `kept`.
    pub(crate) fn lower_buckets_except(&mut self, kept: &[usize], line: f64) {
        self.buckets.map_counts(|i, count| {
            if count > line && kept.binary_search(&i).is_err() {
                line
            } else {
                count
            }
        });
    }

    /// Moves the clock to `time_ms` and renormalises if due. Returns the
    /// stored weight of one arrival at `time_ms` and of one at the clock.
    fn advance_clock(&mut self, time_ms: i64) -> (f64, f64) {
        let Some(mut fading) = self.fading else {
            return (1.0, 1.0);
        };
        let time_ms = clamp_time(time_ms);
        self.clock_ms = self.clock_ms.max(time_ms);
        if let Some((epoch, factor)) = fading.renormalisation(self.clock_ms) {
            fading.move_to_epoch(epoch);
            self.fading = Some(fading);
            self.rescale(factor);
        }
        let now_unit = self.clock_unit.get(&fading, self.clock_ms);
        // Most arrivals are at the clock: one exp2, not two.
        let unit = if time_ms == self.clock_ms {
            now_unit
        } else {
            fading.weight(time_ms)
        };
        (unit, now_unit)
    }

    /// The largest stored mass at the sketch's clock: [`crate::count_bound`].
    pub(crate) fn mass_cap(&self) -> f64 {
        max_mass(self.unit_at(self.clock_ms))
    }

    /// Multiplies every stored mass by `factor` (a landmark move).
    fn rescale(&mut self, factor: f64) {
        self.buckets.map_counts(|_, count| count * factor);
        self.topk.scale(factor);
    }

    /// Stored weight of one arrival at `now_ms`: divides a stored count
    /// into a current one. Reads never run the clock backwards past the
    /// latest arrival.
    pub fn unit_at(&self, now_ms: i64) -> f64 {
        match &self.fading {
            Some(f) => f.weight(now_ms.max(self.clock_ms)),
            None => 1.0,
        }
    }

    pub(crate) fn columns(&self, hash: ItemHash) -> impl Iterator<Item = usize> {
        Rows::of(&self.params).columns(hash)
    }

    /// Steps 2-4 of the insert, on whichever layout the buckets have.
    fn update_buckets(&mut self, arrival: Arrival, item: &[u8], nmin: f64) -> Option<Counted> {
        let mut update = BucketUpdate {
            rows: Rows::of(&self.params),
            curve: &self.curve,
            rng: &mut self.rng,
            topk: &self.topk,
        };
        match &mut self.buckets {
            BucketArray::Counting(cells) if arrival.is_unit() => {
                update.apply_unit(cells, arrival, item, nmin)
            }
            BucketArray::Counting(cells) => update.apply(cells, arrival, item, nmin),
            BucketArray::Fading(cells) => update.apply(cells, arrival, item, nmin),
        }
    }

    /// How far the sketch's random stream has advanced, in 32-bit words: a
    /// measure of work done that is the same on every machine.
    pub fn random_words_used(&self) -> u128 {
        self.rng.get_word_pos()
    }

    /// Checks the top-k store's invariants; for tests.
    pub fn check_invariants(&self) -> Result<(), String> {
        self.topk.check_invariants()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small(decay: f64) -> HeavyKeeper {
        let params = Params {
            width: 4,
            depth: 3,
            decay,
            ..Params::for_k(2, 5)
        };
        HeavyKeeper::new(params, 0)
    }

    /// A state no command can reach (decoding refuses it): every bucket held
    /// by a stranger with a count that compares with nothing.
    fn poisoned(count: f64) -> HeavyKeeper {
        let mut hk = small(0.9);
        for i in 0..hk.buckets.len() {
            hk.buckets.set(
                i,
                Bucket {
                    fingerprint: 7,
                    count,
                },
            );
        }
        hk
    }

    #[test]
    fn a_count_that_should_never_exist_cannot_loop_or_spread() {
        for count in [f64::NAN, f64::INFINITY, 1e300] {
            let mut hk = poisoned(count);
            hk.add(b"x", 1 << 53, 0);
            hk.add(b"y", 1, 0);
            // Bounded by levels, not by the weight: a handful of draws.
            assert!(
                hk.random_words_used() <= 2 * 40,
                "{count}: {}",
                hk.random_words_used()
            );
            assert!(hk
                .buckets
                .iter()
                .all(|b| !b.count.is_nan() || count.is_nan()));
        }
    }

    #[test]
    fn the_smallest_search_stays_inside_the_items_own_buckets() {
        let mut hk = poisoned(f64::NAN);
        let hash = ItemHash::of(b"x", hk.params.seed);
        let own: Vec<usize> = hk.columns(hash).collect();
        let before: Vec<u64> = hk.buckets.iter().map(|b| b.count.to_bits()).collect();
        for _ in 0..100 {
            hk.add(b"x", 1_000, 0);
        }
        for (i, bucket) in hk.buckets.iter().enumerate() {
            if !own.contains(&i) {
                assert_eq!(bucket.count.to_bits(), before[i], "bucket {i} is not x's");
            }
        }
    }

    #[test]
    fn a_faded_minimum_does_not_lock_out_a_bucket_holder() {
        let params = Params {
            half_life_ms: Some(1_000.0),
            ..Params::for_k(1, 5)
        };
        let mut hk = HeavyKeeper::new(params, 0);
        hk.add(b"old", 100, 0);
        hk.add(b"new", 1, 0); // holds a bucket, not a member (1 <= 100)
        assert!(!hk.contains(b"new", 0));
        // Ten half-lives later "old" counts 0.1: below one arrival.
        let later = 10_000;
        assert!(hk.ranked(later).is_empty());
        for t in 0..3 {
            hk.add(b"new", 1, later + t);
        }
        assert!(hk.contains(b"new", later + 3), "{:?}", hk.ranked(later + 3));
        assert!(hk.count(b"new", later + 3) > 2.9);
    }
}
