//! Who drives a hot key, measured against what each client sent: four
//! hosts (127.0.0.2-5) read four hot keys, each host at 60, 25, 10 and 5%
//! of one key's reads (another order for each key), 2,000 reads a second a
//! key, at the defaults (sampled, within the CPU budget) with a day's
//! half-life (counts are totals), quiet and beside a saturating
//! `redis-benchmark`; per server, reading after reading (each after
//! `HK.HOTKEYS RESET`): each host's share
//! as `HK.HOTKEYS CLIENTS key WITHBOUNDS` gives it (its count over the
//! row's) against the share it sent, how often the count's 95% bounds held
//! what it sent, and the memory of a row's senders.

use crate::redis_phase::{query, Server};
use crate::tracker_settings::info_f64;
use crate::tracking_cost::{server_name, servers, start_counting};
use crate::tracking_truth::saturate;
use redis::Value;
use std::path::Path;
use std::time::Duration;
use test_harness::{steady_reads_from_hosts, CountBounds};

/// Shares of a key's reads, in hundredths.
const SHARES: [usize; 4] = [60, 25, 10, 5];
const KEYS: usize = 4;

/// One server under one load.
#[derive(Default)]
pub struct ClientShares {
    pub server: String,
    pub saturated: bool,
    pub readings: usize,
    /// Host rows read, and those whose bounds held what the host sent.
    pub rows: usize,
    pub within: usize,
    /// Each share's error (estimated − sent), in points of share.
    pub mean_error: f64,
    pub worst_error: f64,
    /// The mean estimate of the 60% and the 5% shares.
    pub largest: f64,
    pub smallest: f64,
    /// Rows with senders counted, and their memory with the fixed parts
    /// (the index of members, the node's senders).
    pub senders_rows: f64,
    pub senders_bytes: f64,
    /// Host rows of a key with no senders at all when read (not a member
    /// of the tracker's sketch then).
    pub unnamed: usize,
    /// Why it was not measured (Redis 7.0: no client ids).
    pub skipped: Option<String>,
}

fn share(h: usize, k: usize) -> usize {
    SHARES.get((h + k) % SHARES.len()).copied().unwrap_or(0)
}

/// Each host sends its share of 20 reads of each key every 10 ms for
/// `run`, under its own key names (`tag`: one set of keys a reading).
fn read_from_four_hosts(port: u16, tag: usize, run: Duration) -> Vec<Vec<usize>> {
    let keys: Vec<String> = (0..KEYS).map(|k| format!("hot:{tag}:{k}")).collect();
    steady_reads_from_hosts(port, SHARES.len(), &keys, |h, k| share(h, k) / 5, run)
}

/// Each host's count and count bounds for `key`.
fn hosts_of(con: &mut redis::Connection, key: &str) -> Result<Vec<(String, CountBounds)>, String> {
    let flat: Vec<Value> = query(con, &["HK.HOTKEYS", "CLIENTS", key, "WITHBOUNDS"])?;
    let text = |v: &Value| -> f64 { redis::from_redis_value::<f64>(v).unwrap_or(0.0) };
    Ok((flat.chunks(5))
        .filter_map(|row| {
            let [host, rate, count, low, high] = row else {
                return None;
            };
            let host: String = redis::from_redis_value(host).ok()?;
            let b = CountBounds::from_rates(text(rate), text(count), text(low), text(high));
            Some((host, b))
        })
        .collect())
}

