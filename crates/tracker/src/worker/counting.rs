//! The counting side: batches of accesses are coalesced per key, then
//! inserted into the tracker in short steps, so that a reader waiting for
//! the tracker waits for one step, never for a whole flush.
//!
//! Two coalescers take turns: one fills with new accesses while the other
//! drains into the sketches. A reader counts everything still held first.
//!
//! Every access taken in is coalesced (its cost is a hash and a table
//! probe); what may be thinned is the inserts, one per key a horizon, when
//! the caller's budget for them ([`Counting::set_insert_rate`]) is smaller
//! than the keys held: then the keys that weigh least are thinned without
//! bias ([`crate::sampling::thinning`]) and the keys that matter are inserted whole.

use crate::access::Access;
use crate::budget::insert_allowance::InsertAllowance;
use crate::counting::client_attribution::ClientAttribution;
use crate::counting::insert::Insert;
use crate::counting::key_tracker::KeyTracker;
use crate::counting::prefixes::PrefixRule;
use crate::sampling::coalescer::{Coalesced, Coalescer, HARD_MAX_KEYS};
use crate::sampling::thinning::{threshold, Thinning};
use crate::sampling::time_slot::TimeSlot;
use crate::server::hash_slot::hash_slot;
use crate::worker::key_batch::{split_item, BatchAccess, Client, KeyBatch};
use crate::worker::member_runs::MemberRuns;
use heavykeeper_sketch::ItemHash;

/// Keys inserted per step of a drain.
pub const STEP: usize = 256;
/// However tight the budget, a horizon's keys get at least this many
/// inserts: a key with more than this share of the horizon's accesses is
/// never thinned.
pub const MIN_INSERTS: usize = 256;

/// Where counted accesses go: the tracker's sketches (or, in tests, exact
/// sums).
pub trait Sink {
    /// The seed items are hashed with.
    fn seed(&self) -> u64;
    fn insert(&mut self, insert: Insert<'_>);
    /// Is the key listed already (then its inserts are never thinned: its
    /// count is what is read)?
    fn is_listed(&self, _item: &[u8], _hash: ItemHash, _access: Access) -> bool {
        false
    }
    /// The accesses of one batch, as they are taken in (before they are
    /// coalesced): for loads counted exactly, per hash slot and in all.
    fn batch_loads(&mut self, _batch: &KeyBatch) {}
    /// Where each access's client is counted, if anywhere.
    fn clients(&mut self) -> Option<&mut ClientAttribution> {
        None
    }
}

impl Sink for KeyTracker {
    fn seed(&self) -> u64 {
        KeyTracker::seed(self)
    }

    #[inline]
    fn insert(&mut self, insert: Insert<'_>) {
        self.record(insert);
    }

    fn is_listed(&self, item: &[u8], hash: ItemHash, access: Access) -> bool {
        self.is_member(item, hash, access)
    }

    fn clients(&mut self) -> Option<&mut ClientAttribution> {
        self.clients_mut()
    }

    /// The node's totals, and each hash slot's load: every access of the
    /// batch (cheap, and exact per counter), at the batch's middle time
    /// (one `exp2` a batch).
    fn batch_loads(&mut self, batch: &KeyBatch) {
        let (first, sealed) = batch.span_ms();
        let time = first + (sealed - first) / 2;
        let weight = batch.weight() as f64;
        let time_slot = batch.time_slot();
        let (totals, slots, mut clients) = self.loads(time_slot, first, time);
        let unit = totals.unit_at(time) * weight;
        let (mut reads, mut writes) = (0.0, 0.0);
        let mut slots = slots.map(|s| (s.unit_at(time) * weight, s));
        let mut senders = MemberRuns::default();
        for access in batch.iter() {
            match access.access {
                Access::Read => reads += 1.0,
                Access::Write => writes += 1.0,
                Access::Miss | Access::Prefix => continue,
            }
            if let (Some((unit, load)), Some((_, key))) = (slots.as_mut(), split_item(access.item))
            {
                let slot = hash_slot(key);
                load.add(slot, access.access, 1.0, *unit);
                if let Some(clients) = clients.as_mut() {
                    sent_to_slot(clients, &mut senders, time_slot, slot, &access);
                }
            }
        }
        if let Some(clients) = clients {
            slot_senders_on(clients, &mut senders, time_slot);
        }
        totals.add(0, reads, reads * unit);
        totals.add(1, writes, writes * unit);
    }
}

/// What counting did since it was last asked: for the worker's budget.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Work {
    /// Accesses taken in (coalesced).
    pub accesses: u64,
    /// Inserts into the sketches.
    pub inserts: u64,
    /// Keys left out by thinning (each insert kept stood for them too).
    pub thinned: u64,
}

