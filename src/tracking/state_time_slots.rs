//! The slots of time, as the tracker's state keeps them: when the next
//! slot edge is due, and what a counted slot's opening and closing do.
//!
//! The edges are due at planned instants (the previous one plus a length),
//! never at "now plus a length", and are made at the start of the first
//! pass of the event loop at or after them (`super::timers`): the
//! uncounted slots between counted ones pass in one wait
//! ([`Coverage::next_counted`]), the filter not registered, and a counted
//! slot holds exactly the passes that begin within its planned span, so
//! each access counted stands for the share counted, exactly.

use super::Tracking;
use heavykeeper_tracker::sampling::coverage::CountedSlot;
use heavykeeper_tracker::sampling::time_slot::TimeSlot;
use redis_module::Context;
use std::time::{Duration, Instant};

/// Where the slots stand.
#[derive(Clone, Copy, Debug, Default)]
pub(super) enum Schedule {
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

impl Tracking {
    /// Is time cut into slots now? (If not, every command is counted.)
    pub fn uses_time_slots(&self) -> bool {
        !matches!(self.schedule, Schedule::Whole)
    }

    /// Should it be: sampling, or Redis 7.0 checking each slot for refused
    /// commands?
    pub fn wants_time_slots(&self) -> bool {
        self.coverage.every() > 1 || self.auth.checks_slots(self.names_clients)
    }

    /// When the slot timer is next due (`None`: every command is counted).
    pub fn time_slot_due(&self) -> Option<Instant> {
        match self.schedule {
            Schedule::Whole => None,
            Schedule::Waiting { at, .. } => Some(at),
            Schedule::Open { until, .. } => Some(until),
        }
    }

    /// Time is cut into slots from now (counting every command ends here),
    /// unless it already is. Returns when the slot timer is due.
    pub fn begin_time_slots(&mut self, ctx: &Context) -> Option<Instant> {
        if !self.uses_time_slots() {
            self.end_whole(ctx);
            self.coverage.restart();
            let next = self.coverage.next_counted();
            self.wait_for(next, Instant::now());
        }
        self.time_slot_due()
    }

    /// The share counted changed by an operator's hand: the block in
    /// progress is dropped, and the next counted slot planned from now.
    pub fn replan_time_slots(&mut self) {
        self.coverage.restart();
        if let Schedule::Waiting { .. } = self.schedule {
            let next = self.coverage.next_counted();
            self.wait_for(next, Instant::now());
        }
    }

    /// The slot timer is due: the open slot closes (and the next opens if
    /// it follows at once), or the awaited one opens. Returns when the
    /// timer is due next (`None`: counting every command from now).
    pub fn time_slot_due_now(&mut self, ctx: &Context) -> Option<Instant> {
        match self.schedule {
            Schedule::Whole => None,
            Schedule::Waiting { at, slot } => self.open_time_slot(ctx, at, slot),
            Schedule::Open { until } => {
                self.conclude_check();
                self.end_time_slot(ctx);
                let next = self.coverage.next_counted();
                if next.wait_ms == 0 {
                    return self.open_time_slot(ctx, until, next);
                }
                self.wait_for(next, until);
                self.time_slot_due()
            }
        }
    }

    /// Waits for `slot`, `slot.wait_ms` after `from`.
    fn wait_for(&mut self, slot: CountedSlot, from: Instant) {
        let at = from + Duration::from_millis(slot.wait_ms);
        self.schedule = Schedule::Waiting {
            at: anchored(at, Instant::now()),
            slot,
        };
        self.time_slot.gap_began.get_or_insert_with(Instant::now);
    }

