//! The tracker's state while tracking is on, and the rules that change it:
//! what a command, a key miss, a slot boundary and a tick do. Everything
//! here runs on the server's main thread; the counting itself is the
//! worker's ([`heavykeeper_tracker::worker`]).

use super::auth::{Admission, AuthWatch};
use super::config::Sampling;
use super::routing::Routing;
use crate::host::clock;
use crate::host::module_context;
use heavykeeper_tracker::budget::cost_budget::{CostBudget, TickCost};
use heavykeeper_tracker::budget::cost_meter::{CostMeter, Spent};
use heavykeeper_tracker::budget::insert_allowance;
use heavykeeper_tracker::counting::{prefixes::PrefixRule, tally::Tally};
use heavykeeper_tracker::sampling::access_coins::AccessCoins;
use heavykeeper_tracker::sampling::access_thinning::{self, ThinningWithinShare};
use heavykeeper_tracker::sampling::time_slot::TimeSlot;
use heavykeeper_tracker::sampling::{coverage::Coverage, kept_time_slots::KeptTimeSlots};
use heavykeeper_tracker::server::client_table::{ClientTable, Db, Trust};
use heavykeeper_tracker::server::command_table::{Args, CommandTable, KeyUse};
use heavykeeper_tracker::server::hash_slot_map::Request;
use heavykeeper_tracker::server::hash_slot_map::{HashSlotMap, Route};
use heavykeeper_tracker::server::name_effect::NameEffect;
use heavykeeper_tracker::server::script_watch::ScriptWatch;
use heavykeeper_tracker::worker::{self, Worker};
use heavykeeper_tracker::worker::{counting::Counting, key_batch::KeyBatch};
use heavykeeper_tracker::{hash_slot, Access, KeyTracker, TrackerShape};
use redis_module::Context;
use std::collections::HashSet;
use std::sync::MutexGuard;
use std::time::Instant;
use time_slots::Schedule;

/// Of the worker's fixed share (`track-sample N`), what taking accesses in
/// may use: the rest is for its inserts.
const ABSORB_PART: f64 = 0.6;

/// A command as the filter sees it: its client (where the server says) and
/// its arguments.
pub trait FilteredCommand {
    /// The client that sent it (Redis 7.2+, Valkey).
    fn client(&self) -> Option<u64>;
    fn argc(&self) -> usize;
    /// Argument `i` (empty past the end).
    fn arg(&self, i: usize) -> &[u8];
    /// The keys' positions and flags as the server finds them (for
    /// commands whose key specs cannot say), if any.
    fn server_keys(&self) -> Vec<(usize, Option<Access>)>;
    /// Is a script running (Redis 7.0: its commands pass the filter too)?
    fn in_script(&self) -> bool;
    /// The database of client `id`, as the server says: `Some(None)` for a
    /// client that is no connection, `None` if it cannot say.
    fn client_db(&self, id: u64) -> Option<Db>;
    /// Does `key` exist in database `db` now? (Looked up without effects,
    /// for keys of a slot being migrated away.)
    fn key_exists(&self, db: u16, key: &[u8]) -> bool;
}

/// Most accesses one slot holds while it may still be discarded (Redis 7.0
/// with a password): past that the slot is discarded whole.
const HELD_SLOT_ACCESSES: usize = 8192;
const HELD_SLOT_KEY_BYTES: usize = 256 * 1024;

/// The current slot of time.
#[derive(Default)]
struct OpenTimeSlot {
    /// The slot as counted, with what each of its accesses stands for
    /// (`None`: not counted).
    counted: Option<TimeSlot>,
    /// Counted slots so far (numbers each).
    seq: u32,
    /// The coins of accesses kept one in `n`.
    coins: AccessCoins,
    opened: Option<Instant>,
    /// Counted time since the last tick.
    counted_ns: u64,
    /// When the current counted slot began.
    began: Option<Instant>,
    /// When the uncounted time before the next counted slot began.
    gap_began: Option<Instant>,
    /// It held too much to be kept: it counts nothing more and is discarded.
    overflowed: bool,
}

