//! The tracker's state while tracking is on, and the rules that join its
//! parts: what a command, a key miss, a slot edge and a tick do. Each part
//! keeps its own rules: [`TimeSlots`], [`Cost`], [`Sketches`], [`Senders`],
//! [`Routing`], [`Announced`]. Everything here runs on the server's main
//! thread; the counting itself is the worker's ([`heavykeeper_tracker::worker`]).

use super::config::Sampling;
use super::cost::Cost;
use super::keys::{for_each_key, served_here, FilteredCommand, KeyAt};
use super::notify::{Announced, Change};
use super::routing::Routing;
use super::senders::Senders;
use super::served::ServedCounts;
use super::sketches::{Besides, Sketches};
use super::time_slots::{Schedule, TimeSlots};
use crate::host::{clock, server_info};
use heavykeeper_tracker::budget::cost_meter::{CallTiming, CostMeter};
use heavykeeper_tracker::counting::prefixes::PrefixRule;
use heavykeeper_tracker::counting::tally::{Missed, Row};
use heavykeeper_tracker::sampling::coverage::CountedSlot;
use heavykeeper_tracker::sampling::time_slot::TimeSlot;
use heavykeeper_tracker::server::client_names::ClientInfo;
use heavykeeper_tracker::server::command_table::CommandTable;
use heavykeeper_tracker::server::name_effect::NameEffect;
use heavykeeper_tracker::worker::counting::Counting;
use heavykeeper_tracker::worker::key_batch::KeyBatch;
use heavykeeper_tracker::{Access, KeyTracker, Picked, Tally, TrackerShape, Worker};
use redis_module::Context;
use std::sync::MutexGuard;
use std::time::Instant;

/// What the tracker has seen, for `INFO` (the slots': [`TimeSlots`]).
#[derive(Clone, Copy, Default)]
pub struct Figures {
    pub commands_seen: u64,
    pub accesses_dropped: u64,
    pub misses_seen: u64,
    /// Commands not counted: a cluster node that will not serve them
    /// (`MOVED`, `CROSSSLOT`, `ASK`, `TRYAGAIN`, `CLUSTERDOWN`).
    pub commands_redirected: u64,
}

pub struct Tracking {
    sketches: Sketches,
    cost: Cost,
    slots: TimeSlots,
    commands: CommandTable,
    senders: Senders,
    /// A cluster node's: counts only the commands it serves (`None`
    /// outside a cluster).
    routing: Option<Routing>,
    misses: bool,
    figures: Figures,
    /// Keys announced `hot` on the tracking channel and not yet `cool`.
    announced: Announced,
    /// What the server served each tick time was sampled through.
    served: ServedCounts,
}

impl Tracking {
    pub fn new(
        shape: TrackerShape,
        sampling: Sampling,
        budget: f64,
        commands: CommandTable,
        names_clients: bool,
        in_cluster: bool,
    ) -> Self {
        Self {
            sketches: Sketches::new(shape, Besides::new(in_cluster, names_clients)),
            cost: Cost::new(sampling, budget),
            slots: TimeSlots::new(sampling),
            commands,
            senders: Senders::new(names_clients),
            routing: in_cluster.then(Routing::default),
            misses: false,
            figures: Figures::default(),
            announced: Announced::default(),
            served: ServedCounts::default(),
        }
    }

    /// The same tracker with every count forgotten (`HK.HOTKEYS RESET`):
    /// the slots, the share counted, what is known of clients go on.
    pub fn reset(&mut self) {
        self.restart(self.sketches.shape());
    }

    /// Counts afresh if the shape changed (`track-k`, `track-halflife`).
    pub fn reshape(&mut self, shape: TrackerShape) {
        if shape != self.sketches.shape() {
            self.restart(shape);
        }
    }

    fn restart(&mut self, shape: TrackerShape) {
        self.sketches.restart(shape);
        self.cost.tell_worker_its_share(self.sketches.worker());
        self.senders.reset();
        self.announced = Announced::default();
    }

    /// Asks the server again who needs a password.
    pub fn refresh_users(&mut self, ctx: &Context) {
        self.senders.refresh(ctx);
    }

