//! The rows a list picks out of many: told apart from the background's
//! noise, and bounded as picked.
//!
//! A sampled count is a sum of a few kept accesses, each standing for many.
//! Out of 100,000 keys read a hundred times each, a list of the hottest
//! picks exactly the keys whose accesses happened to be kept most often: a
//! key kept four times where its neighbours were kept once or not at all
//! reads tens of times its truth, and an error bar right for a key named in
//! advance is wrong for it (the winner's curse). Measured beside a
//! saturating load: 18 of 20 rows were such keys, and their bounds held the
//! truth in 10 of 60. Two rules make every listed row as true as a hot
//! key's:
//!
//! - **Told from the background, or not listed.** The stream a list picks
//!   from is known in outline ([`StreamMakeup`]): its events by size, each
//!   insert of a key not listed yet making `s / U` independent kept events
//!   of `U` accesses (`U` its variance over its sampled weight: one kept
//!   access in a counted slot, one key kept by the worker's thinning, a
//!   burst in a slot). A row is held against the background's events of
//!   its own grain (the size of its own events, `U`, or coarser: `S` of
//!   them, carried by `M` inserts): a key whose truth is at most a third of
//!   the row's estimate (a phantom, as far as the row is read) needed the
//!   row's `x = s / U` events from a mean of `μ = (estimate / 3 − exact) /
//!   U`, which happens with probability `P(Pois(μ) ≥ x)`; at most `S / μ`
//!   keys of that grain can be that hot, and no more than `M`. When
//!   `min(M, S / μ) · P(Pois(μ) ≥ x)` passes [`NOISE`], the background could
//!   have made the row by luck: it is not listed (a list may be shorter than
//!   asked). A count made of many events, of a burst's events (far coarser
//!   than any of the background's), or counted access by access (no noise
//!   at all) is told apart at once. Why by grain: the sampling changes
//!   within a reading (every command counted for a second, then one slot in
//!   16 and the worker's thinning once a load comes), and a background
//!   summed over both read the coarse stretch's phantoms (two thinned
//!   events of 45) against the fine stretch's events of 2: beside a reading
//!   at ~20,000 commands a second, keys read 9 to 16 times were listed at
//!   90 to 150 as told apart.
//! - **Bounds as picked.** A listed row's lower bound is the least truth for
//!   which the keys that could have it (again `min(M, S / μ)`, of its
//!   grain) would still put one at the row's count with probability 2.5%:
//!   the union over every key the list could have picked instead, not the
//!   chance of one key named in advance. Where the row's own spread is
//!   wider (a burst seen in a few counted slots), its own bound stands. The
//!   upper bound needs no change: picking favours rows that read high.
//!
//! Only the inserts of keys not listed make the background: a hot key's
//! inserts are no noise that could make another row. Its first inserts,
//! before it was listed, are in it, so the keys a row competes with are the
//! background's less one, itself (counted in, a key read in ten bursts a
//! second competed with its own first bursts, and was left out of four
//! readings in twelve beside a saturating load).
//!
//! The other listed keys' first inserts are in it too, but a list knows more
//! of them than of an unknown key: their counts. A key listed beside a row,
//! over the row's phantom line, counts as one of the row's candidates only
//! as likely as a key with the row's phantom truth would have shown what it
//! shows ([`Background::tells_apart_beside`]).

use crate::bounds::error_bar::{positive, split};
use crate::counting::fading_counters::FadingCounters;

/// What the noise floor reads of a row (a tally hands it over:
/// `Tally::grain`): its count, the part of it sampled (NaN: all of it), and
/// that part's variance.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Grain {
    pub count: f64,
    pub sampled: f64,
    pub variance: f64,
    /// A listed key's: the size class of the insert it entered the list on,
    /// its one insert the background holds (`None`: unknown, or none).
    pub entered_class: Option<u8>,
}

/// A row is left out when the background makes one like it by luck with at
/// least this probability.
pub const NOISE: f64 = 0.05;
/// A row is a phantom when it reads more than this many times its truth.
pub const PHANTOM_RATIO: f64 = 3.0;
/// The lower bound's tail: a 95% interval's lower end.
const LOW_TAIL: f64 = 0.025;
/// Past this many events a row's own bound is the background's too (the
/// adjustment is a few tenths of a percent, and the tail's series long).
const MANY_EVENTS: f64 = 20_000.0;
/// Event sizes are kept in classes a power of two apart: 2^0 (an access
/// that stands for itself) up to 2^63.
const CLASSES: usize = 64;

