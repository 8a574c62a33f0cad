//! Keeping the tracker within a budget of CPU time, on any machine.
//!
//! What the tracker costs is measured, never assumed per command: the
//! caller reports, tick by tick, the time it spent counting on the main
//! thread (timed), the time its clocks took (which does not grow with the
//! time counted), its worker's CPU time, and how much of the tick was
//! counted.
//!
//! Two things bring the cost down, tried in this order:
//! - **keeping one access in `n`** within counted time (each by its own
//!   coin, standing for `n`): it cuts what the filter copies and all the
//!   worker does, and costs a burst nothing (a burst counted is thinned
//!   access by access), but not the filter's own cost per command;
//! - **counting one slot of time in `every`**: it cuts everything, but a
//!   key whose traffic comes in bursts is then counted or not by where its
//!   bursts fall. And it has fixed costs of its own (slot edges, the
//!   passes heard around them, a batch handed to the worker at each
//!   counted slot's end), so it is taken only where it costs clearly less
//!   than counting every command ([`crate::budget::mode_costs`]).
//!
//! From sums over the last few seconds comes what counting costs per
//! second counted, the main thread's part and the worker's (as if it took
//! every access in) apart; `n` is the least that makes the cost fit, up to
//! [`crate::sampling::access_thinning::MAX_KEEP_ONE_IN`], and `every` what
//! is still needed past that: every command, every access where it fits (a
//! lightly loaded server, exact counts). A slow machine, a profiled server
//! or heavier commands all show up as a higher measured cost, and the
//! shares follow. While every command is counted, what went unspent is
//! credit a burst may draw on ([`crate::budget::burst_credit`]); a flood
//! overdraws it and is cut at the next tick. Counting every command is
//! tried again now and then, and at once when the load falls
//! ([`crate::budget::whole_tries`]).
//!
//! The worker keeps its inserts within [`CostBudget::worker_share`] by
//! thinning the keys that weigh least (see `crate::budget::insert_budget`).

/// The share of the budget the tracker aims at: what it cannot time needs
/// room (the server's own dispatch to its filter, ~70-90 instructions a
/// command; the filter's few instructions on commands outside counted time;
/// the worker's wake-ups). Aiming at 0.85 of it, the default once measured
/// +1.2% and +1.6% instructions per `GET` on a saturated Valkey 9.1
/// (callgrind), over its 1% of a core: the budget is a promise, so the aim
/// leaves the untimed part its room. Why not 0.5: one slow timed call
/// weighs ~1.3 ms whatever the aim (see [`COUNTED_MEMORY_NS`]), so a lower
/// aim takes it for load (a light load at 0.6 of it turned to sampling).
pub const AIM: f64 = 0.6;
/// The main thread's part of the aim at the least; the worker's at the most
/// is the rest. The main thread gets the larger part, and whatever the
/// worker leaves: what the main thread cannot afford costs accuracy on
/// bursts (a burst falls in a counted slot or not), while the worker thins
/// accesses one by one, which costs little. Why not 0.65: the worker runs
/// more instructions per microsecond than the main thread's filter, so at
/// 0.35 of the aim it ran 28 instructions per `GET` on a saturated Valkey
/// 9.1 against the filter's 21, and the default measured +0.73% to +1.25%
/// over seven runs (callgrind); at 0.25, 11-25 and +0.73% to +1.03%
/// (five runs, mean +0.86%).
pub const MAIN_PART: f64 = 0.75;
/// The sums' memory, in wall time and in time counted, whichever passes
/// first: a tick's figures count `e^-(age / MEMORY_NS + counted since /
/// COUNTED_MEMORY_NS)`. By wall time alone, a second of idle time counted
/// whole would stand for the cost of counting long after load arrived.
///
/// Why not shorter (counting every command, the memory is ~0.7 s): the
/// meter times one call in 64, each standing for 64 and capped at 20 µs
/// ([`crate::budget::cost_meter`]), so one slow call (descheduled, cache-cold)
/// reads as ~1.3 ms of counting in its tick. With 0.3 s of counted memory,
/// one such tick took "counting all fits" from 0.74 to 1.34 budgets (the
/// debug build at 10,000 commands a second on a 2-core VM) and time was
/// sampled for a few hundred milliseconds at a time, for nothing: a bursty
/// key then falls in a handful of slots, and a burst it had in no counted
/// slot is missed with nothing in its error bar to say so.
const MEMORY_NS: f64 = 2e9;
const COUNTED_MEMORY_NS: f64 = 1e9;
/// Counted time the sums must hold before the cost per counted second is
/// trusted: less would be a slot or two.
const MIN_COUNTED_NS: f64 = 20e6;
/// And wall time: the first ticks after tracking starts would otherwise
/// decide alone (a load of 0.6 budgets with one slow timed call in its
/// first tick reads as 2.7). A flood meanwhile is cut as an overshoot.
const MIN_ELAPSED_NS: f64 = 400e6;
/// The most the time counted is taken to exceed the share planned
/// ([`CostBudget::stretch`]): past it, the overshoot cut does the rest.
const MAX_STRETCH: f64 = 64.0;
/// A share changes only when the new one differs by more than this factor
/// (no flapping around a boundary), unless the cost overshoots the budget.
const HYSTERESIS: f64 = 1.25;
/// Counting every command again once it would spend at most this share of
/// the aim (it is left past [`HYSTERESIS`] times the aim).
const RETURN_TO_WHOLE: f64 = 0.9;
/// A tick whose cost passes this many budgets is cut at once (while every
/// command is counted, once its credit is overdrawn), its largest timed
/// call left out: one slow call reads as ~1.3 ms (see
/// [`COUNTED_MEMORY_NS`]), a flood is made of many. (Cut at a flood's
/// second tick instead, the default cost 0.3% more instructions per `GET`
/// on a saturated Valkey 9.1: a tick more counted whole each time the load
/// came, in a bench that switches modes; so counting every command starts
/// with a credit a flood overdraws in its first tick.)
const OVERSHOOT: f64 = 3.0;
/// Sampling this lightly (one slot in this many or fewer), counting every
/// command is tried again now and then ([`crate::budget::whole_tries`]).
const PROBE_BELOW_EVERY: u32 = 8;
/// ... where the cost worked out from sampled time is within this many
/// times what fits (past it, the try would cost more than it can teach).
const PROBE_BELOW_FITS: f64 = 8.0;
/// The main thread's CPU in two ticks in a row this many times below its
/// recent mean: the load fell (a flood ended) ... (On the first such tick
/// alone, a pause of the load between two floods read as a fall: under
/// callgrind, whose bench pauses its load between modes, the tracker was
/// found counting every command right after the default's `GET`s, and the
/// default read +1.02% in `processCommand` + worker on Redis 7.0; taken on
/// the second tick, sampling still, +0.91%, one run each.)
const LOAD_FELL: f64 = 4.0;
/// ... and counting every command is tried at once if, scaled by the load
/// now, what it cost would spend at most this many times the aim (worked
/// out from sampled time it reads up to three times dear; a try that fails
/// costs one tick counted whole).
const TRY_ON_FALL_BELOW_FITS: f64 = 4.0;

