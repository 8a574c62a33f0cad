//! The HeavyKeeper sketch ("Minimum" version, Gong et al., ToN 2019) with
//! selective increment, the `nmin + 1` admission rule, weighted increments by
//! geometric skipping, an in-sketch PRNG and optional forward-decay fading.

use crate::bucket::Bucket;
use crate::decay::DecayCurve;
use crate::fading::Fading;
use crate::item_hash::ItemHash;
use crate::params::Params;
use crate::topk::TopK;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// A member of the top-k as reported to users.
#[derive(Clone, Debug, PartialEq)]
pub struct Ranked<'a> {
    pub item: &'a [u8],
    /// Current count: arrivals, decayed to the read time when fading.
    pub count: f64,
}

/// The sketch: buckets, top-k store, PRNG and clock.
#[derive(Clone, Debug)]
pub struct HeavyKeeper {
    pub(crate) params: Params,
    /// `depth` rows of `width` buckets, row after row.
    pub(crate) buckets: Vec<Bucket>,
    pub(crate) topk: TopK,
    pub(crate) rng: ChaCha8Rng,
    pub(crate) curve: DecayCurve,
    pub(crate) fading: Option<Fading>,
    /// Latest arrival time applied (fading sketches only; 0 otherwise).
    pub(crate) clock_ms: i64,
    pub(crate) created_ms: i64,
    /// Total weight of all arrivals, saturating.
    pub(crate) arrivals: u64,
}

/// One arrival as the buckets see it.
#[derive(Clone, Copy)]
struct Arrival {
    hash: ItemHash,
    weight: u64,
    /// Stored weight of one arrival at its own time.
    unit: f64,
    /// Stored weight of one arrival at the clock: turns a mass into a count.
    now_unit: f64,
}

impl Arrival {
    fn mass(&self) -> f64 {
        self.weight as f64 * self.unit
    }
}

/// What one arrival found in its `depth` buckets.
struct Lookup {
    /// The first mapped bucket holding the fingerprint: an item claims a
    /// bucket only when none holds its fingerprint, so it holds at most one
    /// (barring a 32-bit fingerprint shared in the same column).
    matching: Option<usize>,
    first_empty: Option<usize>,
    /// Mapped bucket with the smallest count (all held by others).
    smallest: usize,
}

impl HeavyKeeper {
    /// An empty sketch. `params` must have passed [`Params::validate`].
    pub fn new(params: Params, created_ms: i64) -> Self {
        let cells = params.width as usize * params.depth as usize;
        Self {
            buckets: vec![Bucket::default(); cells],
            topk: TopK::with_capacity(params.k as usize),
            rng: ChaCha8Rng::seed_from_u64(params.seed),
            curve: DecayCurve::new(params.decay),
            fading: params
                .half_life_ms
                .map(|h| Fading::starting_at(h, created_ms)),
            clock_ms: if params.half_life_ms.is_some() {
                created_ms
            } else {
                0
            },
            created_ms,
            arrivals: 0,
            params,
        }
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
        if weight == 0 {
            return None;
        }
        self.arrivals = self.arrivals.saturating_add(weight);
        let (unit, now_unit) = self.advance_clock(time_ms);
        if unit <= 0.0 {
            // So old that its weight underflowed: it no longer counts.
            return None;
        }
        let hash = ItemHash::of(item, self.params.seed);
        let (nmin, slot_free) = self.admission_floor(now_unit);
        let arrival = Arrival {
            hash,
            weight,
            unit,
            now_unit,
        };
        let mass = arrival.mass();

        // Membership is looked up only when the answer can matter: most
        // arrivals (the long tail) end in the buckets, never touching the index.
        let mut member = None;
        let estimate = self.update_buckets(arrival, item, nmin, &mut member)?;
        if estimate <= nmin {
            // A member already counts at least nmin; a non-member needs nmin + 1.
            return None;
        }
        let member = member.unwrap_or_else(|| self.topk.find(hash.value(), item));
        if let Some(slot) = member {
            self.topk.raise(slot, estimate);
            return None;
        }
        if estimate > nmin + mass {
            // A jump past nmin + weight can only come from a fingerprint
            // shared with a member: ignoring it keeps counts honest.
            return None;
        }
        let expelled = if slot_free && self.topk.is_full() {
            self.topk.pop_min().map(|e| e.item)
        } else {
            None
        };
        self.topk
            .insert(item, hash.value(), estimate)
            .map(|e| e.item)
            .or(expelled)
    }

