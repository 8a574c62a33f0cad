//! What the tracker spends, measured: the share of the main thread its
//! callbacks take, and its worker thread's CPU time.
//!
//! Timing every filter call would cost more than many calls do, so one
//! call in ~[`TIMED_ONE_IN`] (at random, so that no pattern of commands
//! hides from it) is timed, and stands for that many: an unbiased estimate
//! of the filter's total time. Timers run a hundred times a second at most
//! and are timed whole. What cannot be timed from inside (the server's
//! dispatch to the filter) is why the budget aims below its limit.
//!
//! Two kinds of cost are kept apart: what counting costs (the filter, the
//! key-miss events, the worker), which grows with the time counted, and
//! what the tracker's clocks cost (ticks, slots, questions to the server),
//! which does not.

use crate::budget::thread_clock::thread_cpu_ns;
use std::time::Instant;

/// Mean spacing of timed calls.
pub const TIMED_ONE_IN: u32 = 64;
/// The most one timed call is taken to cost (a command with thousands of
/// keys, or a client's first command, which asks the server its database,
/// takes microseconds; a descheduled thread loses milliseconds).
pub const LONGEST_CALL_NS: u64 = 20_000;

/// Time spent, in ns, by part.
#[derive(Clone, Copy, Debug, Default)]
pub struct Spent {
    /// Filter calls and key-miss events (estimated).
    pub calls_ns: u64,
    /// Of that, the largest one timed call stood for (a slow call, cache-cold
    /// or descheduled, stands for [`TIMED_ONE_IN`] like any other).
    pub largest_call_ns: u64,
    /// Ticks, slots and what they ask the server.
    pub timers_ns: u64,
    /// The worker thread's CPU time.
    pub worker_ns: u64,
    /// Of it, taking accesses in.
    pub worker_absorb_ns: u64,
}

pub struct CostMeter {
    countdown: u32,
    rng: u64,
    /// Since last taken.
    spent: Spent,
    /// What reading the clock took in the timed calls since last taken
    /// (each standing for [`TIMED_ONE_IN`]), to be taken off their sum.
    clock_ns: u64,
    /// The worker's CPU clock, and its time taking accesses in, when last
    /// read.
    worker_seen: Option<u64>,
    absorb_seen: u64,
}

impl Default for CostMeter {
    fn default() -> Self {
        Self {
            countdown: 1,
            rng: rand::random::<u64>() | 1,
            spent: Spent::default(),
            clock_ns: 0,
            worker_seen: None,
            absorb_seen: 0,
        }
    }
}

impl CostMeter {
    /// Is this call one to time? (A countdown: one decrement per call.)
    #[inline]
    pub fn times_this_call(&mut self) -> bool {
        self.countdown -= 1;
        if self.countdown > 0 {
            return false;
        }
        self.countdown = self.next_spacing();
        true
    }

    /// A timed call: it stands for [`TIMED_ONE_IN`] calls. What reading
    /// the clock takes where calls are timed is not the call's, nor is a
    /// time slice the thread lost to another process in the middle of it
    /// (the clock is the wall's): a filter call never takes
    /// [`LONGEST_CALL_NS`], a preemption always does.
    pub fn timed_call(&mut self, timed: TimedCall) {
        let one = u64::from(TIMED_ONE_IN);
        let ns = timed.call_ns.min(LONGEST_CALL_NS);
        let clock_ns = timed.empty_ns.min(LONGEST_CALL_NS);
        self.spent.calls_ns = self.spent.calls_ns.saturating_add(ns * one);
        self.clock_ns = self.clock_ns.saturating_add(clock_ns * one);
        let call_ns = ns.saturating_sub(clock_ns) * one;
        self.spent.largest_call_ns = self.spent.largest_call_ns.max(call_ns);
    }

    /// A timer, timed whole on the thread's CPU clock from `start_cpu_ns`
    /// (a timer runs a hundred times a second at most: the clock's system
    /// call is worth its truth on a busy machine, where the wall clock
    /// would charge the timer with time slices other processes took).
    pub fn timed_timer(&mut self, start_cpu_ns: u64) {
        let ns = thread_cpu_ns().saturating_sub(start_cpu_ns);
        self.spent.timers_ns = self.spent.timers_ns.saturating_add(ns);
    }

    /// Uniform in 1..=2·mean−1: mean [`TIMED_ONE_IN`].
    fn next_spacing(&mut self) -> u32 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        1 + (self.rng % u64::from(2 * TIMED_ONE_IN - 1)) as u32
    }

    /// Time spent since last taken; the worker's from its CPU clock's total
    /// `worker_cpu_ns` (the first reading is the baseline), and of that
    /// what taking accesses in took, from its total `absorb_ns`.
    pub fn take(&mut self, worker_cpu_ns: Option<u64>, absorb_ns: u64) -> Spent {
        let mut spent = std::mem::take(&mut self.spent);
        spent.calls_ns = spent
            .calls_ns
            .saturating_sub(std::mem::take(&mut self.clock_ns));
        if let (Some(now), Some(seen)) = (worker_cpu_ns, self.worker_seen) {
            spent.worker_ns = now.saturating_sub(seen);
            spent.worker_absorb_ns = absorb_ns
                .saturating_sub(self.absorb_seen)
                .min(spent.worker_ns);
        }
        if worker_cpu_ns.is_some() {
            self.worker_seen = worker_cpu_ns;
        }
        self.absorb_seen = absorb_ns;
        spent
    }
}

