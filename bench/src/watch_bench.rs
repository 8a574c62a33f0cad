//! Watched sketches through a real server: how soon a subscriber hears of
//! a crossing, what watching costs an arrival, and the event cap.

use crate::redis_phase::{command_stats, or_failed, query, Server};
use crate::workloads::Workload;
use std::fmt::Write;
use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

#[derive(Default)]
pub struct WatchFigures {
    /// Arrival to receipt, ms: p50, p99.
    pub arrival_delay_ms: Option<(f64, f64)>,
    /// Predicted fade crossing to receipt, ms: p50, p99, and the interval.
    pub fade_delay_ms: Option<(f64, f64, u64)>,
    /// Server-side ns per item: unwatched, watched ABOVE a line no item
    /// reaches, watched MEMBERS (every change at the top-k boundary an event).
    pub add_ns: Option<(f64, f64, f64)>,
    /// With a cap of `cap` events a second: events received per second of
    /// flooding, and the most in one of the limiter's one-second windows.
    pub capped: Option<(f64, u64, u64)>,
    /// Main-thread CPU of an idle server, ms per second: no watch, then
    /// `n` watched sketches none of which is due: (n, without, with).
    pub idle_watches: Option<(usize, f64, f64)>,
    pub error: Option<String>,
}

fn unix_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

fn percentile(values: &mut [f64], p: f64) -> f64 {
    values.sort_by(f64::total_cmp);
    let i = ((values.len() as f64 - 1.0) * p).round() as usize;
    values.get(i).copied().unwrap_or(f64::NAN)
}

/// A subscriber thread: (receipt time in Unix ms, JSON event) per message.
fn subscribe(server: &Server, channel: &str) -> Result<mpsc::Receiver<(f64, String)>, String> {
    let mut con = server.connection().map_err(|e| e.to_string())?;
    query::<redis::Value>(&mut con, &["SUBSCRIBE", channel])?;
    let (send, receive) = mpsc::channel();
    std::thread::spawn(move || {
        while let Ok(redis::Value::Array(parts)) = con.recv_response() {
            if let Some(redis::Value::BulkString(payload)) = parts.get(2) {
                let text = String::from_utf8_lossy(payload).to_string();
                if send.send((unix_ms(), text)).is_err() {
                    break;
                }
            }
        }
    });
    Ok(receive)
}

/// A command as `redis-cli` takes it: its words apart by single spaces.
fn cmd(con: &mut redis::Connection, line: &str) -> Result<(), String> {
    query(con, &line.split(' ').collect::<Vec<_>>())
}

pub fn measure(module: &std::path::Path, zipf: &Workload, quick: bool) -> WatchFigures {
    let run = || -> Result<WatchFigures, String> {
        let server = Server::start(module)?;
        Ok(WatchFigures {
            arrival_delay_ms: Some(arrival_delay(&server, if quick { 500 } else { 2000 })?),
            fade_delay_ms: Some(fade_delay(&server)?),
            add_ns: Some(add_cost(module, zipf, if quick { 300 } else { 1000 })?),
            capped: Some(capped(&server)?),
            idle_watches: Some(idle_watches(module, if quick { 10_000 } else { 100_000 })?),
            error: None,
        })
    };
    or_failed("watch", run(), |f| &mut f.error)
}

/// Each `HK.ADD` of a new item into a watched sketch causes an `enter`.
fn arrival_delay(server: &Server, n: usize) -> Result<(f64, f64), String> {
    let mut con = server.connection().map_err(|e| e.to_string())?;
    // Above the default cap of 1000 events per second: lift it here.
    cmd(&mut con, "CONFIG SET heavykeeper.watch-max-events 1000000")?;
    cmd(&mut con, "HK.RESERVE w:arrive 100000 WIDTH 300000")?;
    cmd(&mut con, "HK.WATCH w:arrive arrive MEMBERS")?;
    let events = subscribe(server, "arrive")?;
    let mut delays = Vec::with_capacity(n);
    for i in 0..n {
        let sent = unix_ms();
        cmd(&mut con, &format!("HK.ADD w:arrive item:{i}"))?;
        let (received, _) = events
            .recv_timeout(Duration::from_secs(5))
            .map_err(|_| "an enter event did not arrive")?;
        delays.push(received - sent);
    }
    cmd(&mut con, "CONFIG SET heavykeeper.watch-max-events 1000")?;
    Ok((percentile(&mut delays, 0.5), percentile(&mut delays, 0.99)))
}

