//! A load that runs across a measurement, and waiting for a mode to settle
//! under it.
//!
//! Under callgrind a server runs ~20-50 times slower, and the tracker's
//! budget works in time: a fixed number of `GET`s (10,000: ~0.3 s there)
//! is no settling, and a load that stops between settling and measuring
//! reads to the tracker as a load that fell (counting every command is
//! tried at once, then cut when the load returns). A mode measured so
//! measures that transient: the default's instructions per `GET` in
//! `processCommand` and the worker read +1.41% in one run and +0.16% in
//! the next, of the same code (Redis 7.0). So the load
//! runs without a break from settling to the dump, the mode is measured
//! once the tracker's choices (the share of time counted, the accesses
//! kept) have held for [`SETTLED_FOR`], and the `GET`s measured are those
//! callgrind saw run (see `tracking_cost`).

use crate::tracker_settings::{info_f64, info_number};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The tracker's choices must hold this long for a mode to be settled.
const SETTLED_FOR: Duration = Duration::from_secs(3);
/// ... or settling ends anyway (a mode whose choices keep moving).
const MOST_SETTLING: Duration = Duration::from_secs(60);
/// How often the choices are read while settling.
const POLL: Duration = Duration::from_millis(250);

/// `GET`s of `key` from 8 clients in pipelines of 16 over 100,000 keys,
/// running until dropped.
pub struct Load(Child);

impl Load {
    pub fn start(port: u16, key: &str) -> Option<Self> {
        let child = Command::new("redis-benchmark")
            .args(["-p", &port.to_string(), "-q", "-c", "8", "-P", "16"])
            .args(["-r", "100000", "-n", "2000000000", "GET", key])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        Some(Load(child))
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// What the tracker chose last: the share of time counted and of accesses
/// kept (`None` where tracking is off).
fn choices(con: &mut redis::Connection) -> Option<(String, String)> {
    let share = info_f64(con, "tracker_share_counted")?;
    let kept = info_f64(con, "tracker_accesses_kept_share")?;
    Some((format!("{share:.4}"), format!("{kept:.4}")))
}

/// The commands the server has run.
fn commands(con: &mut redis::Connection) -> Option<f64> {
    info_number(con, "stats", "total_commands_processed")
}

/// Waits under a running load until the server ran at least `min_gets`
/// commands and, where `tracking`, the tracker's choices held for
/// [`SETTLED_FOR`] (at most [`MOST_SETTLING`]). Returns the commands a
/// second the server ran meanwhile.
pub fn settle(con: &mut redis::Connection, min_gets: usize, tracking: bool) -> Option<f64> {
    let started = Instant::now();
    let first = commands(con)?;
    let mut seen = tracking.then(|| choices(con)).flatten();
    let mut held_since = Instant::now();
    loop {
        std::thread::sleep(POLL);
        let ran = commands(con)? - first;
        if tracking {
            let now = choices(con);
            if now != seen {
                (seen, held_since) = (now, Instant::now());
            }
        }
        let held = !tracking || held_since.elapsed() >= SETTLED_FOR;
        let enough = ran >= min_gets as f64;
        if enough && (held || started.elapsed() >= MOST_SETTLING) {
            return Some(ran / started.elapsed().as_secs_f64());
        }
    }
}