/// What the tracker has seen, for `INFO`.
#[derive(Clone, Copy, Default)]
pub struct Figures {
    pub commands_seen: u64,
    pub accesses_dropped: u64,
    pub time_slots_discarded: u64,
    /// Time slots begun, and of those counted; their wall time (ns).
    pub time_slots: u64,
    pub time_slots_counted: u64,
    pub time_slot_ns: u64,
    pub counted_time_slot_ns: u64,
    pub misses_seen: u64,
    /// Commands not counted: a cluster node that will not serve them
    /// (`MOVED`, `CROSSSLOT`, `ASK`, `TRYAGAIN`, `CLUSTERDOWN`).
    pub commands_redirected: u64,
    /// The node's reads and writes (all keys), as last read.
    pub reads: Tally,
    pub writes: Tally,
}

pub struct Tracking {
    shape: TrackerShape,
    sampling: Sampling,
    coverage: Coverage,
    /// Where the slots of time stand, and when the slot timer is due.
    schedule: Schedule,
    budget: CostBudget,
    /// Within counted slots, one access in how many is kept.
    keep_one_in: u32,
    time_slot: OpenTimeSlot,
    batch: KeyBatch,
    commands: CommandTable,
    clients: ClientTable,
    scripts: ScriptWatch,
    auth: AuthWatch,
    meter: CostMeter,
    worker: Worker,
    misses: bool,
    /// Where keys are cut into prefixes (`None`: prefixes not counted).
    prefixes: Option<PrefixRule>,
    /// A cluster node counts each slot's load, and only the commands it
    /// serves.
    in_cluster: bool,
    routing: Routing,
    /// Does the server's filter say which client sent a command (7.2+)?
    names_clients: bool,
    /// Redis 7.0 with a password: counted slots kept, and what they stand for.
    kept: KeptTimeSlots,
    figures: Figures,
    /// Keys announced `hot` on the tracking channel and not yet `cool`.
    notified: HashSet<(u16, Vec<u8>)>,
    ticks: u64,
    /// What the last tick's period cost, by part, and how long it was.
    recent: Spent,
    recent_elapsed_ns: u64,
    /// Where the share of time counted is fixed: what taking every access
    /// in costs the worker, over the last seconds, and so how thinly
    /// accesses are kept.
    thinning: ThinningWithinShare,
}

/// A worker counting afresh: each slot's load too in a cluster.
fn fresh_worker(shape: TrackerShape, in_cluster: bool, prefixes: Option<PrefixRule>) -> Worker {
    let now = clock::now_ms();
    let mut tracker = KeyTracker::new(shape, rand::random(), now);
    if in_cluster {
        tracker.count_hash_slots(now);
    }
    let worker = Worker::start(tracker);
    worker.set_prefixes(prefixes);
    worker
}

/// Who needs a password is asked every this many ticks (`ACL GETUSER`
/// costs the server ~600,000 instructions), and at once after the filter
/// saw a command that may change it.
const USERS_EVERY_TICKS: u64 = 10;
/// While every command is counted the filter sees every command that could
/// change it (and the server announces config changes): asked only this
/// often, as a safety net.
const USERS_EVERY_TICKS_COUNTING_ALL: u64 = 100;

impl Tracking {
    pub fn new(
        shape: TrackerShape,
        sampling: Sampling,
        budget: f64,
        commands: CommandTable,
        names_clients: bool,
        in_cluster: bool,
    ) -> Self {
        let every = match sampling {
            Sampling::Budgeted => 1,
            Sampling::Fixed(n) => n,
        };
        Self {
            shape,
            sampling,
            coverage: Coverage::new(every, rand::random()),
            schedule: Schedule::Whole,
            budget: CostBudget::new(budget, heavykeeper_tracker::sampling::coverage::MAX_EVERY),
            keep_one_in: 1,
            time_slot: OpenTimeSlot {
                counted: Some(TimeSlot::WHOLE),
                coins: AccessCoins::new(rand::random()),
                ..OpenTimeSlot::default()
            },
            batch: KeyBatch::default(),
            commands,
            clients: ClientTable::default(),
            scripts: ScriptWatch::default(),
            auth: AuthWatch::default(),
            meter: CostMeter::default(),
            worker: fresh_worker(shape, in_cluster, None),
            misses: false,
            prefixes: None,
            in_cluster,
            routing: Routing::default(),
            names_clients,
            kept: KeptTimeSlots::new(),
            figures: Figures::default(),
            notified: HashSet::new(),
            ticks: 0,
            recent: Spent::default(),
            recent_elapsed_ns: 0,
            thinning: ThinningWithinShare::default(),
        }
    }

