//! A sketch and its watch (`HK.WATCH`): the sketch holds the watch and
//! hands it the top-k and the scale of its counts; the watch's own rules
//! are in [`crate::watch`].

use crate::heavykeeper::{HeavyKeeper, Upcoming};
use crate::watch::{Watch, WatchEvent, WatchScale, WatchSpec, WatchState};

impl HeavyKeeper {
    pub fn watch(&self) -> Option<&WatchSpec> {
        self.watch_held().map(Watch::spec)
    }

    /// Sets (or, with `None`, removes) the watch; its state starts afresh.
    pub fn set_watch(&mut self, spec: Option<WatchSpec>) {
        *self.watch_slot() = spec.map(Watch::new);
    }

    /// Forgets what was announced (after a merge, say): it is derived again,
    /// silently, when next needed.
    pub fn forget_watch_state(&mut self) {
        if let Some(watch) = self.watch_slot() {
            watch.forget_state();
        }
    }

    /// Events the per-second budget refused since the state was derived.
    pub fn watch_events_dropped(&self) -> u64 {
        self.watch_held().map_or(0, Watch::dropped)
    }

    /// The watch state, if any has been derived.
    pub fn watch_state(&mut self) -> Option<&mut WatchState> {
        self.watch_slot().as_mut().and_then(Watch::state_mut)
    }

    /// Heap bytes of the watch: its specification's channel and, once
    /// derived, its state. Part of [`HeavyKeeper::memory_bytes`].
    pub fn watch_bytes(&self) -> usize {
        self.watch_held().map_or(0, Watch::bytes)
    }

    /// The most a watch on `channel` can ever add to this sketch. What a
    /// size cap must allow before the watch is set.
    pub fn watch_bytes_bound(&self, channel: &[u8]) -> usize {
        Watch::bytes_bound(self.params().k as usize, channel)
    }

    /// What the watch timer does when a sketch's time has come: derives the
    /// state if there is none (silently, as after a load or a promotion),
    /// announces what fading did by `now_ms` if a sweep is due, and returns
    /// when to come back (`i64::MAX`: only an arrival can change anything).
    /// `None` for a sketch without a watch.
    pub fn tend_watch(&mut self, now_ms: i64, events: &mut Vec<WatchEvent>) -> Option<i64> {
        self.watch_held()?;
        self.ensure_watch_state(now_ms);
        if self.watch_due(now_ms) {
            self.sweep_watch(now_ms, events);
        }
        self.watch_next_check_ms()
    }

    /// When the next sweep is worth doing: `Some(i64::MIN)` for a watch
    /// whose state is still to be derived, `None` without a watch.
    pub fn watch_next_check_ms(&self) -> Option<i64> {
        self.watch_held().map(Watch::next_check_ms)
    }

    /// Is a sweep due at `now_ms` (some announced item may have cooled or
    /// faded out)? False for a sketch without a derived watch state.
    pub fn watch_due(&self, now_ms: i64) -> bool {
        self.watch_held().is_some_and(|w| w.is_due(now_ms))
    }

    /// [`Self::add`] on a watched sketch: the events this arrival (and the
    /// time it moved the clock to) caused, appended to `events`. Returns
    /// the expelled item, as [`Self::add`] does.
    pub fn add_watched(
        &mut self,
        item: &[u8],
        weight: u64,
        time_ms: i64,
        events: &mut Vec<WatchEvent>,
    ) -> Option<Box<[u8]>> {
        let item = self.hashed(item);
        self.add_watched_upcoming(item, weight, time_ms, events)
    }