/// The class of events of size `unit` (accesses an event stands for).
fn class(unit: f64) -> usize {
    if unit < 2.0 {
        return 0;
    }
    (unit.log2().floor() as usize).min(CLASSES - 1)
}

/// The size class of the events an insert of `sampled` (with `variance`)
/// is made of (`None`: nothing sampled).
pub fn event_class(sampled: f64, variance: f64) -> Option<u8> {
    events_of(sampled, variance).map(|(c, _, _)| c as u8)
}

/// The events `sampled` (with `variance`) is made of: the class of their
/// size `U` (its variance over it), `U`, and how many (`None`: nothing
/// sampled, no events).
fn events_of(sampled: f64, variance: f64) -> Option<(usize, f64, f64)> {
    if !positive(sampled) || !positive(variance) || !variance.is_finite() {
        return None;
    }
    let unit = variance / sampled;
    Some((class(unit), unit, sampled / unit))
}

/// What the stream a list picks from could make by luck, for one row: the
/// background's events of the row's own grain (the size of its events or
/// coarser), how many there were, and how many keys they could belong to.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Outline {
    /// What one event of the row stands for (`U`: its variance over its
    /// sampled part).
    pub unit: f64,
    /// The background's events of that grain or coarser (`S`).
    pub events: f64,
    /// How many inserts, so keys at most, carried them (`M`).
    pub candidates: f64,
}

impl Outline {
    /// Can the background not have made this row by luck?
    pub fn tells_apart(&self, row: Grain) -> bool {
        let (exact, sampled) = split(row.count, row.sampled);
        let phantom_truth = row.count / PHANTOM_RATIO - exact;
        if phantom_truth <= 0.0 || sampled <= 0.0 || !self.is_known() {
            return true;
        }
        let mu = phantom_truth / self.unit;
        let x = sampled / self.unit;
        self.chance_one_reaches(mu, x) <= NOISE
    }

    /// The least truth of a row's sampled part `sampled` that the keys the
    /// list could have picked instead leave possible (see the module's
    /// text); `sampled` itself where none could compete.
    pub fn lowest_truth(&self, sampled: f64) -> f64 {
        if sampled <= 0.0 || !self.is_known() {
            return sampled.max(0.0);
        }
        let x = sampled / self.unit;
        if x > MANY_EVENTS {
            return sampled;
        }
        // The chance grows with μ: bisect for where it reaches LOW_TAIL.
        let (mut low, mut high) = (0.0, x);
        if self.chance_one_reaches(high, x) < LOW_TAIL {
            return sampled;
        }
        for _ in 0..60 {
            let mid = 0.5 * (low + high);
            if self.chance_one_reaches(mid, x) < LOW_TAIL {
                low = mid;
            } else {
                high = mid;
            }
            if high - low < 1e-6 * x {
                break;
            }
        }
        low * self.unit
    }

    /// The chance that some other key of the background whose mean is
    /// `mu` events shows `x` or more (a union bound over the keys that can
    /// be that hot, the row's own first inserts aside; none where the
    /// background has no other events of this grain).
    fn chance_one_reaches(&self, mu: f64, x: f64) -> f64 {
        if mu <= 0.0 {
            return 0.0;
        }
        let keys = (self.events / mu).min(self.candidates - 1.0).max(0.0);
        (keys * poisson_tail(mu, x)).min(1.0)
    }

    fn is_known(&self) -> bool {
        self.unit.is_finite() && positive(self.unit)
    }