    /// Who needs a password may have changed, and the server can be asked
    /// now (outside the filter): asked at once.
    pub fn users_changed(&mut self, ctx: &Context) {
        self.senders.users_may_have_changed(&mut self.sketches);
        self.senders.refresh(ctx);
    }

    /// New settings that keep the counts: how to sample, the budget,
    /// whether misses count, how keys are cut into prefixes.
    pub fn configure(
        &mut self,
        sampling: Sampling,
        budget: f64,
        misses: bool,
        prefixes: Option<PrefixRule>,
    ) {
        self.sketches.set_prefixes(prefixes);
        if let Sampling::Fixed(n) = sampling {
            self.slots.replan(n);
        }
        self.misses = misses;
        self.cost
            .configure(sampling, budget, self.sketches.worker());
    }

    /// Is the filter to be registered now?
    pub fn is_counting(&self) -> bool {
        self.slots.counted().is_some()
    }

    /// Counts the keys of a command the filter saw. The hot path of the
    /// whole tracker: one lookup of the command's name says what the
    /// command does to the tracker's knowledge and where its keys are.
    #[inline(always)]
    pub fn count_command(&mut self, cmd: &impl FilteredCommand) {
        self.figures.commands_seen = self.figures.commands_seen.wrapping_add(1);
        if !self.slots.command_seen() {
            return;
        }
        self.senders.conclude_check(self.sketches.batch());
        let client = cmd.client();
        let name = cmd.arg(0);
        let argc = cmd.argc();
        let args = |i: usize| (i < argc).then(|| if i == 0 { name } else { cmd.arg(i) });
        let key_use = self.commands.command_of(name, argc, &args);
        let effect = key_use.effect();
        let starts_script = client.is_none() && key_use.starts_script();
        let asking = self.routing.as_mut().is_some_and(|r| r.take_asking(client));
        if key_use.has_keys() && !self.slots.overflowed() {
            let to = self.senders.destination(cmd, client, &mut self.sketches);
            if let Some((db, batch)) = to {
                let served = (self.routing.as_ref().and_then(Routing::map))
                    .is_none_or(|map| served_here(map, &key_use, cmd, &args, db, asking));
                if served {
                    let slots = &mut self.slots;
                    for_each_key(&key_use, cmd, &args, |key, access| {
                        if let Some(slot) = slots.keep_access() {
                            push_kept(batch, db, key, access, slot);
                        }
                    });
                    self.flush_if_full();
                } else {
                    self.figures.commands_redirected += 1;
                    self.slots.command_not_served();
                }
            }
        }
        if effect != NameEffect::None {
            self.note_effect(client, effect);
        }
        if starts_script {
            self.senders.script_started();
        }
    }

    /// What a command's name alone changes.
    #[cold]
    fn note_effect(&mut self, client: Option<u64>, effect: NameEffect) {
        match (effect, self.routing.as_mut()) {
            (NameEffect::Asking, Some(routing)) => routing.asking(client),
            (NameEffect::Slots, Some(routing)) => routing.may_have_changed(),
            _ => self.senders.note_effect(client, effect, &mut self.sketches),
        }
    }

    /// Hands the batch to the worker once it is large enough (or, while a
    /// slot may yet be discarded, stops counting once it holds too much).
    #[inline]
    fn flush_if_full(&mut self) {
        if self.sketches.batch_full() {
            self.batch_full();
        }
    }

    #[cold]
    #[inline(never)]
    fn batch_full(&mut self) {
        match self.senders.checks_slots() {
            true => self.slots.hold(self.sketches.batch()),
            false => self.sketches.submit(),
        }
    }

    /// A read of a key that does not exist (the server's key-miss event).
    #[inline]
    pub fn count_miss(&mut self, db: u16, key: &[u8]) {
        if !self.misses || self.slots.counted().is_none() {
            return;
        }
        self.figures.misses_seen += 1;
        let Some(slot) = self.slots.keep_access() else {
            return;
        };
        // Where the filter cannot say whose command it is (Redis 7.0), reads
        // count in database 0: so does the miss, or the two rows of one key
        // would name two databases.
        let db = if self.senders.names_clients() { db } else { 0 };
        let batch = self.sketches.batch();
        batch.push(db, key, Access::Miss, slot, clock::cached_now_ms);
        self.flush_if_full();
    }

    pub fn meter(&mut self) -> &mut CostMeter {
        self.cost.meter()
    }

