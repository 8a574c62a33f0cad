//! A key read in three large pipelines beside a saturating load, reading
//! after reading: is it listed every time? Each 8 s reading sends three
//! pipelines of `GET bursts3`, 2.6 s apart at a random phase, that make 1%
//! of what the node serves in the reading between them, over one
//! connection each and as fast as the server takes them (a cache stampede,
//! a batch job). The server takes such a pipeline in 10-15 ms: a pipeline
//! that falls in no counted slot of time is not seen at all, so this reads
//! whether the slots are short enough for the bursts of a saturated node.

use crate::redis_phase::{query, Server};
use crate::tracker_settings::{hotkeys, info_f64};
use crate::tracking_bounds::rows_marked_noise;
use crate::tracking_cost::{server_name, servers, start_counting};
use crate::tracking_truth::{commands_processed, saturate};
use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

const KEY: &str = "bursts3";
const READING: Duration = Duration::from_secs(8);
const SPACING: Duration = Duration::from_millis(2_600);

/// One reading.
#[derive(Clone, Debug)]
pub struct BurstReading {
    /// The key's share of what the node ran in the reading.
    pub share: f64,
    pub listed: bool,
    /// Not listed, but marked as a row the noise could have made.
    pub marked_noise: bool,
    /// Listed, the truth within its 95% bounds.
    pub covered: bool,
    /// Counted over sent (0: not listed).
    pub ratio: f64,
    /// The longest of its three pipelines, as the client saw it (ms).
    pub longest_ms: f64,
    pub share_counted: f64,
}

#[derive(Default)]
pub struct ServerBursts {
    pub server: String,
    pub readings: Vec<BurstReading>,
    pub error: Option<String>,
}

impl ServerBursts {
    pub fn listed(&self) -> usize {
        self.readings.iter().filter(|r| r.listed).count()
    }

    pub fn covered(&self) -> usize {
        self.readings.iter().filter(|r| r.covered).count()
    }
}

/// Every server, 20 readings each (4 quick).
pub fn measure(module: &Path, quick: bool) -> Vec<ServerBursts> {
    let readings = if quick { 4 } else { 20 };
    servers()
        .iter()
        .map(|binary| {
            let mut out = ServerBursts {
                server: binary.clone(),
                ..Default::default()
            };
            if let Err(e) = measure_one(binary, module, readings, &mut out) {
                eprintln!("  bursts on {}: {e}", out.server);
                out.error = Some(e);
            }
            out
        })
        .collect()
}

fn measure_one(
    binary: &str,
    module: &Path,
    readings: usize,
    out: &mut ServerBursts,
) -> Result<(), String> {
    let server = start_counting(binary, module)?;
    out.server = server_name(&server)?;
    let mut flood = saturate(server.port)?;
    let result = (|| {
        let mut con = server.connection().map_err(|e| e.to_string())?;
        // The tracker settles into the load, and its rate sizes the bursts.
        std::thread::sleep(Duration::from_secs(3));
        let before = commands_processed(&mut con);
        std::thread::sleep(Duration::from_secs(2));
        let rate = (commands_processed(&mut con) - before) / 2.0;
        // Sized at 1.1% of that rate: the pipelines themselves slow the
        // benchmark a little, and the key is to have 1% of the reading.
        let burst = (0.011 * rate * READING.as_secs_f64() / 3.0).ceil() as usize;
        for i in 0..readings {
            let r = one_reading(&server, &mut con, burst, i as u64)?;
            eprintln!(
                "  {} reading {i}: listed {} noise {} covered {} ratio {:.3} share {:.4} pipeline {:.0} ms, share counted {:.4}",
                out.server, r.listed, r.marked_noise, r.covered, r.ratio, r.share, r.longest_ms, r.share_counted
            );
            out.readings.push(r);
        }
        Ok(())
    })();
    let _ = flood.kill();
    let _ = flood.wait();
    result
}

