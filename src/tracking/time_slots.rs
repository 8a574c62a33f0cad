//! The slots of time: when the next slot edge is due, which slot is
//! counted now and what each of its accesses stands for, how long the
//! slots lasted. What an edge does to the accesses gathered (handed over
//! or discarded) is [`super::senders`]'s, joined in [`super::state`].
//!
//! The edges are due at planned instants (the previous one plus a length),
//! never at "now plus a length", and are made at the start of the first
//! pass of the event loop at or after them (`super::timers`): the
//! uncounted slots between counted ones pass in one wait
//! ([`Coverage::next_counted`]), the filter not registered, and a counted
//! slot holds exactly the passes that begin within its planned span, so
//! each access counted stands for the share counted, exactly.
//!
//! A counted slot also counts the first pass at or after its opening when
//! that pass began after a pass longer than a slot, itself begun within
//! two milliseconds before the opening (a pipeline is read in a few long
//! passes, whose starts a span seldom holds): that pass stands
//! for one over its chance ([`heavykeeper_tracker::sampling::pass_weight`]),
//! its slot closes at the next pass, and the rest of the planned window, if
//! any, is counted as a slot of the block's weight. Not on Redis 7.0 with a
//! password, whose checked slots are kept or discarded whole and stand for
//! each other ([`KeptTimeSlots`]).

use super::config::Sampling;
use super::served::Served;
use heavykeeper_tracker::sampling::access_coins::AccessCoins;
use heavykeeper_tracker::sampling::coverage::{CountedSlot, Coverage};
use heavykeeper_tracker::sampling::kept_time_slots::KeptTimeSlots;
use heavykeeper_tracker::sampling::pass_weight::{counts_first_pass, RecentBlocks};
use heavykeeper_tracker::sampling::served_shortfall::ServedShortfall;
use heavykeeper_tracker::sampling::time_slot::TimeSlot;
use heavykeeper_tracker::worker::key_batch::KeyBatch;
use std::time::{Duration, Instant};

/// Most accesses one slot holds while it may still be discarded (Redis 7.0
/// with a password): past that the slot is discarded whole.
const HELD_SLOT_ACCESSES: usize = 8192;
const HELD_SLOT_KEY_BYTES: usize = 256 * 1024;

/// Where the slots stand.
#[derive(Clone, Copy, Debug, Default)]
pub enum Schedule {
    /// Every command is counted: no slots.
    #[default]
    Whole,
    /// Between counted slots: the next opens at `at`.
    Waiting { at: Instant, slot: CountedSlot },
    /// A counted slot is open until `until`.
    Open { until: Instant },
}

/// A timer this late means the server stalled (a long command, a fork):
/// the slots then go on from when it fired rather than catch up with a run
/// of slots of no length. Any less is lateness, kept on the plan: a late
/// opening shortens its slot, possibly to nothing, as a late closing
/// lengthens one (re-planned from a late opening, a 1 ms slot opened 2 ms
/// late read a steady stream 9.5% high in the unit model).
const STALL: Duration = Duration::from_millis(100);

/// A planned instant, or now if the server stalled past it.
fn anchored(planned: Instant, now: Instant) -> Instant {
    if now > planned + STALL {
        now
    } else {
        planned
    }
}

/// What the slots have been, for `INFO`: slots begun, of those counted,
/// and counted ones discarded; their wall time (ns).
#[derive(Clone, Copy, Default)]
pub struct SlotFigures {
    pub begun: u64,
    pub counted: u64,
    pub discarded: u64,
    /// Counted slots whose first pass was weighed by its chance.
    pub first_passes: u64,
    pub ns: u64,
    pub counted_ns: u64,
}

/// What becomes of the accesses gathered in a slot that closed.
#[derive(PartialEq)]
pub enum Closed {
    Uncounted,
    /// Handed over (standing for the discarded slots' weight, if set).
    Kept(Option<u32>),
    Discarded,
}

