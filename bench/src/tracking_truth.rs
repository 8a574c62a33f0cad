//! The tracker's counts against what was sent, at the default settings
//! (`track-sample 0`: within the CPU budget) and a long half-life (counts
//! are totals): the issue's mix (a bursty key `x`, a steady key, background
//! reads over 10,000 keys) at ~10k and ~20k commands/s, beside a
//! saturating `redis-benchmark`, counting every command, with a 20 Hz
//! `HK.HOTKEYS` poller, right after `HK.HOTKEYS RESET`, with half the
//! commands refused before they run, and beside a client that never
//! authenticated (which must not be counted).

use crate::redis_phase::{query, Server};
use crate::tracker_settings::{config, hotkeys, info_f64, info_number};
use crate::tracking_cost::{server_name, servers, start_counting};
use std::collections::HashMap;
use std::fmt::Write;
use std::io::{BufRead, BufReader, Write as _};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use traffic::Shape;

/// The keys whose counts are held against what was sent.
pub const KEYS: [&str; 2] = ["x", "steady"];

/// Read by the client that never authenticated (`requirepass` set).
const NOAUTH_KEY: &str = "noauth:key";
const NOAUTH_GETS: usize = 5_000;
const PASSWORD: &str = "hk-bench-truth";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scenario {
    /// ~10,000 commands a second.
    Light,
    /// ~20,000 commands a second (the issue's sizes).
    Medium,
    /// Medium, beside a saturating `redis-benchmark` on other keys.
    Saturating,
    /// Medium, `track-sample 1`.
    Every,
    /// Medium, with a client polling `HK.HOTKEYS` 20 times a second.
    Poller,
    /// Medium, counts read 2 s after `HK.HOTKEYS RESET`.
    AfterReset,
    /// Medium, and as many commands again that the server refuses before
    /// they run (unknown commands, `GET` with too many arguments), naming `x`.
    Refused,
    /// Medium with `requirepass` set (the traffic authenticated), and a
    /// client that never authenticated sending 5,000 `GET noauth:key`.
    Unauthenticated,
}

pub const SCENARIOS: [Scenario; 8] = [
    Scenario::Light,
    Scenario::Medium,
    Scenario::Saturating,
    Scenario::Every,
    Scenario::Poller,
    Scenario::AfterReset,
    Scenario::Refused,
    Scenario::Unauthenticated,
];

impl Scenario {
    pub fn label(self) -> &'static str {
        match self {
            Scenario::Light => "~10k commands/s",
            Scenario::Medium => "~20k commands/s",
            Scenario::Saturating => "~20k beside a saturating redis-benchmark",
            Scenario::Every => "~20k, track-sample 1 (every command)",
            Scenario::Poller => "~20k, HK.HOTKEYS polled at 20 Hz",
            Scenario::AfterReset => "~20k, read 2 s after HK.HOTKEYS RESET",
            Scenario::Refused => "~20k + as many refused commands on x",
            Scenario::Unauthenticated => "~20k, requirepass, + 5,000 GETs not logged in",
        }
    }

    /// The issue's mix at ~10,000 commands a second times `scale`: `x`, a
    /// pipeline of 250-500 `GET`s every 100 ms; `steady`, 5 every 10 ms;
    /// background, 45 every 10 ms over 10,000 keys (at `scale` 2 the
    /// issue's own 500-1,000, 10 and 90). Refused: as many refused
    /// commands again, naming `x`.
    fn shapes(self) -> Vec<Shape> {
        let ms = Duration::from_millis;
        let scale = if self == Scenario::Light { 1 } else { 2 };
        let mut shapes = vec![
            Shape::Bursty {
                key: KEYS[0].into(),
                min: 250 * scale,
                max: 500 * scale,
                every: ms(100),
            },
            Shape::Steady {
                key: KEYS[1].into(),
                per: 5 * scale,
                every: ms(10),
            },
            Shape::Background {
                prefix: "bg:".into(),
                keys: 10_000,
                per: 45 * scale,
                every: ms(10),
            },
        ];
        if self == Scenario::Refused {
            // ~87.5 reads every 10 ms at scale 2: as many refused.
            shapes.push(Shape::Refused {
                key: KEYS[0].into(),
                per: 88,
                every: ms(10),
            });
        }
        shapes
    }
}

