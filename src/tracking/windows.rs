//! Counting windows: with `track-sample N` (N > 1) the filter is registered
//! for a window of ~[`WINDOW_MS`], then unregistered for a random gap of
//! (N - 1) windows on average ([`DutyCycle`]), and every command of a
//! window is counted. Skipping one command in the filter itself costs
//! nearly what counting it does (the server's dispatch to the filter, and
//! reading the command's name to see a `SELECT`); between windows the
//! filter is not there at all.
//!
//! What a window's accesses stand for is measured, not assumed: the
//! server's own command counter over the whole cycle (window and gap)
//! divided by the commands the window saw. Time alone would be wrong where
//! it matters most: a server running flat out processes fewer commands per
//! millisecond while the filter is there, and a late timer stretches a gap.
//! So a window holds its accesses until its cycle ends, and they are then
//! counted with that ratio (rounded at random, without bias). A window
//! holds at most [`WINDOW_ACCESSES`] accesses or [`WINDOW_KEY_BYTES`] of
//! keys; past that it stops counting until it closes.
//!
//! Between windows nothing is seen, a `SELECT` or a script's start
//! included: each window starts a new epoch of the client-database cache
//! and asks about scripts again (7.0).
//!
//! The timers run on the main thread; a config change starts a new
//! generation, and a timer of an older one does nothing.

use super::{config, filter, with_state, Tracking};
use crate::clock;
use crate::panic_guard::or_fallback;
use heavykeeper_sketch::{DutyCycle, KeyBatch};
use redis_module::{raw, Context};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The length of a counting window. Short windows follow bursts closely
/// and keep a window's share of the work small; each window costs a filter
/// registration, and on servers that say which client sent a command
/// (7.2+, Valkey) one `RM_GetClientInfoById` per client seen in it.
pub const WINDOW_MS: u64 = 10;
/// The most one window holds: its memory and its work are bounded.
pub const WINDOW_ACCESSES: usize = 8192;
pub const WINDOW_KEY_BYTES: usize = 256 * 1024;

static GENERATION: AtomicU64 = AtomicU64::new(0);

/// The windows of one tracker, and the accesses of the current one.
pub struct Window {
    cycle: DutyCycle,
    sample: u64,
    opened_ms: i64,
    /// The server's command counter when the window opened.
    counter_at_open: Option<u64>,
    /// Commands the filter saw in the window (while it had room).
    pub seen: u64,
    /// It holds all it may: it counts nothing more until it closes.
    pub full: bool,
    pub batch: KeyBatch,
    /// The weight the last complete cycle measured.
    last_weight: u64,
    /// Its timers are running (set when the first window opens).
    running: bool,
}

impl Window {
    /// Windows for `track-sample sample`; `None` for 1 (every command).
    pub fn for_sample(sample: u64) -> Option<Self> {
        (sample > 1).then(|| Self {
            cycle: DutyCycle::new(sample, WINDOW_MS, clock::now_ms(), rand::random()),
            sample,
            opened_ms: 0,
            counter_at_open: None,
            seen: 0,
            full: false,
            batch: KeyBatch::default(),
            last_weight: sample,
            running: false,
        })
    }

    /// The accesses held so far, weighed as the last cycle measured: for a
    /// reader who cannot wait for this cycle to end (`HK.HOTKEYS`). The rest
    /// of the window is weighed as usual when its cycle ends.
    pub fn take_provisionally(&mut self) -> KeyBatch {
        self.batch.reweight(self.last_weight);
        std::mem::take(&mut self.batch)
    }

    /// The same windows, without what the current one saw (`HK.HOTKEYS
    /// RESET`): the rest of this cycle counts with the configured share.
    pub fn emptied(self) -> Self {
        Self {
            counter_at_open: None,
            seen: 0,
            batch: KeyBatch::default(),
            ..self
        }
    }

    #[inline]
    pub fn stop_if_full(&mut self) {
        if self.batch.len() >= WINDOW_ACCESSES || self.batch.key_bytes() >= WINDOW_KEY_BYTES {
            self.full = true;
        }
    }

    /// What each access of the window stands for, the cycle over (the
    /// server's counter `now`): its commands per command the window saw,
    /// within 1 and 64 times `sample`, rounded at random. The configured
    /// share where the counter cannot say.
    fn weight(&self, now: Option<u64>) -> u64 {
        let ratio = match (self.counter_at_open, now) {
            (Some(opened), Some(now)) if now >= opened && self.seen > 0 => {
                (now - opened) as f64 / self.seen as f64
            }
            _ => self.sample as f64,
        };
        let ratio = ratio.clamp(1.0, 64.0 * self.sample as f64);
        let below = ratio.floor();
        below as u64 + u64::from(rand::random::<f64>() < ratio - below)
    }
}

