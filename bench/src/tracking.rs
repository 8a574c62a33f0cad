//! The server's own hot keys (`heavykeeper.track`): what tracking costs
//! every command, and how right its list and its rates are, through a real
//! server.

use crate::redis_phase::{benchmark_over, median, Server};
use crate::workloads::Workload;
use std::collections::HashSet;
use std::fmt::Write;
use std::time::{Duration, Instant};

pub struct CostRow {
    pub command: &'static str,
    pub pipeline: usize,
    pub off: f64,
    pub on: f64,
    pub sampled: f64,
    /// CPU of the server's main thread per command, in ns: off, on, sampled.
    pub main_thread_ns: [f64; 3],
}

impl CostRow {
    fn loss(&self, rps: f64) -> f64 {
        1.0 - rps / self.off
    }
}

pub struct SteadyRate {
    pub sample: u64,
    pub key: String,
    pub truth: f64,
    pub reported: f64,
}

#[derive(Default)]
pub struct TrackingFigures {
    pub cost: Vec<CostRow>,
    pub precision: Option<f64>,
    pub steady: Vec<SteadyRate>,
    pub error: Option<String>,
}

const COMMANDS: [(&str, &[&str]); 3] = [
    ("GET", &["GET", "key:__rand_int__"]),
    ("SET", &["SET", "key:__rand_int__", "v"]),
    (
        "MGET (10 keys)",
        &[
            "MGET",
            "key:__rand_int__",
            "key:__rand_int__",
            "key:__rand_int__",
            "key:__rand_int__",
            "key:__rand_int__",
            "key:__rand_int__",
            "key:__rand_int__",
            "key:__rand_int__",
            "key:__rand_int__",
            "key:__rand_int__",
        ],
    ),
];

