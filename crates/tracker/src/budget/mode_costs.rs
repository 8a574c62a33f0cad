//! What each way of counting spent, as measured: counting every command,
//! and sampling time. Sampling is worth its misses (a key read in a few
//! bursts is all or nothing in it) only where it spends clearly less.
//!
//! It has costs of its own that do not shrink with the share of time
//! counted: it makes slot edges, hears the event loop's passes around
//! them, and wakes the worker with a batch at each counted slot's end, tens
//! a second however few accesses each holds; and a counted slot's first
//! pass serves what came in the gap before it. At ~20,000 commands a second
//! on a 2-core VM (Redis 7.0, the bench's six shapes from 26 connections),
//! counting every command spent 0.6-1.2% of a core and sampling one slot in
//! 5-39 spent 0.8-1.5% (logged tick by tick, a build not kept): sampling
//! bought nothing but misses. Where sampling does save (a saturated server,
//! whose main thread counting every command costs ~9% more), it saves far
//! more than [`SAMPLING_MUST_SAVE`] asks.
//!
//! Each mode's spending is kept over its own ticks only, per ns of the main
//! thread's CPU time (a slightly busier server is no dearer counting), and
//! apart for each band of load (the main thread's share of a core, bands
//! twice as wide as the one below): sampling costs a saturated server a far
//! smaller share than a light one, so a figure from another load must not
//! decide for this one, and what was learnt at a load is there again when
//! the load comes back (after a flood, counting every command resumes at
//! its first ticks rather than once both modes were measured anew).

/// Time is sampled only where it spends at most this share of what
/// counting every command does (unless counting every command spends more
/// than the whole budget: the budget is a promise). Why half: at 3/4, the
/// same bench sampled a ~20,000-command load that sampling cost 0.57-0.65
/// of what counting it whole did (0.6% of a core against 1.0%), and a
/// key read in three pipelines, 1% of the load, was seen in no counted
/// slot (one reading of four after a flood, logged tick by tick).
pub const SAMPLING_MUST_SAVE: f64 = 0.5;
/// The memory of what each mode spent, in ns of that mode's time.
const MEMORY_NS: f64 = 2e9;
/// Time a mode must have been seen before its figure is trusted.
const MIN_SEEN_NS: f64 = 400e6;
/// Bands of load: under a sixth of a core, then each twice as wide, the
/// last from two thirds of a core up.
const BANDS: usize = 4;

/// What one mode spent over the ticks spent in it, and what the main
/// thread ran meanwhile.
#[derive(Clone, Copy, Debug, Default)]
struct ModeSpend {
    spent_ns: f64,
    server_ns: f64,
    elapsed_ns: f64,
}

impl ModeSpend {
    fn add(&mut self, tick: Tick) {
        let factor = (-tick.elapsed_ns / MEMORY_NS).exp();
        self.spent_ns = self.spent_ns * factor + tick.spent_ns;
        self.server_ns = self.server_ns * factor + tick.server_ns;
        self.elapsed_ns = self.elapsed_ns * factor + tick.elapsed_ns;
    }

    fn seen(&self) -> bool {
        self.elapsed_ns >= MIN_SEEN_NS && self.server_ns > 0.0
    }

    /// Spent per ns of the main thread's CPU time.
    fn per_server_ns(&self) -> Option<f64> {
        self.seen().then(|| self.spent_ns / self.server_ns)
    }

    /// Spent, a share of one core.
    fn share(&self) -> Option<f64> {
        self.seen().then(|| self.spent_ns / self.elapsed_ns)
    }
}

/// One tick: what the tracker spent, what the main thread ran (the
/// server's work and the tracker's), and how long it lasted, in ns.
#[derive(Clone, Copy, Debug, Default)]
pub struct Tick {
    pub spent_ns: f64,
    pub server_ns: f64,
    pub elapsed_ns: f64,
}

impl Tick {
    fn load(&self) -> f64 {
        self.server_ns / self.elapsed_ns.max(1.0)
    }
}

/// What each mode spent at one band of load.
#[derive(Clone, Copy, Debug, Default)]
struct Band {
    whole: ModeSpend,
    sampled: ModeSpend,
}

#[derive(Clone, Debug, Default)]
pub struct ModeCosts {
    bands: [Band; BANDS],
    /// The band of the load now, which decides: a tick moves it only if
    /// the tick before was in the same new band (a pipeline's tick is no
    /// new load). Each tick's figures go to its own band all the same (a
    /// flood's first tick counted whole is no figure for the load before).
    band: Option<usize>,
    moving_to: Option<usize>,
    /// The main thread's load in the last tick, a share of one core.
    load: f64,
}

/// The band of a load (a share of one core).
fn band_of(load: f64) -> usize {
    let octave = (load * 12.0).max(1.0).log2();
    (octave as usize).min(BANDS - 1)
}

impl ModeCosts {
    /// A tick spent counting every command (`sampling` false) or sampling
    /// time.
    pub fn observe(&mut self, sampling: bool, tick: Tick) {
        if tick.server_ns <= 0.0 {
            return;
        }
        self.load = tick.load();
        let now = band_of(self.load);
        let deciding = match self.band {
            Some(band) if band != now && self.moving_to != Some(now) => {
                self.moving_to = Some(now);
                band
            }
            _ => {
                self.moving_to = None;
                now
            }
        };
        self.band = Some(deciding);
        let Some(band) = self.bands.get_mut(now) else {
            return;
        };
        match sampling {
            true => band.sampled.add(tick),
            false => band.whole.add(tick),
        }
    }