#[derive(Clone, Debug)]
pub struct Counting<S: Sink = KeyTracker> {
    tracker: S,
    filling: Coalescer,
    draining: Coalescer,
    /// Keys of `draining` already inserted, and the threshold they are
    /// thinned at (worked out at the first step: `None` until then).
    drained: usize,
    threshold: Option<Option<u64>>,
    thinning: Thinning,
    /// Inserts the sketches may take now (at a rate, with room for bursts).
    allowance: InsertAllowance,
    /// Where keys are cut into prefixes (`None`: prefixes not counted).
    prefixes: Option<PrefixRule>,
    seed: u64,
    work: Work,
    /// The batch in hand's accesses of watched members, by client.
    member_runs: MemberRuns,
}

impl<S: Sink> Counting<S> {
    /// Coalescing over `horizon_ms`, nothing thinned.
    pub fn new(tracker: S, horizon_ms: i64, seed: u64) -> Self {
        Self {
            seed: tracker.seed(),
            tracker,
            filling: Coalescer::new(horizon_ms),
            draining: Coalescer::new(horizon_ms),
            drained: 0,
            threshold: Some(None),
            thinning: Thinning::new(seed),
            allowance: InsertAllowance::default(),
            prefixes: None,
            work: Work::default(),
            member_runs: MemberRuns::default(),
        }
    }

    /// Counts prefixes by `rule` from now on (`None`: not at all).
    pub fn set_prefixes(&mut self, rule: Option<PrefixRule>) {
        self.prefixes = rule;
    }

    /// How many seconds of the insert rate a burst may take at once.
    pub fn set_insert_burst(&mut self, seconds: f64) {
        self.allowance.set_burst(seconds);
    }

    /// How many inserts a second the sketches may take from now on
    /// (`None`: as many as there are keys).
    pub fn set_insert_rate(&mut self, rate: Option<f64>) {
        self.allowance.set_rate(rate);
    }

    /// What was done since the last call.
    pub fn take_work(&mut self) -> Work {
        std::mem::take(&mut self.work)
    }

    /// Makes room for `batch` in the filling coalescer: where it could
    /// overflow while the one before is still being counted, that one is
    /// counted to the end now. The inserts this makes are the caller's to
    /// time as inserts, so that [`Counting::absorb`] is only taking
    /// accesses in.
    pub fn make_room(&mut self, batch: &KeyBatch) {
        let per_access = 1 + self.prefixes.as_ref().map_or(0, PrefixRule::depth_count);
        let coming = batch.len().saturating_mul(per_access);
        if self.drained < self.draining.len() && self.filling.len() + coming >= HARD_MAX_KEYS {
            self.rotate(true);
        }
    }

    /// Takes in the accesses of `batch`, leaving it as it was: the caller
    /// recycles it. Due coalesced keys move to draining first.
    pub fn absorb(&mut self, batch: &KeyBatch) {
        if batch.is_empty() {
            return;
        }
        self.tracker.batch_loads(batch);
        let slot = batch.time_slot();
        let mut sender = SenderRun::default();
        for access in batch.iter() {
            if matches!(access.access, Access::Read | Access::Write) {
                sender.sent(&mut self.tracker, &access, slot);
            }
            self.take(access, slot);
        }
        sender.flush(&mut self.tracker, slot);
        hand_on(&mut self.tracker, &mut self.member_runs, slot);
        self.work.accesses += batch.len() as u64;
    }

