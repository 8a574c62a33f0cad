//! Watching a sketch (reference section 9): an `enter` event when an item
//! joins the top-k and `leave` when it is expelled or fades out; `hot` when
//! its rate (fading sketches, per second) or count (others) rises to a line,
//! `cool` when it falls below a lower one (hysteresis, so an item hovering
//! at the line does not flap).
//!
//! The watch's *specification* is part of the sketch (saved, replicated).
//! Its *state* (which items were announced as listed or hot) is not: only a
//! primary announces, and a sketch loaded or promoted derives it afresh from
//! its counts, silently. Fading alone never reorders anything, so the next
//! item to cool or fade out is known in advance: [`HeavyKeeper::watch_due`]
//! says when a sweep is worth doing, and no periodic scan is needed.

use crate::heavykeeper::{HeavyKeeper, Upcoming};
use hashbrown::HashSet;
use std::fmt;

/// What to watch for, and where to tell it.
#[derive(Clone, Debug, PartialEq)]
pub struct WatchSpec {
    pub channel: Vec<u8>,
    /// `enter` and `leave` events.
    pub members: bool,
    /// `hot` at or above this rate (fading) or count, `cool` below `below`.
    pub above: Option<f64>,
    pub below: Option<f64>,
}

/// Why a watch specification was refused.
#[derive(Clone, Debug, PartialEq)]
pub struct WatchError(pub &'static str);

impl fmt::Display for WatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl WatchSpec {
    /// The hysteresis line: `below` if given, else 0.8 of `above`.
    pub fn cool_line(&self) -> Option<f64> {
        self.above.map(|a| self.below.unwrap_or(0.8 * a))
    }

    pub fn validate(&self) -> Result<(), WatchError> {
        if !self.members && self.above.is_none() {
            return Err(WatchError("give MEMBERS, ABOVE threshold, or both"));
        }
        if self.below.is_some() && self.above.is_none() {
            return Err(WatchError("BELOW needs ABOVE"));
        }
        if let Some(above) = self.above {
            if !(above.is_finite() && above > 0.0) {
                return Err(WatchError("ABOVE must be a positive number"));
            }
            let below = self.cool_line().unwrap_or(0.0);
            if !(below.is_finite() && below >= 0.0 && below < above) {
                return Err(WatchError("BELOW must be at least 0 and below ABOVE"));
            }
        }
        Ok(())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    Enter,
    Leave,
    Hot,
    Cool,
}

impl EventKind {
    pub fn name(self) -> &'static str {
        match self {
            EventKind::Enter => "enter",
            EventKind::Leave => "leave",
            EventKind::Hot => "hot",
            EventKind::Cool => "cool",
        }
    }
}

/// One event, as of `time_ms`.
#[derive(Clone, Debug, PartialEq)]
pub struct WatchEvent {
    pub kind: EventKind,
    pub item: Vec<u8>,
    pub count: f64,
    pub rate: f64,
    pub time_ms: i64,
}

/// What a primary has announced, and when to look again. Items are known
/// by their hash (their identity in the top-k): a set of numbers, no copy
/// of the item, and nothing kept at all for a kind of event not watched.
#[derive(Clone, Debug, Default)]
pub struct WatchState {
    /// Members announced by `enter` (MEMBERS watches only).
    listed: HashSet<u64>,
    /// Members announced `hot`.
    hot: HashSet<u64>,
    /// No item can cool or fade out before this time.
    next_check_ms: i64,
    /// Events allowed in the current second, and those dropped ever.
    window_start_ms: i64,
    sent_in_window: u64,
    dropped: u64,
}

impl WatchState {
    /// Heap bytes of the announced sets.
    fn heap_bytes(&self) -> usize {
        self.listed.allocation_size() + self.hot.allocation_size()
    }

    /// Room for one more event this second under `per_second`? Counts the
    /// ones refused.
    pub fn take_budget(&mut self, now_ms: i64, per_second: u64) -> bool {
        if now_ms.saturating_sub(self.window_start_ms) >= 1000 || now_ms < self.window_start_ms {
            self.window_start_ms = now_ms;
            self.sent_in_window = 0;
        }
        if self.sent_in_window < per_second {
            self.sent_in_window += 1;
            true
        } else {
            self.dropped = self.dropped.saturating_add(1);
            false
        }
    }

    pub fn dropped(&self) -> u64 {
        self.dropped
    }
}

/// A watch on a sketch: its specification and, on a primary, its state.
#[derive(Clone, Debug, PartialEq)]
pub struct Watch {
    pub spec: WatchSpec,
    pub(crate) state: Option<Box<WatchStateCell>>,
}

/// The state, compared as equal whatever it holds: it is not part of what
/// a sketch *is* (two equal sketches may have announced different things).
#[derive(Clone, Debug, Default)]
pub struct WatchStateCell(pub WatchState);

impl PartialEq for WatchStateCell {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// Scalars of the sketch needed to turn stored counts into events.
#[derive(Clone, Copy)]
struct Scale {
    unit: f64,
    /// λ per second for fading sketches.
    lambda: Option<f64>,
    half_life_ms: Option<f64>,
    created_ms: i64,
    now_ms: i64,
}

impl Scale {
    fn rate(&self, count: f64) -> f64 {
        match self.lambda {
            Some(l) => l * count,
            None => count / (self.now_ms.saturating_sub(self.created_ms).max(1) as f64 / 1000.0),
        }
    }

    /// The count a rate line stands for (fading) or the line itself.
    fn count_line(&self, line: f64) -> f64 {
        self.lambda.map_or(line, |l| line / l)
    }

    /// When a current `count` will have faded to `line` (never, without fading).
    fn crossing_ms(&self, count: f64, line: f64) -> i64 {
        match self.half_life_ms {
            Some(h) if line > 0.0 && count > line => {
                // Rounded up: a sweep at the due time finds the crossing done.
                let ahead = h * libm::log2(count / line);
                self.now_ms.saturating_add(ahead.ceil().min(1e15) as i64)
            }
            Some(_) => self.now_ms,
            None => i64::MAX,
        }
    }

    fn event(&self, kind: EventKind, item: &[u8], count: f64) -> WatchEvent {
        WatchEvent {
            kind,
            item: item.to_vec(),
            count,
            rate: self.rate(count),
            time_ms: self.now_ms,
        }
    }
}

impl HeavyKeeper {
    pub fn watch(&self) -> Option<&WatchSpec> {
        self.watch.as_ref().map(|w| &w.spec)
    }

    /// Sets (or, with `None`, removes) the watch; its state starts afresh.
    pub fn set_watch(&mut self, spec: Option<WatchSpec>) {
        self.watch = spec.map(|spec| Watch { spec, state: None });
    }

    /// Forgets what was announced (after a merge, say): it is derived again,
    /// silently, when next needed.
    pub fn forget_watch_state(&mut self) {
        if let Some(w) = self.watch.as_mut() {
            w.state = None;
        }
    }

    /// Events the per-second budget refused since the state was derived.
    pub fn watch_events_dropped(&self) -> u64 {
        self.watch
            .as_ref()
            .and_then(|w| w.state.as_ref())
            .map_or(0, |s| s.0.dropped)
    }

    /// The watch state, if any has been derived.
    pub fn watch_state(&mut self) -> Option<&mut WatchState> {
        self.watch
            .as_mut()
            .and_then(|w| w.state.as_mut())
            .map(|s| &mut s.0)
    }

    fn scale(&self, now_ms: i64) -> Scale {
        let now_ms = now_ms.max(self.clock_ms);
        Scale {
            unit: self.unit_at(now_ms),
            lambda: self.fading.map(|f| f.lambda_per_second()),
            half_life_ms: self.fading.map(|f| f.half_life_ms()),
            created_ms: self.created_ms,
            now_ms,
        }
    }

    /// Derives the state from the counts at `now_ms` without announcing
    /// anything, unless there is one already.
    #[inline]
    fn ensure_watch_state(&mut self, now_ms: i64) {
        if self.watch.as_ref().is_some_and(|w| w.state.is_none()) {
            self.derive_watch_state(now_ms);
        }
    }

    #[cold]
    #[inline(never)]
    fn derive_watch_state(&mut self, now_ms: i64) {
        let Some(spec) = self.watch.as_ref().map(|w| w.spec.clone()) else {
            return;
        };
        let scale = self.scale(now_ms);
        let hot_line = spec.above.map(|a| scale.count_line(a));
        let mut state = WatchState::default();
        for (_, hash, stored) in self.topk.members() {
            let count = stored / scale.unit;
            if spec.members && count >= 1.0 {
                state.listed.insert(hash);
            }
            if hot_line.is_some_and(|line| count >= line) {
                state.hot.insert(hash);
            }
        }
        state.next_check_ms = self.next_watch_check(&spec, &state, scale);
        if let Some(w) = self.watch.as_mut() {
            w.state = Some(Box::new(WatchStateCell(state)));
        }
    }

    /// The earliest time an announced item can cool or fade out.
    fn next_watch_check(&self, spec: &WatchSpec, state: &WatchState, scale: Scale) -> i64 {
        if state.hot.is_empty() && state.listed.is_empty() {
            return i64::MAX;
        }
        let cool = spec.cool_line().map(|c| scale.count_line(c));
        let mut next = i64::MAX;
        for (_, hash, stored) in self.topk.members() {
            let count = stored / scale.unit;
            if let Some(cool) = cool.filter(|_| state.hot.contains(&hash)) {
                next = next.min(scale.crossing_ms(count, cool));
            }
            if state.listed.contains(&hash) {
                next = next.min(scale.crossing_ms(count, 1.0));
            }
        }
        next
    }

    /// Heap bytes of the watch: its specification's channel and, once
    /// derived, its state. Part of [`HeavyKeeper::memory_bytes`].
    pub fn watch_bytes(&self) -> usize {
        self.watch.as_ref().map_or(0, |w| {
            std::mem::size_of::<Watch>()
                + w.spec.channel.capacity()
                + w.state.as_ref().map_or(0, |s| {
                    std::mem::size_of::<WatchStateCell>() + s.0.heap_bytes()
                })
        })
    }

    /// The most a watch on `channel` can ever add to this sketch: the
    /// channel, and both announced sets full (k hashes each, at the set's
    /// largest load). What a size cap must allow before the watch is set.
    pub fn watch_bytes_bound(&self, channel: &[u8]) -> usize {
        // A set holds at most k hashes; it only grows when more than half
        // full, to at most one more than twice what it held: 2k + 2.
        let k = self.params.k as usize;
        let full_set = HashSet::<u64>::with_capacity(2 * k + 2).allocation_size();
        std::mem::size_of::<Watch>()
            + channel.len()
            + std::mem::size_of::<WatchStateCell>()
            + 2 * full_set
    }

    /// What the watch timer does when a sketch's time has come: derives the
    /// state if there is none (silently, as after a load or a promotion),
    /// announces what fading did by `now_ms` if a sweep is due, and returns
    /// when to come back (`i64::MAX`: only an arrival can change anything).
    /// `None` for a sketch without a watch.
    pub fn tend_watch(&mut self, now_ms: i64, events: &mut Vec<WatchEvent>) -> Option<i64> {
        self.watch.as_ref()?;
        self.ensure_watch_state(now_ms);
        if self.watch_due(now_ms) {
            self.sweep_watch(now_ms, events);
        }
        self.watch_next_check_ms()
    }

    /// When the next sweep is worth doing: `Some(i64::MIN)` for a watch
    /// whose state is still to be derived, `None` without a watch.
    pub fn watch_next_check_ms(&self) -> Option<i64> {
        let watch = self.watch.as_ref()?;
        Some(watch.state.as_ref().map_or(i64::MIN, |s| s.0.next_check_ms))
    }

    /// Is a sweep due at `now_ms` (some announced item may have cooled or
    /// faded out)? False for a sketch without a derived watch state.
    pub fn watch_due(&self, now_ms: i64) -> bool {
        self.watch
            .as_ref()
            .and_then(|w| w.state.as_ref())
            .is_some_and(|s| now_ms >= s.0.next_check_ms)
    }

    /// [`Self::add_observed`] on a watched sketch: the events this arrival
    /// (and the time it moved the clock to) caused, appended to `events`.
    /// Returns the expelled item, as [`Self::add`] does.
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
        if self.watch.is_none() {
            return self.add_upcoming(upcoming, weight, time_ms);
        }
        self.ensure_watch_state(time_ms);
        let item = upcoming.item();
        let arrived = self.arrive(upcoming, weight, time_ms);
        let now_ms = time_ms.max(self.clock_ms);
        if self.watch_due(now_ms) {
            self.sweep_watch(now_ms, events);
        }
        if arrived.expelled.is_none() && arrived.member.is_none() {
            // The long tail: the top-k did not change, nothing to announce.
            return None;
        }
        self.announce(item, arrived, now_ms, events)
    }

    /// The events an arrival that changed the top-k causes.
    #[inline(never)]
    fn announce(
        &mut self,
        item: &[u8],
        arrived: crate::heavykeeper::Arrived,
        now_ms: i64,
        events: &mut Vec<WatchEvent>,
    ) -> Option<Box<[u8]>> {
        // Lines are compared in stored units (one multiplication), counts
        // and rates are worked out only for an event.
        let (unit, lambda) = match self.fading {
            None => (1.0, None),
            Some(f) => (f.weight(now_ms), Some(f.lambda_per_second())),
        };
        let Some(watch) = self.watch.as_mut() else {
            return arrived.expelled.map(|(i, _, _)| i);
        };
        let spec = &watch.spec;
        let Some(cell) = watch.state.as_mut() else {
            return arrived.expelled.map(|(i, _, _)| i);
        };
        let state = &mut cell.0;
        // (kind, item, stored count): no allocation unless something happens.
        let mut pending: Vec<(EventKind, Vec<u8>, f64)> = Vec::new();
        if let Some((gone, hash, stored)) = &arrived.expelled {
            if state.hot.remove(hash) {
                pending.push((EventKind::Cool, gone.to_vec(), *stored));
            }
            if state.listed.remove(hash) {
                pending.push((EventKind::Leave, gone.to_vec(), *stored));
            }
        }
        if let Some((before, after)) = arrived.member {
            if spec.members && after >= unit && before < unit && state.listed.insert(arrived.hash) {
                pending.push((EventKind::Enter, item.to_vec(), after));
            }
            if let Some(above) = spec.above {
                let line = lambda.map_or(above, |l| above / l) * unit;
                if after >= line && before < line && state.hot.insert(arrived.hash) {
                    pending.push((EventKind::Hot, item.to_vec(), after));
                }
            }
        }
        if pending.is_empty() {
            return arrived.expelled.map(|(i, _, _)| i);
        }
        let cool = spec.cool_line();
        let scale = self.scale(now_ms);
        let mut next = i64::MAX;
        for (kind, item, stored) in pending {
            let count = stored / scale.unit;
            match kind {
                EventKind::Enter => next = next.min(scale.crossing_ms(count, 1.0)),
                EventKind::Hot => {
                    let cool = scale.count_line(cool.unwrap_or(0.0));
                    next = next.min(scale.crossing_ms(count, cool));
                }
                _ => {}
            }
            events.push(scale.event(kind, &item, count));
        }
        if let Some(state) = self.watch_state() {
            state.next_check_ms = state.next_check_ms.min(next);
        }
        arrived.expelled.map(|(i, _, _)| i)
    }

    /// Announces what fading alone did by `now_ms`: `cool` for hot items
    /// now below the cool line, `leave` for listed items below one arrival.
    #[cold]
    #[inline(never)]
    pub fn sweep_watch(&mut self, now_ms: i64, events: &mut Vec<WatchEvent>) {
        self.ensure_watch_state(now_ms);
        let scale = self.scale(now_ms);
        let Some(spec) = self.watch.as_ref().map(|w| w.spec.clone()) else {
            return;
        };
        let Some(mut state) = self
            .watch
            .as_mut()
            .and_then(|w| w.state.take())
            .map(|cell| cell.0)
        else {
            return;
        };
        let cool = spec.cool_line().map(|c| scale.count_line(c));
        for (item, hash, stored) in self.topk.members() {
            let count = stored / scale.unit;
            if cool.is_some_and(|line| count < line) && state.hot.remove(&hash) {
                events.push(scale.event(EventKind::Cool, item, count));
            }
            if count < 1.0 && state.listed.remove(&hash) {
                events.push(scale.event(EventKind::Leave, item, count));
            }
        }
        state.next_check_ms = self.next_watch_check(&spec, &state, scale);
        if let Some(w) = self.watch.as_mut() {
            w.state = Some(Box::new(WatchStateCell(state)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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

    #[test]
    fn the_budget_caps_events_per_second_and_counts_the_rest() {
        let mut state = WatchState::default();
        let allowed = (0..1500)
            .filter(|_| state.take_budget(10_000, 1000))
            .count();
        assert_eq!((allowed, state.dropped()), (1000, 500));
        assert!(state.take_budget(11_000, 1000));
    }

    #[test]
    fn specs_are_validated() {
        let spec = |members, above, below| WatchSpec {
            channel: b"c".to_vec(),
            members,
            above,
            below,
        };
        assert!(spec(false, None, None).validate().is_err());
        assert!(spec(false, None, Some(1.0)).validate().is_err());
        assert!(spec(false, Some(10.0), Some(10.0)).validate().is_err());
        assert!(spec(false, Some(-1.0), None).validate().is_err());
        assert!(spec(false, Some(f64::NAN), None).validate().is_err());
        assert!(spec(true, None, None).validate().is_ok());
        assert!(spec(false, Some(10.0), Some(2.0)).validate().is_ok());
        assert_eq!(spec(false, Some(10.0), None).cool_line(), Some(8.0));
    }
}