pub struct TimeSlots {
    coverage: Coverage,
    schedule: Schedule,
    /// The current slot as counted, with what each of its accesses stands
    /// for (`None`: not counted).
    counted: Option<TimeSlot>,
    /// Within counted slots, one access in how many is kept (from the next
    /// slot opened).
    keep_one_in: u32,
    /// Counted slots so far (numbers each).
    seq: u32,
    /// The coins of accesses kept one in `n`.
    coins: AccessCoins,
    /// Counted time since the last tick: how much, and since when.
    counted_ns: u64,
    opened: Option<Instant>,
    /// When the current counted slot began.
    began: Option<Instant>,
    /// When the uncounted time before the next counted slot began.
    gap_began: Option<Instant>,
    /// It held too much to be kept: it counts nothing more and is discarded.
    overflowed: bool,
    /// Redis 7.0 with a password: counted slots kept, and what they stand for.
    kept: KeptTimeSlots,
    /// What a saturated server's counted slots lack, and so what their
    /// accesses stand for beyond their weight; the open slot's weight
    /// before that, and the commands it has held.
    shortfall: ServedShortfall,
    nominal_weight: f64,
    slot_commands: u64,
    figures: SlotFigures,
    /// The pass of the event loop that began at the last edge, and how
    /// long after the pass before it (if that one was heard).
    pass: Option<(Instant, Duration)>,
    /// The blocks whose openings could have counted a pass.
    recent: RecentBlocks,
    /// The planned end of the counted window last opened, and the weight
    /// its rest is counted at once its first pass was weighed apart.
    window_end: Option<Instant>,
    rest_of_window: Option<u32>,
}

impl TimeSlots {
    /// Counting every command; when slots begin, as `sampling` says.
    pub fn new(sampling: Sampling) -> Self {
        let every = match sampling {
            Sampling::Budgeted => 1,
            Sampling::Fixed(n) => n,
        };
        Self {
            coverage: Coverage::new(every, rand::random()),
            schedule: Schedule::Whole,
            counted: Some(TimeSlot::WHOLE),
            keep_one_in: 1,
            seq: 0,
            coins: AccessCoins::new(rand::random()),
            counted_ns: 0,
            opened: None,
            began: None,
            gap_began: None,
            overflowed: false,
            kept: KeptTimeSlots::default(),
            shortfall: ServedShortfall::new(rand::random()),
            nominal_weight: 1.0,
            slot_commands: 0,
            figures: SlotFigures::default(),
            pass: None,
            recent: RecentBlocks::default(),
            window_end: None,
            rest_of_window: None,
        }
    }

    /// A pass of the event loop began at `now` (an edge is made there), the
    /// one before it at `previous` if it was heard.
    pub fn pass_began(&mut self, previous: Option<Instant>, now: Instant) {
        self.pass = previous.map(|p| (now, now.saturating_duration_since(p)));
    }

    /// The slot counted now (`None`: none is).
    #[inline]
    pub fn counted(&self) -> Option<TimeSlot> {
        self.counted
    }

    /// A command passed the filter: is it counted (a slot is counted now)?
    #[inline]
    pub fn command_seen(&mut self) -> bool {
        // A count of commands in a window, never near 2^64: no overflow
        // check on every command.
        self.slot_commands = self.slot_commands.wrapping_add(1);
        self.counted.is_some()
    }

    /// ... and the node will not serve it (`MOVED`, `ASK`...): refused before
    /// it runs, the server does not count it among the commands it served
    /// (against which the slots' share is held). On a cluster node a client
    /// hammering a key served elsewhere made the slots say half as many
    /// again as the server counted.
    pub fn command_not_served(&mut self) {
        self.slot_commands = self.slot_commands.saturating_sub(1);
    }

    /// The slot counted now, if it keeps the access that comes (by a coin of
    /// its own, one in `keep_one_in`).
    #[inline]
    pub fn keep_access(&mut self) -> Option<TimeSlot> {
        let slot = self.counted?;
        self.coins.keep(slot.keep_one_in).then_some(slot)
    }

    /// Has the slot held too much to be kept?
    pub fn overflowed(&self) -> bool {
        self.overflowed
    }

    /// A checked slot's batch is full (it is handed over only once the slot
    /// is known clean): past what a slot may hold, it counts nothing more
    /// and is discarded.
    pub fn hold(&mut self, batch: &KeyBatch) {
        self.overflowed =
            batch.len() >= HELD_SLOT_ACCESSES || batch.item_bytes() >= HELD_SLOT_KEY_BYTES;
    }

    /// Is time cut into slots now? (If not, every command is counted.)
    pub fn in_use(&self) -> bool {
        !matches!(self.schedule, Schedule::Whole)
    }

    /// What the next edge is.
    pub fn schedule(&self) -> Schedule {
        self.schedule
    }

    /// When the slot timer is next due (`None`: every command is counted).
    pub fn due(&self) -> Option<Instant> {
        match self.schedule {
            Schedule::Whole => None,
            Schedule::Waiting { at, .. } => Some(at),
            Schedule::Open { until } => Some(until),
        }
    }