    #[inline]
    fn take(&mut self, access: BatchAccess<'_>, slot: TimeSlot) {
        if self.filling.is_due(access.time_ms) {
            self.rotate(false);
        }
        let hash = ItemHash::of(access.item, self.seed);
        let runs = &mut self.member_runs;
        attribute(&mut self.tracker, runs, slot, access.access, hash, &access);
        self.filling
            .add(access.item, hash, access.access, slot, access.time_ms);
        if let (Some(rule), Access::Read | Access::Write) = (&self.prefixes, access.access) {
            let (filling, seed) = (&mut self.filling, self.seed);
            // The prefix of a key is the first bytes of its item (the
            // database, then the key): no copy.
            // A long key's tracked name is cut: its prefixes come from the
            // key's own bytes only, never from the marker or the hash.
            let key =
                crate::server::tracked_name::own_bytes(access.item.get(2..).unwrap_or_default());
            let tracker = &mut self.tracker;
            rule.each_prefix(key, |prefix| {
                let item = access.item.get(..2 + prefix.len()).unwrap_or_default();
                let hash = ItemHash::of(item, seed);
                attribute(tracker, runs, slot, Access::Prefix, hash, &access);
                filling.add(item, hash, Access::Prefix, slot, access.time_ms);
            });
        }
    }

    /// Moves the filled coalescer to draining once draining is done; if it
    /// is not, filling goes on (taking accesses in never inserts, so that
    /// its cost is its own) until it is full, or `now` says so: then
    /// draining is finished first.
    fn rotate(&mut self, now: bool) {
        if self.drained < self.draining.len() {
            if !now && !self.filling.is_full() {
                return;
            }
            self.finish_draining();
        }
        self.draining.clear();
        self.drained = 0;
        std::mem::swap(&mut self.filling, &mut self.draining);
        self.threshold = None;
    }

    /// The threshold `coalescer`'s keys are thinned at: what fits the
    /// inserts the allowance has for them when they are counted.
    fn threshold_for(allowance: &mut InsertAllowance, coalescer: &Coalescer) -> Option<u64> {
        let budget = allowance
            .available(coalescer.last_ms())?
            .max(MIN_INSERTS as f64);
        threshold(coalescer.weights(), budget.min(usize::MAX as f64) as usize)
    }

    /// Is there anything to drain, or held long enough to be?
    pub fn has_work(&self, now_ms: i64) -> bool {
        self.drained < self.draining.len() || self.filling.is_due(now_ms)
    }

    /// One step of draining: at most [`STEP`] keys into the tracker. Held
    /// keys past their horizon at `now_ms` start draining.
    pub fn step(&mut self, now_ms: i64) {
        if self.drained >= self.draining.len() {
            if !self.filling.is_due(now_ms) {
                return;
            }
            self.rotate(true);
        }
        self.drained = self.drain_draining(self.drained, STEP);
    }

    fn finish_draining(&mut self) {
        self.drain_draining(self.drained, usize::MAX);
        self.draining.clear();
        self.drained = 0;
    }

    fn drain_draining(&mut self, from: usize, n: usize) -> usize {
        let threshold = *(self.threshold)
            .get_or_insert_with(|| Self::threshold_for(&mut self.allowance, &self.draining));
        self.insert_keys(false, threshold, from, n)
    }

    /// Inserts keys `from..from + n` of the coalescer draining (or the one
    /// `filling`), thinned at `threshold`; the allowance pays for them.
    fn insert_keys(
        &mut self,
        filling: bool,
        threshold: Option<u64>,
        from: usize,
        n: usize,
    ) -> usize {
        let Self {
            tracker,
            draining,
            filling: held,
            thinning,
            work,
            allowance,
            ..
        } = self;
        let before = work.inserts;
        let keys = if filling { held } else { draining };
        let drained = keys.drain(from, n, |key| {
            insert_thinned(tracker, thinning, threshold, work, key);
        });
        allowance.spend(work.inserts - before);
        drained
    }

    /// The tracker with every access taken in so far counted (what is
    /// still held too, thinned as the budget says).
    pub fn current(&mut self) -> &S {
        self.finish_draining();
        let threshold = Self::threshold_for(&mut self.allowance, &self.filling);
        self.insert_keys(true, threshold, 0, usize::MAX);
        self.filling.clear();
        &self.tracker
    }

    /// The tracker as counted so far (what is held not included).
    pub fn tracker(&self) -> &S {
        &self.tracker
    }

    /// Keys held, not yet in the tracker.
    pub fn held(&self) -> usize {
        self.filling.len() + self.draining.len() - self.drained
    }
}