    /// The figures of the load now.
    fn band(&self) -> Option<&Band> {
        self.bands.get(self.band?)
    }

    /// Did sampling time, when last seen at this load, spend clearly less
    /// than counting every command did (or would: `whole_estimate`, a share
    /// of one core, where counting every command was not seen at this
    /// load), or does counting every command spend more than `budget` (a
    /// share of one core)? Until sampling was seen, it is taken to: trying
    /// it is how its cost is learnt.
    pub fn sampling_saves(&self, budget: f64, whole_estimate: Option<f64>) -> bool {
        let Some(band) = self.band() else {
            return true;
        };
        let estimate = whole_estimate.filter(|share| *share > 0.0);
        let whole_share = band.whole.share().or(estimate);
        if whole_share.is_some_and(|share| share > budget) {
            return true;
        }
        let per_server_ns = |share: f64| share / self.load.max(f64::MIN_POSITIVE);
        let whole = band.whole.per_server_ns().or(estimate.map(per_server_ns));
        match (whole, band.sampled.per_server_ns()) {
            (Some(whole), Some(sampled)) => sampled <= SAMPLING_MUST_SAVE * whole,
            _ => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 100 ms ticks at `load` of the main thread, spending `share` of a core.
    fn ticks(costs: &mut ModeCosts, sampling: bool, load: f64, share: f64, n: usize) {
        for _ in 0..n {
            let tick = Tick {
                spent_ns: share * 1e8,
                server_ns: load * 1e8,
                elapsed_ns: 1e8,
            };
            costs.observe(sampling, tick);
        }
    }

    #[test]
    fn sampling_that_saves_little_is_not_taken_and_one_that_saves_much_is() {
        let mut costs = ModeCosts::default();
        assert!(costs.sampling_saves(0.01, None), "unknown: tried");
        // ~20,000 commands a second: whole 0.8% of a core, sampled 0.7%.
        ticks(&mut costs, false, 0.15, 0.008, 10);
        assert!(costs.sampling_saves(0.01, None), "sampling not seen yet");
        ticks(&mut costs, true, 0.15, 0.007, 10);
        assert!(!costs.sampling_saves(0.01, None));
        // Sampled at 0.3%: it saves.
        ticks(&mut costs, true, 0.15, 0.003, 40);
        assert!(costs.sampling_saves(0.01, None));
    }

    #[test]
    fn where_counting_every_command_was_not_seen_its_estimate_stands_for_it() {
        let mut costs = ModeCosts::default();
        ticks(&mut costs, true, 0.15, 0.007, 10);
        assert!(
            costs.sampling_saves(0.01, None),
            "nothing to weigh it against"
        );
        assert!(!costs.sampling_saves(0.01, Some(0.008)));
        assert!(costs.sampling_saves(0.01, Some(0.012)), "over the budget");
        assert!(!costs.sampling_saves(0.02, Some(0.012)), "saves 42%");
        assert!(costs.sampling_saves(0.02, Some(0.015)), "saves 53%");
    }

    #[test]
    fn counting_every_command_over_the_budget_is_left_whatever_sampling_saves() {
        let mut costs = ModeCosts::default();
        ticks(&mut costs, false, 0.3, 0.012, 10);
        ticks(&mut costs, true, 0.3, 0.011, 10);
        assert!(costs.sampling_saves(0.01, None), "1.2% over a 1% budget");
        assert!(!costs.sampling_saves(0.02, None));
    }

    #[test]
    fn what_was_measured_at_another_load_decides_nothing_and_comes_back_with_it() {
        let mut costs = ModeCosts::default();
        // ~20,000 commands a second: sampling saves little.
        ticks(&mut costs, false, 0.15, 0.008, 10);
        ticks(&mut costs, true, 0.15, 0.007, 10);
        assert!(!costs.sampling_saves(0.01, None));
        // Saturated: sampling spends 1% of a core, a ninth of counting all.
        ticks(&mut costs, false, 1.0, 0.09, 5);
        ticks(&mut costs, true, 1.0, 0.01, 20);
        assert!(costs.sampling_saves(0.10, None));
        // The load falls back: within a few ticks, what was learnt at it
        // decides again.
        ticks(&mut costs, true, 0.15, 0.007, 2);
        assert!(!costs.sampling_saves(0.01, None), "{costs:?}");
        // One tick of a pipeline (four times the load) moves no band, nor
        // what decides there; two in a row do.
        ticks(&mut costs, false, 0.6, 0.05, 1);
        assert_eq!(costs.band, Some(0));
        assert!(!costs.sampling_saves(0.01, None), "{costs:?}");
        ticks(&mut costs, false, 0.6, 0.05, 1);
        assert_eq!(costs.band, Some(2));
    }

    #[test]
    fn loads_fall_in_bands_each_twice_the_one_below() {
        let bands: Vec<usize> = [0.0, 0.05, 0.09, 0.15, 0.2, 0.3, 0.5, 0.7, 1.0, 2.0]
            .into_iter()
            .map(band_of)
            .collect();
        assert_eq!(bands, [0, 0, 0, 0, 1, 1, 2, 3, 3, 3]);
    }
}