/// One run: each key's count over what was sent, and how the tracker ran.
#[derive(Clone, Debug)]
pub struct Run {
    pub scenario: Scenario,
    /// The traffic's reads a second.
    pub rate: f64,
    /// Every command the server ran a second (the saturating load's too).
    pub server_rate: f64,
    /// `x` and `steady`: count over reads sent.
    pub ratios: [f64; 2],
    /// Unauthenticated: what `HK.HOTKEYS` counted of `noauth:key` (0:
    /// not listed), and `tracker_unauthenticated_dropped` over the run.
    pub noauth: Option<(f64, f64, u64)>,
    /// `tracker_share_counted` at the end.
    pub share: f64,
    /// The share of the run's time counted (`tracker_seconds_counted`).
    pub time_counted: f64,
    /// The tracker's CPU over the run, % of a core (`tracker_cpu_seconds`).
    pub cpu_percent: f64,
}

/// Every run on one server.
#[derive(Default)]
pub struct ServerTruth {
    pub server: String,
    pub runs: Vec<Run>,
    pub seconds: u64,
    pub error: Option<String>,
}

impl ServerTruth {
    pub fn of(&self, scenario: Scenario) -> impl Iterator<Item = &Run> {
        self.runs.iter().filter(move |r| r.scenario == scenario)
    }

    /// The largest distance from 1 of any key's count over what was sent,
    /// in any run of `scenario`.
    pub fn worst(&self, scenario: Scenario) -> Option<f64> {
        self.of(scenario)
            .flat_map(|r| r.ratios)
            .map(|x| (x - 1.0).abs())
            .reduce(f64::max)
    }

    /// Each key's mean ratio over the runs of `scenario`.
    pub fn means(&self, scenario: Scenario) -> Option<[f64; 2]> {
        let runs: Vec<&Run> = self.of(scenario).collect();
        let n = runs.len() as f64;
        let mean = |k: usize| runs.iter().filter_map(|r| r.ratios.get(k)).sum::<f64>() / n;
        (n > 0.0).then(|| [mean(0), mean(1)])
    }
}

/// A saturating `redis-benchmark` on keys of its own, until killed.
pub(crate) fn saturate(port: u16) -> Result<Child, String> {
    Command::new("redis-benchmark")
        .args(["-p", &port.to_string(), "-q", "-t", "get"])
        .args(["-n", "1000000000", "-P", "16", "-c", "8", "-r", "100000"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("redis-benchmark: {e}"))
}

pub(crate) fn commands_processed(con: &mut redis::Connection) -> f64 {
    info_number(con, "stats", "total_commands_processed").unwrap_or(f64::NAN)
}

/// A client polling `HK.HOTKEYS` every 50 ms until `stop`.
fn poller(url: String, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        let Ok(mut con) = redis::Client::open(url).and_then(|c| c.get_connection()) else {
            return 0;
        };
        let mut polls = 0;
        while !stop.load(Ordering::Relaxed) {
            if query::<redis::Value>(&mut con, &["HK.HOTKEYS"]).is_ok() {
                polls += 1;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        polls
    })
}

/// A client that never authenticates: `NOAUTH_GETS` `GET noauth:key`
/// spread over `over`, 20 to a pipeline (a server closes a client not
/// logged in whose replies outgrow a small buffer), each reply read (all
/// `-NOAUTH`).
fn unauthenticated(port: u16, over: Duration) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        let connected = std::net::TcpStream::connect(("127.0.0.1", port));
        let Ok((stream, mut writer)) = connected.and_then(|s| Ok((s.try_clone()?, s))) else {
            return 0;
        };
        let mut reader = BufReader::new(stream);
        const PER: usize = 20;
        let rounds = NOAUTH_GETS / PER;
        let len = NOAUTH_KEY.len();
        let request = format!("*2\r\n$3\r\nGET\r\n${len}\r\n{NOAUTH_KEY}\r\n").repeat(PER);
        let mut sent = 0;
        let mut line = String::new();
        for _ in 0..rounds {
            if writer.write_all(request.as_bytes()).is_err() {
                break;
            }
            for _ in 0..PER {
                line.clear();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    return sent;
                }
                sent += 1;
            }
            std::thread::sleep(over.mul_f64(0.9) / rounds as u32);
        }
        sent
    })
}

