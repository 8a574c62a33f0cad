//! Steps 2-4 of a HeavyKeeper insert: what one arrival does to its `depth`
//! buckets. At most one bucket changes.
//!
//! Generic over the bucket layout ([`Cells`]): the sketch picks the layout
//! once per arrival, so the row loop itself never asks which it is.

use crate::bucket::Bucket;
use crate::bucket_array::{Cells, CountingCells};
use crate::count_bound::{max_mass, saturating_sum};
use crate::decay::DecayCurve;
use crate::item_hash::{ItemHash, RowLayout};
use crate::params::Params;
use crate::topk::{MemberId, TopK};
use rand_chacha::ChaCha8Rng;

/// One arrival as the buckets see it.
#[derive(Clone, Copy)]
pub(crate) struct Arrival {
    pub(crate) hash: ItemHash,
    pub(crate) weight: u64,
    /// Stored weight of one arrival at its own time.
    pub(crate) unit: f64,
    /// Stored weight of one arrival at the clock: turns a mass into a count.
    pub(crate) now_unit: f64,
    /// What one arrival of the stream stands for: 1 for a stream counted
    /// whole; `s` for a sample where each arrival kept stands for `s`
    /// (see [`crate::HeavyKeeper::add_sampled`]).
    pub(crate) scale: f64,
    /// Play the decay coin on whole levels (a sampled stream's: its levels
    /// are estimates, and a whole level is a table lookup, not an `exp`).
    pub(crate) whole_levels: bool,
}

impl Arrival {
    pub(crate) fn mass(&self) -> f64 {
        (self.weight as f64 * self.unit).min(self.cap())
    }

    /// One whole arrival, no fading: what [`BucketUpdate::apply_unit`] counts.
    pub(crate) fn is_unit(&self) -> bool {
        self.weight == 1
            && self.unit == 1.0
            && self.now_unit == 1.0
            && self.scale == 1.0
            && !self.whole_levels
    }

    /// The largest stored mass at this arrival's clock.
    pub(crate) fn cap(&self) -> f64 {
        max_mass(self.now_unit)
    }
}

/// The item's bucket after an arrival changed it.
pub(crate) struct Counted {
    /// The item's new estimate (stored units).
    pub(crate) estimate: f64,
    /// Its top-k slot, if selective increment already had to look it up.
    pub(crate) member: Option<MemberId>,
}

/// Where an item's buckets are: one column per row.
#[derive(Clone, Copy)]
pub(crate) struct Rows {
    width: usize,
    depth: usize,
    layout: RowLayout,
}

impl Rows {
    pub(crate) fn of(params: &Params) -> Self {
        Self {
            width: params.width as usize,
            depth: params.depth as usize,
            layout: params.layout,
        }
    }

    /// The item's bucket index in every row, row after row.
    pub(crate) fn columns(self, hash: ItemHash) -> impl Iterator<Item = usize> {
        (0..self.depth).map(move |row| row * self.width + hash.column(self.layout, row, self.width))
    }
}

/// What one arrival found in its `depth` buckets.
enum Lookup {
    /// The first mapped bucket holding the fingerprint: an item claims a
    /// bucket only when none holds its fingerprint, so it holds at most one
    /// (barring a 32-bit fingerprint shared in the same column).
    Matching(usize),
    Empty(usize),
    /// Every mapped bucket is held by others: the one with the smallest count.
    Smallest(usize),
}

/// The parts of the sketch an arrival reads or draws from besides its buckets.
pub(crate) struct BucketUpdate<'a> {
    pub(crate) rows: Rows,
    pub(crate) curve: &'a DecayCurve,
    pub(crate) rng: &'a mut ChaCha8Rng,
    pub(crate) topk: &'a TopK,
}

