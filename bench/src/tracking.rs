//! The server's own hot keys (`heavykeeper.track`): what tracking costs
//! every command on each server people run (Redis 7.0, Valkey, and any
//! other named by `REDIS_SERVER`), what counting misses costs, how right
//! its list and its rates are at each `track-sample` (every command, the
//! budgeted default, a fixed 1 in 16), its counts against the truth at the
//! default ([`tracking_truth`], its own stage), and what the tracker holds
//! when clients send huge keys.

use crate::redis_phase::{or_failed, query, Server};
use crate::tracker_settings::{
    config, hotkeys, info_f64, info_number, sample_label, DEFAULT_SAMPLE,
};
use crate::tracking_bounds;
use crate::tracking_cost::{self, ServerCost};
use crate::tracking_truth::{self, ServerTruth};
use crate::workloads::Workload;
use std::fmt::Write;
use std::time::{Duration, Instant};

/// List and rates at one sampling rate.
pub struct Sampling {
    pub sample: u64,
    /// Share of the true top-100 of a Zipf(1.0) `GET` stream listed.
    pub precision: f64,
    /// The share of time counted while that stream was sent.
    pub precision_counted: Option<f64>,
    /// The same for the stream, 300,000 `GET`s over 20,000 keys
    /// (each of six seeds).
    pub precision_20k: Vec<f64>,
    /// Steady keys' reported rates against the truth.
    pub steady: Vec<SteadyRate>,
    /// The share of time counted while the steady keys were sent.
    pub steady_counted: Option<f64>,
}

impl Sampling {
    /// A row of the report's table (and a line on the console as it is
    /// measured).
    fn row(&self) -> String {
        let rate = |key: &str| {
            (self.steady.iter().find(|r| r.key == key)).map_or("-".to_string(), |r| {
                format!("{:.0} / {:.0}", r.truth, r.reported)
            })
        };
        let error = |r: &SteadyRate| (r.reported - r.truth).abs() / r.truth;
        let worst = self.steady.iter().map(error).reduce(f64::max);
        let share = |x: Option<f64>| x.map_or("-".into(), |x| format!("{x:.4}"));
        let twenty: Vec<String> = (self.precision_20k.iter())
            .map(|p| format!("{p:.3}"))
            .collect();
        format!(
            "| {} | {:.3} | {} | {} | {} | {} | {:.2}% | {} |",
            sample_label(self.sample),
            self.precision,
            share(self.precision_counted),
            twenty.join(", "),
            rate("steady:fast"),
            rate("steady:slow"),
            100.0 * worst.unwrap_or(f64::NAN),
            share(self.steady_counted),
        )
    }
}

pub struct SteadyRate {
    pub key: String,
    pub truth: f64,
    pub reported: f64,
}

/// After 300 `EXISTS` of distinct 1 MB keys (each twice).
pub struct HugeKeys {
    pub tracker_bytes: u64,
    pub used_memory_growth: i64,
}

#[derive(Default)]
pub struct TrackingFigures {
    pub costs: Vec<ServerCost>,
    /// Counts against the truth at the default, per server (`--only truth`).
    pub truth: Vec<ServerTruth>,
    /// Counts and error bars by traffic shape, per server (`--only bounds`).
    pub bounds: Vec<tracking_bounds::ServerBounds>,
    /// Who drives a hot key, per server and load (`--only clients`).
    pub clients: Vec<crate::tracking_clients::ClientShares>,
    /// A key read in three pipelines beside a saturating load, reading
    /// after reading (`--only bursts`).
    pub bursts: Vec<crate::tracking_bursts::ServerBursts>,
    pub samplings: Vec<Sampling>,
    pub huge_keys: Option<HugeKeys>,
    pub half_life_s: f64,
    pub error: Option<String>,
}

pub fn measure(module: &std::path::Path, zipf: &Workload, quick: bool) -> TrackingFigures {
    let run = || -> Result<TrackingFigures, String> {
        let costs = tracking_cost::measure(module, quick)?;
        let server = Server::start(module)?;
        let half_life_s = if quick { 1.0 } else { 10.0 };
        let mut samplings = Vec::new();
        for sample in [1, DEFAULT_SAMPLE] {
            let precision_20k = (0..6)
                .map(|seed| {
                    let stream = crate::workloads::zipf(1.0, 20_000, 300_000, 20 + seed)?;
                    precision(&server, &stream, sample, true).map(|p| p.0)
                })
                .collect::<Result<Vec<f64>, String>>()?;
            let (precision, precision_counted) = precision(&server, zipf, sample, quick)?;
            let (steady, steady_counted) = steady_rates(&server, sample, half_life_s)?;
            let s = Sampling {
                sample,
                precision,
                precision_counted,
                precision_20k,
                steady,
                steady_counted,
            };
            eprintln!("  {}", s.row());
            samplings.push(s);
        }
        Ok(TrackingFigures {
            costs,
            samplings,
            huge_keys: Some(huge_keys(&server)?),
            half_life_s,
            ..Default::default()
        })
    };
    or_failed("tracking", run(), |f| &mut f.error)
}

