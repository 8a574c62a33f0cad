//! The tracker's counts against what was sent, at the default settings
//! (`track-sample 0`: within the CPU budget): steady, bursty and mixed
//! traffic (the issue's mix: a bursty key, a steady key, background reads
//! over 10,000 keys) at light (~10k commands/s) and medium (~20k) load, and
//! the same beside a saturating `redis-benchmark` on other keys, several
//! runs each (the estimator is unbiased; its spread is what the runs show).

use crate::redis_phase::{median, Server};
use crate::tracker_settings::info_f64;
use crate::tracking_cost::{server_name, servers};
use std::fmt::Write;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use traffic::Shape;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Load {
    /// ~10,000 commands a second.
    Light,
    /// ~20,000 commands a second.
    Medium,
    /// The medium load beside a saturating `redis-benchmark`.
    Saturating,
}

pub const LOADS: [Load; 3] = [Load::Light, Load::Medium, Load::Saturating];

impl Load {
    pub fn label(self) -> &'static str {
        match self {
            Load::Light => "~10k commands/s",
            Load::Medium => "~20k commands/s",
            Load::Saturating => "~20k beside a saturating redis-benchmark",
        }
    }

    fn scale(self) -> usize {
        match self {
            Load::Light => 1,
            Load::Medium | Load::Saturating => 2,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Traffic {
    /// The issue's: `x` bursty, `steady` steady, steady background.
    Mixed,
    /// Everything steady.
    Steady,
    /// Everything in bursts.
    Bursty,
}

pub const TRAFFICS: [Traffic; 3] = [Traffic::Mixed, Traffic::Steady, Traffic::Bursty];

impl Traffic {
    pub fn label(self) -> &'static str {
        match self {
            Traffic::Mixed => "mixed",
            Traffic::Steady => "steady",
            Traffic::Bursty => "bursty",
        }
    }

    /// The keys whose counts are held against the truth: the hot one
    /// (~47% of the traffic) and the warm one (~5%).
    pub fn keys(self) -> [&'static str; 2] {
        match self {
            Traffic::Mixed => ["x", "steady"],
            Traffic::Steady => ["s:hot", "s:warm"],
            Traffic::Bursty => ["b:hot", "b:warm"],
        }
    }

    /// The traffic at ~10,000 commands a second times `scale`.
    pub fn shapes(self, scale: usize) -> Vec<Shape> {
        let ms = Duration::from_millis;
        let [hot, warm] = self.keys();
        let (hot, warm) = (hot.to_string(), warm.to_string());
        match self {
            // `x`, a pipeline of 300-600 `GET`s every 100 ms, `steady` 5
            // every 10 ms, background 45 every 10 ms over 10,000 keys (the
            // issue's own: 500-1,000, 10 and 90, at `scale` 2).
            Traffic::Mixed => vec![
                Shape::Bursty { key: hot, min: 300 * scale, max: 600 * scale, every: ms(100) },
                Shape::Steady { key: warm, per: 5 * scale, every: ms(10) },
                Shape::Background { prefix: "bg:".into(), keys: 10_000, per: 45 * scale, every: ms(10) },
            ],
            Traffic::Steady => vec![
                Shape::Steady { key: hot, per: 45 * scale, every: ms(10) },
                Shape::Steady { key: warm, per: 5 * scale, every: ms(10) },
                Shape::Background { prefix: "bg:".into(), keys: 10_000, per: 45 * scale, every: ms(10) },
            ],
            Traffic::Bursty => vec![
                Shape::Bursty { key: hot, min: 300 * scale, max: 600 * scale, every: ms(100) },
                Shape::Bursty { key: warm, min: 30 * scale, max: 60 * scale, every: ms(100) },
                Shape::Background { prefix: "bg:".into(), keys: 10_000, per: 450 * scale, every: ms(100) },
            ],
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Traffic::Mixed => "`x`: a pipeline of 300-600 `GET`s every 100 ms; `steady`: 5 `GET`s every 10 ms; background: 45 `GET`s every 10 ms over 10,000 keys (the issue's mix)",
            Traffic::Steady => "`s:hot`: 45 `GET`s every 10 ms; `s:warm`: 5 every 10 ms; background: 45 every 10 ms over 10,000 keys",
            Traffic::Bursty => "`b:hot`: a pipeline of 300-600 `GET`s every 100 ms; `b:warm`: 30-60 every 100 ms; background: 450 every 100 ms over 10,000 keys",
        }
    }
}

/// One run: each key's count over what was sent, and how the tracker ran.
#[derive(Clone, Debug)]
pub struct Run {
    pub traffic: Traffic,
    pub load: Load,
    /// The traffic's reads a second.
    pub rate: f64,
    /// Every command the server ran a second (the saturating load's too).
    pub server_rate: f64,
    /// The hot and the warm key: reads sent, and count over reads sent.
    pub sent: [u64; 2],
    pub ratios: [f64; 2],
    /// `tracker_share_counted` at the end.
    pub share: f64,
    /// The share of the run's time counted (`tracker_seconds_counted`).
    pub time_counted: f64,
    /// The tracker's CPU over the run, % of a core (`tracker_cpu_seconds`).
    pub cpu_percent: f64,
}

/// Every run on one server.
pub struct ServerTruth {
    pub server: String,
    pub runs: Vec<Run>,
    pub seconds: u64,
    pub error: Option<String>,
}

impl ServerTruth {
    pub fn of(&self, load: Load) -> impl Iterator<Item = &Run> {
        self.runs.iter().filter(move |r| r.load == load)
    }

    /// The largest distance from 1 of any key's count over what was sent,
    /// in any run at `load`.
    pub fn worst(&self, load: Load) -> Option<f64> {
        self.of(load)
            .flat_map(|r| r.ratios)
            .map(|x| (x - 1.0).abs())
            .reduce(f64::max)
    }

    /// Each traffic's and key's mean ratio over the runs at `load`.
    pub fn means(&self, load: Load) -> Vec<(Traffic, &'static str, f64)> {
        let mut means = Vec::new();
        for traffic in TRAFFICS {
            let runs: Vec<&Run> = self.of(load).filter(|r| r.traffic == traffic).collect();
            if runs.is_empty() {
                continue;
            }
            for (k, key) in traffic.keys().into_iter().enumerate() {
                let mean = runs.iter().map(|r| r.ratios[k]).sum::<f64>() / runs.len() as f64;
                means.push((traffic, key, mean));
            }
        }
        means
    }
}

/// A saturating `redis-benchmark` on keys of its own, until killed.
fn saturate(port: u16) -> Result<Child, String> {
    Command::new("redis-benchmark")
        .args([
            "-p",
            &port.to_string(),
            "-q",
            "-t",
            "get",
            "-n",
            "1000000000",
        ])
        .args(["-P", "16", "-c", "8", "-r", "100000"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("redis-benchmark: {e}"))
}

fn commands_processed(con: &mut redis::Connection) -> f64 {
    let info: String = redis::cmd("INFO").arg("stats").query(con).unwrap_or_default();
    info.lines()
        .find_map(|l| l.strip_prefix("total_commands_processed:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(f64::NAN)
}

/// Counts listed by `HK.HOTKEYS`, by key (RESP2: flat rows of four).
fn listed(con: &mut redis::Connection) -> Result<std::collections::HashMap<String, f64>, String> {
    let flat: Vec<redis::Value> = redis::cmd("HK.HOTKEYS")
        .arg("COUNT")
        .arg(1000)
        .query(con)
        .map_err(|e| e.to_string())?;
    let mut counts = std::collections::HashMap::new();
    for row in flat.chunks(4) {
        let key: String = redis::from_redis_value(&row[0]).map_err(|e| e.to_string())?;
        let count: i64 = redis::from_redis_value(&row[3]).map_err(|e| e.to_string())?;
        counts.insert(key, count as f64);
    }
    Ok(counts)
}

fn one_run(server: &Server, traffic: Traffic, load: Load, seconds: u64) -> Result<Run, String> {
    let mut con = server.connection().map_err(|e| e.to_string())?;
    let mut benchmark = if load == Load::Saturating {
        let child = saturate(server.port)?;
        std::thread::sleep(Duration::from_secs(2));
        Some(child)
    } else {
        None
    };
    redis::cmd("HK.HOTKEYS")
        .arg("RESET")
        .query::<()>(&mut con)
        .map_err(|e| e.to_string())?;
    let field = |con: &mut redis::Connection, f: &str| info_f64(con, f).unwrap_or(f64::NAN);
    let (counted, cpu, commands) = (
        field(&mut con, "tracker_seconds_counted"),
        field(&mut con, "tracker_cpu_seconds"),
        commands_processed(&mut con),
    );
    let started = Instant::now();
    let url = format!("redis://127.0.0.1:{}/", server.port);
    let sent = traffic::send(&url, &traffic.shapes(load.scale()), Duration::from_secs(seconds));
    let counts = listed(&mut con);
    let wall = started.elapsed().as_secs_f64();
    let (share, counted, cpu, commands) = (
        field(&mut con, "tracker_share_counted"),
        field(&mut con, "tracker_seconds_counted") - counted,
        field(&mut con, "tracker_cpu_seconds") - cpu,
        commands_processed(&mut con) - commands,
    );
    if let Some(child) = benchmark.as_mut() {
        let _ = child.kill();
        let _ = child.wait();
    }
    let (sent, counts) = (sent.map_err(|e| e.to_string())?, counts?);
    let keys = traffic.keys();
    let ratio = |key: &str| counts.get(key).copied().unwrap_or(0.0) / sent.of(key).max(1) as f64;
    Ok(Run {
        traffic,
        load,
        rate: sent.rate(),
        server_rate: commands / wall,
        sent: keys.map(|k| sent.of(k)),
        ratios: keys.map(ratio),
        share,
        time_counted: (counted / wall).min(1.0),
        cpu_percent: 100.0 * cpu / wall,
    })
}

/// Every load in turn on every server, `runs` runs of each traffic.
pub fn measure(module: &Path, quick: bool) -> Vec<ServerTruth> {
    let (runs, seconds) = if quick { (1, 10) } else { (3, 30) };
    let mut all = Vec::new();
    for binary in servers() {
        let server = Server::start_modules(
            &binary,
            &[(
                module.to_path_buf(),
                ["track", "yes", "track-halflife", "86400"]
                    .map(String::from)
                    .to_vec(),
            )],
        );
        let mut truth = ServerTruth {
            server: binary.clone(),
            runs: Vec::new(),
            seconds,
            error: None,
        };
        let result = server.and_then(|server| {
            truth.server = server_name(&server)?;
            for load in LOADS {
                for run in 0..runs {
                    for traffic in TRAFFICS {
                        let r = one_run(&server, traffic, load, seconds)?;
                        eprintln!(
                            "  {} {} {} run {}: {:.0}/s (server {:.0}/s), {} {:.3}, {} {:.3}, share {:.4}, time counted {:.4}, cpu {:.2}%",
                            truth.server,
                            load.label(),
                            traffic.label(),
                            run + 1,
                            r.rate,
                            r.server_rate,
                            traffic.keys()[0],
                            r.ratios[0],
                            traffic.keys()[1],
                            r.ratios[1],
                            r.share,
                            r.time_counted,
                            r.cpu_percent
                        );
                        truth.runs.push(r);
                    }
                }
            }
            Ok(())
        });
        if let Err(e) = result {
            eprintln!("  counts against truth on {}: {e}", truth.server);
            truth.error = Some(e);
        }
        all.push(truth);
    }
    all
}

pub fn markdown(servers: &[ServerTruth]) -> String {
    let mut md = String::new();
    let seconds = servers.first().map_or(0, |s| s.seconds);
    let _ = writeln!(md, "\n### Counts against truth, at the default\n\nThe default settings (`track yes`, `track-sample 0`, `track-cpu-millicores 10`; half-life 86,400 s so that counts are totals over the run), {seconds} s a run, each shape from its own connection, paced on the clock; `HK.HOTKEYS RESET` before each run. Traffic at ~10k commands/s (twice that at ~20k and beside the saturating load):\n");
    for t in TRAFFICS {
        let _ = writeln!(md, "- {}: {}", t.label(), t.describe());
    }
    md.push_str("\nEach key's count from `HK.HOTKEYS` over the reads sent (1.000 is exact); the share counted is `tracker_share_counted` at the end of the run, the time counted the share of the run's time counted (`tracker_seconds_counted`), the tracker's CPU its `tracker_cpu_seconds` over the run (main thread and worker, % of a core: CPU time on a shared machine):\n\n| server | load | traffic | run | traffic commands/s | server commands/s | hot key | warm key | share counted | time counted | tracker CPU % |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
    for s in servers {
        if let Some(e) = &s.error {
            let _ = writeln!(md, "| {} | not measured: {e} | | | | | | | | | |", s.server);
        }
        let mut seen: Vec<(Load, Traffic)> = Vec::new();
        for r in &s.runs {
            seen.push((r.load, r.traffic));
            let run = seen.iter().filter(|x| **x == (r.load, r.traffic)).count();
            let [hot, warm] = r.traffic.keys();
            let _ = writeln!(
                md,
                "| {} | {} | {} | {run} | {:.0} | {:.0} | `{hot}` {:.3} | `{warm}` {:.3} | {:.4} | {:.4} | {:.2} |",
                s.server,
                r.load.label(),
                r.traffic.label(),
                r.rate,
                r.server_rate,
                r.ratios[0],
                r.ratios[1],
                r.share,
                r.time_counted,
                r.cpu_percent
            );
        }
    }
    md.push_str("\nMeans over the runs (what unbiased is about), and the median share of time counted:\n\n| server | load | traffic | hot key, mean | warm key, mean | time counted (median) |\n|---|---|---|---|---|---|\n");
    for s in servers {
        for load in LOADS {
            for traffic in TRAFFICS {
                let runs: Vec<&Run> = s.of(load).filter(|r| r.traffic == traffic).collect();
                if runs.is_empty() {
                    continue;
                }
                let mean = |k: usize| runs.iter().map(|r| r.ratios[k]).sum::<f64>() / runs.len() as f64;
                let mut counted: Vec<f64> = runs.iter().map(|r| r.time_counted).collect();
                let [hot, warm] = traffic.keys();
                let _ = writeln!(
                    md,
                    "| {} | {} | {} | `{hot}` {:.3} | `{warm}` {:.3} | {:.4} |",
                    s.server,
                    load.label(),
                    traffic.label(),
                    mean(0),
                    mean(1),
                    median(&mut counted)
                );
            }
        }
    }
    md
}