use crate::budget::burst_credit::{BurstCredit, Standing};
use crate::budget::mode_costs::{ModeCosts, Tick as ModeTick};
use crate::budget::whole_tries::{Seen, WholeTries};
use crate::sampling::access_thinning::least_keep_one_in;

/// What one tick cost, in ns of CPU.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TickCost {
    /// Counting on the main thread (the filter, key-miss events).
    pub calls_ns: u64,
    /// Of that, what the largest one timed call stood for.
    pub largest_call_ns: u64,
    /// Counting on the worker (it lags the main thread by up to a tick).
    pub worker_ns: u64,
    /// Of that, taking accesses in: what keeping every access would
    /// multiply (the worker's inserts are kept to its share however many
    /// accesses it takes in).
    pub worker_absorb_ns: u64,
    /// The clocks: ticks, slots, questions to the server.
    pub clocks_ns: u64,
    /// One access in this many was kept in the tick (0 is taken as 1).
    pub keep_one_in: u32,
    /// The main thread's whole CPU time in the tick, the server's work and
    /// the tracker's (0: unknown): how loaded the server is.
    pub server_ns: u64,
}

/// What the tracker has spent since it started.
#[derive(Clone, Copy, Debug, Default)]
pub struct Totals {
    pub elapsed_ns: u64,
    pub counted_ns: u64,
    /// The main thread: counting and the clocks.
    pub main_ns: u64,
    pub worker_ns: u64,
}

#[derive(Clone, Debug)]
pub struct CostBudget {
    /// CPU time allowed, as a share of one core.
    budget: f64,
    every: u32,
    keep_one_in: u32,
    max_every: u32,
    /// Exponentially decayed sums, in ns.
    recent: Sums,
    /// Everything reported so far, for INFO.
    total: Sums,
    /// Counting every command tried again now and then while time is
    /// sampled.
    tries: WholeTries,
    /// While every command is counted: the allowance left unspent, which a
    /// burst may draw on before time is sampled.
    credit: BurstCredit,
    /// Did the load read as fallen at the last tick too? (A fall is taken
    /// as one only on its second tick: see [`LOAD_FELL`].)
    fell_last_tick: bool,
    /// What counting every command and sampling time each spent, as last
    /// seen at this load.
    modes: ModeCosts,
}

#[derive(Clone, Copy, Debug, Default)]
struct Sums {
    elapsed: f64,
    counted: f64,
    /// The time the share in force planned to count (`elapsed / every`).
    planned: f64,
    /// Spent counting, main thread and worker (grows with the time counted).
    counting: f64,
    /// Spent by the clocks (does not).
    fixed: f64,
    /// Spent by the worker.
    worker: f64,
    /// What the worker would have spent keeping every access.
    worker_whole: f64,
    /// The main thread's whole CPU time.
    server: f64,
}

impl Sums {
    fn decay_then_add(&mut self, factor: f64, tick: Sums) {
        self.elapsed = self.elapsed * factor + tick.elapsed;
        self.counted = self.counted * factor + tick.counted;
        self.planned = self.planned * factor + tick.planned;
        self.counting = self.counting * factor + tick.counting;
        self.fixed = self.fixed * factor + tick.fixed;
        self.worker = self.worker * factor + tick.worker;
        self.worker_whole = self.worker_whole * factor + tick.worker_whole;
        self.server = self.server * factor + tick.server;
    }

    fn spent(&self) -> f64 {
        self.counting + self.fixed
    }
}

impl CostBudget {
    /// `budget`: a share of one core (0.01 is 1%). Starts counting every
    /// command; `max_every` bounds how sparse counting may get.
    pub fn new(budget: f64, max_every: u32) -> Self {
        let budget = budget.clamp(1e-6, 1.0);
        Self {
            budget,
            every: 1,
            keep_one_in: 1,
            max_every: max_every.max(1),
            recent: Sums::default(),
            total: Sums::default(),
            tries: WholeTries::default(),
            credit: BurstCredit::starting(AIM * budget),
            fell_last_tick: false,
            modes: ModeCosts::default(),
        }
    }

