//! What a slot edge does to the tracker: time cut into slots, a counted
//! slot opened or closed, every command counted again.

use super::Tracking;
use crate::tracking::time_slots::Schedule;
use heavykeeper_tracker::sampling::coverage::CountedSlot;
use redis_module::Context;
use std::time::Instant;

impl Tracking {
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
                match self.slots.next_after(until) {
                    Some(next) => self.open_time_slot(ctx, until, next),
                    None => self.slots.due(),
                }
            }
        }
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
