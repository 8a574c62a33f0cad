//! A server's own hot keys: every key access is an arrival in one of four
//! fading HeavyKeeper sketches (reads, writes, reads that missed, and the
//! prefixes of keys read or written), keyed by database and key; beside
//! them, the node's total rates and (in a cluster) each slot's load.
//! Nothing here knows how accesses are observed.

use crate::access::Access;
use crate::bounds::error_bar::undercount;
use crate::bounds::noise_floor::{Background, Grain, StreamMakeup};
use crate::bounds::sender_rows::Senders;
use crate::counting::client_attribution::{ClientAttribution, WATCHED_HASH_SLOTS};
use crate::counting::client_shares::{summed, ClientShares};
use crate::counting::fading_counters::FadingCounters;
use crate::counting::hash_slot_load::{HashSlotLoad, HashSlotRate};
use crate::counting::insert::Insert;
use crate::counting::member_spread::{Inserted, MemberSpread};
use crate::counting::sampled_counters::{Estimate, SampledCounters};
use crate::counting::tally::{Missed, Row, Tally};
use crate::sampling::time_slot::TimeSlot;
use heavykeeper_sketch::{HeavyKeeper, ItemHash, Params};
use std::collections::HashSet;

/// One hot key as listed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HotKey {
    pub db: u16,
    pub key: Vec<u8>,
    pub reads: Tally,
    pub writes: Tally,
    /// Reads of the key while it did not exist (a subset of `reads`).
    pub misses: Tally,
    /// For a prefix's row: reads and writes of keys under it.
    pub under: Tally,
}

impl Row for HotKey {
    fn allowing_for(self, missed: Missed) -> HotKey {
        HotKey {
            reads: self.reads.allowing_for(missed),
            writes: self.writes.allowing_for(missed),
            misses: self.misses.allowing_for(missed),
            under: self.under.allowing_for(missed),
            ..self
        }
    }
}

impl HotKey {
    /// The same key as a list by `ranking` picked it out of `background`:
    /// the tallies it is ranked by are bounded as picked, by what the
    /// background could make of the grain of the one it is ranked by.
    fn picked_from(mut self, ranking: Ranking, background: &Background) -> HotKey {
        let outline = background.outline_for(self.ranked(ranking).grain());
        let pick = |tally: &mut Tally| *tally = tally.picked_from(outline);
        match ranking {
            Ranking::Reads => pick(&mut self.reads),
            Ranking::Writes => pick(&mut self.writes),
            Ranking::Total => {
                pick(&mut self.reads);
                pick(&mut self.writes);
            }
            Ranking::Misses => pick(&mut self.misses),
            Ranking::Prefixes => pick(&mut self.under),
        }
        self
    }

    /// Reads and writes together.
    pub fn total(&self) -> Tally {
        self.reads.plus(self.writes)
    }

    /// What `ranking` ranks this key by.
    pub fn ranked(&self, ranking: Ranking) -> Tally {
        match ranking {
            Ranking::Reads => self.reads,
            Ranking::Writes => self.writes,
            Ranking::Total => self.total(),
            Ranking::Misses => self.misses,
            Ranking::Prefixes => self.under,
        }
    }
}

/// What a listing ranks keys by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ranking {
    Reads,
    Writes,
    /// Reads plus writes.
    Total,
    Misses,
    /// Key prefixes (hot tenants), by reads and writes under them.
    Prefixes,
}

impl Ranking {
    /// The sketches it ranks by: what their counts sum to.
    fn accesses(self) -> &'static [Access] {
        match self {
            Ranking::Reads => &[Access::Read],
            Ranking::Writes => &[Access::Write],
            Ranking::Total => &[Access::Read, Access::Write],
            Ranking::Misses => &[Access::Miss],
            Ranking::Prefixes => &[Access::Prefix],
        }
    }
}

/// A row a list picked, and whether the noise of the stream it was picked
/// from could have made it ([`crate::bounds::noise_floor`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Picked<T> {
    pub row: T,
    pub noise: bool,
}

impl<T: Row> Picked<T> {
    /// The same row, allowing for what its counts may lack.
    pub fn allowing_for(self, missed: Missed) -> Self {
        let row = self.row.allowing_for(missed);
        Picked { row, ..self }
    }
}