    /// [`Self::add_watched`] of an item hashed ahead by [`Self::upcoming`].
    pub fn add_watched_upcoming(
        &mut self,
        upcoming: Upcoming<'_>,
        weight: u64,
        time_ms: i64,
        events: &mut Vec<WatchEvent>,
    ) -> Option<Box<[u8]>> {
        if self.watch_held().is_none() {
            return self.add_upcoming(upcoming, weight, time_ms);
        }
        self.ensure_watch_state(time_ms);
        let item = upcoming.item();
        let arrived = self.arrive(upcoming, weight, time_ms);
        let now_ms = self.watch_time(time_ms);
        if self.watch_due(now_ms) {
            self.sweep_watch(now_ms, events);
        }
        if arrived.expelled.is_none() && arrived.member.is_none() {
            // The long tail: the top-k did not change, nothing to announce.
            return None;
        }
        let scale = self.watch_scale(now_ms);
        if let (Some(watch), _) = self.watch_and_topk() {
            watch.announce(item, &arrived, scale, events);
        }
        arrived.expelled.map(|(item, _, _)| item)
    }

    /// Announces what fading alone did by `now_ms`: `cool` for hot items
    /// now below the cool line, `leave` for listed items below one arrival.
    #[cold]
    #[inline(never)]
    pub fn sweep_watch(&mut self, now_ms: i64, events: &mut Vec<WatchEvent>) {
        self.ensure_watch_state(now_ms);
        let scale = self.watch_scale(now_ms);
        if let (Some(watch), topk) = self.watch_and_topk() {
            watch.sweep(topk, scale, events);
        }
    }

    /// Derives the watch state from the counts at `now_ms` without
    /// announcing anything, unless there is one already.
    #[inline]
    fn ensure_watch_state(&mut self, now_ms: i64) {
        if self.watch_held().is_some_and(|w| !w.has_state()) {
            let scale = self.watch_scale(now_ms);
            if let (Some(watch), topk) = self.watch_and_topk() {
                watch.derive_state(topk, scale);
            }
        }
    }

    /// A watch's time: never before the latest arrival.
    fn watch_time(&self, now_ms: i64) -> i64 {
        now_ms.max(self.clock_ms().unwrap_or(0))
    }