    /// The same tracker with every count forgotten (`HK.HOTKEYS RESET`):
    /// the slots, the share counted, what is known of clients go on.
    pub fn reset(&mut self) {
        self.worker = fresh_worker(self.shape, self.in_cluster, self.prefixes.clone());
        self.tell_worker_its_share();
        self.batch.clear();
        self.auth.held().clear();
        self.notified.clear();
    }

    pub fn shape(&self) -> TrackerShape {
        self.shape
    }

    /// Counts afresh with a new shape (`track-k`, `track-halflife`).
    pub fn reset_to(&mut self, shape: TrackerShape) {
        self.shape = shape;
        self.reset();
    }

    /// Asks the server again who needs a password.
    pub fn refresh_users(&mut self, ctx: &Context) {
        self.auth.refresh(ctx);
    }

    /// Who needs a password may have changed (an `ACL` or `CONFIG` command,
    /// a config change): trust no one until the server is asked again.
    /// What was gathered while no one needed a password stays counted; from
    /// now on a client (7.2+) or a slot (7.0) must prove itself.
    pub fn users_may_have_changed(&mut self) {
        if self.auth.all_let_in() {
            self.submit();
        }
        self.auth.users_may_have_changed();
    }

    /// Who needs a password may have changed, and the server can be asked
    /// now (outside the filter): asked at once.
    pub fn users_changed(&mut self, ctx: &Context) {
        self.users_may_have_changed();
        self.auth.refresh(ctx);
    }

    /// New settings that keep the counts: how to sample, the budget,
    /// whether misses count, how keys are cut into prefixes (prefixes
    /// counted under an old rule fade like any other).
    pub fn configure(
        &mut self,
        sampling: Sampling,
        budget: f64,
        misses: bool,
        prefixes: Option<PrefixRule>,
    ) {
        if prefixes != self.prefixes {
            self.worker.set_prefixes(prefixes.clone());
            self.prefixes = prefixes;
        }
        self.sampling = sampling;
        self.budget.set_budget(budget);
        if let Sampling::Fixed(n) = sampling {
            if n != self.coverage.every() {
                self.coverage.set_every(n);
                self.replan_time_slots();
            }
        }
        self.misses = misses;
        self.tell_worker_its_share();
    }

    /// The worker's share, and how long a burst of inserts it may take:
    /// where the share is fixed, a burst taken in whole is inserted whole
    /// too; under a budget, bursts are what the budget's sampling answers,
    /// and inserts keep to it closely.
    fn tell_worker_its_share(&self) {
        self.worker.set_cpu_share(self.worker_share());
        self.worker.set_insert_burst(match self.sampling {
            Sampling::Fixed(_) => access_thinning::BURST_SECONDS,
            Sampling::Budgeted => insert_allowance::BURST_S,
        });
    }

    /// What the worker may take before it thins: its part of the budget;
    /// where the share of time counted is fixed, a fixed bound, or the
    /// budget if an operator allowed more (to count every access of a
    /// saturated node).
    fn worker_share(&self) -> f64 {
        match self.sampling {
            Sampling::Budgeted => self.budget.worker_share(),
            Sampling::Fixed(_) => worker::WORKER_CPU_SHARE.max(self.budget.budget()),
        }
    }

    /// Is the filter to be registered now?
    pub fn is_counting(&self) -> bool {
        self.time_slot.counted.is_some()
    }

    // --- Commands -------------------------------------------------------