/// The first `count` of `rows` (hottest first) that `background`'s noise
/// could not have made, by what each is `ranked` by; with `noise`, the
/// others too, marked.
fn pick<T>(
    rows: Vec<T>,
    ranked: impl Fn(&T) -> Tally,
    background: &Background,
    count: usize,
    noise: bool,
) -> Vec<Picked<T>> {
    // Hottest first: the rows beside each one are known hot keys or not.
    let grains: Vec<Grain> = rows.iter().map(|row| ranked(row).grain()).collect();
    rows.into_iter()
        .enumerate()
        .map(|(at, row)| Picked {
            noise: !background.tells_apart_beside(&grains, at),
            row,
        })
        .filter(|picked| noise || !picked.noise)
        .take(count)
        .collect()
}

/// The tracker's shape: how many keys it keeps and how fast counts fade.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TrackerShape {
    pub k: u32,
    pub half_life_ms: f64,
}

/// One of the tracker's sketches, with its members' spread, what its
/// stream is made of (for the rows a list of it picks), and what one kept
/// access of it stood for at most lately (its rows' unseen allowance).
#[derive(Debug)]
struct Counted {
    sketch: HeavyKeeper,
    spread: MemberSpread,
    makeup: StreamMakeup,
    unseen_unit: FadingCounters,
}

#[derive(Debug)]
pub struct KeyTracker {
    shape: TrackerShape,
    /// Reads, writes, misses and prefixes, in [`Access::code`] order.
    sketches: [Counted; 4],
    /// The node's reads (0) and writes (1), all keys.
    totals: SampledCounters,
    /// Each hash slot's load, in a cluster.
    slots: Option<HashSlotLoad>,
    /// Who made each member's count (where the server names clients).
    clients: Option<ClientAttribution>,
    seed: u64,
    keys_counted: u64,
    /// When the first access was counted: a rate read before several
    /// half-lives have passed since is scaled up for the time not yet seen.
    started_ms: Option<i64>,
}

/// The tracker's decay (`1/b`): a sampled access weighs up to thousands,
/// and a weighted arrival that meets a smaller bucket decrements it level by
/// level while its coins succeed: with b close to 1 (the sketches' default
/// 0.995) that is up to `ln(w) / ln(b)` levels, ~1,200 for w = 500, each a
/// pair of logarithms. At 0.9 it is ~60. Fading, not the decay, is what lets
/// a tracker's old keys go (`make bench`: "Tracking", precision at 0.9).
pub const TRACKER_DECAY: f64 = 0.9;

impl KeyTracker {
    pub const MAX_K: u32 = 10_000;

    pub fn new(shape: TrackerShape, seed: u64, now_ms: i64) -> Self {
        let params = Params {
            half_life_ms: Some(shape.half_life_ms),
            decay: TRACKER_DECAY,
            ..Params::for_k(shape.k.clamp(1, Self::MAX_K), seed)
        };
        let half_life_ms = shape.half_life_ms;
        let counted = || Counted {
            sketch: HeavyKeeper::new(params, now_ms),
            spread: MemberSpread::new(half_life_ms),
            makeup: StreamMakeup::new(half_life_ms, now_ms),
            unseen_unit: FadingCounters::new(1, half_life_ms, now_ms),
        };
        Self {
            shape,
            sketches: [counted(), counted(), counted(), counted()],
            totals: SampledCounters::new(2, half_life_ms, now_ms),
            slots: None,
            clients: None,
            seed,
            keys_counted: 0,
            started_ms: None,
        }
    }

    /// What a faded count means per second at `now_ms`: `λ · count` over
    /// the share of a steady stream's count that fading has built up since
    /// the first access was counted (`1 − 2^(−t/H)`), so that a steady rate
    /// reads true from the first second, not after several half-lives (read
    /// 10 s after traffic began, with a 10 s half-life, it would otherwise
    /// be half the truth). Early on that is the mean rate since then.
    pub fn per_second(&self, count: f64, now_ms: i64) -> f64 {
        let Some(started_ms) = self.started_ms else {
            return 0.0;
        };
        let half_life_s = self.shape.half_life_ms / 1000.0;
        let lambda = std::f64::consts::LN_2 / half_life_s;
        let elapsed_ms = now_ms.saturating_sub(started_ms).max(1) as f64;
        // 1 − 2^(−t/H), exact for small t too.
        let built_up = -(-elapsed_ms / self.shape.half_life_ms * std::f64::consts::LN_2).exp_m1();
        count * lambda / built_up
    }