    pub fn every(&self) -> u32 {
        self.coverage.every()
    }

    /// From the next block.
    pub fn set_every(&mut self, every: u32) {
        self.coverage.set_every(every);
    }

    /// Slots from now, the first counted one planned from now.
    pub fn restart(&mut self) {
        self.restart_blocks();
        let next = self.coverage.next_counted();
        self.wait_for(next, Instant::now());
    }

    /// The share counted changed by an operator's hand: the block in
    /// progress is dropped, and the next counted slot planned from now.
    pub fn replan(&mut self, every: u32) {
        if every == self.coverage.every() {
            return;
        }
        self.coverage.set_every(every);
        match self.schedule {
            Schedule::Waiting { .. } => self.restart(),
            _ => self.restart_blocks(),
        }
    }

    /// Blocks planned afresh from the next one: those remembered for the
    /// first pass's weight go with them (their openings left will not come).
    fn restart_blocks(&mut self) {
        self.coverage.restart();
        self.recent.forget();
    }

    /// A counted slot ended at `until`: the next counted one if it follows
    /// at once, else it is waited for.
    pub fn next_after(&mut self, until: Instant) -> Option<CountedSlot> {
        let next = self.coverage.next_counted();
        if next.wait_us == 0 {
            return Some(next);
        }
        self.wait_for(next, until);
        None
    }

    /// Waits for `slot`, `slot.wait_us` after `from`.
    fn wait_for(&mut self, slot: CountedSlot, from: Instant) {
        let at = from + Duration::from_micros(slot.wait_us);
        self.schedule = Schedule::Waiting {
            at: anchored(at, Instant::now()),
            slot,
        };
        self.gap_began.get_or_insert_with(Instant::now);
    }

    /// The counted slot `slot` is due (at `at`): it opens, unless it stands
    /// for itself alone and need not be `checked` (then every command is to
    /// be counted: `None`). When it is due to close, and whether commands
    /// went by unseen before it.
    pub fn open(
        &mut self,
        at: Instant,
        slot: CountedSlot,
        checked: bool,
    ) -> Option<(Instant, bool)> {
        let now = Instant::now();
        self.figures.begun += u64::from(slot.skipped) + 1;
        if let Some(gap) = self.gap_began.take() {
            self.figures.ns += now.duration_since(gap).as_nanos() as u64;
        }
        if slot.weight == 1 && !checked {
            return None;
        }
        let unseen = self.counted.is_none();
        let opening = anchored(at, now);
        let length = Duration::from_micros(slot.length_us);
        let window_end = opening + length;
        self.recent
            .opened(opening, length, slot.chosen, slot.weight);
        self.window_end = Some(window_end);
        self.rest_of_window = None;
        self.figures.counted += 1;
        let first_pass = self
            .pass
            .take()
            .filter(|&(start, gap)| !checked && counts_first_pass(opening, start, gap, length));
        // Weighed as it opens: a slot's batches may be handed over before
        // it closes.
        match first_pass.and_then(|(start, gap)| self.recent.weight(start, gap)) {
            // Begun after a pass longer than a slot: this pass alone, by
            // its chance; it closes at the next pass, and the rest of the
            // window (if any) follows at the block's weight.
            Some(exact) => {
                self.figures.first_passes += 1;
                self.rest_of_window = (now < window_end).then_some(slot.weight);
                let weight = self.shortfall.weigh_exact(exact);
                let next_pass = now + Duration::from_nanos(1);
                self.start_counting(now, weight, exact, next_pass);
                Some((next_pass, unseen))
            }
            None => {
                let weight = self.shortfall.weigh(slot.weight);
                self.start_counting(now, weight, f64::from(slot.weight), window_end);
                Some((window_end, unseen))
            }
        }
    }

    /// After a first pass weighed apart: the rest of its window, at the
    /// block's weight, if any of it is left. When it closes.
    pub fn continue_window(&mut self) -> Option<Instant> {
        let weight = self.rest_of_window.take()?;
        let end = self.window_end?;
        let now = Instant::now();
        if now >= end {
            return None;
        }
        let weighed = self.shortfall.weigh(weight);
        self.start_counting(now, weighed, f64::from(weight), end);
        Some(end)
    }

    /// The planned end of the counted window last opened: the next one is
    /// planned from there, however its first pass was counted.
    pub fn window_end(&self) -> Option<Instant> {
        self.window_end
    }