    /// The same outline less the keys listed beside `row` whose own counts
    /// say their truth is above the row's phantom line: each listed key's
    /// entering insert is one of the outline's candidates (where its class
    /// is the row's grain or coarser), and the union over phantoms counts
    /// it only as likely as a key with the row's phantom truth would have
    /// shown what it shows (see [`Background::tells_apart_beside`]).
    fn less_known_hot(mut self, row: Grain, beside: &[Grain], at: usize) -> Outline {
        let line = row.count / PHANTOM_RATIO;
        // One class finer too, as the outline itself was summed.
        let from = class(self.unit).saturating_sub(1) as u8;
        let hotter = beside.iter().enumerate().take(KNOWN_HOT_ROWS);
        for (i, other) in hotter.take_while(|(_, other)| other.count > line) {
            if i == at || other.entered_class.is_none_or(|c| c < from) {
                continue;
            }
            self.candidates -= 1.0 - chance_of_showing(*other, line);
        }
        self
    }
}

/// The hottest rows of a list read as known keys beside each row (only
/// rows over the row's phantom line can tell; a list's hottest are).
const KNOWN_HOT_ROWS: usize = 32;
/// Candidates past which a few known keys do not move the union.
const FEW_CANDIDATES: f64 = 64.0;

/// How likely a key whose truth is `line` shows what `row` shows (1 for a
/// row that shows no more than that; 0 where its exact part alone passes
/// it).
fn chance_of_showing(row: Grain, line: f64) -> f64 {
    let (exact, sampled) = split(row.count, row.sampled);
    if exact >= line {
        return 0.0;
    }
    if !positive(sampled) || !positive(row.variance) || !row.variance.is_finite() {
        return if row.count > line { 0.0 } else { 1.0 };
    }
    let unit = row.variance / sampled;
    poisson_tail((line - exact) / unit, sampled / unit)
}

/// `P(Pois(mu) ≥ x)` for a real `x` (the regularized lower incomplete gamma
/// `P(x, mu)`, which is that for whole `x` and moves smoothly between).
pub fn poisson_tail(mu: f64, x: f64) -> f64 {
    if !positive(x) {
        return 1.0;
    }
    if !positive(mu) || !mu.is_finite() || !x.is_finite() {
        return if mu == f64::INFINITY { 1.0 } else { 0.0 };
    }
    statrs::function::gamma::gamma_lr(x, mu).clamp(0.0, 1.0)
}

/// The stream a list picks from, at one moment: its events by size class
/// (each insert's sampled weight over its event size is its number of
/// events), and its inserts by class.
#[derive(Clone, Debug, PartialEq)]
pub struct Background {
    events: [f64; CLASSES],
    inserts: [f64; CLASSES],
}

impl Background {
    /// The background of a set of counters known one by one (a cluster
    /// node's hash slots), each as its sampled estimate and variance.
    pub fn among(counters: impl Iterator<Item = (f64, f64)>) -> Background {
        let mut background = Background {
            events: [0.0; CLASSES],
            inserts: [0.0; CLASSES],
        };
        for (c, _, events) in counters.filter_map(|(s, v)| events_of(s, v)) {
            let (sum, inserts) = (background.events.get_mut(c), background.inserts.get_mut(c));
            if let (Some(sum), Some(inserts)) = (sum, inserts) {
                *sum += events;
                *inserts += 1.0;
            }
        }
        background
    }

    /// What the background could make of `tally`'s grain (`None` for a
    /// row counted access by access: no noise at all).
    pub fn outline_for(&self, row: Grain) -> Option<Outline> {
        let (c, unit, _) = events_of(split(row.count, row.sampled).1, row.variance)?;
        // One class finer too: a class spans a factor of two.
        let from = c.saturating_sub(1);
        let sum = |xs: &[f64; CLASSES]| xs.iter().skip(from).sum::<f64>();
        Some(Outline {
            unit,
            events: sum(&self.events),
            candidates: sum(&self.inserts),
        })
    }

    /// Can the background not have made this row by luck?
    pub fn tells_apart(&self, row: Grain) -> bool {
        self.outline_for(row)
            .is_none_or(|outline| outline.tells_apart(row))
    }