    /// Counts each cluster slot's load from now on (256 KiB).
    pub fn count_hash_slots(&mut self, now_ms: i64) {
        (self.slots).get_or_insert_with(|| HashSlotLoad::new(self.shape.half_life_ms, now_ms));
    }

    /// Counts who makes each member's count from now on (a member that
    /// joined before is counted from when it joins again).
    pub fn count_clients(&mut self, now_ms: i64) {
        let half_life_ms = self.shape.half_life_ms;
        (self.clients).get_or_insert_with(|| ClientAttribution::new(half_life_ms, now_ms));
    }

    pub fn clients(&self) -> Option<&ClientAttribution> {
        self.clients.as_ref()
    }

    pub fn clients_mut(&mut self) -> Option<&mut ClientAttribution> {
        self.clients.as_mut()
    }

    /// Who sent the count of `item` (a database, then a key or a prefix)
    /// that `ranking` lists (reads plus writes summed for the total), by
    /// host or by connection, since it joined its sketch; `None` where
    /// clients are not counted or it is not a member.
    pub fn senders(
        &self,
        ranking: Ranking,
        item: &[u8],
        by_host: bool,
        now_ms: i64,
    ) -> Option<Senders> {
        let clients = self.clients.as_ref()?;
        let hash = self.hash(item).value();
        let rows: Vec<&ClientShares> = (ranking.accesses().iter())
            .filter_map(|&access| clients.row(access, hash))
            .map(|row| row.by(by_host))
            .collect();
        if rows.is_empty() {
            return None;
        }
        Some(Senders {
            parts: summed(rows.iter().flat_map(|r| r.parts(now_ms))),
            threshold: rows.iter().map(|r| r.threshold(now_ms)).sum(),
            grain: rows.iter().map(|r| r.grain(now_ms)).fold(0.0, f64::max),
        })
    }

    /// Who sent hash slot `slot`'s reads and writes since it was last
    /// chosen among the hottest, by host or by connection; with its rates.
    pub fn hash_slot_senders(
        &self,
        slot: u16,
        by_host: bool,
        now_ms: i64,
    ) -> Option<(Senders, HashSlotRate)> {
        let shares = self.clients.as_ref()?.hash_slot(slot)?.by(by_host);
        let rows = self.hottest_hash_slots(None, usize::MAX, now_ms, true)?;
        let rate = rows.into_iter().find(|picked| picked.row.slot == slot)?.row;
        Some((Senders::of(shares, now_ms), rate))
    }

    /// Who sent the node's key accesses, by host or by connection.
    pub fn node_senders(&self, by_host: bool, now_ms: i64) -> Option<Senders> {
        let overall = self.clients.as_ref()?.overall();
        Some(Senders::of(overall.by(by_host), now_ms))
    }

    /// The hash slot load and the totals, for a batch of accesses gathered
    /// in `slot` from `first_ms`, counted at `time_ms` (a batch with
    /// accesses: the tracker's start is its first access, never a read).
    pub fn loads(
        &mut self,
        slot: TimeSlot,
        first_ms: i64,
        time_ms: i64,
    ) -> (
        &mut SampledCounters,
        Option<&mut HashSlotLoad>,
        Option<&mut ClientAttribution>,
    ) {
        self.note_start(first_ms);
        self.totals.begin(slot, time_ms);
        if let Some(slots) = self.slots.as_mut() {
            slots.begin(slot, time_ms);
            if let Some(clients) = self.clients.as_mut().filter(|c| c.slots_due(time_ms)) {
                let hottest = slots.hottest(None, WATCHED_HASH_SLOTS, time_ms);
                clients.watch_slots(hottest.iter().map(|s| s.slot), time_ms);
            }
        }
        (&mut self.totals, self.slots.as_mut(), self.clients.as_mut())
    }

    fn note_start(&mut self, time_ms: i64) {
        self.started_ms = Some(self.started_ms.map_or(time_ms, |s| s.min(time_ms)));
    }

    /// When the first access was counted (`None`: none yet).
    pub fn started_ms(&self) -> Option<i64> {
        self.started_ms
    }