fn measure_one(
    binary: &str,
    module: &Path,
    saturated: bool,
    readings: usize,
) -> Result<ClientShares, String> {
    let server: Server = start_counting(binary, module)?;
    let mut figures = ClientShares {
        server: server_name(&server)?,
        saturated,
        readings,
        ..Default::default()
    };
    let mut con = server.connection().map_err(|e| e.to_string())?;
    if let Err(e) = query::<Value>(&mut con, &["HK.HOTCLIENTS"]) {
        figures.skipped = Some(e);
        return Ok(figures);
    }
    let mut flood = saturated.then(|| saturate(server.port)).transpose()?;
    let (mut errors, mut largest, mut smallest) = (Vec::new(), Vec::new(), Vec::new());
    for tag in 0..readings {
        // Each reading from nothing: with a day's half-life, the rows of
        // the readings before (and, saturated, the flood's sampled keys)
        // would still hold the top-k.
        query::<Value>(&mut con, &["HK.HOTKEYS", "RESET"])?;
        let sent = read_from_four_hosts(server.port, tag, Duration::from_secs(6));
        for k in 0..KEYS {
            let hosts = hosts_of(&mut con, &format!("hot:{tag}:{k}"))?;
            let all: f64 = hosts.iter().map(|(_, b)| b.count).sum();
            let of_key = |s: &Vec<usize>| s.get(k).copied().unwrap_or(0);
            let sent_all: usize = sent.iter().map(of_key).sum();
            for (h, host_sent) in sent.iter().enumerate() {
                let host = format!("127.0.0.{}", h + 2);
                let row = hosts.iter().find(|(name, _)| *name == host);
                let (count, low, high) =
                    row.map_or((0.0, 0.0, 0.0), |(_, b)| (b.count, b.low, b.high));
                let truth = of_key(host_sent) as f64;
                figures.rows += 1;
                // A day's fading over the reading, and rounding: 1e-4 and half
                // an access either side.
                let slack = 0.5 + 1e-4 * truth;
                figures.within += usize::from(low - slack <= truth && truth <= high + slack);
                figures.unnamed += usize::from(hosts.is_empty());
                let read = count / all.max(1.0);
                errors.push(read - truth / sent_all.max(1) as f64);
                match share(h, k) {
                    60 => largest.push(read),
                    5 => smallest.push(read),
                    _ => {}
                }
            }
        }
    }
    if let Some(flood) = flood.as_mut() {
        let _ = flood.kill();
        let _ = flood.wait();
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    figures.mean_error = mean(&errors);
    figures.worst_error = errors.iter().fold(0.0f64, |a, e| a.max(e.abs()));
    (figures.largest, figures.smallest) = (mean(&largest), mean(&smallest));
    figures.senders_rows = info_f64(&mut con, "tracker_client_rows").unwrap_or(0.0);
    figures.senders_bytes = info_f64(&mut con, "tracker_client_rows_memory_bytes").unwrap_or(0.0);
    Ok(figures)
}

pub fn measure(module: &Path, quick: bool) -> Vec<ClientShares> {
    let readings = if quick { 1 } else { 4 };
    let mut all = Vec::new();
    for binary in servers() {
        for saturated in [false, true] {
            match measure_one(&binary, module, saturated, readings) {
                Ok(f) => {
                    eprintln!("  {}", row(&f));
                    all.push(f);
                }
                Err(e) => eprintln!("  {binary}: {e}"),
            }
        }
    }
    all
}

pub fn markdown(figures: &[ClientShares]) -> String {
    let mut md = String::from("\n### Who drives a hot key (`HK.HOTKEYS CLIENTS`)\n\nFour hosts (127.0.0.2-5) read four hot keys at 60/25/10/5% of each key's reads (2,000 reads a second a key), at the defaults with a day's half-life, quiet and beside a saturating `redis-benchmark -P 16 -c 8` over 100,000 keys; 6 s a reading, four keys a reading. A host row is within when its count's 95% bounds hold what it sent; a share is its count over the row's hosts' counts, against what it sent of the key.\n\n| server | load | readings | rows within their bounds | rows of a key not a member when read | the 60% share read | the 5% share read | mean share error | worst share error | memory of the senders (rows) |\n|---|---|---|---|---|---|---|---|---|---|\n");
    md.extend(figures.iter().map(|f| row(f) + "\n"));
    md
}

/// One server's figures under one load, as a row of the report's table
/// (and a line on the console as it is measured).
fn row(f: &ClientShares) -> String {
    let load = if f.saturated { "saturated" } else { "quiet" };
    if let Some(why) = &f.skipped {
        return format!(
            "| {} | {load} | - | not measured: {why} | | | | | | |",
            f.server
        );
    }
    format!(
        "| {} | {load} | {} | {}/{} ({:.0}%) | {} | {:.1}% | {:.1}% | {:+.2} points | {:.2} points | {:.0} B ({:.0} rows) |",
        f.server,
        f.readings,
        f.within,
        f.rows,
        100.0 * f.within as f64 / f.rows.max(1) as f64,
        f.unnamed,
        100.0 * f.largest,
        100.0 * f.smallest,
        100.0 * f.mean_error,
        100.0 * f.worst_error,
        f.senders_bytes,
        f.senders_rows
    )
}
