//! Through Redis: a real server with the module, driven by redis-benchmark
//! and by batches whose server-side cost `INFO commandstats` reports.

use crate::workloads::Workload;
use std::fmt::Write;
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A port no one listens on, from 41000-41999 (below 55536, so a cluster
/// bus at port + 10000 fits; clear of the ports other work on this machine
/// uses), each handed out once per run.
pub fn free_port() -> Option<u16> {
    use std::sync::atomic::{AtomicU16, Ordering};
    static NEXT: AtomicU16 = AtomicU16::new(0);
    let base = 41_000 + (std::process::id() % 50) as u16 * 20;
    for _ in 0..1000 {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let port = 41_000 + (base - 41_000 + n) % 1000;
        let free = |p: u16| TcpListener::bind(("127.0.0.1", p)).is_ok();
        if free(port) && free(port + 10_000) {
            return Some(port);
        }
    }
    None
}

pub struct Server {
    child: Child,
    pub port: u16,
    _dir: std::path::PathBuf,
}

impl Server {
    /// Debian's redis-server with the module.
    pub fn start(module: &Path) -> Result<Self, String> {
        Self::start_modules("redis-server", &[(module.to_path_buf(), Vec::new())])
    }

    /// A server from `binary` with each module and its arguments.
    pub fn start_modules(
        binary: &str,
        modules: &[(std::path::PathBuf, Vec<String>)],
    ) -> Result<Self, String> {
        let port = free_port().ok_or("no free port in 41000-41999")?;
        let dir = std::env::temp_dir().join(format!("hk-bench-{port}"));
        let mut command = Command::new(binary);
        for (module, args) in modules {
            command.arg("--loadmodule").arg(module).args(args);
        }
        Self::launch(command, port, dir, Duration::from_secs(20))
    }

    /// `command` (a server, or a tool running one) on `port`, on loopback,
    /// without persistence, its files in `dir` (made here, removed on
    /// drop); an error if it does not answer within `patience`.
    pub fn launch(
        mut command: Command,
        port: u16,
        dir: std::path::PathBuf,
        patience: Duration,
    ) -> Result<Self, String> {
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let program = command.get_program().to_string_lossy().into_owned();
        let child = command
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--dir"])
            .arg(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("{program}: {e}"))?;
        let server = Server {
            child,
            port,
            _dir: dir,
        };
        let deadline = Instant::now() + patience;
        while Instant::now() < deadline {
            if server.connection().is_ok() {
                return Ok(server);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err(format!("{program} did not start"))
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// CPU time the server's main thread has used, in nanoseconds (Linux).
    pub fn main_thread_cpu_ns(&self) -> Option<u64> {
        let pid = self.pid();
        schedstat_ns(Path::new(&format!("/proc/{pid}/task/{pid}")))
    }

    /// CPU time the server's threads named `name` have used, in
    /// nanoseconds (Linux); `None` when there is no such thread.
    pub fn thread_cpu_ns(&self, name: &str) -> Option<u64> {
        let tasks = std::fs::read_dir(format!("/proc/{}/task", self.pid())).ok()?;
        let named = |task: &Path| {
            std::fs::read_to_string(task.join("comm")).is_ok_and(|c| c.trim() == name)
        };
        (tasks.flatten().map(|task| task.path()))
            .filter(|task| named(task))
            .filter_map(|task| schedstat_ns(&task))
            .reduce(|a, b| a + b)
    }

    pub fn connection(&self) -> redis::RedisResult<redis::Connection> {
        redis::Client::open(format!("redis://127.0.0.1:{}/", self.port))?.get_connection()
    }
}

/// The CPU time in a task's `schedstat`, in nanoseconds.
fn schedstat_ns(task: &Path) -> Option<u64> {
    let stat = std::fs::read_to_string(task.join("schedstat")).ok()?;
    stat.split_whitespace().next()?.parse().ok()
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self._dir);
    }
}

/// `args` as one command: its reply, or the error as text.
pub fn query<T: redis::FromRedisValue>(
    con: &mut redis::Connection,
    args: &[&str],
) -> Result<T, String> {
    redis::Cmd::new()
        .arg(args)
        .query(con)
        .map_err(|e| e.to_string())
}

/// Requests per second that `redis-benchmark` reports for one command from
/// `clients` connections, `__rand_int__` drawn from `0..keyspace`.
pub fn benchmark_clients(
    port: u16,
    clients: usize,
    requests: usize,
    pipeline: usize,
    keyspace: usize,
    command: &[&str],
) -> Result<f64, String> {
    let out = Command::new("redis-benchmark")
        .args(["-p", &port.to_string(), "-q", "-c", &clients.to_string()])
        .args(["-r", &keyspace.to_string()])
        .args(["-n", &requests.to_string(), "-P", &pipeline.to_string()])
        .args(command)
        .output()
        .map_err(|e| format!("redis-benchmark: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    // "INCR key: 123456.79 requests per second, p50=0.183 msec" (the last
    // \r-separated part; the key itself may contain colons).
    let last = text.rsplit('\r').next().unwrap_or(&text);
    last.split(" requests per second")
        .next()
        .and_then(|head| head.split_whitespace().last())
        .and_then(|n| n.parse::<f64>().ok())
        .ok_or_else(|| format!("could not read redis-benchmark output: {text:?}"))
}

#[derive(Clone, Debug)]
pub struct VersusIncr {
    pub pipeline: usize,
    pub incr_rps: f64,
    pub add_rps: f64,
    /// `HK.QUERY` of one item: the cost of any module command that opens a key.
    pub query_rps: f64,
}

/// `INCR` and `HK.ADD` alternated `rounds` times; medians.
pub fn add_versus_incr(
    server: &Server,
    requests: usize,
    rounds: usize,
) -> Result<Vec<VersusIncr>, String> {
    let mut con = server.connection().map_err(|e| e.to_string())?;
    query::<()>(&mut con, &["HK.RESERVE", "bench:hk", "100"])?;
    let commands: [&[&str]; 3] = [
        &["INCR", "bench:counter"],
        &["HK.ADD", "bench:hk", "item:__rand_int__"],
        &["HK.QUERY", "bench:hk", "item:__rand_int__"],
    ];
    let mut out = Vec::new();
    for pipeline in [1usize, 16] {
        let mut rps: [Vec<f64>; 3] = Default::default();
        for _ in 0..rounds {
            for (command, rps) in commands.iter().zip(&mut rps) {
                let r = benchmark_clients(server.port, 50, requests, pipeline, 1_000_000, command)?;
                rps.push(r);
            }
        }
        let [incr_rps, add_rps, query_rps] = rps.map(|mut r| median(&mut r).ok_or(NO_ROUNDS));
        out.push(VersusIncr {
            pipeline,
            incr_rps: incr_rps?,
            add_rps: add_rps?,
            query_rps: query_rps?,
        });
    }
    Ok(out)
}

/// The middle value (the upper one of an even count); `None` for none.
pub fn median(v: &mut [f64]) -> Option<f64> {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied()
}

/// Why a figure measured in `rounds` rounds has no median.
const NO_ROUNDS: &str = "no rounds measured (rounds = 0)";

/// Server-side cost per item of 1000-item batches, `PFADD` (Redis's own
/// sketch with a hash per item) and `HK.ADD` at each k, all in one server on
/// the same stream, in interleaved rounds: each figure is the median of its
/// rounds, so a machine's drift touches all of them alike.
pub struct BatchCosts {
    pub pfadd_ns: f64,
    /// (k, ns per item)
    pub add_ns: Vec<(usize, f64)>,
}

pub fn batch_costs(
    server: &Server,
    w: &Workload,
    ks: &[usize],
    batch: usize,
    batches_per_round: usize,
    rounds: usize,
) -> Result<BatchCosts, String> {
    let mut con = server.connection().map_err(|e| e.to_string())?;
    let keys: Vec<String> = ks.iter().map(|k| format!("bench:rounds:{k}")).collect();
    for (key, k) in keys.iter().zip(ks) {
        query::<()>(&mut con, &["HK.RESERVE", key, &k.to_string()])?;
    }
    let mut chunks = w.stream.chunks(batch).cycle();
    // Warm every sketch (and the HyperLogLog) up to a steady state.
    for _ in 0..batches_per_round {
        let ids = chunks.next().unwrap_or(&[]);
        for key in &keys {
            send_batch(&mut con, "HK.ADD", key, w, ids)?;
        }
        send_batch(&mut con, "PFADD", "bench:rounds:hll", w, ids)?;
    }
    let mut pfadd = Vec::new();
    let mut per_k: Vec<Vec<f64>> = vec![Vec::new(); ks.len()];
    for _ in 0..rounds {
        let ids: Vec<&[u32]> = (0..batches_per_round)
            .map(|_| chunks.next().unwrap_or(&[]))
            .collect();
        pfadd.push(round_ns(&mut con, "PFADD", "bench:rounds:hll", w, &ids)?);
        for (key, ns) in keys.iter().zip(per_k.iter_mut()) {
            ns.push(round_ns(&mut con, "HK.ADD", key, w, &ids)?);
        }
    }
    Ok(BatchCosts {
        pfadd_ns: median(&mut pfadd).ok_or(NO_ROUNDS)?,
        add_ns: ks
            .iter()
            .zip(per_k.iter_mut())
            .map(|(k, ns)| Ok((*k, median(ns).ok_or(NO_ROUNDS)?)))
            .collect::<Result<_, String>>()?,
    })
}

/// ns per item of one round of batches of `command`.
fn round_ns(
    con: &mut redis::Connection,
    command: &str,
    key: &str,
    w: &Workload,
    batches: &[&[u32]],
) -> Result<f64, String> {
    query::<()>(con, &["CONFIG", "RESETSTAT"])?;
    for ids in batches {
        send_batch(con, command, key, w, ids)?;
    }
    let (_, usec) = command_stats(con, &command.to_ascii_lowercase())?;
    let items: usize = batches.iter().map(|b| b.len()).sum();
    Ok(usec * 1000.0 / items.max(1) as f64)
}

fn send_batch(
    con: &mut redis::Connection,
    command: &str,
    key: &str,
    w: &Workload,
    ids: &[u32],
) -> Result<(), String> {
    let items: Vec<&[u8]> = ids.iter().filter_map(|&id| w.item(id)).collect();
    let sent = redis::cmd(command).arg(key).arg(&items).query(con);
    sent.map(|_: redis::Value| ()).map_err(|e| e.to_string())
}

/// `(calls, usec)` of `command` from `INFO commandstats`.
pub fn command_stats(con: &mut redis::Connection, command: &str) -> Result<(f64, f64), String> {
    let info: String = query(con, &["INFO", "commandstats"])?;
    let prefix = format!("cmdstat_{command}:");
    let line = info
        .lines()
        .find(|l| l.starts_with(&prefix))
        .ok_or_else(|| format!("no commandstats for {command}"))?;
    let field = |name: &str| -> Option<f64> {
        line.split([':', ','])
            .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('=')?.parse().ok())
    };
    Ok((field("calls").ok_or("calls")?, field("usec").ok_or("usec")?))
}

#[derive(Default)]
pub struct RedisFigures {
    pub versus_incr: Vec<VersusIncr>,
    pub batch_costs: Option<BatchCosts>,
    pub error: Option<String>,
}

impl RedisFigures {
    pub fn markdown(&self) -> String {
        let mut md = String::from("\n## Through Redis\n\n");
        if let Some(e) = &self.error {
            let _ = writeln!(md, "Not measured: {e}\n");
            return md;
        }
        md.push_str("`redis-benchmark -c 50`, one `HK.ADD` of a random item (1M distinct) per request against `INCR` of one key, alternated, medians. `HK.QUERY` of a random item is the floor of any module command that opens a key (the server's module dispatch: context, key handle, argument wrappers):\n\n| pipeline | INCR req/s | HK.ADD req/s | HK.ADD / INCR | HK.QUERY req/s | HK.QUERY / INCR |\n|---|---|---|---|---|---|\n");
        for v in &self.versus_incr {
            let _ = writeln!(
                md,
                "| {} | {:.0} | {:.0} | {:.3} | {:.0} | {:.3} |",
                v.pipeline,
                v.incr_rps,
                v.add_rps,
                v.add_rps / v.incr_rps,
                v.query_rps,
                v.query_rps / v.incr_rps
            );
        }
        if let Some(costs) = &self.batch_costs {
            let _ = write!(md, "\nServer-side cost per item of 1000-item batches, from `INFO commandstats`, in one server on one Zipf(1.0) stream over 100k distinct items; interleaved rounds, medians. `PFADD` (a HyperLogLog: one hash and one register per item) is Redis's own cheapest sketch:\n\n| command | ns per item | vs PFADD |\n|---|---|---|\n| PFADD | {:.1} | 1.00 |\n", costs.pfadd_ns);
            for (k, ns) in &costs.add_ns {
                let _ = writeln!(
                    md,
                    "| HK.ADD, k={k} | {ns:.1} | {:.2} |",
                    ns / costs.pfadd_ns
                );
            }
        }
        md
    }
}

/// Every through-Redis figure, or why there is none.
pub fn measure(module: &Path, quick: bool) -> RedisFigures {
    let run = || -> Result<RedisFigures, String> {
        // redis-server resolves a relative module path from its --dir.
        let module =
            std::fs::canonicalize(module).map_err(|e| format!("{}: {e}", module.display()))?;
        let server = Server::start(&module)?;
        let requests = if quick { 200_000 } else { 1_000_000 };
        let versus_incr = add_versus_incr(&server, requests, 3)?;
        // Zipf(1.0) over 100k distinct items: many arrivals are members
        // and move in the heap, the case where a large k costs most.
        let stream = crate::workloads::zipf(1.0, 100_000, 2_000_000, 9)?;
        let rounds = if quick { 5 } else { 15 };
        let batch_costs =
            batch_costs(&server, &stream, &[10, 100, 1000, 10_000], 1000, 20, rounds)?;
        eprintln!(
            "  PFADD {:.1} ns/item; HK.ADD {:?}",
            batch_costs.pfadd_ns, batch_costs.add_ns
        );
        Ok(RedisFigures {
            versus_incr,
            batch_costs: Some(batch_costs),
            error: None,
        })
    };
    or_failed("through-Redis", run(), |f| &mut f.error)
}

/// What a phase measured, or where it failed (reported), nothing but the
/// error, in the field `error` picks.
pub fn or_failed<T: Default>(
    phase: &str,
    run: Result<T, String>,
    error: fn(&mut T) -> &mut Option<String>,
) -> T {
    run.unwrap_or_else(|e| {
        eprintln!("  {phase} phase failed: {e}");
        let mut figures = T::default();
        *error(&mut figures) = Some(e);
        figures
    })
}