    /// A counter's estimate as a tally now.
    fn tally_of(&self, estimate: Estimate, now_ms: i64) -> Tally {
        Tally {
            count: estimate.count,
            per_second: self.per_second(estimate.count, now_ms),
            // Every counter's estimate is taken as sampled whole (its
            // exact part is not kept apart).
            sampled: estimate.count,
            variance: estimate.variance,
            ..Tally::default()
        }
    }

    /// The node's reads and writes now, all keys.
    pub fn rates(&self, now_ms: i64) -> (Tally, Tally) {
        let rate = |i| self.tally_of(self.totals.estimate(i, now_ms), now_ms);
        (rate(0), rate(1))
    }

    /// The hottest hash slots (`None` outside a cluster). Asked for fewer
    /// than the slots with load, the list picks them: only slots the other
    /// slots' noise could not have made (with `noise`, those too, marked),
    /// each bounded as picked ([`crate::bounds::noise_floor`]). Asked for all, every
    /// slot with load, each with its own bounds (nothing is picked: they add
    /// up to the node).
    pub fn hottest_hash_slots(
        &self,
        by: Option<Access>,
        count: usize,
        now_ms: i64,
        noise: bool,
    ) -> Option<Vec<Picked<HashSlotRate>>> {
        let slots = self.slots.as_ref()?.hottest(by, usize::MAX, now_ms);
        let rows: Vec<HashSlotRate> = slots
            .into_iter()
            .map(|s| HashSlotRate {
                slot: s.slot,
                reads: self.tally_of(s.reads, now_ms),
                writes: self.tally_of(s.writes, now_ms),
            })
            .collect();
        if count >= rows.len() {
            let all = rows.into_iter().map(|row| Picked { row, noise: false });
            return Some(all.collect());
        }
        let ranked = |row: &HashSlotRate| match by {
            Some(Access::Read) => row.reads,
            Some(Access::Write) => row.writes,
            _ => row.reads.plus(row.writes),
        };
        let tallies = rows.iter().map(ranked);
        let background = Background::among(tallies.map(|t| (t.sampled, t.variance)));
        let rows = rows
            .into_iter()
            .filter(|row| ranked(row).count > 0.0)
            .map(|row| {
                let outline = background.outline_for(ranked(&row).grain());
                HashSlotRate {
                    reads: row.reads.picked_from(outline),
                    writes: row.writes.picked_from(outline),
                    ..row
                }
            })
            .collect();
        Some(pick(rows, ranked, &background, count, noise))
    }

    pub fn shape(&self) -> TrackerShape {
        self.shape
    }

    /// The seed of every sketch's hash.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The hash every sketch of this tracker gives `item` (its database
    /// then its key).
    #[inline]
    pub fn hash(&self, item: &[u8]) -> ItemHash {
        ItemHash::of(item, self.seed)
    }

    /// Counts one insert (a key's accesses over a horizon, hashed by
    /// [`Self::hash`]) into its sketch, and its variance beside it.
    pub fn record(&mut self, insert: Insert<'_>) {
        if insert.weight == 0 {
            return;
        }
        let counted = self.counted_mut(insert.access);
        // The background's noise is the keys not listed: a listed key's
        // inserts are no noise that could make another row.
        if !counted.sketch.is_member(insert.item, insert.hash) {
            counted
                .makeup
                .record(insert.sampled as f64, insert.variance, insert.time_ms);
        }
        if insert.sampled > 0 {
            counted.unseen_unit.raise(0, insert.scale, insert.time_ms);
        }
        let arrived = counted.sketch.add_sampled(
            insert.item,
            insert.hash,
            insert.weight,
            insert.time_ms,
            insert.scale,
        );
        if arrived.member.is_some() || arrived.expelled.is_some() {
            let inserted = Inserted {
                sampled: insert.sampled as f64,
                variance: insert.variance,
                scale: insert.scale,
                time_ms: insert.time_ms,
            };
            let makeup = &mut counted.makeup;
            let background_unit = || makeup.mean_unit(insert.time_ms);
            counted.spread.arrived(&arrived, inserted, background_unit);
        }
        if let Some(clients) = self.clients.as_mut() {
            if let Some((_, hash, _)) = arrived.expelled {
                clients.leave(insert.access, hash);
            }
            if arrived.member.is_some_and(|(before, _)| before == 0.0) {
                clients.join(insert.access, arrived.hash, insert.time_ms);
            }
        }
        self.note_start(insert.time_ms);
        if matches!(insert.access, Access::Read | Access::Write) {
            self.keys_counted = self.keys_counted.saturating_add(insert.weight);
        }
    }