    pub fn set_budget(&mut self, budget: f64) {
        self.budget = budget.clamp(1e-6, 1.0);
        self.credit = BurstCredit::starting(self.aim());
    }

    /// The CPU allowed, a share of one core.
    pub fn budget(&self) -> f64 {
        self.budget
    }

    /// What the tracker aims to spend of it ([`AIM`]), a share of one core.
    fn aim(&self) -> f64 {
        AIM * self.budget
    }

    /// One slot in `every` to count now.
    pub fn every(&self) -> u32 {
        self.every
    }

    /// One access in `keep_one_in` to keep in counted time now.
    pub fn keep_one_in(&self) -> u32 {
        self.keep_one_in
    }

    /// A tick of `elapsed_ns`, of which `counted_ns` were counted, that
    /// cost `cost`. Returns the share to count from now on.
    pub fn observe(&mut self, elapsed_ns: u64, counted_ns: u64, cost: TickCost) -> u32 {
        let tick = Sums {
            elapsed: elapsed_ns as f64,
            counted: counted_ns.min(elapsed_ns) as f64,
            planned: elapsed_ns as f64 / f64::from(self.every.max(1)),
            counting: cost.calls_ns.saturating_add(cost.worker_ns) as f64,
            fixed: cost.clocks_ns as f64,
            worker: cost.worker_ns as f64,
            worker_whole: cost.worker_ns as f64
                + cost.worker_absorb_ns.min(cost.worker_ns) as f64
                    * f64::from(cost.keep_one_in.max(1) - 1),
            server: cost.server_ns as f64,
        };
        let spent = ModeTick {
            spent_ns: tick.spent(),
            server_ns: tick.server,
            elapsed_ns: tick.elapsed,
        };
        // Not while the cost per second counted is unknown: the first ticks
        // after tracking starts (or a try resets the sums) keep every access
        // and warm the worker up, and read as no mode's lasting cost.
        if self.per_counted_second().is_some() {
            self.modes.observe(self.every > 1, spent);
        }
        let fell = self.load_fell(&tick);
        let fell_before = std::mem::replace(&mut self.fell_last_tick, fell);
        let load_fell = fell && fell_before;
        let age = tick.elapsed / MEMORY_NS + tick.counted / COUNTED_MEMORY_NS;
        self.recent.decay_then_add((-age).exp(), tick);
        self.total.decay_then_add(1.0, tick);
        let calls = cost.calls_ns.saturating_sub(cost.largest_call_ns) as f64;
        let overshoot = calls / tick.elapsed.max(1.0) / self.aim();
        self.thin_accesses();
        let was_whole = self.every == 1;
        let credit = self
            .credit
            .after_tick(tick.elapsed, tick.spent(), self.aim());
        // Counting every command is left only once its credit is gone: a
        // burst that ended within a tick is no load.
        if !was_whole || credit == Standing::Overdrawn {
            self.share_time(overshoot);
        }
        self.try_counting_whole(tick.elapsed, load_fell, credit == Standing::Ahead);
        if self.every == 1 && !was_whole {
            self.credit = BurstCredit::starting(self.aim());
        }
        self.every
    }

    /// The share of time to count, from the recent sums (and at once, past
    /// [`OVERSHOOT`] budgets in one tick).
    fn share_time(&mut self, overshoot: f64) {
        if let Some(fits) = self.fits() {
            let current = f64::from(self.every);
            let wanted = (fits * self.stretch())
                .ceil()
                .clamp(1.0, f64::from(self.max_every));
            // Counting every command is left only when it clearly does not
            // fit, and come back to only when it clearly does: a load at the
            // boundary would otherwise flap between the two.
            // Sampled, and counting every command fits, or sampling saves
            // too little to be worth its misses.
            let whole_again = current > 1.0 && (fits <= RETURN_TO_WHOLE || !self.sampling_saves());
            let change = if current == 1.0 {
                fits > HYSTERESIS && self.sampling_saves()
            } else if whole_again {
                true
            } else {
                wanted > 1.0 && (wanted > current * HYSTERESIS || wanted * HYSTERESIS < current)
            };
            if change {
                self.every = if whole_again {
                    1
                } else {
                    wanted.max(2.0) as u32
                };
            }
        }
        if overshoot > OVERSHOOT {
            let cut = (f64::from(self.every) * overshoot).ceil();
            self.every = cut.clamp(1.0, f64::from(self.max_every)) as u32;
        }
    }

    /// Does sampling time spend clearly less than counting every command,
    /// at this load ([`crate::budget::mode_costs`])? Where counting every
    /// command was not measured at this load, what it would cost stands for
    /// it: the cost per second counted (at the accesses kept now) and the
    /// clocks.
    fn sampling_saves(&self) -> bool {
        let estimate = self.per_counted_second().map(|(main, worker, _)| {
            main + worker / f64::from(self.keep_one_in) + self.clocks_share()
        });
        self.modes.sampling_saves(self.budget, estimate)
    }

    /// What the clocks took lately, a share of one core.
    fn clocks_share(&self) -> f64 {
        self.recent.fixed / self.recent.elapsed.max(1.0)
    }