    /// Counts the keys of a command the filter saw. The hot path of the
    /// whole tracker: one lookup of the command's name says what the
    /// command does to the tracker's knowledge and where its keys are.
    #[inline(always)]
    pub fn count_command(&mut self, cmd: &impl FilteredCommand) {
        self.figures.commands_seen = self.figures.commands_seen.wrapping_add(1);
        let Some(slot) = self.time_slot.counted else {
            return;
        };
        if self.auth.is_checking() {
            self.conclude_check();
        }
        let client = cmd.client();
        let name = cmd.arg(0);
        let argc = cmd.argc();
        let args = |i: usize| (i < argc).then(|| if i == 0 { name } else { cmd.arg(i) });
        let key_use = self.commands.command_of(name, argc, &args);
        let effect = key_use.effect();
        let starts_script = client.is_none() && key_use.starts_script();
        let asking = self.in_cluster && self.routing.take_asking(client);
        if key_use.has_keys() && !self.time_slot.overflowed {
            if let Some((db, hold)) = destination(
                cmd,
                client,
                &mut self.clients,
                &mut self.auth,
                &mut self.scripts,
            ) {
                let served = match self.routing.map() {
                    Some(map) => served_here(map, &key_use, cmd, &args, db, asking),
                    None => true,
                };
                if served {
                    let batch = if hold {
                        self.auth.held()
                    } else {
                        &mut self.batch
                    };
                    push_keys(
                        batch,
                        &key_use,
                        cmd,
                        &args,
                        db,
                        slot,
                        &mut self.time_slot.coins,
                    );
                    self.flush_if_full();
                } else {
                    self.figures.commands_redirected += 1;
                }
            }
        }
        if effect != NameEffect::None {
            self.note_effect(client, effect);
        }
        if starts_script {
            self.scripts.script_started();
        }
    }

    /// What a command's name alone changes (after its keys are counted: a
    /// `SELECT` moves the client's next command, not this one).
    #[cold]
    fn note_effect(&mut self, client: Option<u64>, effect: NameEffect) {
        match (effect, client) {
            (NameEffect::Database, Some(id)) => self.clients.forget_db(id),
            (NameEffect::Reset, Some(id)) => self.clients.reset(id),
            // A refused client may be let in now: check it again.
            (NameEffect::Login, Some(id)) => {
                if let Some((_, Trust::RefusedUntil(_))) = self.clients.get(id, || None) {
                    self.clients.set_trust(id, Trust::Unverified);
                }
            }
            (NameEffect::Users, _) => self.users_may_have_changed(),
            (NameEffect::Asking, _) => self.routing.asking(client),
            (NameEffect::Slots, _) => self.routing.may_have_changed(),
            _ => {}
        }
    }

    /// The checked client's command has run: trust it or not.
    #[cold]
    #[inline(never)]
    fn conclude_check(&mut self) {
        let Some(ctx) = module_context::get() else {
            return;
        };
        if let Some(verdict) = self.auth.conclude(&ctx, &mut self.batch, clock::now_ms()) {
            self.clients.set_trust(verdict.client, verdict.trust);
        }
    }

    /// Hands the batch to the worker once it is large enough (or, while a
    /// slot may yet be discarded, stops counting once it holds too much).
    #[inline]
    fn flush_if_full(&mut self) {
        let full = self.batch.len() >= worker::BATCH_ACCESSES
            || self.batch.item_bytes() >= worker::BATCH_KEY_BYTES;
        if full {
            self.batch_full();
        }
    }

    #[cold]
    #[inline(never)]
    fn batch_full(&mut self) {
        if self.auth.checks_slots(self.names_clients) {
            self.time_slot.overflowed = self.batch.len() >= HELD_SLOT_ACCESSES
                || self.batch.item_bytes() >= HELD_SLOT_KEY_BYTES;
            return;
        }
        self.submit();
    }

    fn submit(&mut self) {
        self.batch.seal(clock::now_ms());
        self.figures.accesses_dropped += self.worker.submit(&mut self.batch);
    }

    /// A read of a key that does not exist (the server's key-miss event).
    #[inline]
    pub fn count_miss(&mut self, db: u16, key: &[u8]) {
        let Some(slot) = self.time_slot.counted.filter(|_| self.misses) else {
            return;
        };
        self.figures.misses_seen += 1;
        if !self.time_slot.coins.keep(slot.keep_one_in) {
            return;
        }
        // Where the filter cannot say whose command it is (Redis 7.0), reads
        // count in database 0: so does the miss, or the two rows of one key
        // would name two databases.
        let db = if self.names_clients { db } else { 0 };
        self.batch
            .push(db, key, Access::Miss, slot, clock::cached_now_ms);
        self.flush_if_full();
    }

    pub fn meter(&mut self) -> &mut CostMeter {
        &mut self.meter
    }

    pub fn forget_client(&mut self, id: u64) {
        self.clients.remove(id);
    }

