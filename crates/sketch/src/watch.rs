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
//! item to cool or fade out is known in advance: [`Watch::is_due`] says
//! when a sweep is worth doing, and no periodic scan is needed.
//!
//! The watch reads the sketch's top-k and the scale of its counts, and
//! changes nothing of them: the sketch holds its watch and hands it what
//! it needs (`watched.rs`).

use crate::arrived::Arrived;
use crate::out_of_memory::{try_copy, OutOfMemory};
use crate::topk::TopK;
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
    /// A copy, or an error where `clone` would abort (a channel name is
    /// as long as a client made it).
    pub(crate) fn try_clone(&self) -> Result<Self, OutOfMemory> {
        Ok(Self {
            channel: try_copy(&self.channel)?,
            ..*self
        })
    }

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
#[derive(Clone, Debug)]
pub struct Watch {
    spec: WatchSpec,
    state: Option<Box<WatchState>>,
}

/// Scalars of the sketch needed to turn stored counts into events, at one
/// moment: the sketch works them out, the watch only reads them.
#[derive(Clone, Copy)]
pub(crate) struct WatchScale {
    /// The stored weight of one arrival at `now_ms`.
    pub(crate) unit: f64,
    /// λ per second for fading sketches.
    pub(crate) lambda: Option<f64>,
    pub(crate) half_life_ms: Option<f64>,
    pub(crate) created_ms: i64,
    /// No earlier than the sketch's clock.
    pub(crate) now_ms: i64,
}

impl WatchScale {
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

impl Watch {
    /// A watch whose state is still to be derived.
    pub(crate) fn new(spec: WatchSpec) -> Self {
        Self { spec, state: None }
    }

    /// A copy of the specification, or an error where `clone` would abort.
    /// The state is not copied: it is not part of what a sketch is, and is
    /// derived afresh, silently, when next needed.
    pub(crate) fn try_clone_spec(&self) -> Result<Self, OutOfMemory> {
        Ok(Self::new(self.spec.try_clone()?))
    }

    pub fn spec(&self) -> &WatchSpec {
        &self.spec
    }

    /// Forgets what was announced: it is derived again, silently, when
    /// next needed.
    pub(crate) fn forget_state(&mut self) {
        self.state = None;
    }

    pub(crate) fn has_state(&self) -> bool {
        self.state.is_some()
    }

    pub(crate) fn state_mut(&mut self) -> Option<&mut WatchState> {
        self.state.as_deref_mut()
    }

    /// Events the per-second budget refused since the state was derived.
    pub(crate) fn dropped(&self) -> u64 {
        self.state.as_ref().map_or(0, |s| s.dropped)
    }

    /// When the next sweep is worth doing: `i64::MIN` while the state is
    /// still to be derived.
    pub(crate) fn next_check_ms(&self) -> i64 {
        self.state.as_ref().map_or(i64::MIN, |s| s.next_check_ms)
    }

    /// Is a sweep due at `now_ms`? Never before the state is derived.
    pub(crate) fn is_due(&self, now_ms: i64) -> bool {
        self.state
            .as_ref()
            .is_some_and(|s| now_ms >= s.next_check_ms)
    }

    /// Bytes of the watch: its specification's channel and, once derived,
    /// its state.
    pub(crate) fn bytes(&self) -> usize {
        std::mem::size_of::<Watch>()
            + self.spec.channel.capacity()
            + self
                .state
                .as_ref()
                .map_or(0, |s| std::mem::size_of::<WatchState>() + s.heap_bytes())
    }

    /// The most a watch on `channel` can ever take on a sketch of `k`
    /// members: the channel, and both announced sets full (k hashes each,
    /// at the set's largest load). What a size cap must allow.
    pub(crate) fn bytes_bound(k: usize, channel: &[u8]) -> usize {
        // A set holds at most k hashes; it only grows when more than half
        // full, to at most one more than twice what it held: 2k + 2.
        let full_set = HashSet::<u64>::with_capacity(2 * k + 2).allocation_size();
        std::mem::size_of::<Watch>()
            + channel.len()
            + std::mem::size_of::<WatchState>()
            + 2 * full_set
    }

    /// Derives the state from the counts without announcing anything.
    #[cold]
    #[inline(never)]
    pub(crate) fn derive_state(&mut self, topk: &TopK, scale: WatchScale) {
        let hot_line = self.spec.above.map(|a| scale.count_line(a));
        let mut state = WatchState::default();
        for (_, hash, stored) in topk.members() {
            let count = stored / scale.unit;
            if self.spec.members && count >= 1.0 {
                state.listed.insert(hash);
            }
            if hot_line.is_some_and(|line| count >= line) {
                state.hot.insert(hash);
            }
        }
        state.next_check_ms = self.next_check(&state, topk, scale);
        self.state = Some(Box::new(state));
    }

    /// The earliest time an announced item can cool or fade out.
    fn next_check(&self, state: &WatchState, topk: &TopK, scale: WatchScale) -> i64 {
        if state.hot.is_empty() && state.listed.is_empty() {
            return i64::MAX;
        }
        let cool = self.spec.cool_line().map(|c| scale.count_line(c));
        let mut next = i64::MAX;
        for (_, hash, stored) in topk.members() {
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

    /// The events an arrival of `item` that changed the top-k causes,
    /// appended to `events`. Lines are compared in stored units (`unit`,
    /// the stored weight of one arrival at `scale.now_ms`).
    #[inline(never)]
    pub(crate) fn announce(
        &mut self,
        item: &[u8],
        arrived: &Arrived,
        scale: WatchScale,
        events: &mut Vec<WatchEvent>,
    ) {
        let spec = &self.spec;
        let Some(state) = self.state.as_deref_mut() else {
            return;
        };
        let unit = scale.unit;
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
                let line = scale.count_line(above) * unit;
                if after >= line && before < line && state.hot.insert(arrived.hash) {
                    pending.push((EventKind::Hot, item.to_vec(), after));
                }
            }
        }
        if pending.is_empty() {
            return;
        }
        let cool = spec.cool_line();
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
        state.next_check_ms = state.next_check_ms.min(next);
    }

    /// Announces what fading alone did by `scale.now_ms`: `cool` for hot
    /// items now below the cool line, `leave` for listed items below one
    /// arrival. The state must have been derived.
    #[cold]
    #[inline(never)]
    pub(crate) fn sweep(&mut self, topk: &TopK, scale: WatchScale, events: &mut Vec<WatchEvent>) {
        let Some(mut state) = self.state.take() else {
            return;
        };
        let cool = self.spec.cool_line().map(|c| scale.count_line(c));
        for (item, hash, stored) in topk.members() {
            let count = stored / scale.unit;
            if cool.is_some_and(|line| count < line) && state.hot.remove(&hash) {
                events.push(scale.event(EventKind::Cool, item, count));
            }
            if count < 1.0 && state.listed.remove(&hash) {
                events.push(scale.event(EventKind::Leave, item, count));
            }
        }
        state.next_check_ms = self.next_check(&state, topk, scale);
        self.state = Some(state);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