/// The clock readings of a timed call. Reading the clock where a call is
/// timed costs more than in a loop (its code and data are cold there, and
/// on a VM a reading now and then takes hundreds of ns): the least of many
/// readings in a row (~20 ns) left ~50 ns a call on the bill, a third of
/// what the meter read counting a command to cost. So each timed call is
/// preceded by an empty stretch timed the same way, and the sum of those is
/// taken off the calls' sum: unbiased, however the clock behaves.
///
/// Every reading is taken where the call runs, inline ([`CallTiming::end`]
/// right after it), never in the meter: the meter's code runs once in ~64
/// calls, so it is cold where it runs (the caches, the TLB: on a VM a miss
/// walks two page tables), and a call's end read there was billed for
/// that. At ~20,000 `GET`s a second (Redis 7.0, a 2-core VM) the meter
/// read 290 ns a call where the call, timed within the same stretch, took
/// 107 ns (`perf` put the module's own code at ~75 ns a call), and so
/// counting every command at 0.4-1.8% of a core: the budget sampled time
/// it could have counted whole, and a key read in a few pipelines was
/// missed whole with them. Read inline: 0.29-0.34%, the clocks included.
#[derive(Clone, Copy, Debug)]
pub struct CallTiming {
    empty_ns: u64,
    start: Instant,
}

impl CallTiming {
    /// Reads the clock twice: the call runs from the second reading.
    #[inline(always)]
    pub fn start() -> Self {
        let before = Instant::now();
        let start = Instant::now();
        Self {
            empty_ns: start.duration_since(before).as_nanos() as u64,
            start,
        }
    }

    /// The call ended now.
    #[inline(always)]
    pub fn end(self) -> TimedCall {
        TimedCall {
            empty_ns: self.empty_ns,
            call_ns: self.start.elapsed().as_nanos() as u64,
        }
    }
}

/// A call timed, for the meter: how long it took, clock readings
/// included, and how long its empty stretch took.
#[derive(Clone, Copy, Debug)]
pub struct TimedCall {
    empty_ns: u64,
    call_ns: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_call_in_the_mean_is_timed() {
        let mut m = CostMeter::default();
        let calls = 320_000;
        let timed = (0..calls).filter(|_| m.times_this_call()).count();
        let share = timed as f64 * f64::from(TIMED_ONE_IN) / calls as f64;
        assert!((share - 1.0).abs() < 0.03, "{share}");
    }

    #[test]
    fn the_largest_timed_call_is_known_apart() {
        let mut m = CostMeter::default();
        let ago = |us: u64| TimedCall {
            empty_ns: 0,
            call_ns: us * 1_000,
        };
        m.timed_call(ago(2));
        m.timed_call(ago(15));
        m.timed_call(ago(3));
        // A preemption: capped.
        let mut n = CostMeter::default();
        n.timed_call(ago(5_000));
        let spent = m.take(None, 0);
        let one = u64::from(TIMED_ONE_IN);
        assert!(
            (14_000 * one..=LONGEST_CALL_NS * one).contains(&spent.largest_call_ns),
            "{spent:?}"
        );
        assert!(
            spent.calls_ns >= spent.largest_call_ns + 4_000 * one,
            "{spent:?}"
        );
        assert_eq!(n.take(None, 0).largest_call_ns, LONGEST_CALL_NS * one);
    }

    #[test]
    fn what_reading_the_clock_took_is_not_the_calls() {
        let mut m = CostMeter::default();
        let one = u64::from(TIMED_ONE_IN);
        for _ in 0..10 {
            m.timed_call(TimedCall {
                empty_ns: 1_000,
                call_ns: 3_000,
            });
        }
        let spent = m.take(None, 0);
        // 10 calls of 3 µs, less 1 µs of clock each.
        assert!(
            (20_000 * one..25_000 * one).contains(&spent.calls_ns),
            "{spent:?}"
        );
        assert!(spent.largest_call_ns < 2_500 * one, "{spent:?}");
        // A real reading: the empty stretch is what two readings take.
        let timing = CallTiming::start();
        assert!(timing.empty_ns < LONGEST_CALL_NS, "{timing:?}");
    }

    #[test]
    fn a_call_is_billed_to_its_end_not_to_when_the_meter_hears_of_it() {
        let mut m = CostMeter::default();
        let timed = CallTiming::start().end();
        // The meter's own bookkeeping comes after the call ended, however
        // slowly it runs.
        std::thread::sleep(std::time::Duration::from_millis(5));
        m.timed_call(timed);
        let spent = m.take(None, 0);
        let one = u64::from(TIMED_ONE_IN);
        assert!(spent.calls_ns < LONGEST_CALL_NS * one, "{spent:?}");
    }

    #[test]
    fn the_worker_counts_from_its_last_reading() {
        let mut m = CostMeter::default();
        assert_eq!(
            m.take(Some(1_000), 0).worker_ns,
            0,
            "the first reading is the baseline"
        );
        let spent = m.take(Some(1_500), 300);
        assert_eq!((spent.worker_ns, spent.worker_absorb_ns), (500, 300));
        assert_eq!(m.take(None, 300).worker_ns, 0);
        assert_eq!(m.take(Some(1_700), 350).worker_ns, 200);
    }

    #[test]
    fn timers_are_apart_from_calls_and_charged_their_cpu_only() {
        let mut m = CostMeter::default();
        let start = thread_cpu_ns();
        // Sleeping costs no CPU; spinning does.
        std::thread::sleep(std::time::Duration::from_millis(20));
        // Spun until the thread was charged 2 ms (on a busy machine two ms
        // of the clock may charge it less).
        let spin = thread_cpu_ns();
        while thread_cpu_ns().saturating_sub(spin) < 2_000_000 {}
        m.timed_timer(start);
        let spent = m.take(None, 0);
        assert!(
            (1_000_000..15_000_000).contains(&spent.timers_ns),
            "{spent:?}"
        );
        assert_eq!((spent.calls_ns, spent.worker_ns), (0, 0));
    }
}