    /// The periodic tick (`elapsed_ns` since the last): what counting cost,
    /// and so the share of time to count; who is let in; accesses handed
    /// over while every command is counted, so that they reach the
    /// sketches within a tick.
    pub fn tick(&mut self, ctx: &Context, elapsed_ns: u64) {
        self.conclude_check();
        self.ticks += 1;
        if self.auth.all_let_in() && self.auth.refused_while_open(ctx) {
            // What this tick gathered may hold the refused client's keys.
            self.auth.dropped(self.batch.weighted_len());
            self.batch.clear();
            self.auth.users_may_have_changed();
        }
        let users_every = if self.uses_time_slots() {
            USERS_EVERY_TICKS
        } else {
            USERS_EVERY_TICKS_COUNTING_ALL
        };
        if self.ticks % users_every == 0 || self.auth.default_open().is_none() {
            self.auth.refresh(ctx);
        }
        if self.in_cluster {
            self.routing.tick(ctx);
        }
        let counted = if self.uses_time_slots() {
            if let Some(opened) = self.time_slot.opened.as_mut() {
                self.time_slot.counted_ns += opened.elapsed().as_nanos() as u64;
                *opened = Instant::now();
            }
            std::mem::take(&mut self.time_slot.counted_ns)
        } else {
            elapsed_ns
        };
        let spent = self
            .meter
            .take(self.worker.cpu_ns(), self.worker.absorb_ns());
        self.recent = spent;
        self.recent_elapsed_ns = elapsed_ns;
        let absorb = spent.worker_absorb_ns as f64 / elapsed_ns.max(1) as f64;
        let cost = TickCost {
            calls_ns: spent.calls_ns,
            largest_call_ns: spent.largest_call_ns,
            worker_ns: spent.worker_ns,
            worker_absorb_ns: spent.worker_absorb_ns,
            clocks_ns: spent.timers_ns,
            keep_one_in: self.keep_one_in,
        };
        self.budget.observe(elapsed_ns, counted, cost);
        if self.sampling == Sampling::Budgeted {
            self.coverage.set_every(self.budget.every());
        }
        self.thin_accesses(absorb, elapsed_ns);
        if !self.uses_time_slots() && !self.wants_time_slots() && !self.batch.is_empty() {
            // Counting every command, nothing to check: handed over each
            // tick. (Slots wanted, they begin after this tick, and the
            // first closes what every command gathered, checked as a slot.)
            self.submit();
        }
        self.note_rates();
    }

    /// How thinly accesses are kept within counted slots: what the budget
    /// says; where the share of time counted is fixed (`track-sample N`),
    /// what keeps the worker taking them in within its fixed share, from
    /// what that cost in the last tick (`absorb`, a share of one core, over
    /// `elapsed_ns`).
    fn thin_accesses(&mut self, absorb: f64, elapsed_ns: u64) {
        let before = self.time_slot_keep_one_in();
        let share = self.worker_share() * ABSORB_PART;
        let keep_one_in = match self.sampling {
            Sampling::Budgeted => self.budget.keep_one_in(),
            Sampling::Fixed(_) => {
                let elapsed_s = elapsed_ns as f64 / 1e9;
                self.thinning.observe(absorb, elapsed_s, before, share)
            }
        };
        self.keep_one_in = keep_one_in;
        if keep_one_in != before && !self.uses_time_slots() {
            // Counting every command: the one long slot keeps its new rate
            // from now on (what was gathered at the old one goes first).
            self.submit();
            self.time_slot.counted = Some(TimeSlot::WHOLE.keeping_one_in(keep_one_in));
        }
    }

    /// One access in how many the current slot keeps.
    fn time_slot_keep_one_in(&self) -> u32 {
        self.time_slot
            .counted
            .map_or(self.keep_one_in, |s| s.keep_one_in)
    }

    /// The hash slots this cluster node is taken to serve, and whether the
    /// cluster was `ok` when last read (`None` outside a cluster or before
    /// the map was first read).
    pub fn hash_slots_served(&self) -> Option<(usize, bool)> {
        self.routing.map().map(|m| (m.served(), m.cluster_ok()))
    }

    /// One access in how many is kept within counted slots now.
    pub fn keep_one_in(&self) -> u32 {
        self.keep_one_in
    }