/// The access's client, counted for the member it is of (if a member):
/// summed with the batch's other accesses of it by that client, and handed
/// on as one ([`crate::worker::member_runs`]).
#[inline(always)]
fn attribute<S: Sink>(
    tracker: &mut S,
    runs: &mut MemberRuns,
    slot: TimeSlot,
    access: Access,
    hash: ItemHash,
    from: &BatchAccess<'_>,
) {
    if from.client.id == 0 {
        return;
    }
    if !tracker.clients().is_some_and(|c| c.watches(hash.value())) {
        return;
    }
    if runs.add(access, hash.value(), from.client, from.time_ms) {
        hand_on(tracker, runs, slot);
    }
}

/// The batch's sums of members by client, attributed.
fn hand_on<S: Sink>(tracker: &mut S, runs: &mut MemberRuns, slot: TimeSlot) {
    let mut clients = tracker.clients();
    runs.drain(|run| {
        if let Some(clients) = clients.as_mut() {
            clients.add(
                run.access,
                run.hash,
                run.client,
                run.weighed(slot),
                run.time_ms,
            );
        }
    });
}

/// One access of watched hash slot `slot`, summed with the batch's other
/// accesses of it by the same client: they were counted together or not at
/// all, so they are attributed as one cluster ([`slot_senders_on`]), as a
/// member's are ([`crate::worker::member_runs`]). Reads and writes of a slot
/// share one sum (one sender count per slot).
#[inline(always)]
fn sent_to_slot(
    clients: &mut ClientAttribution,
    senders: &mut MemberRuns,
    time_slot: TimeSlot,
    slot: u16,
    from: &BatchAccess<'_>,
) {
    if from.client.id == 0 || !clients.watches_slot(slot) {
        return;
    }
    if senders.add(Access::Read, u64::from(slot), from.client, from.time_ms) {
        slot_senders_on(clients, senders, time_slot);
    }
}

/// The batch's sums of watched hash slots by client, attributed.
fn slot_senders_on(clients: &mut ClientAttribution, senders: &mut MemberRuns, slot: TimeSlot) {
    senders.drain(|run| {
        // The key of a sum of slot senders is the slot's number.
        let hash_slot = u16::try_from(run.hash).unwrap_or(u16::MAX);
        clients.add_to_slot(hash_slot, run.client, run.weighed(slot), run.time_ms);
    });
}

/// The node's key accesses by client, counted a run of one client's
/// accesses at a time (a pipeline is one run).
#[derive(Default)]
struct SenderRun {
    client: Client,
    accesses: u32,
    time_ms: i64,
}

impl SenderRun {
    #[inline(always)]
    fn sent<S: Sink>(&mut self, tracker: &mut S, access: &BatchAccess<'_>, slot: TimeSlot) {
        if access.client != self.client {
            self.flush(tracker, slot);
            (self.client, self.time_ms) = (access.client, access.time_ms);
        }
        self.accesses += 1;
    }

    /// The run, attributed as one cluster of its slot ([`TimeSlot::cluster`]):
    /// one client's pipeline is counted whole or not at all.
    fn flush<S: Sink>(&mut self, tracker: &mut S, slot: TimeSlot) {
        if self.client.id != 0 && self.accesses > 0 {
            if let Some(clients) = tracker.clients() {
                clients.add_overall(self.client, slot.counted(self.accesses), self.time_ms);
            }
        }
        self.accesses = 0;
    }
}

/// One coalesced key into `tracker`, if thinning keeps it. A key listed
/// already is never thinned: whether it is was settled by what came before,
/// not by this key's weight, so its inclusion probability is 1 and every
/// count stays unbiased, and the counts that are read (the top-k's, the
/// boundary's) keep every access. A key kept below the threshold plays
/// HeavyKeeper's decay as one arrival of the threshold's weight: what it
/// stands for, in one coin.
fn insert_thinned<S: Sink>(
    tracker: &mut S,
    thinning: &mut Thinning,
    threshold: Option<u64>,
    work: &mut Work,
    key: Coalesced<'_>,
) {
    let threshold = threshold
        .filter(|&tau| key.weight >= tau || !tracker.is_listed(key.item, key.hash, key.access));
    let Some(kept) = thinning.keep(key.weight, key.variance, threshold) else {
        work.thinned += 1;
        return;
    };
    work.inserts += 1;
    let thinned = kept.weight > key.weight;
    let scale = if thinned {
        kept.weight as f64
    } else {
        key.weight as f64 / key.seen.max(1) as f64
    };
    tracker.insert(Insert {
        item: key.item,
        hash: key.hash,
        access: key.access,
        weight: kept.weight,
        // Thinned, the whole weight is a coin's.
        sampled: if thinned { kept.weight } else { key.sampled },
        scale,
        time_ms: key.time_ms,
        variance: kept.variance,
    });
}