impl BucketUpdate<'_> {
    /// Changes at most one bucket. Returns the item's new estimate if a
    /// bucket of its own changed.
    #[inline]
    pub(crate) fn apply<C: Cells>(
        &mut self,
        cells: &mut C,
        arrival: Arrival,
        item: &[u8],
        nmin: f64,
    ) -> Option<Counted> {
        let hash = arrival.hash;
        let mass = arrival.mass();
        let (index, estimate, member) = match self.lookup(cells, hash)? {
            Lookup::Matching(i) => {
                let count = cells.cell(i)?.count;
                let mut member = None;
                if count > nmin {
                    // Selective increment: a non-member above nmin shares its
                    // fingerprint with a member; growing the bucket only adds error.
                    member = Some(self.topk.find(hash.value(), item)?);
                }
                (i, saturating_sum(count, mass, arrival.cap()), member)
            }
            Lookup::Empty(i) => (i, mass, None),
            Lookup::Smallest(i) => (i, self.decay(cells, i, arrival)?, None),
        };
        cells.put(
            index,
            Bucket {
                fingerprint: hash.fingerprint(),
                count: estimate,
            },
        );
        Some(Counted { estimate, member })
    }

    /// [`Self::apply`] for the arrival most streams are made of: weight 1,
    /// no fading, on whole-count buckets. Integers throughout; the same
    /// buckets change, the same coins are drawn. A bucket whose count lives
    /// in the side table sends the arrival to [`Self::apply`], before
    /// anything changed.
    #[inline]
    pub(crate) fn apply_unit(
        &mut self,
        cells: &mut CountingCells,
        arrival: Arrival,
        item: &[u8],
        nmin: f64,
    ) -> Option<Counted> {
        let hash = arrival.hash;
        let fingerprint = hash.fingerprint();
        let mut first_empty = None;
        let mut columns = self.rows.columns(hash);
        let mut smallest = columns.next()?;
        let (mut smallest_holder, mut smallest_count) = (0, u32::MAX);
        for i in std::iter::once(smallest).chain(columns) {
            let Some((held_by, count)) = cells.narrow(i) else {
                return self.apply(cells, arrival, item, nmin);
            };
            if count == 0 {
                first_empty = first_empty.or(Some(i));
            } else if held_by == fingerprint {
                let mut member = None;
                if f64::from(count) > nmin {
                    // Selective increment, as in `apply`.
                    member = Some(self.topk.find(hash.value(), item)?);
                }
                cells.put_narrow(i, fingerprint, count + 1);
                let estimate = f64::from(count + 1);
                return Some(Counted { estimate, member });
            } else {
                let smaller = count < smallest_count;
                smallest = if smaller { i } else { smallest };
                smallest_holder = if smaller { held_by } else { smallest_holder };
                smallest_count = smallest_count.min(count);
            }
        }
        if let Some(i) = first_empty {
            cells.put_narrow(i, fingerprint, 1);
            return Some(Counted {
                estimate: 1.0,
                member: None,
            });
        }
        let held = (smallest_holder, smallest_count);
        self.decay_once(cells, smallest, held, fingerprint)
    }

    /// One arrival's coin against the smallest of its buckets, `held` by a
    /// fingerprint with a count: [`Self::decay`] with a weight of 1 and no
    /// fading.
    #[inline]
    fn decay_once(
        &mut self,
        cells: &mut CountingCells,
        index: usize,
        (holder, count): (u32, u32),
        fingerprint: u32,
    ) -> Option<Counted> {
        let p = self.curve.decay_probability(f64::from(count));
        // p >= 1 (DECAY 1) decays every time, without a coin.
        if p < 1.0 && !DecayCurve::coin(p, self.rng) {
            return None;
        }
        let left = count.saturating_sub(1);
        if left > 0 {
            cells.put_narrow(index, holder, left);
            return None;
        }
        // Emptied: the arrival that emptied it is the item's first.
        cells.put_narrow(index, fingerprint, 1);
        Some(Counted {
            estimate: 1.0,
            member: None,
        })
    }

    /// One pass over the item's `depth` buckets, one per row. A match ends
    /// the scan: an item holds at most one bucket.
    #[inline]
    fn lookup<C: Cells>(&self, cells: &C, hash: ItemHash) -> Option<Lookup> {
        let fingerprint = hash.fingerprint();
        let mut first_empty = None;
        let mut columns = self.rows.columns(hash);
        // The search for the smallest starts inside the item's own buckets,
        // so even counts that compare with nothing cannot send it elsewhere.
        let mut smallest = columns.next()?;
        let mut smallest_count = f64::INFINITY;
        for i in std::iter::once(smallest).chain(columns) {
            let Some(bucket) = cells.cell(i) else {
                continue;
            };
            let count = bucket.count;
            if count <= 0.0 {
                first_empty = first_empty.or(Some(i));
            } else if bucket.fingerprint == fingerprint {
                return Some(Lookup::Matching(i));
            } else {
                // A select, not a branch: which row is smallest is a coin
                // toss the branch predictor cannot learn (measured: -10%).
                let smaller = count < smallest_count;
                smallest = if smaller { i } else { smallest };
                smallest_count = smallest_count.min(count);
            }
        }
        Some(first_empty.map_or(Lookup::Smallest(smallest), Lookup::Empty))
    }

    /// Plays `weight` arrivals against the bucket at `index`, each decaying it
    /// by one current unit with probability `b^-C` (C its current count).
    /// Returns the mass the item takes the bucket with, if it was emptied.
    ///
    /// For a sampled stream (`scale` s > 1) the game is the sample's own:
    /// `weight / s` arrivals, each decaying the bucket by `s` units with
    /// probability `b^-(C/s)`: HeavyKeeper on the sample, in its own units.
    /// Played in absolute units instead, one sampled key standing for `s`
    /// would hold its bucket as if it had come `s` times, and a truly hot
    /// key would need `b^s` times the arrivals to take it. At scale 1 the
    /// arithmetic is the same, bit for bit.
    ///
    /// Every success lowers C by one, so the loop runs at most once per level
    /// whose probability is not negligible, whatever the weight and however
    /// old the arrival (an old arrival decays by a current unit too, as the
    /// reference prescribes, but only adds its own faded weight). The bound
    /// is also explicit, for a value that should never exist.
    fn decay<C: Cells>(&mut self, cells: &mut C, index: usize, arrival: Arrival) -> Option<f64> {
        let Arrival {
            weight,
            unit,
            now_unit,
            scale,
            ..
        } = arrival;
        let mut bucket = cells.cell(index)?;
        // Without fading the unit is 1: skip the division on the hot path.
        let mut level = if now_unit == 1.0 {
            bucket.count
        } else {
            bucket.count / now_unit
        };
        if scale != 1.0 {
            level /= scale;
        }
        if !level.is_finite() {
            return None;
        }
        let mut remaining = weight as f64 / scale;
        let mut emptied = false;
        for _ in 0..self.curve.max_decays() {
            let p = if arrival.whole_levels {
                // The next level up: never a likelier decay than the exact one.
                self.curve.decay_probability(level.ceil())
            } else {
                self.curve.decay_probability(level)
            };
            if p >= 1.0 {
                // Every arrival decays (DECAY 1, or an all but empty bucket),
                // and p only grows as the count falls: no coins needed.
                let levels = level.ceil();
                if remaining >= levels {
                    remaining -= levels;
                    emptied = true;
                } else {
                    level -= remaining;
                }
                break;
            }
            // One arrival spends one coin (the hot path); more skip ahead
            // to the next successful decay (reference section 4).
            let trials = if remaining <= 1.0 {
                if DecayCurve::coin(p, self.rng) {
                    1.0
                } else {
                    f64::INFINITY
                }
            } else {
                DecayCurve::trials_until_decay(p, self.rng)
            };
            if trials > remaining {
                break;
            }
            remaining -= trials;
            level -= 1.0;
            if level <= 0.0 {
                emptied = true;
                break;
            }
            if remaining <= 0.0 {
                break;
            }
        }
        if emptied {
            // The arrival that emptied it is the item's first.
            return Some(((remaining + 1.0) * scale * unit).min(arrival.cap()));
        }
        let count = level * scale * now_unit;
        // Most coins fail: a bucket left as it was needs no write. (With
        // fading, `level * now_unit` may differ from the stored mass in the
        // last bit, and that rounding is part of the recorded state.)
        if count.to_bits() != bucket.count.to_bits() || now_unit != 1.0 {
            bucket.count = count;
            cells.put(index, bucket);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bucket_array::BucketArray;
    use proptest::prelude::*;
    use rand::SeedableRng;

    /// A bucket as a test sets it up: small fingerprints so that items
    /// meet strangers and holders alike, counts from empty to wide.
    fn any_bucket() -> impl Strategy<Value = Bucket> {
        let count = prop_oneof![
            Just(0.0),
            (1u32..6).prop_map(f64::from),
            (1u32..200).prop_map(f64::from),
            Just(f64::from(u32::MAX >> 1)),
            Just(3e9),
        ];
        (0u32..3, count).prop_map(|(fingerprint, count)| Bucket { fingerprint, count })
    }

    fn counting(buckets: &[Bucket]) -> CountingCells {
        let mut array = BucketArray::try_new(buckets.len(), false).unwrap();
        for (i, &bucket) in buckets.iter().enumerate() {
            array.set(i, bucket);
        }
        match array {
            BucketArray::Counting(cells) => cells,
            BucketArray::Fading(_) => panic!("a sketch without fading counts"),
        }
    }

    proptest! {
        /// `apply_unit` is `apply` made faster, nothing else: for every
        /// arrival it reports the same, leaves every bucket with the same
        /// bits and draws the same coins.
        #[test]
        fn a_unit_arrival_does_what_the_general_path_does(
            decay in prop_oneof![Just(1.0), Just(0.98), 0.3f64..1.0],
            buckets in proptest::collection::vec(any_bucket(), 12),
            items in proptest::collection::vec(0u8..24, 1..300),
            nmin in prop_oneof![Just(0.0), Just(f64::INFINITY), 0.0f64..50.0],
        ) {
            let params = Params { width: 4, depth: 3, decay, ..Params::for_k(4, 7) };
            let curve = DecayCurve::new(decay);
            let mut topk = TopK::try_with_ties(4, crate::Ties::ByItem).unwrap();
            for id in 0u8..4 {
                let hash = ItemHash::of(&[id], params.seed).value();
                topk.insert(&[id], hash, f64::from(id) + 1.0);
            }
            let (mut general, mut unit) = (counting(&buckets), counting(&buckets));
            let mut general_rng = ChaCha8Rng::seed_from_u64(1);
            let mut unit_rng = general_rng.clone();
            for id in items {
                let item = [id];
                let arrival = Arrival {
                    hash: ItemHash::of(&item, params.seed),
                    weight: 1,
                    unit: 1.0,
                    now_unit: 1.0,
                    scale: 1.0,
                    whole_levels: false,
                };
                prop_assert!(arrival.is_unit());
                let rows = Rows::of(&params);
                let want = BucketUpdate { rows, curve: &curve, rng: &mut general_rng, topk: &topk }
                    .apply(&mut general, arrival, &item, nmin);
                let got = BucketUpdate { rows, curve: &curve, rng: &mut unit_rng, topk: &topk }
                    .apply_unit(&mut unit, arrival, &item, nmin);
                let summary = |c: Option<Counted>| c.map(|c| (c.estimate.to_bits(), c.member));
                prop_assert_eq!(summary(got), summary(want));
                for i in 0..buckets.len() {
                    let bits = |b: Option<Bucket>| b.map(|b| (b.fingerprint, b.count.to_bits()));
                    prop_assert_eq!(bits(unit.cell(i)), bits(general.cell(i)), "bucket {}", i);
                }
                prop_assert_eq!(unit_rng.get_word_pos(), general_rng.get_word_pos());
            }
        }
    }
}