    /// Runs `work` (a filter call, a key-miss event), one call in ~64
    /// timed for the cost meter. The timed call runs the same code as every
    /// other: a copy of its own, run once in ~64 calls, ran cold and read
    /// dearer than the hot path it stood for (the budget then counted less
    /// time than it could afford); and its end is read here, inline, not in
    /// the meter's cold code (see `CallTiming`).
    #[inline(always)]
    pub fn metered(&mut self, work: impl FnOnce(&mut Self)) {
        let start = self.meter().times_this_call().then(CallTiming::start);
        work(self);
        if let Some(start) = start {
            // Read before the meter is reached, not as its argument.
            let timed = start.end();
            self.meter().timed_call(timed);
        }
    }

    pub fn forget_client(&mut self, id: u64, info: Option<(u64, ClientInfo)>) {
        self.senders.forget_client(id, info);
    }

    /// The periodic tick (`elapsed_ns` since the last): what counting cost,
    /// and so the share of time to count; who is let in; accesses handed
    /// over while every command is counted, so that they reach the
    /// sketches within a tick.
    pub fn tick(&mut self, ctx: &Context, elapsed_ns: u64) {
        self.senders.conclude_check(self.sketches.batch());
        let slots = self.slots.in_use();
        self.senders.tick(ctx, slots, self.sketches.batch());
        if let Some(routing) = self.routing.as_mut() {
            routing.tick(ctx);
        }
        let worker = self.sketches.worker();
        if self.cost.tick(elapsed_ns, &mut self.slots, worker) {
            // Counting every command at a new rate: what was gathered at
            // the old one goes first.
            self.sketches.submit();
        }
        let sampled = slots && self.slots.in_use();
        let wanted_ns = self.cost.last_wanted_ns();
        let ask = || server_info::commands_processed(ctx);
        let served = self.served.tick(sampled, elapsed_ns, wanted_ns, ask);
        self.slots.served(served);
        if !self.slots.in_use() && !self.wants_time_slots() && !self.sketches.batch().is_empty() {
            // Counting every command, nothing to check: handed over each
            // tick. (Slots wanted, they begin after this tick, and the
            // first closes what every command gathered, checked as a slot.)
            self.sketches.submit();
        }
        self.sketches.tick();
    }

    /// The node's read and write rates now. `wait`: with every access so
    /// far counted (the worker holds the sketches for one step at most);
    /// else only if the worker does not hold them this moment, or as of the
    /// last time they were read (for a crash report, which may not wait).
    pub fn rates(&mut self, wait: bool) -> (Tally, Tally) {
        if wait {
            self.senders.conclude_check(self.sketches.batch());
        }
        let batch_too = !self.senders.checks_slots();
        self.sketches.rates(wait.then_some(batch_too))
    }