/// Items that cool by fading alone, at times computed in advance.
fn fade_delay(server: &Server) -> Result<(f64, f64, u64), String> {
    let mut con = server.connection().map_err(|e| e.to_string())?;
    let interval = 100u64;
    let half_life = 0.5;
    cmd(&mut con, "HK.RESERVE w:fade 1000 WIDTH 8192 HALFLIFE 0.5")?;
    // A line of 10 req/s is a count of 10/λ = 7.2; cool below 8/s (5.8).
    cmd(&mut con, "HK.WATCH w:fade fade ABOVE 10")?;
    let events = subscribe(server, "fade")?;
    let lambda = std::f64::consts::LN_2 / half_life;
    let cool_count = 8.0 / lambda;
    let mut predicted = std::collections::HashMap::new();
    for i in 0..60u32 {
        let count = 8 + (i % 30) * 3;
        let at = unix_ms().floor();
        cmd(&mut con, &format!("HK.INCRBYAT w:fade {at} f{i} {count}"))?;
        let crossing = at + half_life * 1000.0 * (f64::from(count) / cool_count).log2();
        predicted.insert(format!("f{i}"), crossing);
        std::thread::sleep(Duration::from_millis(7));
    }
    let mut delays = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(6);
    while delays.len() < predicted.len() && Instant::now() < deadline {
        let Ok((received, text)) = events.recv_timeout(Duration::from_millis(500)) else {
            continue;
        };
        let event: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
        if event.get("event").is_some_and(|e| *e == "cool") {
            let item = event.get("item").and_then(serde_json::Value::as_str);
            if let Some(crossing) = item.and_then(|i| predicted.get(i)) {
                delays.push(received - crossing);
            }
        }
    }
    if delays.is_empty() {
        return Err("no cool event arrived".into());
    }
    Ok((
        percentile(&mut delays, 0.5),
        percentile(&mut delays, 0.99),
        interval,
    ))
}

/// Server-side ns per item of 1000-item `HK.ADD`s: an unwatched sketch, one
/// watched `ABOVE` a line no item reaches, one watched `MEMBERS`, each on a
/// server of its own (`INFO commandstats` counts per command, not per key)
/// fed the very same batches, batch by batch in turn.
fn add_cost(module: &Path, zipf: &Workload, batches: usize) -> Result<(f64, f64, f64), String> {
    let mut servers = Vec::new();
    for watch in ["", "ABOVE 1000000", "MEMBERS"] {
        let server = Server::start(module)?;
        let mut con = server.connection().map_err(|e| e.to_string())?;
        cmd(&mut con, "HK.RESERVE w 1000 SEED 7")?;
        if !watch.is_empty() {
            cmd(&mut con, &format!("HK.WATCH w cost {watch}"))?;
        }
        cmd(&mut con, "CONFIG RESETSTAT")?;
        servers.push((server, con));
    }
    for chunk in zipf.stream.chunks(1000).take(batches) {
        let items: Vec<&[u8]> = chunk.iter().filter_map(|&id| zipf.item(id)).collect();
        for (_, con) in servers.iter_mut() {
            let add = redis::cmd("HK.ADD").arg("w").arg(&items).query(con);
            add.map(|_: redis::Value| ()).map_err(|e| e.to_string())?;
        }
    }
    let mut ns = [0.0; 3];
    for (ns, (_, con)) in ns.iter_mut().zip(servers.iter_mut()) {
        let (calls, usec) = command_stats(con, "hk.add")?;
        *ns = usec * 1000.0 / (calls * 1000.0);
    }
    Ok((ns[0], ns[1], ns[2]))
}

/// New items as fast as one client sends them, each an `enter`, with the
/// default cap of 1000 events per second per sketch.
fn capped(server: &Server) -> Result<(f64, u64, u64), String> {
    let mut con = server.connection().map_err(|e| e.to_string())?;
    // k = 1,000,000 so that every new item enters; with its MEMBERS watch
    // (up to two sets of a million hashes) it is past the default cap.
    cmd(&mut con, "CONFIG SET heavykeeper.max-sketch-bytes 1gb")?;
    cmd(&mut con, "HK.RESERVE w:flood 1000000 WIDTH 1000")?;
    cmd(&mut con, "HK.WATCH w:flood flood MEMBERS")?;
    let events = subscribe(server, "flood")?;
    let seconds = 2.0;
    let started = Instant::now();
    let mut i = 0u64;
    while started.elapsed().as_secs_f64() < seconds {
        let items: Vec<String> = (i..i + 100).map(|i| format!("flood:{}", i + 1)).collect();
        i += 100;
        let add = redis::cmd("HK.ADD")
            .arg("w:flood")
            .arg(&items)
            .query(&mut con);
        add.map(|_: redis::Value| ()).map_err(|e| e.to_string())?;
    }
    let elapsed = started.elapsed().as_secs_f64();
    std::thread::sleep(Duration::from_millis(200));
    let time = |e: &str| -> Option<i64> {
        let event: serde_json::Value = serde_json::from_str(e).ok()?;
        event.get("time")?.as_i64()
    };
    let times: Vec<i64> = events.try_iter().filter_map(|(_, e)| time(&e)).collect();
    Ok((times.len() as f64 / elapsed, busiest_window(&times), 1000))
}