    /// Is `item` in the top-k at `now_ms`?
    pub fn contains(&self, item: &[u8], now_ms: i64) -> bool {
        let now_unit = self.read_unit(now_ms);
        let hash = ItemHash::of(item, self.params.seed);
        self.topk
            .find(hash.value(), item)
            .and_then(|id| self.topk.count(id))
            .is_some_and(|count| count >= now_unit)
    }

    /// Estimated current count of `item` (not cut off below one arrival, so
    /// that a fading rate stays meaningful): for a listed member, exactly what
    /// [`Self::ranked`] reports; otherwise a sketch estimate capped at the
    /// top-k minimum (a larger one could only be a fingerprint collision).
    pub fn count(&self, item: &[u8], now_ms: i64) -> f64 {
        let hash = ItemHash::of(item, self.params.seed);
        self.stored_estimate(item, hash) / self.read_unit(now_ms)
    }

    /// `count` in stored units: the member's count, or the bucket estimate
    /// capped at the top-k minimum.
    pub(crate) fn stored_estimate(&self, item: &[u8], hash: ItemHash) -> f64 {
        match self
            .topk
            .find(hash.value(), item)
            .and_then(|id| self.topk.count(id))
        {
            Some(count) => count,
            None => {
                let nmin = if self.topk.is_full() {
                    self.topk.min_count().unwrap_or(0.0)
                } else {
                    0.0
                };
                self.bucket_estimate(hash).min(nmin)
            }
        }
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
        let now_unit = self.read_unit(now_ms);
        self.topk
            .ranked()
            .into_iter()
            .filter(|&(_, count)| count >= now_unit)
            .map(|(item, count)| Ranked {
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
                let elapsed_s = (now_ms - self.created_ms).max(1) as f64 / 1000.0;
                count / elapsed_s
            }
        }
    }

    /// Number of members listed at `now_ms`.
    pub fn members(&self, now_ms: i64) -> usize {
        let now_unit = self.read_unit(now_ms);
        self.topk
            .heap_order()
            .filter(|&(_, count)| count >= now_unit)
            .count()
    }

    /// Members held, faded or not: one allocation each.
    pub fn stored_members(&self) -> usize {
        self.topk.len()
    }