    /// The sketch (and spread) that counts `access`.
    fn counted(&self, access: Access) -> &Counted {
        let [reads, writes, misses, prefixes] = &self.sketches;
        match access {
            Access::Read => reads,
            Access::Write => writes,
            Access::Miss => misses,
            Access::Prefix => prefixes,
        }
    }

    fn counted_mut(&mut self, access: Access) -> &mut Counted {
        let [reads, writes, misses, prefixes] = &mut self.sketches;
        match access {
            Access::Read => reads,
            Access::Write => writes,
            Access::Miss => misses,
            Access::Prefix => prefixes,
        }
    }

    /// Is `item` (hashed by [`Self::hash`]) a member of the sketch of
    /// `access`?
    pub fn is_member(&self, item: &[u8], hash: ItemHash, access: Access) -> bool {
        self.counted(access).sketch.is_member(item, hash)
    }

    /// Key accesses counted, reads and writes (sampled ones weighted).
    pub fn keys_counted(&self) -> u64 {
        self.keys_counted
    }

    /// The `count` hottest keys at `now_ms` by `ranking`, hottest first
    /// (ties by database and key): only rows the stream's noise could not
    /// have made, each bounded as picked out of it ([`crate::bounds::noise_floor`]),
    /// so a list may be shorter than `count`.
    pub fn hottest(&self, ranking: Ranking, count: usize, now_ms: i64) -> Vec<HotKey> {
        self.listed(ranking, count, now_ms, false)
            .into_iter()
            .map(|picked| picked.row)
            .collect()
    }

    /// [`Self::hottest`], with `noise` also the rows the stream's noise
    /// could have made, each marked as such.
    pub fn listed(
        &self,
        ranking: Ranking,
        count: usize,
        now_ms: i64,
        noise: bool,
    ) -> Vec<Picked<HotKey>> {
        let background = self.background(ranking, now_ms);
        let items: HashSet<&[u8]> = self
            .ranked_by(ranking)
            .iter()
            .flat_map(|s| s.sketch.ranked(now_ms).into_iter().map(|r| r.item))
            .collect();
        let mut hot: Vec<HotKey> = items
            .into_iter()
            .filter_map(|item| self.hot_key(item, now_ms))
            .map(|key| key.picked_from(ranking, &background))
            .collect();
        hot.sort_by(|a, b| {
            b.ranked(ranking)
                .count
                .total_cmp(&a.ranked(ranking).count)
                .then_with(|| a.db.cmp(&b.db))
                .then_with(|| a.key.cmp(&b.key))
        });
        pick(hot, |key| key.ranked(ranking), &background, count, noise)
    }

    /// The sketches a list by `ranking` picks from.
    fn ranked_by(&self, ranking: Ranking) -> Vec<&Counted> {
        let accesses = ranking.accesses().iter();
        accesses.map(|&access| self.counted(access)).collect()
    }

    /// The stream a list by `ranking` picks from: its events by size.
    pub fn background(&self, ranking: Ranking, now_ms: i64) -> Background {
        let streams = self.ranked_by(ranking);
        let each = streams.iter().map(|c| c.makeup.background(now_ms));
        each.reduce(|sum, next| sum.plus(&next))
            .unwrap_or_else(|| Background::among(std::iter::empty()))
    }

    /// One key's tallies now, listed or not.
    pub fn key(&self, db: u16, key: &[u8], now_ms: i64) -> HotKey {
        let item = item_of(db, key);
        self.hot_key(&item, now_ms).unwrap_or(HotKey {
            db,
            key: key.to_vec(),
            ..HotKey::default()
        })
    }

    fn hot_key(&self, item: &[u8], now_ms: i64) -> Option<HotKey> {
        let (db, key) = crate::worker::key_batch::split_item(item)?;
        let hash = self.hash(item);
        let tally = |access: Access| self.tally(access, item, hash, now_ms);
        Some(HotKey {
            db,
            key: key.to_vec(),
            reads: tally(Access::Read),
            writes: tally(Access::Write),
            misses: tally(Access::Miss),
            under: tally(Access::Prefix),
        })
    }