    /// The node's read and write rates now. `wait`: with every access so
    /// far counted (the worker holds the sketches for one step at most);
    /// else only if the worker does not hold them this moment, or as of the
    /// last time they were read (for a crash report, which may not wait).
    pub fn rates(&mut self, wait: bool) -> (Tally, Tally) {
        if wait {
            let now = clock::now_ms();
            let (reads, writes) = self.current().tracker().rates(now);
            self.figures.reads = reads;
            self.figures.writes = writes;
        } else {
            self.note_rates();
        }
        (self.figures.reads, self.figures.writes)
    }

    fn note_rates(&mut self) {
        if let Some(counting) = self.worker.try_counting() {
            let (reads, writes) = counting.tracker().rates(clock::now_ms());
            self.figures.reads = reads;
            self.figures.writes = writes;
        }
    }

    // --- Reading --------------------------------------------------------

    /// The sketches with every access so far counted (but a slot's that may
    /// yet be discarded).
    pub fn current(&mut self) -> MutexGuard<'_, Counting> {
        self.conclude_check();
        let empty = KeyBatch::default();
        let pending = if self.auth.checks_slots(self.names_clients) {
            &empty
        } else {
            &self.batch
        };
        let counting = self.worker.current(pending);
        if !std::ptr::eq(pending, &empty) {
            self.batch.clear();
        }
        counting
    }

    /// The sketches as counted so far, if the worker does not hold them.
    pub fn try_counting(&self) -> Option<MutexGuard<'_, Counting>> {
        self.worker.try_counting()
    }

    /// Keys announced hot and not yet cool.
    pub fn notified(&mut self) -> &mut HashSet<(u16, Vec<u8>)> {
        &mut self.notified
    }

    pub fn figures(&self) -> Figures {
        self.figures
    }

    /// How long the worker has thinned accesses (ms; 0: none ever thinned).
    pub fn thinned_ms(&self) -> u64 {
        self.worker.thinned_ms()
    }

    /// One slot in `every` is counted now.
    pub fn every(&self) -> u32 {
        self.coverage.every()
    }

    pub fn budget(&self) -> &CostBudget {
        &self.budget
    }

    /// The last tick's period: what each part spent, as shares of one core
    /// (the filter and key-miss events, the clocks, the worker).
    pub fn recent_shares(&self) -> (f64, f64, f64) {
        let elapsed = self.recent_elapsed_ns.max(1) as f64;
        let share = |ns: u64| ns as f64 / elapsed;
        (
            share(self.recent.calls_ns),
            share(self.recent.timers_ns),
            share(self.recent.worker_ns),
        )
    }

    pub fn auth(&self) -> &AuthWatch {
        &self.auth
    }

    pub fn misses(&self) -> bool {
        self.misses
    }

    /// Heap bytes of everything tracking holds, if none of it is busy now:
    /// the sketches (keys included), the batches, the client table.
    pub fn try_memory_bytes(&self) -> Option<usize> {
        let counting = self.worker.try_counting()?.memory_bytes();
        let batches = self.worker.try_batch_bytes()?;
        Some(counting + batches + self.batch.heap_bytes() + self.clients.heap_bytes())
    }
}

/// The database to count a command's keys in, and whether to hold them
/// (their client is being checked); `None` when they are not counted:
/// from a client that is no connection (a script's: its own command
/// counted the keys it declared; a module's `RM_Call`), or one not let in.
#[inline(always)]
fn destination(
    cmd: &impl FilteredCommand,
    client: Option<u64>,
    clients: &mut ClientTable,
    auth: &mut AuthWatch,
    scripts: &mut ScriptWatch,
) -> Option<(u16, bool)> {
    let Some(id) = client else {
        // Redis 7.0: every key in database 0, but a script's.
        if scripts.may_run() {
            if cmd.in_script() {
                return None;
            }
            scripts.none_running();
        }
        return Some((0, false));
    };
    let (db, trust) = clients.get(id, || cmd.client_db(id))?;
    let db = db?;
    if auth.all_let_in() || trust == Trust::Verified {
        return Some((db, false));
    }
    admit(auth, id, trust).map(|hold| (db, hold))
}

/// A client not known to be let in: check it, or drop its keys. Whether
/// its keys are held (`Some(true)`), counted, or dropped (`None`).
#[cold]
#[inline(never)]
fn admit(auth: &mut AuthWatch, id: u64, trust: Trust) -> Option<bool> {
    let ctx = module_context::get()?;
    match auth.admit(&ctx, id, trust, clock::now_ms()) {
        Admission::Count => Some(false),
        Admission::Hold => Some(true),
        Admission::Drop => {
            auth.dropped(1);
            None
        }
    }
}