pub fn measure(module: &std::path::Path, zipf: &Workload, quick: bool) -> TrackingFigures {
    let run = || -> Result<TrackingFigures, String> {
        let server = Server::start(module)?;
        let cost = cost(&server, quick)?;
        let precision = precision(&server, zipf, quick)?;
        let mut steady = steady_rates(&server, 1, quick)?;
        steady.extend(steady_rates(&server, 16, quick)?);
        Ok(TrackingFigures {
            cost,
            precision: Some(precision),
            steady,
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

fn config(con: &mut redis::Connection, name: &str, value: &str) -> Result<(), String> {
    redis::cmd("CONFIG")
        .arg("SET")
        .arg(format!("heavykeeper.{name}"))
        .arg(value)
        .query::<()>(con)
        .map_err(|e| e.to_string())
}

/// Tracking off, on, and sampling 1 in 16, in interleaved rounds; medians.
fn cost(server: &Server, quick: bool) -> Result<Vec<CostRow>, String> {
    let mut con = server.connection().map_err(|e| e.to_string())?;
    let (requests, rounds) = if quick { (200_000, 3) } else { (1_000_000, 5) };
    let mut rows = Vec::new();
    for pipeline in [16usize, 1] {
        for (name, command) in COMMANDS {
            let mut runs = [Vec::new(), Vec::new(), Vec::new()];
            let mut cpu = [Vec::new(), Vec::new(), Vec::new()];
            for _ in 0..rounds {
                for (mode, (track, sample)) in [("no", "1"), ("yes", "1"), ("yes", "16")]
                    .into_iter()
                    .enumerate()
                {
                    config(&mut con, "track-sample", sample)?;
                    config(&mut con, "track", track)?;
                    let n = if pipeline == 1 {
                        requests / 4
                    } else {
                        requests
                    };
                    let before = server.main_thread_cpu_ns();
                    runs[mode].push(benchmark_over(server.port, n, pipeline, 100_000, command)?);
                    if let (Some(a), Some(b)) = (before, server.main_thread_cpu_ns()) {
                        cpu[mode].push(b.saturating_sub(a) as f64 / n as f64);
                    }
                }
            }
            let [off, on, sampled] = runs.map(|mut r| median(&mut r));
            let main_thread_ns = cpu.map(|mut c| if c.is_empty() { 0.0 } else { median(&mut c) });
            rows.push(CostRow {
                command: name,
                pipeline,
                off,
                on,
                sampled,
                main_thread_ns,
            });
        }
    }
    config(&mut con, "track", "no")?;
    Ok(rows)
}

/// A Zipf(1.0) stream of `GET`s through the server: how much of the true
/// top-100 `HK.HOTKEYS` lists.
fn precision(server: &Server, zipf: &Workload, quick: bool) -> Result<f64, String> {
    let mut con = server.connection().map_err(|e| e.to_string())?;
    config(&mut con, "track-sample", "1")?;
    config(&mut con, "track-halflife", "86400")?;
    config(&mut con, "track-k", "100")?;
    config(&mut con, "track", "yes")?;
    let arrivals = if quick { 300_000 } else { 2_000_000 };
    for chunk in zipf.stream[..arrivals.min(zipf.stream.len())].chunks(1000) {
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
    for &id in &zipf.stream[..arrivals.min(zipf.stream.len())] {
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
/// rate of what was sent. Sampled 1 in 16, the slow key is seen about
/// `2000 * h / ln 2 / 16` times per window: 5% standard error at h = 2 s,
/// 3.7% at 4 s (reference section 10: few samples, noisy rates).
fn steady_rates(server: &Server, sample: u64, quick: bool) -> Result<Vec<SteadyRate>, String> {
    let mut con = server.connection().map_err(|e| e.to_string())?;
    let half_life = if quick { 2.0 } else { 4.0 };
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
            sample,
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

impl TrackingFigures {
    /// Worst relative error of the steady rates at sampling `sample`.
    pub fn worst_rate_error(&self, sample: u64) -> Option<f64> {
        self.steady
            .iter()
            .filter(|s| s.sample == sample)
            .map(|s| (s.reported - s.truth).abs() / s.truth)
            .reduce(f64::max)
    }

    /// Worst throughput loss with tracking on (`sampled`: 1 in 16).
    pub fn worst_loss(&self, sampled: bool) -> Option<f64> {
        self.cost
            .iter()
            .map(|c| c.loss(if sampled { c.sampled } else { c.on }))
            .reduce(f64::max)
    }

    pub fn markdown(&self) -> String {
        let mut md = String::from("\n## Tracking the server's own hot keys\n\n");
        if let Some(e) = &self.error {
            let _ = writeln!(md, "Not measured: {e}\n");
            return md;
        }
        md.push_str("`redis-benchmark -c 50`, random keys over 100k, tracking off / on / sampling 1 in 16 switched with `CONFIG SET` in interleaved rounds, medians. The benchmark client, the server and the tracker's worker thread share the machine's two cores, so throughput also measures contention; the main thread's own CPU time per command (`/proc/<pid>/task/<pid>/schedstat`) is the cost a server with a spare core pays.\n\n| command | pipeline | off req/s | on req/s | loss | 1-in-16 req/s | loss | main thread ns/cmd off | on | 1-in-16 |\n|---|---|---|---|---|---|---|---|---|---|\n");
        for c in &self.cost {
            let [cpu_off, cpu_on, cpu_sampled] = c.main_thread_ns;
            let _ = writeln!(
                md,
                "| {} | {} | {:.0} | {:.0} | {:.2}% | {:.0} | {:.2}% | {:.0} | {:.0} (+{:.0}) | {:.0} (+{:.0}) |",
                c.command,
                c.pipeline,
                c.off,
                c.on,
                100.0 * c.loss(c.on),
                c.sampled,
                100.0 * c.loss(c.sampled),
                cpu_off,
                cpu_on,
                cpu_on - cpu_off,
                cpu_sampled,
                cpu_sampled - cpu_off
            );
        }
        if let Some(p) = self.precision {
            let _ = writeln!(md, "\nA Zipf(1.0) stream of `GET`s through the server: `HK.HOTKEYS READS COUNT 100` lists {:.3} of the true top-100.\n", p);
        }
        md.push_str("Steady keys among background traffic, half-life 4 s (2 s quick), after 6 half-lives; truth is the exact decayed rate of what was sent:\n\n| sampling | key | truth req/s | reported | error |\n|---|---|---|---|---|\n");
        for s in &self.steady {
            let _ = writeln!(
                md,
                "| 1 in {} | {} | {:.1} | {:.1} | {:.2}% |",
                s.sample,
                s.key,
                s.truth,
                s.reported,
                100.0 * (s.reported - s.truth).abs() / s.truth
            );
        }
        md
    }
}