    /// `item`'s tally in the sketch of `access`, with its error bar's parts.
    fn tally(&self, access: Access, item: &[u8], hash: ItemHash, now_ms: i64) -> Tally {
        let counted = self.counted(access);
        let count = counted.sketch.count(item, now_ms);
        let spread = counted.spread.of(hash.value(), now_ms);
        let (variance, sampled, scale, entered) = spread.map_or((0.0, 0.0, 1.0, 0.0), |s| {
            (s.variance, s.sampled, s.scale, s.entered)
        });
        let entered_class = spread.and_then(|s| s.entered_class);
        let params = counted.sketch.params();
        let claim = (count > 0.0).then(|| counted.sketch.claim_cost(item, scale, now_ms));
        let missed = undercount(
            count,
            self.stream(access, now_ms),
            params.width,
            1.0 / params.decay,
            scale,
            claim.unwrap_or_default(),
        );
        Tally {
            count,
            per_second: self.per_second(count, now_ms),
            sampled,
            variance,
            undercount: missed,
            unseen_unit: counted.unseen_unit.count(0, now_ms),
            entered,
            entered_class,
            picked_from: None,
        }
    }

    /// What the sketch of `access` was given, faded (its `N`): the node's
    /// reads, writes, or both (prefixes); misses are reads.
    fn stream(&self, access: Access, now_ms: i64) -> f64 {
        let total = |i| self.totals.estimate(i, now_ms).count;
        match access {
            Access::Read | Access::Miss => total(0),
            Access::Write => total(1),
            Access::Prefix => total(0) + total(1),
        }
    }

    /// Bytes held by the sketches (keys included) and the slot load.
    pub fn memory_bytes(&self) -> usize {
        self.sketches
            .iter()
            .map(|c| {
                c.sketch.memory_bytes()
                    + c.spread.heap_bytes()
                    + c.makeup.heap_bytes()
                    + c.unseen_unit.heap_bytes()
            })
            .sum::<usize>()
            + self.totals.heap_bytes()
            + self.slots.as_ref().map_or(0, HashSlotLoad::heap_bytes)
            + self
                .clients
                .as_ref()
                .map_or(0, ClientAttribution::heap_bytes)
    }
}

