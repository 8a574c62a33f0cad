//! Sampling by time instead of by event: counting every event in short
//! windows that together cover one N-th of the time, and nothing in
//! between. An event seen in a window weighs N. Where skipping an event
//! costs almost as much as counting it (a server's command filter: its
//! dispatch and the read of the command's name are paid either way), the
//! time between windows is where the saving is: there the counter is not
//! called at all.
//!
//! The windows are spaced at random (the gap's mean is what keeps the
//! share), so that no periodic pattern in the stream lines up with them;
//! and a window that opens late (a timer held up by a busy server) is made
//! longer to match, so that over any few windows the share of time covered
//! stays one N-th.

/// When windows open and close.
#[derive(Clone, Debug)]
pub struct DutyCycle {
    every: u64,
    window_ms: f64,
    /// Start of the time accounted for, and the time covered since.
    since_ms: i64,
    covered_ms: f64,
    state: u64,
}

/// A window may grow to this many times its length to catch up.
const MAX_STRETCH: f64 = 4.0;
/// Uncovered time beyond this many windows is forgiven, not caught up: a
/// server that ran nothing for a while (a long command, a pause) has nothing
/// there to count, and a backlog would only make later windows longer.
const MAX_DEBT_WINDOWS: f64 = 8.0;

impl DutyCycle {
    /// Windows of `window_ms` covering one `every`-th of the time from `now_ms`.
    pub fn new(every: u64, window_ms: u64, now_ms: i64, seed: u64) -> Self {
        Self {
            every: every.max(1),
            window_ms: window_ms.max(1) as f64,
            since_ms: now_ms,
            covered_ms: 0.0,
            state: seed | 1,
        }
    }

    /// What each event seen in a window stands for.
    pub fn weight(&self) -> u64 {
        self.every
    }

    /// A window opens at `now_ms`: how long it stays open (ms).
    pub fn open(&mut self, now_ms: i64) -> u64 {
        let owed = self.owed_ms(now_ms);
        if owed > MAX_DEBT_WINDOWS * self.window_ms {
            self.forgive(now_ms);
        }
        let length =
            (self.window_ms + self.owed_ms(now_ms).max(0.0)).min(self.window_ms * MAX_STRETCH);
        length.round().max(1.0) as u64
    }

    /// The window opened at `opened_ms` closes at `now_ms`: how long until
    /// the next one opens (ms).
    pub fn close(&mut self, opened_ms: i64, now_ms: i64) -> u64 {
        let open_for = now_ms.saturating_sub(opened_ms).max(0) as f64;
        self.covered_ms += open_for;
        // Mean gap (every - 1) windows, drawn uniformly from half to one and
        // a half times that. A window held open long (its timer late behind
        // a slow command) already covered its share: the gap stays a gap.
        let window = open_for.clamp(1.0, self.window_ms * MAX_STRETCH);
        let gap = window * (self.every - 1) as f64 * (0.5 + self.uniform());
        gap.round() as u64
    }

    /// Time covered minus the share owed, at `now_ms`: positive when
    /// windows fell behind.
    fn owed_ms(&self, now_ms: i64) -> f64 {
        let elapsed = now_ms.saturating_sub(self.since_ms).max(0) as f64;
        elapsed / self.every as f64 - self.covered_ms
    }

    fn forgive(&mut self, now_ms: i64) {
        self.since_ms = now_ms;
        self.covered_ms = 0.0;
    }

    /// A uniform draw in [0, 1) (xorshift64*).
    fn uniform(&mut self) -> f64 {
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        (self.state.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs windows from t = 0 for `total_ms`, each timer firing `late`
    /// ms after it was due; the share of time the windows covered.
    fn share(every: u64, late: impl Fn(u64) -> u64, total_ms: i64) -> f64 {
        let mut d = DutyCycle::new(every, 10, 0, 9);
        let (mut now, mut covered, mut n) = (0i64, 0i64, 0u64);
        while now < total_ms {
            n += 1;
            let open_for = d.open(now) as i64 + late(n) as i64;
            let opened = now;
            now += open_for;
            covered += open_for;
            now += d.close(opened, now) as i64 + late(n + 1) as i64;
        }
        covered as f64 / now as f64
    }

    #[test]
    fn windows_cover_one_nth_of_the_time() {
        for every in [2u64, 16, 64] {
            let s = share(every, |_| 0, 600_000);
            assert!((s * every as f64 - 1.0).abs() < 0.02, "{every}: {s}");
        }
    }

    #[test]
    fn late_timers_are_made_up_for() {
        // Every timer 3 ms late (a busy server), on 10 ms windows.
        let s = share(16, |_| 3, 600_000);
        assert!((s * 16.0 - 1.0).abs() < 0.02, "{s}");
        // And irregularly late.
        let s = share(16, |n| (n * 7919) % 9, 600_000);
        assert!((s * 16.0 - 1.0).abs() < 0.02, "{s}");
    }

    #[test]
    fn a_long_pause_is_forgiven_not_caught_up() {
        let mut d = DutyCycle::new(16, 10, 0, 1);
        let open_for = d.open(0) as i64;
        d.close(0, open_for);
        // The server ran nothing for a minute: the next window is not a
        // minute long.
        assert!(d.open(60_000) <= 10 * MAX_STRETCH as u64);
        assert_eq!(d.open(60_000), 10);
    }

    #[test]
    fn a_window_held_open_long_does_not_make_the_gap_long() {
        let mut d = DutyCycle::new(16, 10, 0, 3);
        d.open(0);
        assert!(d.close(0, 5_000) <= 10 * MAX_STRETCH as u64 * 15 * 3 / 2);
        // It covered more than its share: the next window is the plain length.
        assert_eq!(d.open(5_600), 10);
    }

    #[test]
    fn gaps_vary_so_that_nothing_periodic_lines_up() {
        let mut d = DutyCycle::new(16, 10, 0, 5);
        let gaps: std::collections::HashSet<u64> = (0..50).map(|_| d.close(0, 10)).collect();
        assert!(gaps.len() > 20, "{gaps:?}");
        assert!(gaps.iter().all(|&g| (75..=225).contains(&g)), "{gaps:?}");
    }
}