/// Brings the filter in line with the configs (after [`super::apply_configs`]
/// set the state): off, always on (`track-sample 1`), or windows from now.
/// Windows already running go on as they are: another config changed.
pub fn restart() {
    let windows = with_state(|s| {
        s.as_ref()
            .and_then(|t| t.window.as_ref().map(|w| w.running))
    })
    .flatten();
    if windows == Some(true) && config::tracking_on() {
        return;
    }
    let generation = GENERATION.fetch_add(1, Ordering::Relaxed) + 1;
    if !config::tracking_on() || windows.is_none() {
        filter::set_registered(config::tracking_on());
        return;
    }
    filter::set_registered(false);
    if let Some(ctx) = filter::module_context() {
        open(&ctx, generation);
    }
}

fn is_current(generation: u64) -> bool {
    GENERATION.load(Ordering::Relaxed) == generation
}

/// The last cycle ends and a window opens: the last window's accesses go to
/// the worker, weighed; how long the new one stays open.
fn open(ctx: &Context, generation: u64) {
    let now = clock::now_ms();
    let counter = commands_processed(ctx);
    let length = with_state(|s| s.as_mut().and_then(|t| start_window(t, now, counter))).flatten();
    let Some(length) = length else {
        return;
    };
    filter::set_registered(true);
    ctx.create_timer(Duration::from_millis(length), on_close, generation);
}

fn start_window(t: &mut Tracking, now: i64, counter: Option<u64>) -> Option<u64> {
    let window = t.window.as_mut()?;
    if window.seen > 0 {
        let weight = window.weight(counter);
        window.last_weight = weight;
        window.batch.reweight(weight);
        t.accesses_dropped += t.worker.submit(&mut window.batch);
    }
    window.running = true;
    window.counter_at_open = counter;
    window.seen = 0;
    window.full = false;
    window.opened_ms = now;
    t.client_dbs.new_epoch();
    t.scripts.commands_unseen();
    Some(window.cycle.open(now))
}

fn close(ctx: &Context, generation: u64) {
    filter::set_registered(false);
    let now = clock::now_ms();
    let gap = with_state(|s| {
        let window = s.as_mut()?.window.as_mut()?;
        let opened = window.opened_ms;
        Some(window.cycle.close(opened, now))
    })
    .flatten();
    if let Some(gap) = gap {
        ctx.create_timer(Duration::from_millis(gap.max(1)), on_open, generation);
    }
}

/// The server's `total_commands_processed`.
fn commands_processed(ctx: &Context) -> Option<u64> {
    // SAFETY: the timer's context; the info is freed before returning.
    unsafe {
        let info = raw::RedisModule_GetServerInfo?(ctx.ctx, c"stats".as_ptr());
        if info.is_null() {
            return None;
        }
        let mut err: std::os::raw::c_int = 0;
        let value = raw::RedisModule_ServerInfoGetFieldUnsigned?(
            info,
            c"total_commands_processed".as_ptr(),
            &mut err,
        );
        if let Some(free) = raw::RedisModule_FreeServerInfo {
            free(ctx.ctx, info);
        }
        (err == 0).then_some(value)
    }
}

// The crate runs timer callbacks unguarded: nothing may unwind past them.
// A panic leaves the filter as it was and stops this generation's windows
// (the log and INFO's `panics_contained` say so; a new `track-sample`,
// `track-k` or `track-halflife`, or `track no` then `yes`, restarts them).

fn on_open(ctx: &Context, generation: u64) {
    if is_current(generation) {
        or_fallback("a counting window", (), || open(ctx, generation));
    }
}

fn on_close(ctx: &Context, generation: u64) {
    if is_current(generation) {
        or_fallback("a counting window", (), || close(ctx, generation));
    }
}

/// Whether the filter is counting now (for `INFO`: a windowed tracker is on
/// whether or not a window is open).
pub fn counting() -> bool {
    config::tracking_on() && with_state(|s| s.is_some()).unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(counter_at_open: Option<u64>, seen: u64) -> Window {
        Window {
            counter_at_open,
            seen,
            ..Window::for_sample(16).unwrap() // panic-ok: a test; 16 > 1 always has windows
        }
    }

    #[test]
    fn a_window_weighs_its_cycles_commands_per_command_it_saw() {
        // 1,000 commands seen in the window, 15,000 in the whole cycle.
        assert_eq!(window(Some(10_000), 1_000).weight(Some(25_000)), 15);
        // Fractions are rounded at random, without bias.
        let w = window(Some(0), 4);
        let mean = (0..20_000).map(|_| w.weight(Some(50))).sum::<u64>() as f64 / 20_000.0;
        assert!((mean - 12.5).abs() < 0.05, "{mean}");
        // The counter cannot say, went back, or the window saw nothing:
        // the configured share.
        assert_eq!(window(None, 10).weight(Some(5)), 16);
        assert_eq!(window(Some(90), 10).weight(Some(5)), 16);
        assert_eq!(window(Some(7), 0).weight(Some(90)), 16);
        // Within 1 and 64 times the share.
        assert_eq!(window(Some(0), 1_000).weight(Some(10)), 1);
        assert_eq!(window(Some(0), 1).weight(Some(1 << 40)), 1024);
    }
}