impl Counting<KeyTracker> {
    /// Heap bytes: the sketches and what is held.
    pub fn memory_bytes(&self) -> usize {
        self.tracker.memory_bytes() + self.filling.heap_bytes() + self.draining.heap_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::counting::key_tracker::{Ranking, TrackerShape};

    fn tracker() -> KeyTracker {
        let shape = TrackerShape {
            k: 20,
            half_life_ms: 1e12,
        };
        KeyTracker::new(shape, 3, 0)
    }

    fn counting() -> Counting {
        Counting::new(tracker(), 100, 9)
    }

    fn batch<K: AsRef<[u8]>>(
        keys: impl IntoIterator<Item = K>,
        slot: TimeSlot,
        at: i64,
    ) -> KeyBatch {
        let mut b = KeyBatch::default();
        for k in keys {
            b.push(0, k.as_ref(), Access::Read, slot, || at);
        }
        b.seal(at);
        b
    }

    #[test]
    fn a_reader_sees_every_access_taken_in_and_an_empty_batch_changes_nothing() {
        let mut c = counting();
        c.absorb(&KeyBatch::default());
        c.current();
        assert_eq!(c.tracker().started_ms(), None);
        assert_eq!(c.take_work(), Work::default());
        c.absorb(&batch(["a", "a", "b"], TimeSlot::new(1, 4), 10));
        assert_eq!(c.tracker().key(0, b"a", 10).reads.count, 0.0);
        let now = c.current();
        assert!((now.key(0, b"a", 10).reads.count - 8.0).abs() < 1e-6);
        assert!((now.key(0, b"b", 10).reads.count - 4.0).abs() < 1e-6);
    }

    #[test]
    fn the_worker_drains_in_steps_of_bounded_size() {
        let mut c = counting();
        let keys = (0..1_000).map(|i| format!("k{i}"));
        c.absorb(&batch(keys, TimeSlot::WHOLE, 0));
        assert!(!c.has_work(50), "held within its horizon");
        assert!(c.has_work(100));
        let mut steps = 0;
        while c.has_work(100) {
            let before = c.held();
            c.step(100);
            assert!(before - c.held() <= STEP);
            steps += 1;
        }
        assert_eq!((steps, c.held()), (1_000usize.div_ceil(STEP), 0));
        assert_eq!(c.tracker().keys_counted(), 1_000);
    }

    #[test]
    fn a_tenant_spread_over_many_keys_is_one_hot_prefix() {
        let mut c = counting();
        c.set_prefixes(PrefixRule::new(b":", &[2]));
        let keys = (0..2_000).map(|i| {
            if i % 10 < 3 {
                format!("tenant:7:cart:{i}")
            } else {
                format!("tenant:u{i}:cart:1")
            }
        });
        c.absorb(&batch(keys, TimeSlot::WHOLE, 0));
        let top = c.current().hottest(Ranking::Prefixes, 3, 0);
        assert_eq!(top[0].key, b"tenant:7:".to_vec());
        assert!((top[0].under.count - 600.0).abs() < 1e-6, "{:?}", top[0]);
        // No single key of the tenant is hot.
        let keys_top = c.current().hottest(Ranking::Reads, 1, 0);
        assert!(keys_top[0].reads.count <= 1.0 + 1e-9);
    }

    #[test]
    fn every_slot_and_the_totals_count_every_access_exactly() {
        let mut t = tracker();
        t.count_hash_slots(0);
        let mut c = Counting::new(t, 100, 9);
        c.set_insert_rate(Some(1.0));
        let mut b = KeyBatch::default();
        let slot = TimeSlot::new(1, 2);
        for i in 0..300 {
            let key = format!("k{}", i % 3);
            b.push(0, key.as_bytes(), Access::Read, slot, || 0);
            b.push(0, b"{k0}w", Access::Write, slot, || 0);
        }
        b.seal(0);
        c.absorb(&b);
        // Read 10 s on (the counts do not fade in a 1e12 ms half-life):
        // rates are the counts over those 10 s.
        let close = |rate: f64, count: f64| (rate * 10.0 / count - 1.0).abs() < 1e-6;
        let (reads, writes) = c.tracker().rates(10_000);
        assert!(
            close(reads.per_second, 600.0) && close(writes.per_second, 600.0),
            "{reads:?} {writes:?}"
        );
        let slots: Vec<_> = (c.tracker().hottest_hash_slots(None, 10, 10_000, false))
            .unwrap()
            .into_iter()
            .map(|picked| picked.row)
            .collect();
        let k0 = hash_slot(b"k0");
        let top = slots.iter().find(|s| s.slot == k0).unwrap();
        // k0's reads (100 × 2) and the {k0} writes (300 × 2) share its slot.
        assert!(close(top.reads.per_second, 200.0) && close(top.writes.per_second, 600.0));
        assert!(close(slots.iter().map(|s| s.total()).sum::<f64>(), 1_200.0));
    }

    #[test]
    fn each_member_and_the_node_know_who_sent_their_accesses() {
        let mut t = tracker();
        t.count_clients(0);
        let mut c = Counting::new(t, 100, 9);
        let mut b = KeyBatch::default();
        let slot = TimeSlot::new(1, 2);
        // Hosts 1..=4 read "hot" 60, 25, 10 and 5 times in 100; a fifth
        // client reads 3,000 keys once each, none of them hot.
        for i in 0..1_000u64 {
            let host = match i % 100 {
                0..60 => 1,
                60..85 => 2,
                85..95 => 3,
                _ => 4,
            };
            b.set_client(Client {
                id: 10 + u64::from(host),
                host,
            });
            b.push(0, b"hot", Access::Read, slot, || 0);
        }
        b.set_client(Client { id: 99, host: 9 });
        for i in 0..3_000 {
            b.push(0, format!("k{i}").as_bytes(), Access::Read, slot, || 0);
        }
        b.seal(0);
        c.absorb(&b);
        // The first drain makes "hot" a member; from the next batch on its
        // senders are counted.
        c.current();
        c.absorb(&b);
        let now = c.current();
        let clients = now.clients().unwrap();
        let hash = now.hash(&crate::counting::key_tracker::item_of(0, b"hot"));
        let hosts = clients
            .row(Access::Read, hash.value())
            .unwrap()
            .hosts
            .parts(0);
        let got: Vec<(u64, f64)> = hosts.iter().map(|p| (p.client, p.count.round())).collect();
        // Each access stands for 2 (a slot in 2): the counts are twice.
        assert_eq!(got, [(1, 1_200.0), (2, 500.0), (3, 200.0), (4, 100.0)]);
        let overall = clients.overall().connections.parts(0);
        assert_eq!(overall[0].client, 99, "{overall:?}");
        assert!(
            (overall[0].count - 2.0 * 2.0 * 3_000.0).abs() < 1e-6,
            "{overall:?}"
        );
        // Its 3,000 accesses of a batch were one run in a slot counted one
        // in 2: counted all or none, a cluster of 6,000 each time (variance
        // (1 − 1/2) · 6,000²), not 6,000 accesses sampled apart (2 · 1 each).
        let cluster = 0.5 * 6_000.0 * 6_000.0;
        assert!(
            (overall[0].variance - 2.0 * cluster).abs() < 1.0,
            "{overall:?}"
        );
    }

    #[test]
    fn the_hottest_hash_slots_know_who_sends_them() {
        let mut t = tracker();
        t.count_hash_slots(0);
        t.count_clients(0);
        let mut c = Counting::new(t, 100, 9);
        let batch = |at: i64| {
            let mut b = KeyBatch::default();
            for (id, key, n) in [(5, "k0", 30), (6, "k1", 10)] {
                b.set_client(Client {
                    id,
                    host: id as u32,
                });
                for _ in 0..n {
                    b.push(0, key.as_bytes(), Access::Read, TimeSlot::WHOLE, || at);
                }
            }
            b.seal(at);
            b
        };
        // The slots are chosen from the load counted so far: none at first,
        // the two slots with load a second on.
        c.absorb(&batch(0));
        c.absorb(&batch(1_000));
        let tracker = c.tracker();
        let (senders, rate) = tracker
            .hash_slot_senders(hash_slot(b"k0"), true, 1_000)
            .unwrap();
        assert_eq!(senders.parts.len(), 1);
        assert_eq!(
            (senders.parts[0].client, senders.parts[0].count.round()),
            (5, 30.0)
        );
        assert!(rate.reads.count > 59.0, "{rate:?}");
        assert!(tracker
            .hash_slot_senders(hash_slot(b"k9"), true, 1_000)
            .is_none());
    }

    #[test]
    fn a_senders_accesses_of_a_hash_slot_in_one_time_slot_are_one_cluster() {
        let mut t = tracker();
        t.count_hash_slots(0);
        t.count_clients(0);
        let mut c = Counting::new(t, 100, 9);
        // Client 5 reads k0 30 times in each batch, in slots counted one in 4.
        let batch = |at: i64, seq: u32| {
            let mut b = KeyBatch::default();
            b.set_client(Client { id: 5, host: 5 });
            for _ in 0..30 {
                b.push(0, b"k0", Access::Read, TimeSlot::new(seq, 4), || at);
            }
            b.seal(at);
            b
        };
        c.absorb(&batch(0, 1));
        c.absorb(&batch(1_000, 2));
        let (senders, _) = c
            .tracker()
            .hash_slot_senders(hash_slot(b"k0"), true, 1_000)
            .unwrap();
        let part = senders.parts[0];
        assert_eq!((part.client, part.count.round()), (5, 120.0));
        // All 30 were counted or none: (1 − 1/4) · 120², not 30 · 4 · 3.
        let cluster = 0.75 * 120.0 * 120.0;
        assert!((part.variance - cluster).abs() < 1e-6, "{part:?}");
    }

    #[test]
    fn thinning_keeps_heavy_keys_whole_and_the_tail_unbiased() {
        // 4 hot keys of 1,000 accesses and 4,000 keys seen once, at a budget
        // of a few hundred inserts: the hot keys are exact, the tail's total
        // is right within its spread.
        let mut c = counting();
        c.set_insert_rate(Some(1.0));
        let hot = (0..4_000).map(|i| format!("hot{}", i % 4));
        let keys = hot.chain((0..4_000).map(|i| format!("tail{i}")));
        c.absorb(&batch(keys, TimeSlot::WHOLE, 0));
        let now = c.current();
        for i in 0..4 {
            let hot = now.key(0, format!("hot{i}").as_bytes(), 0).reads;
            assert_eq!(hot.count, 1_000.0, "hot{i}");
            assert_eq!((hot.sampled, hot.variance), (0.0, 0.0), "hot{i}");
        }
        // A tail key kept by a coin stands for the keys thinned away: its
        // whole count is sampled, one event of the stream's noise, so no
        // list names it (the hot keys are all a list shows).
        let listed = now.hottest(Ranking::Reads, 20, 0);
        assert_eq!(listed.len(), 4, "{listed:?}");
        assert!(listed.iter().all(|k| k.key.starts_with(b"hot")));
        let kept = (0..4_000)
            .map(|i| now.key(0, format!("tail{i}").as_bytes(), 0).reads)
            .find(|t| t.count > 1.0)
            .expect("a tail key kept by a coin, in the sketch");
        assert!((kept.sampled - kept.count).abs() < 1e-6, "{kept:?}");
        assert!(kept.variance > 0.0, "{kept:?}");
        // Each coalescer's keys get at least MIN_INSERTS (4,004 keys fill
        // two): a few hundred inserts, the rest thinned.
        let work = c.take_work();
        assert!(work.inserts < 2 * MIN_INSERTS as u64 + 100, "{work:?}");
        assert!(work.thinned > 3_400, "{work:?}");
        assert_eq!(work.accesses, 8_000);
        let counted = c.tracker().keys_counted() as f64;
        assert!((counted / 8_000.0 - 1.0).abs() < 0.1, "{counted}");
    }
}