/// A Zipf(1.0) stream of `GET`s through the server, sampled 1 in `sample`:
/// how much of the true top-100 `HK.HOTKEYS` lists.
fn precision(
    server: &Server,
    zipf: &Workload,
    sample: u64,
    quick: bool,
) -> Result<(f64, Option<f64>), String> {
    let mut con = server.connection().map_err(|e| e.to_string())?;
    config(&mut con, "track", "no")?;
    config(&mut con, "track-sample", &sample.to_string())?;
    config(&mut con, "track-halflife", "86400")?;
    config(&mut con, "track-k", "100")?;
    config(&mut con, "track", "yes")?;
    let arrivals = if quick { 300_000 } else { 5_000_000 };
    // The first `arrivals`, or the whole stream when it is shorter.
    let sent = zipf.stream.get(..arrivals).unwrap_or(&zipf.stream);
    let counted = time_counted(&mut con);
    for chunk in sent.chunks(1000) {
        let mut pipe = redis::pipe();
        for item in chunk.iter().filter_map(|&id| zipf.item(id)) {
            pipe.cmd("GET").arg(item).ignore();
        }
        pipe.query::<()>(&mut con).map_err(|e| e.to_string())?;
    }
    let listed = hotkeys(&mut con, &["READS", "COUNT", "100"])?;
    let counted = counted(&mut con);
    let listed: Vec<(Vec<u8>, u64)> = (listed.into_iter())
        .map(|(k, _)| (k.into_bytes(), 0))
        .collect();
    // The truth of the prefix actually sent (every id is one of `names`).
    let truth = Workload::new(String::new(), zipf.names.clone(), sent.to_vec())?;
    let (precision, ..) = crate::accuracy::score(&truth, &truth.index(), 100, &listed);
    config(&mut con, "track", "no")?;
    Ok((precision, counted))
}

/// The share of time counted from now on (`tracker_seconds_counted` over
/// wall time), as the closure returned reads it.
fn time_counted(con: &mut redis::Connection) -> impl Fn(&mut redis::Connection) -> Option<f64> {
    let (before, started) = (info_f64(con, "tracker_seconds_counted"), Instant::now());
    move |con| {
        let counted = info_f64(con, "tracker_seconds_counted")? - before?;
        Some((counted / started.elapsed().as_secs_f64()).min(1.0))
    }
}