/// Does this cluster node serve the command (its keys all in one hash slot
/// it serves, see [`HashSlotMap::route`])? Keys of a slot being migrated away
/// must all still be here.
#[inline]
fn served_here<'a>(
    map: &HashSlotMap,
    key_use: &KeyUse<'_>,
    cmd: &'a impl FilteredCommand,
    args: &Args<'a>,
    db: u16,
    asking: bool,
) -> bool {
    // Most commands have one key: no list of keys to gather.
    if let Some(access) = key_use.single_key() {
        let key = cmd.arg(1);
        let request = Request {
            write: access == Access::Write,
            asking,
            multiple_keys: false,
        };
        return match map.route(hash_slot(key), request) {
            Route::Here => true,
            Route::Elsewhere => false,
            Route::IfKeysExist => cmd.key_exists(db, key),
        };
    }
    served_here_many(map, key_use, cmd, args, db, asking)
}

/// [`served_here`] for a command with more keys than its first argument.
#[cold]
#[inline(never)]
fn served_here_many<'a>(
    map: &HashSlotMap,
    key_use: &KeyUse<'_>,
    cmd: &'a impl FilteredCommand,
    args: &Args<'a>,
    db: u16,
    asking: bool,
) -> bool {
    let mut keys: Vec<(&'a [u8], Access)> = Vec::new();
    if key_use.positions_known() {
        key_use.for_each_key(args, cmd.argc(), |position, access| {
            if let Some(key) = args(position) {
                keys.push((key, access));
            }
        });
    } else {
        for (position, access) in cmd.server_keys() {
            let access = access.unwrap_or_else(|| key_use.access(args, position));
            if let Some(key) = args(position) {
                keys.push((key, access));
            }
        }
    }
    let Some(&(first, _)) = keys.first() else {
        return true;
    };
    let slot = hash_slot(first);
    if keys
        .iter()
        .any(|(key, _)| *key != first && hash_slot(key) != slot)
    {
        return false; // CROSSSLOT
    }
    let request = Request {
        write: keys.iter().any(|(_, access)| *access == Access::Write),
        asking,
        multiple_keys: keys.iter().any(|(key, _)| *key != first),
    };
    match map.route(slot, request) {
        Route::Here => true,
        Route::Elsewhere => false,
        Route::IfKeysExist => keys.iter().all(|(key, _)| cmd.key_exists(db, key)),
    }
}

/// Every key of the command into `batch`, as the key specs (or, where they
/// cannot say, the server) find them.
#[inline(always)]
fn push_keys<'a>(
    batch: &mut KeyBatch,
    key_use: &KeyUse<'_>,
    cmd: &'a impl FilteredCommand,
    args: &Args<'a>,
    db: u16,
    slot: TimeSlot,
    coins: &mut AccessCoins,
) {
    if let Some(access) = key_use.single_key() {
        if coins.keep(slot.keep_one_in) {
            batch.push(db, cmd.arg(1), access, slot, clock::cached_now_ms);
        }
    } else {
        push_many_keys(batch, key_use, cmd, args, db, slot, coins);
    }
}

/// The keys of a command with more than its first argument for a key.
#[inline(never)]
fn push_many_keys<'a>(
    batch: &mut KeyBatch,
    key_use: &KeyUse<'_>,
    cmd: &'a impl FilteredCommand,
    args: &Args<'a>,
    db: u16,
    slot: TimeSlot,
    coins: &mut AccessCoins,
) {
    let now = clock::cached_now_ms;
    if key_use.positions_known() {
        key_use.for_each_key(args, cmd.argc(), |position, access| {
            if let Some(key) = args(position) {
                if coins.keep(slot.keep_one_in) {
                    batch.push(db, key, access, slot, now);
                }
            }
        });
    } else {
        for (position, access) in cmd.server_keys() {
            let access = access.unwrap_or_else(|| key_use.access(args, position));
            if let Some(key) = args(position) {
                if coins.keep(slot.keep_one_in) {
                    batch.push(db, key, access, slot, now);
                }
            }
        }
    }
}

#[path = "state_time_slots.rs"]
mod time_slots;

#[cfg(test)]
#[path = "state_tests.rs"]
mod tests;