    /// [`Self::tells_apart`] for the row `at` of a list, hottest first,
    /// with what the rows beside it show of themselves. Why: the keys a
    /// list shows entered it on an insert the background holds, and
    /// beside a flood the only events as coarse as a bursty key's are the
    /// other bursty keys' first ones: one such competitor left a key read
    /// in three bursts of 60,000 (seen as one to three events) under the
    /// line in 8 of 12 readings, though that competitor's own count said
    /// its truth was far above the phantom line. Each known key then
    /// counts as a candidate only as likely as a phantom would have shown
    /// what it shows; a list's own phantoms (one event, a count near the
    /// line) still count whole.
    pub fn tells_apart_beside(&self, rows: &[Grain], at: usize) -> bool {
        let Some(&row) = rows.get(at) else {
            return true;
        };
        let Some(outline) = self.outline_for(row) else {
            return true;
        };
        outline.tells_apart(row)
            || (outline.candidates - 1.0 <= FEW_CANDIDATES
                && outline.less_known_hot(row, rows, at).tells_apart(row))
    }

    /// This background and `other` together (a list of reads and writes).
    pub fn plus(&self, other: &Background) -> Background {
        let mut sum = self.clone();
        let mine = sum.events.iter_mut().chain(&mut sum.inserts);
        for (mine, theirs) in mine.zip(other.events.iter().chain(&other.inserts)) {
            *mine += theirs;
        }
        sum
    }
}

/// What a sketch's stream is made of, faded as its counts are: each
/// insert's events by size class, for the [`Background`] a list of it
/// picks from. Only the inserts of keys not listed: a listed key is not the
/// background's noise.
#[derive(Clone, Debug)]
pub struct StreamMakeup {
    /// Events of class `c` at `c`, inserts at `CLASSES + c`.
    sums: FadingCounters,
    /// [`Self::mean_unit`] as last worked out, and when.
    mean: (i64, f64),
}

/// How long a mean unit worked out serves: the background's grain moves
/// with its half-life, and keys enter the top-k many times a second.
const MEAN_UNIT_MS: i64 = 100;

impl StreamMakeup {
    pub fn new(half_life_ms: f64, now_ms: i64) -> Self {
        Self {
            sums: FadingCounters::new(2 * CLASSES, half_life_ms, now_ms),
            mean: (i64::MIN, 0.0),
        }
    }

    /// One insert of a key not listed: `sampled` of its weight sampled,
    /// with `variance`.
    pub fn record(&mut self, sampled: f64, variance: f64, time_ms: i64) {
        let Some((c, _, events)) = events_of(sampled, variance) else {
            return;
        };
        let stored = self.sums.unit_at(time_ms);
        self.sums.add_units(c, events * stored);
        self.sums.add_units(CLASSES + c, stored);
    }

    /// The background now.
    pub fn background(&self, now_ms: i64) -> Background {
        Background {
            events: std::array::from_fn(|c| self.sums.count(c, now_ms)),
            inserts: std::array::from_fn(|c| self.sums.count(CLASSES + c, now_ms)),
        }
    }

    /// What one event of the background stands for, on average over its
    /// sampled accesses (each class taken at its middle); 0 where nothing
    /// of it was sampled. Worked out at most every [`MEAN_UNIT_MS`]: a key
    /// entering the top-k asks, which at every command is often.
    pub fn mean_unit(&mut self, now_ms: i64) -> f64 {
        let (at, mean) = self.mean;
        if now_ms.saturating_sub(at) < MEAN_UNIT_MS && now_ms >= at {
            return mean;
        }
        self.mean = (now_ms, self.worked_out_mean_unit(now_ms));
        self.mean.1
    }

    fn worked_out_mean_unit(&self, now_ms: i64) -> f64 {
        let (mut mass, mut spread) = (0.0, 0.0);
        let events = self.sums.nonzero(now_ms);
        for (c, events) in events.take_while(|&(c, _)| c < CLASSES) {
            let unit = if c == 0 {
                1.0
            } else {
                1.5 * (1u64 << c) as f64
            };
            mass += events * unit;
            spread += events * unit * unit;
        }
        if positive(mass) {
            spread / mass
        } else {
            0.0
        }
    }