    /// The sketches with every access so far counted (but a slot's that may
    /// yet be discarded).
    pub fn current(&mut self) -> MutexGuard<'_, Counting> {
        self.senders.conclude_check(self.sketches.batch());
        let batch_too = !self.senders.checks_slots();
        self.sketches.current(batch_too)
    }

    /// The rows `list` reads now (every access so far counted), each allowing
    /// for what its counts may lack ([`Self::missed`]): the one place rows
    /// are corrected for it.
    pub fn listed<R: Row>(
        &mut self,
        list: impl FnOnce(&KeyTracker, i64) -> Option<Vec<Picked<R>>>,
    ) -> Option<Vec<Picked<R>>> {
        let missed = self.missed();
        let rows = list(self.current().tracker(), clock::now_ms())?;
        Some(rows.into_iter().map(|p| p.allowing_for(missed)).collect())
    }

    /// What counts read now may lack: counted time discarded that no kept
    /// slot stands for yet (Redis 7.0 with a password), and the share of
    /// counted time the filter took.
    pub fn missed(&self) -> Missed {
        Missed {
            seconds: self.slots.carried_seconds(),
            slowdown: self.cost.budget().counted_slowdown(),
        }
    }

    pub fn senders(&self) -> &Senders {
        &self.senders
    }

    pub fn routing(&self) -> Option<&Routing> {
        self.routing.as_ref()
    }

    pub fn figures(&self) -> Figures {
        Figures {
            accesses_dropped: self.sketches.dropped(),
            ..self.figures
        }
    }

    /// Heap bytes of everything tracking holds, if none of it is busy now:
    /// the sketches (keys included), the batches, the client table.
    pub fn try_memory_bytes(&self) -> Option<usize> {
        Some(self.sketches.try_memory_bytes()? + self.senders.heap_bytes())
    }

    /// Keys turned hot or cool since the last tick (none if the worker is busy).
    pub fn announcements(&mut self, above: f64, now: i64) -> Vec<Change> {
        let Some(counting) = self.sketches.worker().try_counting() else {
            return Vec::new();
        };
        self.announced.changes(counting.tracker(), above, now)
    }

    pub fn slots(&self) -> &TimeSlots {
        &self.slots
    }

    pub fn cost(&self) -> &Cost {
        &self.cost
    }

    pub fn worker(&self) -> &Worker {
        self.sketches.worker()
    }

    pub fn misses(&self) -> bool {
        self.misses
    }

    /// Should time be cut into slots: sampling, or Redis 7.0 checking each
    /// slot for refused commands?
    pub fn wants_time_slots(&self) -> bool {
        self.slots.every() > 1 || self.senders.checks_slots()
    }

    /// Time is cut into slots from now (counting every command ends here),
    /// unless it already is. Returns when the slot timer is due.
    pub fn begin_time_slots(&mut self, ctx: &Context) -> Option<Instant> {
        if !self.slots.in_use() {
            self.senders
                .close_slot(ctx, &mut self.slots, true, &mut self.sketches);
            self.slots.restart();
        }
        self.slots.due()
    }

    /// The slot timer is due: the open slot closes (and the next opens if
    /// it follows at once), or the awaited one opens. Returns when the
    /// timer is due next (`None`: counting every command from now).
    pub fn time_slot_due_now(&mut self, ctx: &Context) -> Option<Instant> {
        match self.slots.schedule() {
            Schedule::Whole => None,
            Schedule::Waiting { at, slot } => self.open_time_slot(ctx, at, slot),
            Schedule::Open { until } => {
                self.senders.conclude_check(self.sketches.batch());
                self.senders
                    .close_slot(ctx, &mut self.slots, false, &mut self.sketches);
                if let Some(end) = self.slots.continue_window() {
                    // The rest of a window whose first pass was weighed apart.
                    self.senders.slot_opened(ctx, false);
                    return Some(end);
                }
                let until = self.slots.window_end().unwrap_or(until);
                match self.slots.next_after(until) {
                    Some(next) => self.open_time_slot(ctx, until, next),
                    None => self.slots.due(),
                }
            }
        }
    }

    /// A pass of the event loop began at `now`, where a slot edge is made;
    /// the one before it at `previous`, if heard.
    pub fn pass_began(&mut self, previous: Option<Instant>, now: Instant) {
        self.slots.pass_began(previous, now);
    }

    /// A counted slot opens (due at `at`); where it stands for itself alone
    /// and no slot need be checked, counting every command begins instead.
    fn open_time_slot(&mut self, ctx: &Context, at: Instant, slot: CountedSlot) -> Option<Instant> {
        let checked = self.senders.checks_slots();
        let Some((until, unseen)) = self.slots.open(at, slot, checked) else {
            self.count_everything(ctx);
            return None;
        };
        self.senders.slot_opened(ctx, unseen);
        Some(until)
    }

    /// Counting every command from now on (no slots).
    pub fn count_everything(&mut self, ctx: &Context) {
        self.senders
            .close_slot(ctx, &mut self.slots, false, &mut self.sketches);
        self.slots.count_everything();
        self.senders.commands_unseen();
    }
}

/// An access its coin kept, added to the batch out of line: where accesses
/// are thinned most are not kept, and a closure holding only the coin is
/// small enough to inline where it is tossed (one holding the push was a
/// call of its own for every key: ~30 instructions a `GET` at one access
/// in 16 kept, callgrind).
#[inline(never)]
fn push_kept<C: FilteredCommand>(
    batch: &mut KeyBatch,
    db: u16,
    key: KeyAt<'_, C>,
    access: Access,
    slot: TimeSlot,
) {
    batch.push(db, key.read(), access, slot, clock::cached_now_ms);
}

#[cfg(test)]
mod tests;