    /// Bytes held by the sketch, items included.
    pub fn memory_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.buckets.capacity() * Bucket::BYTES
            + self.topk.heap_bytes()
            + self.curve.table_bytes()
    }

    /// Moves the clock to `time_ms` and renormalises if due. Returns the
    /// stored weight of one arrival at `time_ms` and of one at the clock.
    fn advance_clock(&mut self, time_ms: i64) -> (f64, f64) {
        let Some(mut fading) = self.fading else {
            return (1.0, 1.0);
        };
        self.clock_ms = self.clock_ms.max(time_ms);
        if let Some((epoch, factor)) = fading.renormalisation(self.clock_ms) {
            fading.move_to_epoch(epoch);
            self.fading = Some(fading);
            self.rescale(factor);
        }
        (fading.weight(time_ms), fading.weight(self.clock_ms))
    }

    /// Multiplies every stored mass by `factor` (a landmark move).
    pub(crate) fn rescale(&mut self, factor: f64) {
        for bucket in &mut self.buckets {
            bucket.count *= factor;
        }
        self.topk.scale(factor);
    }

    /// Stored weight of one arrival at the read time: reads never run the
    /// clock backwards past the latest arrival.
    fn read_unit(&self, now_ms: i64) -> f64 {
        match &self.fading {
            Some(f) => f.weight(now_ms.max(self.clock_ms)),
            None => 1.0,
        }
    }

    /// `nmin` for the admission rule, and whether a slot is free (not full, or
    /// the minimum has faded below one arrival). `nmin` is 0 when a slot is free.
    fn admission_floor(&self, now_unit: f64) -> (f64, bool) {
        match self.topk.min_count() {
            Some(min) if self.topk.is_full() && min >= now_unit => (min, false),
            _ => (0.0, true),
        }
    }

    fn columns(&self, hash: ItemHash) -> impl Iterator<Item = usize> + '_ {
        let width = self.params.width as usize;
        (0..self.params.depth as usize).map(move |row| row * width + hash.column(row, width))
    }

    /// One pass over the item's `depth` buckets, one per row.
    /// One pass over the item's `depth` buckets, one per row. A match ends
    /// the scan: an item holds at most one bucket.
    #[inline]
    fn lookup(&self, hash: ItemHash) -> Lookup {
        let fingerprint = hash.fingerprint();
        let mut first_empty = None;
        let (mut smallest, mut smallest_count) = (0usize, f64::INFINITY);
        for i in self.columns(hash) {
            let Some(bucket) = self.buckets.get(i) else {
                continue;
            };
            let count = bucket.count;
            if count <= 0.0 {
                first_empty = first_empty.or(Some(i));
            } else if bucket.fingerprint == fingerprint {
                return Lookup {
                    matching: Some(i),
                    first_empty: None,
                    smallest: 0,
                };
            } else {
                // A select, not a branch: which row is smallest is a coin
                // toss the branch predictor cannot learn (measured: -10%).
                let smaller = count < smallest_count;
                smallest = if smaller { i } else { smallest };
                smallest_count = smallest_count.min(count);
            }
        }
        Lookup {
            matching: None,
            first_empty,
            smallest,
        }
    }

    /// Steps 2-4 of the insert: changes at most one bucket. Returns the
    /// item's new estimate if a bucket of its own changed. `member` caches the
    /// top-k lookup if selective increment needed it.
    fn update_buckets(
        &mut self,
        arrival: Arrival,
        item: &[u8],
        nmin: f64,
        member: &mut Option<Option<usize>>,
    ) -> Option<f64> {
        let hash = arrival.hash;
        let lookup = self.lookup(hash);
        let mass = arrival.mass();
        let fingerprint = hash.fingerprint();
        if let Some(i) = lookup.matching {
            let count = self.buckets.get(i)?.count;
            if count > nmin {
                // Selective increment: a non-member above nmin shares its
                // fingerprint with a member; growing the bucket only adds error.
                let slot = self.topk.find(hash.value(), item);
                *member = Some(slot);
                slot?;
            }
            let bucket = self.buckets.get_mut(i)?;
            bucket.count = count + mass;
            return Some(count + mass);
        }
        if let Some(i) = lookup.first_empty {
            *self.buckets.get_mut(i)? = Bucket {
                fingerprint,
                count: mass,
            };
            return Some(mass);
        }
        let taken_with = self.decay_bucket(lookup.smallest, arrival)?;
        *self.buckets.get_mut(lookup.smallest)? = Bucket {
            fingerprint,
            count: taken_with,
        };
        Some(taken_with)
    }

    /// Plays `weight` arrivals against the bucket at `index`, each decaying it
    /// by one current unit with probability `b^-C` (C its current count).
    /// Returns the mass the item takes the bucket with, if it was emptied.
    ///
    /// Every success lowers C by one, so the loop runs at most once per level
    /// whose probability is not negligible, whatever the weight and however
    /// old the arrival (an old arrival decays by a current unit too, as the
    /// reference prescribes, but only adds its own faded weight).
    fn decay_bucket(&mut self, index: usize, arrival: Arrival) -> Option<f64> {
        let Arrival {
            weight,
            unit,
            now_unit,
            ..
        } = arrival;
        let bucket = self.buckets.get_mut(index)?;
        // Without fading the unit is 1: skip the division on the hot path.
        let mut level = if now_unit == 1.0 {
            bucket.count
        } else {
            bucket.count / now_unit
        };
        let mut remaining = weight as f64;
        let emptied = loop {
            let p = self.curve.decay_probability(level);
            if p >= 1.0 {
                // Every arrival decays (DECAY 1, or an all but empty bucket),
                // and p only grows as the count falls: no coins needed.
                let levels = level.ceil();
                if remaining >= levels {
                    remaining -= levels;
                    break true;
                }
                level -= remaining;
                break false;
            }
            if remaining == 1.0 {
                // The hot path: one arrival, one coin.
                if DecayCurve::coin(p, &mut self.rng) {
                    level -= 1.0;
                    remaining = 0.0;
                    break level <= 0.0;
                }
                break false;
            }
            // Geometric skipping: the number of arrivals until the next
            // successful decay, drawn at once (reference section 4).
            let trials = DecayCurve::trials_until_decay(p, &mut self.rng);
            if trials > remaining {
                break false;
            }
            remaining -= trials;
            level -= 1.0;
            if level <= 0.0 {
                break true;
            }
            if remaining <= 0.0 {
                break false;
            }
        };
        if emptied {
            // The arrival that emptied it is the item's first.
            return Some((remaining + 1.0) * unit);
        }
        bucket.count = level * now_unit;
        None
    }

    /// Checks the top-k store's invariants; for tests.
    pub fn check_invariants(&self) -> Result<(), String> {
        self.topk.check_invariants()
    }
}