    /// The share of time counted over the share planned (`1 / every`), at
    /// least 1: a counted slot holds at least the pass of the event loop
    /// that begins at or after its opening (a first pass counted apart, a
    /// last one running past its end), so where passes are long beside the
    /// slots (a slow server, long commands), the time counted, and its cost,
    /// are several times the share planned (under callgrind, whose server
    /// takes ~3 ms a pass of `GET -P16 -c8`, counted slots of 0.3 ms held
    /// 1.7 ms each on average).
    fn stretch(&self) -> f64 {
        let r = self.recent;
        if self.every <= 1 || r.planned <= 0.0 {
            return 1.0;
        }
        (r.counted / r.planned).clamp(1.0, MAX_STRETCH)
    }

    /// Now and then while time is sampled, every command is counted again
    /// and the recent sums forgotten: the next decision rests on what
    /// counting every command costs now (cut at once if it floods,
    /// [`OVERSHOOT`]).
    fn try_counting_whole(&mut self, elapsed_ns: f64, load_fell: bool, within_allowance: bool) {
        let seen = Seen {
            elapsed_ns,
            within_allowance,
            sampling: self.every > 1,
            light: (2..=PROBE_BELOW_EVERY).contains(&self.every)
                && self.fits().is_some_and(|fits| fits <= PROBE_BELOW_FITS),
            load_fell,
        };
        if self.tries.after_tick(seen) {
            self.every = 1;
            self.recent = Sums::default();
        }
    }

    /// Did the main thread's load in `tick` fall far below its recent mean
    /// while time is sampled, so far that counting every command would now
    /// likely fit, or where the sums cannot say? (Worked out before the
    /// tick joins the sums.) Sampled at one slot in 100 or fewer, the sums
    /// hold too little counted time to say what counting costs (they keep
    /// ~2 s of it, `2 s / every`), and nothing else weighs the share
    /// again: on a 2-core VM whose saturating load was cut at once to one
    /// slot in 100-140, the tracker then sampled a load of ~20,000 commands
    /// a second at that share for good, and a steady key read 0.0-0.9 of
    /// its truth (-72% on average). A try costs one tick counted whole, at
    /// a load that fell fourfold, and is cut at once if it floods.
    fn load_fell(&self, tick: &Sums) -> bool {
        let before = self.recent.server / self.recent.elapsed.max(1.0);
        let now = tick.server / tick.elapsed.max(1.0);
        if self.every <= 1 || now <= 0.0 || now * LOAD_FELL > before {
            return false;
        }
        self.fits()
            .is_none_or(|fits| fits * now / before <= TRY_ON_FALL_BELOW_FITS)
    }

    /// How many times over counting every command (at the current
    /// [`Self::keep_one_in`]) would spend the aim, from the recent sums
    /// (`None` until they hold enough counted time).
    fn fits(&self) -> Option<f64> {
        let (main, worker, room) = self.per_counted_second()?;
        Some((main + worker / f64::from(self.keep_one_in)) / room)
    }

    /// What counting costs per second counted, the main thread and the
    /// worker (keeping every access), and what counting may spend.
    fn per_counted_second(&self) -> Option<(f64, f64, f64)> {
        let r = self.recent;
        if r.counted < MIN_COUNTED_NS || r.elapsed < MIN_ELAPSED_NS {
            return None;
        }
        let main = (r.counting - r.worker).max(0.0) / r.counted;
        let worker = r.worker_whole / r.counted;
        // What the clocks take is not counting's to spend; counting keeps at
        // least half the aim, or a machine where the clocks alone cost the
        // budget (a profiled server) would count nothing. Why not a quarter:
        // sampling's own clocks (slot edges, the passes heard around them)
        // do not shrink as it samples deeper, so room that they took only
        // made it sample deeper for nothing. With a quarter, at ~20,000
        // commands a second on a 2-core VM (Redis 7.0), the clocks took
        // 0.3-0.45% of a core once time was sampled, counting was left the
        // quarter, and the share went to one slot in 6-39 (logged tick by
        // tick, a build not kept).
        let left = self.aim() - self.clocks_share();
        let for_counting = left.max(0.5 * self.aim());
        Some((main, worker, for_counting))
    }

    /// `n`, a power of two: the least at which counting every command fits,
    /// if one does; else, while time is sampled, the least at which the
    /// worker costs no more than the main thread. Thinning further would
    /// let fewer slots be skipped, but every access thinned away is noise on
    /// every key's count, steady ones too, while a slot more counted is
    /// bought with the filter's own cost per command, which thinning does
    /// not cut: past that point fewer slots cost steady keys more than they
    /// give bursts. With the same hysteresis as the share of time counted
    /// (left past 1.25 budgets, come back to under 0.9).
    ///
    /// While every command is counted and nothing fits, the most thinning:
    /// time is not sampled yet, and need not be if what did not fit passes
    /// (a pipeline, one slow timed call). Keeping more accesses then only
    /// spent the credit faster: at ~20,000 `GET`s a second on a 2-core VM
    /// one slow timed call took the main thread's part past what fits, one
    /// access in 4 kept became every access, the worker's cost doubled, the
    /// credit was overdrawn within three ticks and time was sampled (one
    /// slot in 3) for seconds, in which a key's pipelines fell unseen.
    fn thin_accesses(&mut self) {
        let Some((main, worker, room)) = self.per_counted_second() else {
            return;
        };
        let cost = |n: u32| (main + worker / f64::from(n)) / room;
        let whole = least_keep_one_in(|n| cost(n) <= 1.0);
        let fitting = if cost(whole) <= 1.0 || self.every == 1 {
            whole
        } else {
            least_keep_one_in(|n| worker / f64::from(n) <= main)
        };
        let current = self.keep_one_in;
        if (fitting > current && cost(current) > HYSTERESIS)
            || (fitting < current && cost(fitting) <= RETURN_TO_WHOLE)
            || (fitting < current && cost(current) > 1.0)
        {
            self.keep_one_in = fitting;
        }
    }