fn one_run(server: &Server, scenario: Scenario, mut seconds: u64) -> Result<Run, String> {
    let mut con = server.connection().map_err(|e| e.to_string())?;
    let mut url = format!("redis://127.0.0.1:{}/", server.port);
    let mut benchmark = None;
    match scenario {
        Scenario::Saturating => {
            benchmark = Some(saturate(server.port)?);
            std::thread::sleep(Duration::from_secs(2));
        }
        Scenario::Every => config(&mut con, "track-sample", "1")?,
        Scenario::AfterReset => seconds = 2,
        Scenario::Unauthenticated => {
            // This connection stays logged in; the traffic logs in.
            query::<()>(&mut con, &["CONFIG", "SET", "requirepass", PASSWORD])?;
            url = format!("redis://:{PASSWORD}@127.0.0.1:{}/", server.port);
        }
        _ => {}
    }
    query::<()>(&mut con, &["HK.HOTKEYS", "RESET"])?;
    let field = |con: &mut redis::Connection, f: &str| info_f64(con, f).unwrap_or(f64::NAN);
    let (counted, cpu, commands, dropped) = (
        field(&mut con, "tracker_seconds_counted"),
        field(&mut con, "tracker_cpu_seconds"),
        commands_processed(&mut con),
        field(&mut con, "tracker_unauthenticated_dropped"),
    );
    let started = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let polling = (scenario == Scenario::Poller).then(|| poller(url.clone(), Arc::clone(&stop)));
    let intruder = (scenario == Scenario::Unauthenticated)
        .then(|| unauthenticated(server.port, Duration::from_secs(seconds)));
    let sent = traffic::send(&url, &scenario.shapes(), Duration::from_secs(seconds));
    stop.store(true, Ordering::Relaxed);
    let polls = polling.map(|p| p.join().unwrap_or(0));
    let noauth_sent = intruder.map(|p| p.join().unwrap_or(0));
    let counts = hotkeys(&mut con, &["COUNT", "1000"]);
    let wall = started.elapsed().as_secs_f64();
    let (share, counted, cpu, commands, dropped) = (
        field(&mut con, "tracker_share_counted"),
        field(&mut con, "tracker_seconds_counted") - counted,
        field(&mut con, "tracker_cpu_seconds") - cpu,
        commands_processed(&mut con) - commands,
        field(&mut con, "tracker_unauthenticated_dropped") - dropped,
    );
    if let Some(child) = benchmark.as_mut() {
        let _ = child.kill();
        let _ = child.wait();
    }
    match scenario {
        Scenario::Every => config(&mut con, "track-sample", "0")?,
        Scenario::Unauthenticated => query(&mut con, &["CONFIG", "SET", "requirepass", ""])?,
        _ => {}
    }
    if let Some(polls) = polls {
        eprintln!("    {polls} polls of HK.HOTKEYS");
    }
    let sent = sent.map_err(|e| e.to_string())?;
    let counts: HashMap<String, f64> = (counts?.into_iter()).map(|(k, b)| (k, b.count)).collect();
    let ratio = |key: &str| counts.get(key).copied().unwrap_or(0.0) / sent.of(key).max(1) as f64;
    Ok(Run {
        scenario,
        rate: sent.rate(),
        server_rate: commands / wall,
        ratios: KEYS.map(ratio),
        noauth: noauth_sent.map(|n| (counts.get(NOAUTH_KEY).copied().unwrap_or(0.0), dropped, n)),
        share,
        time_counted: (counted / wall).min(1.0),
        cpu_percent: 100.0 * cpu / wall,
    })
}