/// What watched sketches that are not due cost the main thread: its CPU
/// time per second on an idle server, before and after `n` fading sketches
/// are watched, each with a member that fades out only in hours.
fn idle_watches(module: &Path, n: usize) -> Result<(usize, f64, f64), String> {
    let server = Server::start(module)?;
    let mut con = server.connection().map_err(|e| e.to_string())?;
    let idle_cpu = |server: &Server| -> Result<f64, String> {
        let cpu = || {
            server
                .main_thread_cpu_ns()
                .ok_or("no main-thread CPU figure")
        };
        let before = cpu()?;
        std::thread::sleep(Duration::from_secs(3));
        Ok((cpu()? - before) as f64 / 1e6 / 3.0)
    };
    let without = idle_cpu(&server)?;
    let now = unix_ms().floor().to_string();
    let reserve = ["1", "WIDTH", "8", "DEPTH", "1", "HALFLIFE", "3600"];
    let (watch, count) = (["idle", "MEMBERS"], [now.as_str(), "x", "10"]);
    for chunk in (0..n).collect::<Vec<_>>().chunks(1000) {
        let mut pipe = redis::pipe();
        for i in chunk {
            let key = format!("idle:{i}");
            pipe.cmd("HK.RESERVE").arg(&key).arg(&reserve).ignore();
            pipe.cmd("HK.WATCH").arg(&key).arg(&watch).ignore();
            pipe.cmd("HK.INCRBYAT").arg(&key).arg(&count).ignore();
        }
        pipe.query::<()>(&mut con).map_err(|e| e.to_string())?;
    }
    // Let the timer derive every watch once (its first visit) before measuring.
    std::thread::sleep(Duration::from_secs(2));
    let watched: String = query(&mut con, &["INFO", "heavykeeper"])?;
    if !watched.contains(&format!("heavykeeper_watched_keys:{n}")) {
        return Err(format!("expected {n} watched keys"));
    }
    Ok((n, without, idle_cpu(&server)?))
}

/// The most events in one of the limiter's windows: a window opens at the
/// first event at least a second after the previous window opened. (A flood
/// of 2.1 s spans three windows, so events per second of flooding can pass
/// the cap while no window does.)
fn busiest_window(times: &[i64]) -> u64 {
    let (mut start, mut in_window, mut busiest) = (i64::MIN, 0u64, 0u64);
    for &t in times {
        if t.saturating_sub(start) >= 1000 || t < start {
            start = t;
            in_window = 0;
        }
        in_window += 1;
        busiest = busiest.max(in_window);
    }
    busiest
}

impl WatchFigures {
    pub fn markdown(&self) -> String {
        let mut md = String::from("\n## Watched sketches\n\n");
        if let Some(e) = &self.error {
            let _ = writeln!(md, "Not measured: {e}\n");
            return md;
        }
        md.push_str("| measure | figure |\n|---|---|\n");
        if let Some((p50, p99)) = self.arrival_delay_ms {
            let _ = writeln!(md, "| `HK.ADD` sent to `enter` received (loopback) | p50 {p50:.2} ms, p99 {p99:.2} ms |");
        }
        if let Some((p50, p99, interval)) = self.fade_delay_ms {
            let _ = writeln!(md, "| computed fade crossing to `cool` received (timer every {interval} ms) | p50 {p50:.1} ms, p99 {p99:.1} ms |");
        }
        if let Some((plain, above, members)) = self.add_ns {
            let _ = writeln!(md, "| server-side `HK.ADD` per item, 1000-item batches of zipf-1.0, k = 1000: unwatched / watched `ABOVE` / watched `MEMBERS` | {plain:.1} / {above:.1} ({:+.1}%) / {members:.1} ns ({:+.1}%: every change at the boundary of the top-1000 is an event) |", 100.0 * (above / plain - 1.0), 100.0 * (members / plain - 1.0));
        }
        if let Some((rate, busiest, cap)) = self.capped {
            let _ = writeln!(
                md,
                "| events received per second of flooding, one sketch, cap {cap}/s; most in one window of the limiter | {rate:.0}; {busiest} |"
            );
        }
        if let Some((n, without, with)) = self.idle_watches {
            let _ = writeln!(
                md,
                "| main-thread CPU of an idle server, no watch / {n} watched sketches none of which is due | {without:.2} / {with:.2} ms per second |"
            );
        }
        md
    }
}