    /// A counted slot opens (due at `at`); where it stands for itself alone
    /// and no slot need be checked, counting every command begins instead.
    fn open_time_slot(&mut self, ctx: &Context, at: Instant, slot: CountedSlot) -> Option<Instant> {
        let now = Instant::now();
        self.figures.time_slots += u64::from(slot.skipped) + 1;
        if let Some(gap) = self.time_slot.gap_began.take() {
            self.figures.time_slot_ns += now.duration_since(gap).as_nanos() as u64;
        }
        if slot.weight == 1 && !self.auth.checks_slots(self.names_clients) {
            self.count_everything(ctx);
            return None;
        }
        let was_counted = self.time_slot.counted.is_some();
        self.time_slot.seq = self.time_slot.seq.wrapping_add(1);
        self.time_slot.counted =
            Some(TimeSlot::new(self.time_slot.seq, slot.weight).keeping_one_in(self.keep_one_in));
        self.time_slot.began = Some(now);
        self.time_slot.opened = Some(now);
        self.time_slot.overflowed = false;
        self.figures.time_slots_counted += 1;
        if !was_counted {
            // Commands went by unseen: a SELECT, a script's start.
            self.clients.new_epoch();
            self.scripts.commands_unseen();
        }
        if self.auth.checks_slots(self.names_clients) {
            self.auth.slot_opened(ctx);
        }
        let until = anchored(at, now) + Duration::from_millis(slot.length_ms);
        self.schedule = Schedule::Open { until };
        Some(until)
    }

    /// The current slot (counted, or counting every command) ends: its
    /// accesses go to the worker, or are discarded; what it covered is
    /// recorded. Returns how long a counted slot lasted, ns.
    fn end_time_slot(&mut self, ctx: &Context) -> Option<u64> {
        if let Some(opened) = self.time_slot.opened.take() {
            self.time_slot.counted_ns += opened.elapsed().as_nanos() as u64;
        }
        self.close_time_slot(ctx);
        let lasted = self.time_slot.began.take().map(|began| {
            let ns = began.elapsed().as_nanos() as u64;
            self.figures.time_slot_ns += ns;
            self.figures.counted_time_slot_ns += ns;
            ns
        });
        self.time_slot.counted = None;
        lasted
    }

    /// Counting every command ends (time is cut into slots from now).
    fn end_whole(&mut self, ctx: &Context) {
        self.time_slot.began.take();
        self.end_time_slot(ctx);
    }

    /// Hands a counted slot's accesses over, or discards them (the slots
    /// kept stand for the discarded ones: [`KeptTimeSlots`]).
    ///
    /// [`KeptTimeSlots`]: heavykeeper_tracker::sampling::kept_time_slots::KeptTimeSlots
    fn close_time_slot(&mut self, ctx: &Context) {
        if self.time_slot.counted.is_none() {
            return;
        }
        if !self.auth.checks_slots(self.names_clients) {
            return self.submit();
        }
        let kept = !self.time_slot.overflowed && self.auth.slot_clean(ctx);
        // Its length (the slot has not ended yet: `began` is still set).
        let length_ms = self
            .time_slot
            .began
            .map_or(0.0, |b| b.elapsed().as_secs_f64() * 1000.0);
        let weight = self.time_slot.counted.map_or(1, |s| s.weight);
        if let Some(stands_for) = self.kept.closed(kept, length_ms, weight) {
            self.batch.stand_for(stands_for);
            return self.submit();
        }
        self.figures.time_slots_discarded += 1;
        self.auth.dropped(self.batch.weighted_len());
        self.batch.clear();
    }

    /// Counted time discarded (Redis 7.0 with a password) that no kept
    /// slot stands for yet, in seconds: the counts miss it until one does.
    pub fn carried_seconds(&self) -> f64 {
        self.kept.pending_seconds()
    }

    /// Counting every command from now on (no slots).
    pub fn count_everything(&mut self, ctx: &Context) {
        // A slot cut short here says nothing of how long slots last.
        self.end_time_slot(ctx);
        self.time_slot.gap_began = None;
        self.schedule = Schedule::Whole;
        self.time_slot.counted = Some(TimeSlot::WHOLE.keeping_one_in(self.keep_one_in));
        self.time_slot.overflowed = false;
        self.clients.new_epoch();
        self.scripts.commands_unseen();
    }
}