    /// The share of counted time the filter took on the main thread, from
    /// the recent sums (0 until they hold enough counted time): what a
    /// counted slot of a server with no time to spare may lack
    /// ([`crate::counting::tally::Missed::slowdown`]).
    pub fn counted_slowdown(&self) -> f64 {
        self.per_counted_second()
            .map_or(0.0, |(main, _, _)| main.clamp(0.0, 1.0))
    }

    /// The worker's part: what it may take before it thins, a share of one
    /// core.
    pub fn worker_share(&self) -> f64 {
        AIM * (1.0 - MAIN_PART) * self.budget
    }

    /// The tracker's CPU over the last few seconds, a share of one core.
    pub fn recent_cost(&self) -> f64 {
        self.recent.spent() / self.recent.elapsed.max(1.0)
    }

    /// What counting every command would cost the main thread now, a share
    /// of one core (`None` until measured).
    pub fn cost_when_counting(&self) -> Option<f64> {
        (self.recent.counted >= MIN_COUNTED_NS).then(|| self.recent.counting / self.recent.counted)
    }

    /// CPU spent in all, in nanoseconds.
    pub fn spent_ns(&self) -> u64 {
        self.total.spent() as u64
    }

    /// Everything reported so far, in nanoseconds.
    pub fn totals(&self) -> Totals {
        let t = self.total;
        Totals {
            elapsed_ns: t.elapsed as u64,
            counted_ns: t.counted as u64,
            main_ns: (t.counting - t.worker + t.fixed).max(0.0) as u64,
            worker_ns: t.worker as u64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sampling::access_thinning::MAX_KEEP_ONE_IN;

    /// A tick's length, ns.
    const PERIOD: u64 = 100_000_000;

    fn main_only(calls: u64, clocks: u64) -> TickCost {
        TickCost {
            calls_ns: calls,
            clocks_ns: clocks,
            ..TickCost::default()
        }
    }

    /// Runs 100 ms ticks of a server where counting costs the main thread
    /// `cost` of a core per second counted: the share settles where the
    /// main thread's part fits.
    fn settle(budget: f64, cost: f64) -> (u32, f64) {
        let mut b = CostBudget::new(budget, 1024);
        let (mut spent_sum, mut ticks) = (0.0, 0.0);
        for tick in 0..600 {
            let counted = PERIOD / u64::from(b.every());
            let spent = (counted as f64 * cost) as u64;
            // The clocks: 0.02% of a core, whatever is counted.
            let fixed = PERIOD / 5_000;
            if tick >= 300 {
                spent_sum += (spent + fixed) as f64 / PERIOD as f64;
                ticks += 1.0;
            }
            b.observe(PERIOD, counted, main_only(spent, fixed));
        }
        (b.every(), spent_sum / ticks)
    }

    #[test]
    fn a_light_load_is_counted_whole_and_a_heavy_one_sampled_within_the_budget() {
        assert_eq!(settle(0.01, 0.002).0, 1);
        for cost in [0.02, 0.12, 0.9] {
            let (every, share) = settle(0.01, cost);
            let part = 0.01 * AIM;
            assert!(every > 1, "{cost}");
            assert!(share <= part * 1.05, "{cost}: {share} of a core");
            assert!(
                share >= part / HYSTERESIS / 1.5,
                "{cost}: {share}: not needlessly sparse"
            );
        }
    }

    /// Counted slots that each last four times their planned share (their
    /// passes long beside them): the share planned is cut so that the time
    /// counted, and its cost, fit.
    #[test]
    fn slots_that_run_long_are_planned_sparser_until_their_cost_fits() {
        let mut b = CostBudget::new(0.01, 4096);
        let cost = 0.12;
        let mut spent_sum = 0.0;
        for tick in 0..600 {
            let counted = (4 * PERIOD / u64::from(b.every())).min(PERIOD);
            let spent = (counted as f64 * cost) as u64;
            if tick >= 300 {
                spent_sum += spent as f64 / PERIOD as f64 / 300.0;
            }
            b.observe(PERIOD, counted, main_only(spent, 0));
        }
        let planned_alone = settle(0.01, cost).0;
        assert!(
            b.every() >= 3 * planned_alone,
            "{} vs {planned_alone}",
            b.every()
        );
        assert!(spent_sum <= 0.01 * AIM * 1.1, "{spent_sum} of a core");
    }

    /// Ticks where counting all costs the main thread `main` and the worker
    /// `worker` (keeping every access) of a core per second counted.
    fn settle_both(main: f64, worker: f64) -> CostBudget {
        settle_more(CostBudget::new(0.01, 1024), main, worker)
    }

    /// [`settle_both`], from where `b` settled before.
    fn settle_more(mut b: CostBudget, main: f64, worker: f64) -> CostBudget {
        for _ in 0..200 {
            let counted = PERIOD / u64::from(b.every());
            let worker_ns = (counted as f64 * worker / f64::from(b.keep_one_in())) as u64;
            let cost = TickCost {
                calls_ns: (counted as f64 * main) as u64,
                worker_ns,
                worker_absorb_ns: worker_ns,
                keep_one_in: b.keep_one_in(),
                ..TickCost::default()
            };
            b.observe(PERIOD, counted, cost);
        }
        b
    }

    #[test]
    fn the_counted_slowdown_is_the_filters_share_of_counted_time() {
        assert_eq!(CostBudget::new(0.01, 1024).counted_slowdown(), 0.0);
        // The filter takes 6% of every second counted on the main thread,
        // the worker more again: only the filter's share slows the server.
        let aim = 0.01 * AIM;
        let b = settle_both(0.06, 4.0 * aim);
        assert!(b.every() > 1);
        assert!(
            (b.counted_slowdown() - 0.06).abs() < 0.006,
            "{}",
            b.counted_slowdown()
        );
    }

    #[test]
    fn the_worker_counts_towards_the_budget_and_accesses_are_thinned_first() {
        // Costs in shares of the aim (1% of a core times AIM).
        let aim = 0.01 * AIM;
        // Counting all costs the main thread 0.7 of the aim: it fits with
        // the worker at 0.12: every access of every command.
        let b = settle_both(0.7 * aim, 0.12 * aim);
        assert_eq!((b.every(), b.keep_one_in()), (1, 1));
        // With the worker at 0.7 it does not: every command still, one
        // access in 4 kept (0.7 + 0.175).
        let b = settle_both(0.7 * aim, 0.7 * aim);
        assert_eq!((b.every(), b.keep_one_in()), (1, 4));
        // The main thread alone over the aim: accesses thinned until the
        // worker costs no more than the main thread (2.35 + 3.5 / 2), and
        // time sampled for the rest.
        let b = settle_both(2.35 * aim, 3.5 * aim);
        assert_eq!(b.keep_one_in(), 2);
        assert!((4..=6).contains(&b.every()), "{}", b.every());
        let b = settle_both(2.35 * aim, 1.0);
        assert_eq!(b.keep_one_in(), MAX_KEEP_ONE_IN);
        // And back: a light load again keeps every access.
        let b = settle_more(settle_both(0.7 * aim, 0.7 * aim), 0.001, 0.001);
        assert_eq!((b.every(), b.keep_one_in()), (1, 1));
        assert!((b.worker_share() - 0.01 * AIM * (1.0 - MAIN_PART)).abs() < 1e-9);
    }

    /// Ticks where counting costs the main thread `main` of a core per
    /// second counted, and each mode has clocks of its own (sampling's make
    /// slot edges and hear passes).
    fn settle_modes(
        b: &mut CostBudget,
        main: f64,
        whole_fixed: f64,
        sampled_fixed: f64,
    ) -> Vec<u32> {
        (0..300)
            .map(|_| {
                let counted = PERIOD / u64::from(b.every());
                let clocks = match b.every() {
                    1 => whole_fixed,
                    _ => sampled_fixed,
                };
                let work = counted / 1_000;
                let cost = TickCost {
                    calls_ns: (counted as f64 * main) as u64,
                    clocks_ns: (PERIOD as f64 * clocks) as u64,
                    // The main thread busy a fifth of the time.
                    server_ns: PERIOD / 5,
                    worker_ns: work,
                    worker_absorb_ns: work,
                    keep_one_in: b.keep_one_in(),
                    ..TickCost::default()
                };
                b.observe(PERIOD, counted, cost)
            })
            .collect()
    }

    #[test]
    fn time_is_sampled_only_where_that_saves_with_each_modes_fixed_costs() {
        let aim = 0.01 * AIM;
        // Counting every command costs 1.3 aims, and does not fit; but
        // sampling's own clocks cost 0.9 aims at any share: sampling saves
        // nothing worth a missed burst (1.3 / 3 + 0.9 against 1.3 + 0.1).
        // It is tried once (its costs unknown), then left for good.
        let mut b = CostBudget::new(0.01, 1024);
        let shares = settle_modes(&mut b, 1.3 * aim, 0.1 * aim, 0.9 * aim);
        assert!(shares.iter().any(|&every| every > 1), "never tried");
        let last = shares.iter().rposition(|&every| every > 1).unwrap_or(0);
        assert!(last < 100, "sampled at tick {last}: {shares:?}");
        assert_eq!(b.every(), 1);
        // Where sampling's fixed costs are small, a like load is sampled
        // (1.5 / 3 + 0.05 against 1.55: it saves more than half; but for
        // tries of counting every command now and then).
        let sampled = |shares: &[u32]| shares.iter().skip(100).filter(|&&e| e > 1).count();
        let mut b = CostBudget::new(0.01, 1024);
        let shares = settle_modes(&mut b, 1.5 * aim, 0.05 * aim, 0.05 * aim);
        assert!(sampled(&shares) > 120, "{shares:?}");
        // And a saturating load is sampled whatever sampling's fixed
        // costs: it saves far more than they cost.
        let mut b = CostBudget::new(0.01, 1024);
        let shares = settle_modes(&mut b, 15.0 * aim, 0.1 * aim, 0.9 * aim);
        assert!(sampled(&shares) > 190, "{shares:?}");
    }

    #[test]
    fn a_spike_while_every_command_is_counted_thins_more_never_less() {
        // Every command counted, one access in 4 kept: the main thread at
        // 0.45 of the aim, the worker at 1.6 (keeping every access).
        let aim = 0.01 * AIM;
        let mut b = settle_both(0.45 * aim, 1.6 * aim);
        assert_eq!((b.every(), b.keep_one_in()), (1, 4));
        // One tick whose timed calls cost 25 times the usual (a slow timed
        // call stands for 64): the main thread's part alone no longer fits.
        let counted = PERIOD;
        let worker_ns = (counted as f64 * 1.6 * aim / 4.0) as u64;
        let cost = TickCost {
            calls_ns: (counted as f64 * 0.45 * aim * 25.0) as u64,
            worker_ns,
            worker_absorb_ns: worker_ns,
            keep_one_in: 4,
            ..TickCost::default()
        };
        b.observe(PERIOD, counted, cost);
        // Time is not sampled for it, and accesses are thinned more, not
        // less (keeping every access would only spend the credit faster).
        assert_eq!(b.every(), 1);
        assert!(b.keep_one_in() >= 4, "{}", b.keep_one_in());
        // Once it has passed, counting goes on as before.
        let b = settle_more(b, 0.45 * aim, 1.6 * aim);
        assert_eq!((b.every(), b.keep_one_in()), (1, 4));
    }

    #[test]
    fn a_load_at_the_boundary_does_not_flap() {
        let mut b = CostBudget::new(0.01, 1024);
        let mut changes = 0;
        let mut last = b.every();
        // Counting all costs just about the aim, give or take 10%.
        for tick in 0..600u64 {
            let counted = PERIOD / u64::from(b.every());
            let wobble = if tick % 2 == 0 { 1.1 } else { 0.9 };
            let cost = (counted as f64 * 0.0085 * wobble) as u64;
            b.observe(PERIOD, counted, main_only(cost, 0));
            changes += u32::from(b.every() != last);
            last = b.every();
        }
        // Settled once; counting every command tried again at 3 s, 9 s,
        // 21 s and 45 s (each try back to sampling: two changes).
        assert!(changes <= 1 + 2 * 4, "{changes} changes");
    }

    #[test]
    fn a_sudden_load_is_cut_at_once_and_a_lull_counted_whole_again() {
        let mut b = CostBudget::new(0.01, 1024);
        for _ in 0..10 {
            b.observe(PERIOD, PERIOD, main_only(PERIOD / 2_000, 0));
        }
        assert_eq!(b.every(), 1);
        // Counting everything suddenly costs the main thread a third of a
        // core: cut at once.
        b.observe(PERIOD, PERIOD, main_only(PERIOD / 3, 0));
        assert!(b.every() >= 30, "{}", b.every());
        // Load gone: some seconds later, every command again.
        for _ in 0..200 {
            let counted = PERIOD / u64::from(b.every());
            b.observe(PERIOD, counted, main_only(counted / 1000, PERIOD / 5_000));
        }
        assert_eq!(b.every(), 1);
    }

    /// Ticks of a server whose main thread is `busy` of a core, where
    /// counting every command costs it `per_counted` of a core per second
    /// counted (and three times that in sampled time: slot edges, cold
    /// caches). Returns the ticks at which every command was counted.
    fn run_load(b: &mut CostBudget, ticks: u32, busy: f64, per_counted: f64) -> Vec<u32> {
        let mut whole = Vec::new();
        for tick in 0..ticks {
            let every = b.every();
            let counted = PERIOD / u64::from(every);
            let dear = if every == 1 { 1.0 } else { 3.0 };
            let cost = TickCost {
                server_ns: (PERIOD as f64 * busy) as u64,
                ..main_only((counted as f64 * per_counted * dear) as u64, 0)
            };
            b.observe(PERIOD, counted, cost);
            if b.every() == 1 {
                whole.push(tick);
            }
        }
        whole
    }

    #[test]
    fn a_flood_that_ends_is_followed_by_every_command_counted_at_once() {
        let aim = 0.01 * AIM;
        let mut b = CostBudget::new(0.01, 1024);
        // A light load, counted whole; then a saturating flood (counting
        // all would cost 20 aims): after a lull its first tick draws on the
        // credit, it is sampled from its second and never counted whole
        // again while it lasts, its main thread busy throughout, give or
        // take 20%.
        assert_eq!(run_load(&mut b, 20, 0.05, 0.5 * aim).len(), 20);
        let mut flood = Vec::new();
        for tick in 0..100 {
            let busy = if tick % 2 == 0 { 0.8 } else { 1.0 };
            flood.extend(run_load(&mut b, 1, busy, 20.0 * aim).iter().map(|_| tick));
        }
        assert_eq!(flood, [0], "counted whole in the flood");
        // The flood ends: the light load is counted whole from the next
        // tick on (waiting out the flood's sums took seconds).
        let whole = run_load(&mut b, 30, 0.05, 0.5 * aim);
        assert_eq!(whole, (1..30).collect::<Vec<_>>());
    }

    #[test]
    fn a_flood_sampled_too_thinly_to_weigh_is_followed_by_every_command_counted() {
        // Counting all would cost 150 aims (450 in sampled time): cut at
        // once to one slot in hundreds, where the sums hold too little
        // counted time to weigh the share again.
        let aim = 0.01 * AIM;
        let mut b = CostBudget::new(0.01, 4096);
        assert_eq!(run_load(&mut b, 20, 0.05, 0.5 * aim).len(), 20);
        assert!(run_load(&mut b, 100, 1.0, 150.0 * aim).is_empty());
        assert!(b.every() > 100 && b.fits().is_none(), "{}", b.every());
        // The flood ends: every command is counted again within ticks.
        let whole = run_load(&mut b, 30, 0.05, 0.5 * aim);
        let first = whole.first().copied();
        assert!(first.is_some_and(|t| t <= 2), "{whole:?}");
        // ... and stays so.
        assert_eq!(whole, (first.unwrap_or(0)..30).collect::<Vec<_>>());
    }

    #[test]
    fn a_pipeline_beside_a_light_load_leaves_every_command_counted() {
        // Counting all costs 0.7 of the aim, and every 2.7 s a pipeline of
        // thousands of commands costs 4 ms more in its tick (nearly seven
        // budgets): every command stays counted.
        let aim = 0.01 * AIM;
        let mut b = CostBudget::new(0.01, 1024);
        for tick in 0..300u64 {
            let burst = if tick % 27 == 13 { 4_000_000 } else { 0 };
            let calls = (PERIOD as f64 * 0.7 * aim) as u64 + burst;
            let cost = TickCost {
                largest_call_ns: 20_000,
                ..main_only(calls, 0)
            };
            b.observe(PERIOD, PERIOD, cost);
            assert_eq!(b.every(), 1, "tick {tick}");
        }
        // Such pipelines every 300 ms do not fit: time is sampled.
        for tick in 0..100u64 {
            let burst = if tick % 3 == 0 { 4_000_000 } else { 0 };
            let calls = (PERIOD / u64::from(b.every())) as f64 * 0.7 * aim;
            b.observe(
                PERIOD,
                PERIOD / u64::from(b.every()),
                main_only(calls as u64 + burst, 0),
            );
        }
        assert!(b.every() > 1);
    }

    #[test]
    fn a_load_that_halves_is_no_fall_and_one_that_falls_to_what_does_not_fit_is_tried_sparingly() {
        let aim = 0.01 * AIM;
        let mut b = CostBudget::new(0.01, 1024);
        assert!(run_load(&mut b, 100, 1.0, 20.0 * aim).len() <= 1);
        // Half the load: still sampled, no try.
        assert!(run_load(&mut b, 100, 0.5, 10.0 * aim).is_empty());
        // A fall to a tenth where counting all would still cost 2.5 aims
        // (7.5 read from sampled time): a try, back to sampling once the
        // load returns; the load swinging between the two every half
        // second, the tries spaced out (1, 2, 4, 8 s ...).
        let mut whole = vec![false; 300];
        for round in 0..60 {
            let (busy, cost) = if round % 2 == 0 {
                (0.5, 10.0)
            } else {
                (0.05, 2.5)
            };
            for tick in run_load(&mut b, 5, busy, cost * aim) {
                whole[round * 5 + tick as usize] = true;
            }
        }
        let tries = whole.windows(2).filter(|w| !w[0] && w[1]).count();
        assert!((2..=5).contains(&tries), "{tries} tries in 30 s");
        let spent_whole = whole.iter().filter(|&&w| w).count();
        assert!(
            spent_whole <= 5 * tries,
            "{spent_whole} ticks counted whole"
        );
    }

    /// A light load whose meter reads one slow timed call now and then (one
    /// call in 64 timed, capped at 20 µs: ~1.3 ms in its tick) is counted
    /// whole throughout: one outlier is not a load.
    #[test]
    fn one_slow_timed_call_does_not_start_sampling() {
        let mut b = CostBudget::new(0.01, 1024);
        for tick in 0..600u64 {
            // 0.6 of the aim: 0.36 ms of the filter's 100 ms, the worker
            // nothing; one tick in 10 also holds a capped timed call (the
            // first tick too), two ticks in a row now and then.
            let outlier = if tick % 10 == 0 || tick % 97 == 1 {
                64 * 20_000
            } else {
                0
            };
            let cost = TickCost {
                largest_call_ns: outlier.max(20_000 * 64 / 10),
                ..main_only(360_000 + outlier, 0)
            };
            b.observe(PERIOD, PERIOD, cost);
            assert_eq!(b.every(), 1, "tick {tick}");
        }
    }

    #[test]
    fn clocks_that_cost_the_whole_budget_do_not_stop_counting() {
        // A profiled server: the clocks alone take 2% of a core.
        let mut b = CostBudget::new(0.01, 1024);
        for _ in 0..300 {
            let counted = PERIOD / u64::from(b.every());
            b.observe(
                PERIOD,
                counted,
                main_only((counted as f64 * 0.3) as u64, PERIOD / 50),
            );
        }
        // Counting gets half the aim: 0.3 / (0.5 * 0.006) = 100.
        assert!((75..=125).contains(&b.every()), "{}", b.every());
    }

    #[test]
    fn a_light_sampling_that_reads_dear_tries_counting_every_command_again() {
        // Counting every command costs half the aim, but sampled, a counted
        // second costs three times that (slot edges, cold caches): worked
        // out from sampled time, counting all would not fit.
        let mut b = CostBudget::new(0.01, 1024);
        let aim = 0.01 * AIM;
        let mut whole_ticks = 0;
        for tick in 0..400 {
            let every = b.every();
            let counted = PERIOD / u64::from(every);
            let per_counted = if tick < 20 {
                // A flood at first: sampling begins.
                20.0 * aim
            } else if every == 1 {
                0.5 * aim
            } else {
                1.5 * aim
            };
            let cost = (counted as f64 * per_counted) as u64;
            b.observe(PERIOD, counted, main_only(cost, 0));
            if tick >= 300 && b.every() == 1 {
                whole_ticks += 1;
            }
        }
        assert_eq!(whole_ticks, 100, "every command counted again");
    }
}