fn one_reading(
    server: &Server,
    con: &mut redis::Connection,
    burst: usize,
    seed: u64,
) -> Result<BurstReading, String> {
    query::<()>(con, &["HK.HOTKEYS", "RESET"])?;
    let commands = commands_processed(con);
    let started = Instant::now();
    // A phase of its own for each reading (0.2-2.4 s), spread evenly.
    let phase = Duration::from_millis(200 + (seed * 733) % 2_200);
    let mut longest = Duration::ZERO;
    for k in 0..3 {
        sleep_until(started + phase + SPACING * k);
        longest = longest.max(pipeline(server.port, burst)?);
    }
    sleep_until(started + READING);
    let rows = hotkeys(con, &["COUNT", "20", "WITHBOUNDS"])?;
    let noise = rows_marked_noise(con)?;
    let ran = commands_processed(con) - commands;
    let truth = (3 * burst) as f64;
    let row = rows.iter().find(|(k, _)| k == KEY).map(|(_, b)| b);
    Ok(BurstReading {
        share: truth / ran.max(1.0),
        listed: row.is_some(),
        marked_noise: noise.iter().any(|k| k == KEY),
        covered: row
            .is_some_and(|b| b.low <= truth * (1.0 + 1e-9) && truth <= b.high * (1.0 + 1e-9)),
        ratio: row.map_or(0.0, |b| b.count / truth),
        longest_ms: longest.as_secs_f64() * 1e3,
        share_counted: info_f64(con, "tracker_share_counted").unwrap_or(f64::NAN),
    })
}

/// `n` `GET`s of the key in one write on a connection of their own, all
/// answers read (the key does not exist: each is `$-1`); how long it took.
fn pipeline(port: u16, n: usize) -> Result<Duration, String> {
    let one = format!("*2\r\n$3\r\nGET\r\n${}\r\n{KEY}\r\n", KEY.len());
    let payload = one.repeat(n);
    let started = Instant::now();
    let mut stream = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .map_err(|e| e.to_string())?;
    stream
        .write_all(payload.as_bytes())
        .map_err(|e| e.to_string())?;
    let mut answers = vec![0u8; 5 * n];
    stream
        .read_exact(&mut answers)
        .map_err(|e| format!("the pipeline's answers: {e}"))?;
    Ok(started.elapsed())
}

fn sleep_until(at: Instant) {
    if let Some(wait) = at.checked_duration_since(Instant::now()) {
        std::thread::sleep(wait);
    }
}

pub fn markdown(servers: &[ServerBursts]) -> String {
    let mut md = String::from(
        "\nA key read in three pipelines beside a saturating `redis-benchmark GET -P 16 -c 8` over 100,000 keys, at the default settings: each 8 s reading sends three pipelines of `GET bursts3`, 2.6 s apart, that make 1% of what the node ran in the reading between them, each in one write on a connection of its own; then `HK.HOTKEYS COUNT 20 WITHBOUNDS` (and `WITHNOISE`). Listed: in the plain list; marked noise: only in `WITHNOISE`'s; else in no sketch (no pipeline met a counted slot). Pipeline: the longest of the three, as the client saw it.\n\n| server | readings | listed | marked noise | in no sketch | truth within bounds (of listed) | counted / sent (listed) | key's share | pipeline | share of time counted |\n|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for s in servers {
        if let Some(e) = &s.error {
            let _ = writeln!(md, "| {} | not measured: {e} | | | | | | | | |", s.server);
            continue;
        }
        let r = &s.readings;
        let range = |f: &dyn Fn(&BurstReading) -> f64, only_listed: bool| {
            let xs: Vec<f64> = r
                .iter()
                .filter(|x| !only_listed || x.listed)
                .map(f)
                .collect();
            let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            (lo, hi)
        };
        let (rlo, rhi) = range(&|x| x.ratio, true);
        let (slo, shi) = range(&|x| 100.0 * x.share, false);
        let (plo, phi) = range(&|x| x.longest_ms, false);
        let (clo, chi) = range(&|x| x.share_counted, false);
        let noise = r.iter().filter(|x| !x.listed && x.marked_noise).count();
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} of {} | {rlo:.2}-{rhi:.2} | {slo:.2}-{shi:.2}% | {plo:.0}-{phi:.0} ms | {clo:.3}-{chi:.3} |",
            s.server,
            r.len(),
            s.listed(),
            noise,
            r.len() - s.listed() - noise,
            s.covered(),
            s.listed(),
        );
    }
    md
}