/// Two keys at steady rates among background traffic, paced in real time
/// for six half-lives: the reported rate against the exact forward-decayed
/// rate of what was sent. Sampled 1 in `n`, the slow key is seen about
/// `2000 * h / ln 2 / n` times per window (reference section 10).
fn steady_rates(
    server: &Server,
    sample: u64,
    half_life: f64,
) -> Result<(Vec<SteadyRate>, Option<f64>), String> {
    let mut con = server.connection().map_err(|e| e.to_string())?;
    config(&mut con, "track", "no")?;
    config(&mut con, "track-halflife", &format!("{half_life}"))?;
    config(&mut con, "track-sample", &sample.to_string())?;
    config(&mut con, "track", "yes")?;
    let targets = [("steady:fast", 8_000.0), ("steady:slow", 2_000.0)];
    let seconds = 6.0 * half_life;
    let counted = time_counted(&mut con);
    let started = Instant::now();
    let mut sent: Vec<Vec<f64>> = vec![Vec::new(); targets.len()];
    let mut background = 0u64;
    while started.elapsed().as_secs_f64() < seconds {
        let now = started.elapsed().as_secs_f64();
        let mut pipe = redis::pipe();
        for ((key, rate), times) in targets.iter().zip(&mut sent) {
            while (times.len() as f64) < now * rate {
                times.push(now);
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
    let listed = hotkeys(&mut con, &["READS"])?;
    let counted = counted(&mut con);
    let reported = |key: &str| {
        listed
            .iter()
            .find(|(k, _)| k == key)
            .map_or(0.0, |(_, b)| b.rate)
    };
    let lambda = std::f64::consts::LN_2 / half_life;
    // What a send at `t` weighs at `at`.
    let decayed = |t: &f64| (-(at - t) / half_life).exp2();
    let rows = targets
        .iter()
        .zip(&sent)
        .map(|((key, _), times)| SteadyRate {
            key: key.to_string(),
            truth: lambda * times.iter().map(decayed).sum::<f64>(),
            reported: reported(key),
        })
        .collect();
    config(&mut con, "track", "no")?;
    Ok((rows, counted))
}

/// What the tracker holds, and how much `used_memory` grows, after clients
/// send 300 distinct 1 MB keys.
fn huge_keys(server: &Server) -> Result<HugeKeys, String> {
    let mut con = server.connection().map_err(|e| e.to_string())?;
    config(&mut con, "track-sample", "1")?;
    config(&mut con, "track-k", "100")?;
    config(&mut con, "track", "yes")?;
    let info = |con: &mut redis::Connection, section: &str, field: &str| {
        info_number(con, section, field).ok_or_else(|| format!("INFO {section} has no {field}"))
    };
    let before = info(&mut con, "memory", "used_memory")?;
    for i in 0..300u32 {
        // `i` in its first four bytes, then `k`s up to 1 MB.
        let mut key = i.to_be_bytes().to_vec();
        key.resize(1 << 20, b'k');
        redis::cmd("EXISTS")
            .arg(&key)
            .arg(&key)
            .query::<i64>(&mut con)
            .map_err(|e| e.to_string())?;
    }
    query::<redis::Value>(&mut con, &["HK.HOTKEYS"])?;
    let figures = HugeKeys {
        tracker_bytes: info(&mut con, "heavykeeper", "heavykeeper_tracker_memory_bytes")? as u64,
        used_memory_growth: (info(&mut con, "memory", "used_memory")? - before) as i64,
    };
    config(&mut con, "track", "no")?;
    Ok(figures)
}

impl TrackingFigures {
    pub fn markdown(&self) -> String {
        let mut md = String::from("\n## Tracking the server's own hot keys\n\n");
        if let Some(e) = &self.error {
            let _ = writeln!(md, "Not measured: {e}\n");
        }
        if !self.costs.is_empty() {
            md.push_str(&tracking_cost::markdown(&self.costs));
        }
        if !self.clients.is_empty() {
            md.push_str(&crate::tracking_clients::markdown(&self.clients));
        }
        if !self.samplings.is_empty() {
            let _ = writeln!(md, "\nThe list and the rates at each `track-sample` (Redis 7.0): precision is the share of the true top-100 of a Zipf(1.0) `GET` stream through the server (pipelines of 1,000 from one client, as fast as the server answers) that `HK.HOTKEYS READS COUNT 100` lists; rates are those of two steady keys (8,000 and 2,000 req/s among ~25,000 background `GET`s a second) after six half-lives of {} s, against the exact decayed rate of what was sent. Time counted: the share of the run's time counted (`tracker_seconds_counted` over wall time; 1 in N: 1/N).\n\n| track-sample | top-100 precision | time counted | over 20,000 keys (300,000 GETs, six seeds) | steady:fast truth / reported | steady:slow truth / reported | worst rate error | time counted |\n|---|---|---|---|---|---|---|---|", self.half_life_s);
            md.extend(self.samplings.iter().map(|s| s.row() + "\n"));
        }
        if let Some(h) = &self.huge_keys {
            let _ = writeln!(md, "\nAfter 300 `EXISTS` of distinct 1 MB keys (`track-k 100`): the tracker holds {} bytes (`tracker_memory_bytes`, batches included); `used_memory` grew by {} bytes.", h.tracker_bytes, h.used_memory_growth);
        }
        if !self.bounds.is_empty() {
            md.push_str(&tracking_bounds::markdown(&self.bounds));
        }
        if !self.bursts.is_empty() {
            md.push_str(&crate::tracking_bursts::markdown(&self.bursts));
        }
        if !self.truth.is_empty() {
            md.push_str(&tracking_truth::markdown(&self.truth));
        }
        md.push_str(&self.for_the_docs());
        md
    }

    /// The figures the docs quote, in one place.
    fn for_the_docs(&self) -> String {
        let mut md = String::new();
        let mut line = |text: String| {
            let _ = writeln!(md, "- {text}");
        };
        for server in &self.costs {
            let Some(i) = &server.instructions else {
                continue;
            };
            use tracking_cost::Mode;
            let pct = |x: Option<f64>| x.map_or("-".into(), |x| format!("{:+.1}%", 100.0 * x));
            for mode in [Mode::Every, Mode::Default] {
                line(format!(
                    "{}, {}: {} instructions per `GET` in processCommand + worker, {} main thread, {} all threads",
                    server.server,
                    mode.label(),
                    pct(i.share_of_all(i.added_command_and_worker(mode))),
                    pct(i.share_of_main(i.added_main(mode))),
                    pct(i.share_of_all(i.added_all(mode))),
                ));
            }
            for m in &i.misses {
                let added = |figures| tracking_cost::over_unsubscribed(figures, 1);
                if let (Some(hit), Some(miss)) = (added(&m.hit), added(&m.miss)) {
                    line(format!(
                        "{}, {}: `track-misses yes` adds {hit:+.0} instructions per hit, {miss:+.0} per miss",
                        server.server,
                        sample_label(m.sample)
                    ));
                }
            }
        }
        for t in &self.truth {
            for scenario in tracking_truth::SCENARIOS {
                if let (Some(worst), Some(means)) = (t.worst(scenario), t.means(scenario)) {
                    line(format!(
                        "{}, {}: x and steady counted within {:.1}% of what was sent in every run (means {:.3}, {:.3})",
                        t.server,
                        scenario.label(),
                        100.0 * worst,
                        means[0],
                        means[1]
                    ));
                }
            }
        }
        if md.is_empty() {
            md
        } else {
            format!("\n### Tracking figures for the docs\n\n{md}")
        }
    }
}