/// Every scenario in turn on every server, `runs` runs each.
pub fn measure(module: &Path, quick: bool) -> Vec<ServerTruth> {
    let (runs, seconds) = if quick { (1, 5) } else { (2, 12) };
    let mut all = Vec::new();
    for binary in servers() {
        let server = start_counting(&binary, module);
        let mut truth = ServerTruth {
            server: binary.clone(),
            seconds,
            ..Default::default()
        };
        let result = server.and_then(|server| {
            truth.server = server_name(&server)?;
            for run in 0..runs {
                for scenario in SCENARIOS {
                    let r = one_run(&server, scenario, seconds)?;
                    let noauth = r.noauth.map_or(String::new(), |(c, d, n)| {
                        format!(" noauth:key {n} sent, counted {c}, dropped {d}")
                    });
                    eprintln!("  {}{noauth}", row(&truth.server, run + 1, &r));
                    truth.runs.push(r);
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

/// The `run`th run of a scenario on `server`, as a row of the report's
/// table (and a line on the console as it is measured).
fn row(server: &str, run: usize, r: &Run) -> String {
    format!(
        "| {server} | {} | {run} | {:.0} | {:.0} | {:.3} | {:.3} | {:.4} | {:.4} | {:.2} |",
        r.scenario.label(),
        r.rate,
        r.server_rate,
        r.ratios[0],
        r.ratios[1],
        r.share,
        r.time_counted,
        r.cpu_percent
    )
}

pub fn markdown(servers: &[ServerTruth]) -> String {
    let seconds = servers.first().map_or(0, |s| s.seconds);
    let mut md = format!(
        include_str!("../prose/tracking-truth-intro.md"),
        seconds = seconds
    );
    md.push_str("\nEach key's count from `HK.HOTKEYS` over the reads sent (1.000 is exact); the share counted is `tracker_share_counted` at the end of the run, the time counted the share of the run's time counted (`tracker_seconds_counted`), the tracker's CPU its `tracker_cpu_seconds` over the run (main thread and worker, % of a core: CPU time on a shared machine):\n\n| server | scenario | run | traffic reads/s | server commands/s | `x` counted/sent | `steady` counted/sent | share counted | time counted | tracker CPU % |\n|---|---|---|---|---|---|---|---|---|---|\n");
    for s in servers {
        if let Some(e) = &s.error {
            let _ = writeln!(md, "| {} | not measured: {e} | | | | | | | | |", s.server);
        }
        let mut seen: Vec<Scenario> = Vec::new();
        for r in &s.runs {
            seen.push(r.scenario);
            let run = seen.iter().filter(|x| **x == r.scenario).count();
            let _ = writeln!(md, "{}", row(&s.server, run, r));
        }
    }
    md.push_str("\nMeans over the runs (what unbiased is about):\n\n| server | scenario | `x` mean | `steady` mean | worst key, any run |\n|---|---|---|---|---|\n");
    for s in servers {
        for scenario in SCENARIOS {
            let (Some([x, steady]), Some(worst)) = (s.means(scenario), s.worst(scenario)) else {
                continue;
            };
            let _ = writeln!(
                md,
                "| {} | {} | {x:.3} | {steady:.3} | {:.1}% |",
                s.server,
                scenario.label(),
                100.0 * worst
            );
        }
    }
    md.push_str("\nThe client that never authenticated: the `GET noauth:key` it sent (each answered `-NOAUTH`), `noauth:key`'s count in `HK.HOTKEYS` (0: not listed) and `tracker_unauthenticated_dropped` over the run (accesses the tracker dropped as not logged in, in counted windows only):\n\n| server | run | GETs sent not logged in | `noauth:key` counted | unauthenticated dropped |\n|---|---|---|---|---|\n");
    for s in servers {
        for (i, r) in s.of(Scenario::Unauthenticated).enumerate() {
            if let Some((counted, dropped, sent)) = r.noauth {
                let _ = writeln!(
                    md,
                    "| {} | {} | {sent} | {counted:.0} | {dropped:.0} |",
                    s.server,
                    i + 1
                );
            }
        }
    }
    md
}