    pub fn heap_bytes(&self) -> usize {
        self.sums.heap_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poisson_tails_are_exact() {
        // P(Pois(1) ≥ 1) = 1 − e^-1; P(Pois(2) ≥ 3) = 1 − 5e^-2.
        assert!((poisson_tail(1.0, 1.0) - (1.0 - (-1.0f64).exp())).abs() < 1e-12);
        assert!((poisson_tail(2.0, 3.0) - (1.0 - 5.0 * (-2.0f64).exp())).abs() < 1e-12);
        // Far tails stay relative: P(Pois(0.2) ≥ 10) ≈ 0.2^10/10! e^-0.2.
        let far = poisson_tail(0.2, 10.0);
        let lead = 0.2f64.powi(10) / 3_628_800.0 * (-0.2f64).exp();
        assert!((far / lead - 1.0).abs() < 0.03, "{far} vs {lead}");
        assert_eq!(poisson_tail(0.0, 3.0), 0.0);
        assert_eq!(poisson_tail(5.0, 0.0), 1.0);
        assert_eq!(poisson_tail(f64::NAN, 3.0), 0.0);
        assert_eq!(poisson_tail(3.0, f64::NAN), 1.0);
    }

    /// 100,000 single-access events of 100 in the stream (one per key).
    fn wide_background() -> Background {
        let mut makeup = StreamMakeup::new(1e12, 0);
        for _ in 0..100 {
            // A thousand keys' inserts at once, as the worker makes them.
            makeup.record(100_000.0, 10_000_000.0, 0);
        }
        let mut b = makeup.background(0);
        // 100,000 inserts (the 100 above stood for a thousand each).
        b.inserts = b.inserts.map(|i| i * 1_000.0);
        b
    }

    /// A row of `events` events of `unit` accesses each, all sampled.
    fn events(events: f64, unit: f64) -> Grain {
        let count = events * unit;
        Grain {
            count,
            sampled: count,
            variance: count * unit,
            entered_class: None,
        }
    }

    #[test]
    fn a_row_of_a_few_lucky_events_is_noise_and_a_hot_one_is_not() {
        let bg = wide_background();
        // Four events of 100 (each key's mean ~1): the luckiest of many.
        assert!(!bg.tells_apart(events(4.0, 100.0)));
        // Fifteen: a key at five could reach it, and 20,000 keys can be.
        assert!(!bg.tells_apart(events(15.0, 100.0)));
        // Forty events: no key at a third of that gets there.
        assert!(bg.tells_apart(events(40.0, 100.0)));
        // A burst: three events of 5,000 accesses each, a grain no event of
        // the background has.
        assert!(bg.tells_apart(events(3.0, 5_000.0)));
        // Counted access by access: no noise at all.
        let exact = Grain {
            count: 300.0,
            ..Grain::default()
        };
        assert!(bg.tells_apart(exact));
        // Nothing in the background: nothing to tell it from.
        let none = Background::among(std::iter::empty());
        assert!(none.tells_apart(events(4.0, 100.0)));
    }

    #[test]
    fn rows_are_told_from_the_background_events_of_their_own_grain() {
        // A reading sampled finely for a while (10,000 events of 2) and
        // coarsely later (2,000 events of 40: one slot in 16 and the
        // worker's thinning): a row of two events of 40 is the coarse
        // stretch's noise, however many fine events there were.
        let mut makeup = StreamMakeup::new(1e12, 0);
        for _ in 0..10_000 {
            makeup.record(2.0, 4.0, 0);
        }
        for _ in 0..2_000 {
            makeup.record(40.0, 1_600.0, 0);
        }
        let bg = makeup.background(0);
        assert!(!bg.tells_apart(events(2.4, 40.0)));
        let outline = bg.outline_for(events(2.4, 40.0)).unwrap();
        assert!((outline.events - 2_000.0).abs() < 1e-6, "{outline:?}");
        assert!((outline.candidates - 2_000.0).abs() < 1e-6, "{outline:?}");
        // Forty events of 2: fine grain, told from both.
        assert!(bg.tells_apart(events(40.0, 2.0)));
    }

    #[test]
    fn a_part_counted_exactly_keeps_a_row_within_three_times_its_truth() {
        let bg = wide_background();
        // 300 exact, 400 sampled in four events: the truth is at least 300,
        // a third of 700 is less, so the row cannot be a phantom.
        let mixed = Grain {
            count: 700.0,
            sampled: 400.0,
            variance: 40_000.0,
            entered_class: None,
        };
        assert!(bg.tells_apart(mixed));
    }

    #[test]
    fn the_lower_bound_of_a_picked_row_allows_for_the_keys_it_was_picked_from() {
        let bg = wide_background();
        let outline = bg.outline_for(events(25.0, 100.0)).unwrap();
        // 25 events: a key named in advance would have a lower bound of
        // ~16 events; picked out of 100,000 events' worth of keys, ~8.
        let low = outline.lowest_truth(2_500.0) / 100.0;
        assert!((6.0..11.0).contains(&low), "{low}");
        // At that truth, the chance that one of the keys gets there is
        // exactly the tail.
        let keys = (100_000.0 / low).min(100_000.0);
        let chance = keys * poisson_tail(low, 25.0);
        assert!((chance - LOW_TAIL).abs() < 1e-3, "{chance}");
        // A key with most of the stream: hardly any key could compete.
        let hot = outline.lowest_truth(5_000_000.0) / 5_000_000.0;
        assert!(hot > 0.98 && hot <= 1.0, "{hot}");
        // Nothing sampled: nothing below.
        assert_eq!(outline.lowest_truth(0.0), 0.0);
        // A grain no event of the background has: no key to compete.
        let burst = bg.outline_for(events(3.0, 5_000.0)).unwrap();
        assert_eq!(burst.lowest_truth(15_000.0), 15_000.0);
    }

    #[test]
    fn the_background_fades_as_counts_do_and_keeps_only_sampled_inserts() {
        let mut makeup = StreamMakeup::new(1_000.0, 0);
        makeup.record(10.0, 100.0, 0);
        makeup.record(10.0, 0.0, 0);
        let later = makeup.background(1_000);
        let outline = later.outline_for(events(1.0, 10.0)).unwrap();
        assert!((outline.candidates - 0.5).abs() < 1e-9, "{outline:?}");
        assert!((outline.events - 0.5).abs() < 1e-9, "{outline:?}");
        // Counters known one by one: the same outline.
        let among = Background::among([(50.0, 2_500.0), (50.0, 2_500.0)].into_iter());
        let o = among.outline_for(events(1.0, 50.0)).unwrap();
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        assert!(close(o.unit, 50.0) && close(o.events, 2.0) && close(o.candidates, 2.0));
    }

    #[test]
    fn a_coarse_row_beside_known_hot_keys_is_told_apart_beside_phantoms_not() {
        // Beside a flood: the background's events are fine, but for the
        // first inserts of two bursty keys (each one event of 100,000).
        let mut makeup = StreamMakeup::new(1e12, 0);
        for _ in 0..1_000 {
            makeup.record(100.0, 10_000.0, 0);
        }
        let burst = events(1.0, 100_000.0);
        makeup.record(burst.sampled, burst.variance, 0);
        makeup.record(burst.sampled, burst.variance, 0);
        let bg = makeup.background(0);
        let class = event_class(burst.sampled, burst.variance);
        let entered = |g: Grain| Grain {
            entered_class: class,
            ..g
        };
        // Three bursts seen in two events: one competitor of its grain puts
        // it under the line on its own.
        let row = entered(events(2.0, 100_000.0));
        assert!(!bg.tells_apart(row));
        // Beside a key whose own count says its truth is far over the line
        // (thirty events), it is told apart; so is that key.
        let hot = entered(events(30.0, 100_000.0));
        assert!(bg.tells_apart_beside(&[hot, row], 1));
        assert!(bg.tells_apart_beside(&[hot, row], 0));
        // Beside a phantom (one event, near the row's line), it is not.
        let phantom = entered(events(1.0, 100_000.0));
        assert!(!bg.tells_apart_beside(&[row, phantom], 0));
        // Nor beside a hot key whose insert was finer than the row's grain
        // (not one of its competitors), or one of unknown class.
        let fine = Grain {
            entered_class: Some(0),
            ..hot
        };
        let unknown = Grain {
            entered_class: None,
            ..hot
        };
        assert!(!bg.tells_apart_beside(&[fine, row], 1));
        assert!(!bg.tells_apart_beside(&[unknown, row], 1));
        // A row told apart alone stays so beside anything.
        let many = entered(events(40.0, 100_000.0));
        assert!(bg.tells_apart_beside(&[many], 0));
        assert!(bg.tells_apart_beside(&[], 0));
    }
}