    /// What the watch needs to turn stored counts into events at `now_ms`.
    fn watch_scale(&self, now_ms: i64) -> WatchScale {
        let now_ms = self.watch_time(now_ms);
        WatchScale {
            unit: self.unit_at(now_ms),
            lambda: self.fading().map(|f| f.lambda_per_second()),
            half_life_ms: self.fading().map(|f| f.half_life_ms()),
            created_ms: self.created_ms(),
            now_ms,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::watch::{EventKind, WatchEvent, WatchSpec};
    use crate::Params;

    fn watched(fading: bool, members: bool, above: Option<f64>) -> HeavyKeeper {
        let params = Params {
            width: 256,
            half_life_ms: fading.then_some(1_000.0),
            ..Params::for_k(3, 1)
        };
        let mut hk = HeavyKeeper::new(params, 0);
        hk.set_watch(Some(WatchSpec {
            channel: b"events".to_vec(),
            members,
            above,
            below: None,
        }));
        hk
    }

    fn kinds(events: &[WatchEvent]) -> Vec<(EventKind, &[u8])> {
        events.iter().map(|e| (e.kind, e.item.as_slice())).collect()
    }

    #[test]
    fn members_enter_and_leave_when_expelled() {
        let mut hk = watched(false, true, None);
        let mut events = Vec::new();
        for item in [b"a", b"b", b"c"] {
            hk.add_watched(item, 5, 0, &mut events);
        }
        assert_eq!(
            kinds(&events),
            vec![
                (EventKind::Enter, &b"a"[..]),
                (EventKind::Enter, b"b"),
                (EventKind::Enter, b"c")
            ]
        );
        events.clear();
        hk.add_watched(b"d", 10, 0, &mut events);
        hk.add_watched(b"d", 1, 0, &mut events);
        let got = kinds(&events);
        assert!(got.contains(&(EventKind::Enter, b"d")), "{got:?}");
        assert_eq!(
            got.iter().filter(|e| e.0 == EventKind::Leave).count(),
            1,
            "{got:?}"
        );
    }

    #[test]
    fn hot_and_cool_with_hysteresis_on_counts() {
        let mut hk = watched(false, false, Some(10.0));
        let mut events = Vec::new();
        hk.add_watched(b"x", 9, 0, &mut events);
        assert!(events.is_empty());
        hk.add_watched(b"x", 1, 0, &mut events);
        assert_eq!(kinds(&events), vec![(EventKind::Hot, &b"x"[..])]);
        assert_eq!(events[0].count, 10.0);
        // Without fading a count never falls: no cool, no sweep ever due.
        hk.add_watched(b"x", 5, 0, &mut events);
        assert_eq!(events.len(), 1);
        assert!(!hk.watch_due(i64::MAX - 1));
    }

    #[test]
    fn fading_cools_and_fades_out_at_the_computed_times() {
        // Rate line 10/s with a 1 s half-life: a count line of 10/λ = 14.4.
        let mut hk = watched(true, true, Some(10.0));
        let mut events = Vec::new();
        hk.add_watched(b"x", 20, 0, &mut events);
        assert_eq!(
            kinds(&events),
            vec![(EventKind::Enter, &b"x"[..]), (EventKind::Hot, b"x")]
        );
        events.clear();
        // Cools below 8/s (count 11.5) after log2(20 / 11.54) = 0.79 half-lives.
        assert!(!hk.watch_due(700));
        assert!(hk.watch_due(800));
        hk.sweep_watch(800, &mut events);
        assert_eq!(kinds(&events), vec![(EventKind::Cool, &b"x"[..])]);
        assert!(
            events[0].rate < 8.0 && events[0].rate > 7.0,
            "{:?}",
            events[0]
        );
        events.clear();
        // Leaves below one arrival after log2(20) = 4.32 half-lives.
        assert!(!hk.watch_due(4_300));
        hk.sweep_watch(4_400, &mut events);
        assert_eq!(kinds(&events), vec![(EventKind::Leave, &b"x"[..])]);
        // Hovering: back above 10/s, then between the lines, then above: one hot.
        events.clear();
        hk.add_watched(b"x", 20, 5_000, &mut events);
        hk.add_watched(b"x", 1, 5_300, &mut events);
        hk.add_watched(b"x", 3, 5_400, &mut events);
        let hots = events.iter().filter(|e| e.kind == EventKind::Hot).count();
        assert_eq!(hots, 1, "{:?}", kinds(&events));
    }

    #[test]
    fn a_watch_is_counted_in_memory_and_stays_under_its_bound() {
        let mut hk = watched(true, true, Some(1.0));
        hk.set_watch(None);
        let bare = hk.memory_bytes();
        let channel = vec![b'c'; 5_000];
        let bound = hk.watch_bytes_bound(&channel);
        hk.set_watch(Some(WatchSpec {
            channel,
            members: true,
            above: Some(1.0),
            below: None,
        }));
        assert!(hk.memory_bytes() >= bare + 5_000);
        // Every member listed and hot: both sets as full as they get.
        let mut events = Vec::new();
        for item in [b"a", b"b", b"c", b"d"] {
            hk.add_watched(item, 50, 0, &mut events);
        }
        assert_eq!(
            events.iter().filter(|e| e.kind == EventKind::Hot).count(),
            3
        );
        assert!(hk.memory_bytes() > bare + 5_000);
        assert!(
            hk.memory_bytes() <= bare + bound,
            "{} > {}",
            hk.memory_bytes(),
            bare + bound
        );
    }

    #[test]
    fn tending_derives_the_state_silently_then_announces_what_fading_did() {
        let mut hk = watched(true, false, Some(10.0));
        hk.add(b"x", 20, 0);
        // A loaded sketch: a watch without a state.
        hk.forget_watch_state();
        assert_eq!(hk.watch_next_check_ms(), Some(i64::MIN));
        let mut events = Vec::new();
        let next = hk.tend_watch(100, &mut events).unwrap();
        assert!(events.is_empty(), "{events:?}");
        assert!((700..=800).contains(&next), "{next}");
        assert_eq!(hk.tend_watch(next, &mut events), Some(i64::MAX));
        assert_eq!(kinds(&events), vec![(EventKind::Cool, &b"x"[..])]);
        hk.set_watch(None);
        assert_eq!(hk.tend_watch(next, &mut events), None);
    }
}