/// A tracker item: `db` (2 bytes, big-endian), then the key.
pub fn item_of(db: u16, key: &[u8]) -> Vec<u8> {
    let mut item = Vec::with_capacity(key.len() + 2);
    item.extend_from_slice(&db.to_be_bytes());
    item.extend_from_slice(key);
    item
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sampling::coverage::uniform;

    fn tracker() -> KeyTracker {
        let shape = TrackerShape {
            k: 10,
            half_life_ms: 10_000.0,
        };
        KeyTracker::new(shape, 1, 0)
    }

    /// `weight` accesses of `key` in `db` at `time_ms` into `t`, every one
    /// seen (no sampling): in the sketches and (reads and writes) the totals.
    fn count(t: &mut KeyTracker, db: u16, key: &[u8], access: Access, weight: u64, time_ms: i64) {
        if let Some(i) = [Access::Read, Access::Write]
            .iter()
            .position(|&a| a == access)
        {
            let (totals, _, _) = t.loads(TimeSlot::WHOLE, time_ms, time_ms);
            let unit = totals.unit_at(time_ms);
            totals.add(i, weight as f64, weight as f64 * unit);
        }
        let item = item_of(db, key);
        let hash = t.hash(&item);
        t.record(Insert {
            item: &item,
            hash,
            access,
            weight,
            sampled: 0,
            scale: weight as f64,
            time_ms,
            variance: 0.0,
        });
    }

    #[test]
    fn reads_writes_and_misses_are_apart_and_databases_are_different_keys() {
        let mut t = tracker();
        for _ in 0..50 {
            count(&mut t, 0, b"user:1", Access::Read, 1, 0);
        }
        for _ in 0..20 {
            count(&mut t, 0, b"user:1", Access::Write, 1, 0);
            count(&mut t, 3, b"user:1", Access::Write, 1, 0);
        }
        for _ in 0..5 {
            count(&mut t, 2, b"gone", Access::Miss, 1, 0);
        }
        let both = t.hottest(Ranking::Total, 10, 0);
        assert_eq!(both.len(), 2, "misses are not in the total ranking");
        assert_eq!((both[0].db, both[0].key.as_slice()), (0, &b"user:1"[..]));
        assert!((both[0].total().count - 70.0).abs() < 1e-6);
        assert_eq!((both[1].db, both[1].total().count.round()), (3, 20.0));
        let writes = t.hottest(Ranking::Writes, 10, 0);
        assert_eq!(writes.len(), 2);
        assert_eq!(t.hottest(Ranking::Reads, 10, 0).len(), 1);
        let misses = t.hottest(Ranking::Misses, 10, 0);
        assert_eq!((misses.len(), misses[0].db), (1, 2));
        assert!((misses[0].misses.count - 5.0).abs() < 1e-6);
        assert_eq!(t.hottest(Ranking::Total, 1, 0).len(), 1);
        assert_eq!(t.keys_counted(), 90);
    }

    #[test]
    fn sampled_weights_count_and_fade_and_a_steady_rate_reads_true_from_the_first_second_on() {
        let mut t = tracker();
        for _ in 0..10 {
            count(&mut t, 0, b"k", Access::Read, 16, 0);
        }
        assert!((t.key(0, b"k", 0).reads.count - 160.0).abs() < 1e-6);
        // One half-life later, half.
        assert!((t.key(0, b"k", 10_000).reads.count - 80.0).abs() < 1e-6);
        // 100 reads a second from the start, read after 1 s, one half-life
        // (10 s) and many: always 100/s, though the count is still growing.
        let mut t = tracker();
        let mut now = 0;
        for read_at in [1_000, 10_000, 100_000] {
            while now < read_at {
                count(&mut t, 0, b"k", Access::Read, 1, now);
                now += 10;
            }
            let rate = t.key(0, b"k", now).reads.per_second;
            assert!((rate / 100.0 - 1.0).abs() < 0.01, "{rate} after {now} ms");
            let (reads, writes) = t.rates(now);
            assert!((reads.per_second / 100.0 - 1.0).abs() < 0.01 && writes.per_second == 0.0);
            assert_eq!(
                reads.bounds().low,
                reads.bounds().high,
                "every access counted"
            );
        }
        // Once the stream stops, its rate fades with its count.
        let rate = t.key(0, b"k", now + 10_000).reads.per_second;
        assert!((rate / 50.0 - 1.0).abs() < 0.01, "{rate}");
    }

    #[test]
    fn a_short_list_of_hash_slots_holds_only_slots_told_apart_from_the_rest() {
        // 400 counted slots of time, one in 16: 200 kept accesses spread
        // over every hash slot each (~5 a hash slot in all, the luckiest
        // ~15), and 20 in hash slot 7. Counts do not fade.
        let shape = TrackerShape {
            k: 10,
            half_life_ms: 1e12,
        };
        let mut t = KeyTracker::new(shape, 1, 0);
        t.count_hash_slots(0);
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        for seq in 1..=400u32 {
            let time = i64::from(seq) * 10;
            let (_, slots, _) = t.loads(TimeSlot::new(seq, 16), time, time);
            let slots = slots.unwrap();
            let unit = slots.unit_at(time);
            for _ in 0..200 {
                let slot = (uniform(&mut rng) * 16_384.0) as u16;
                slots.add(slot, Access::Read, 1.0, 16.0 * unit);
            }
            slots.add(7, Access::Read, 20.0, 320.0 * unit);
        }
        let now = 4_010;
        // Every slot with load: nothing picked, each with its own bounds.
        let all = t.hottest_hash_slots(None, 16_384, now, false).unwrap();
        assert!(all.len() > 10_000, "{}", all.len());
        assert!(all
            .iter()
            .all(|r| r.row.reads.picked_from.is_none() && !r.noise));
        // The twenty hottest: the one slot the noise cannot have made.
        let picked = t.hottest_hash_slots(None, 20, now, false).unwrap();
        assert_eq!(picked.iter().map(|r| r.row.slot).collect::<Vec<_>>(), [7]);
        // 8,000 kept accesses of 16, and its share of the spread ones.
        let reads = picked[0].row.reads;
        assert!((reads.count / 128_080.0 - 1.0).abs() < 0.01, "{reads:?}");
        assert_eq!(
            t.hottest_hash_slots(Some(Access::Write), 20, now, false)
                .unwrap(),
            vec![]
        );
        // With the noise: twenty rows, all but slot 7 marked as noise.
        let noisy = t.hottest_hash_slots(None, 20, now, true).unwrap();
        assert_eq!(noisy.len(), 20);
        assert!(noisy.iter().all(|r| r.noise == (r.row.slot != 7)));
    }
}