    /// A counted slot begins now, each access standing for `weight`
    /// (`nominal` before any shortfall correction), until `until`.
    fn start_counting(&mut self, now: Instant, weight: u32, nominal: f64, until: Instant) {
        self.seq = self.seq.wrapping_add(1);
        (self.nominal_weight, self.slot_commands) = (nominal, 0);
        self.counted = Some(TimeSlot::new(self.seq, weight).keeping_one_in(self.keep_one_in));
        self.began = Some(now);
        self.opened = Some(now);
        self.overflowed = false;
        self.schedule = Schedule::Open { until };
    }

    /// The current slot closes (`whole`: counting every command ends, which
    /// says nothing of how long slots last). A `checked` one (Redis 7.0 with
    /// a password) is kept only if it held no more than it may and was
    /// `clean` (no one refused in it); the slots kept stand for the others.
    pub fn close(&mut self, whole: bool, checked: bool, clean: impl FnOnce() -> bool) -> Closed {
        if whole {
            self.began = None;
        }
        if let Some(opened) = self.opened.take() {
            self.counted_ns += opened.elapsed().as_nanos() as u64;
        }
        if self.began.is_some() && self.counted.is_some() {
            // A counted slot (not every command counted): what it held.
            let held = std::mem::take(&mut self.slot_commands);
            self.shortfall.slot_closed(held, self.nominal_weight);
        }
        let closed = match self.counted {
            None => Closed::Uncounted,
            Some(_) if !checked => Closed::Kept(None),
            Some(slot) => {
                let kept = !self.overflowed && clean();
                // Its length (the slot has not ended yet: `began` is still set).
                let length_ms = self.began.map_or(0.0, |b| b.elapsed().as_secs_f64() * 1e3);
                match self.kept.closed(kept, length_ms, slot.weight) {
                    Some(stands_for) => Closed::Kept(Some(stands_for)),
                    None => Closed::Discarded,
                }
            }
        };
        if let Some(began) = self.began.take() {
            let ns = began.elapsed().as_nanos() as u64;
            self.figures.ns += ns;
            self.figures.counted_ns += ns;
        }
        self.figures.discarded += u64::from(closed == Closed::Discarded);
        self.counted = None;
        closed
    }

    /// Every command counted from now on (no slots).
    pub fn count_everything(&mut self) {
        self.gap_began = None;
        self.rest_of_window = None;
        self.recent.forget();
        self.schedule = Schedule::Whole;
        self.counted = Some(TimeSlot::WHOLE.keeping_one_in(self.keep_one_in));
        self.overflowed = false;
    }

    /// Counted time since the last call (ns).
    pub fn take_counted_ns(&mut self) -> u64 {
        if let Some(opened) = self.opened.as_mut() {
            self.counted_ns += opened.elapsed().as_nanos() as u64;
            *opened = Instant::now();
        }
        std::mem::take(&mut self.counted_ns)
    }

    /// One access in how many is kept within counted slots now.
    pub fn keep_one_in(&self) -> u32 {
        self.keep_one_in
    }

    /// One access in `next(n)` kept from the next counted slot (the current
    /// one keeps one in `n`); counting every command, from now on (true:
    /// what was gathered at the old rate is to be handed over first).
    pub fn keep_one_in_from_now(&mut self, next: impl FnOnce(u32) -> u32) -> bool {
        let now = self.counted.map_or(self.keep_one_in, |s| s.keep_one_in);
        self.keep_one_in = next(now);
        if self.keep_one_in == now || self.in_use() {
            return false;
        }
        self.counted = Some(TimeSlot::WHOLE.keeping_one_in(self.keep_one_in));
        true
    }

    /// Counted time discarded (Redis 7.0 with a password) that no kept
    /// slot stands for yet, in seconds: the counts miss it until one does.
    pub fn carried_seconds(&self) -> f64 {
        self.kept.pending_seconds()
    }

    pub fn figures(&self) -> SlotFigures {
        self.figures
    }

    /// A tick: what the server served, as far as it was asked.
    pub fn served(&mut self, tick: Served) {
        match tick {
            Served::Asked(served) => self.shortfall.tick(Some(served)),
            Served::Pending => {}
            Served::Unknown => self.shortfall.tick(None),
        }
    }

    /// What each counted access stands for beyond its slot's weight now.
    pub fn correction(&self) -> f64 {
        self.shortfall.factor()
    }
}
