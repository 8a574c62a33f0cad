//! Through Redis: a real server with the module, driven by redis-benchmark
//! and by batches whose server-side cost `INFO commandstats` reports.

use crate::workloads::Workload;
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Server {
    child: Child,
    pub port: u16,
    _dir: std::path::PathBuf,
}

impl Server {
    pub fn start(module: &Path) -> Result<Self, String> {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| e.to_string())?
            .port();
        let dir = std::env::temp_dir().join(format!("hk-bench-{port}"));
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let child = Command::new("redis-server")
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .arg("--dir")
            .arg(&dir)
            .arg("--loadmodule")
            .arg(module)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("redis-server: {e}"))?;
        let server = Server {
            child,
            port,
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if server.connection().is_ok() {
                return Ok(server);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err("redis-server did not start".into())
    }

    /// CPU time the server's main thread has used, in nanoseconds (Linux).
    pub fn main_thread_cpu_ns(&self) -> Option<u64> {
        let pid = self.child.id();
        let stat = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/schedstat")).ok()?;
        stat.split_whitespace().next()?.parse().ok()
    }

    pub fn connection(&self) -> redis::RedisResult<redis::Connection> {
        redis::Client::open(format!("redis://127.0.0.1:{}/", self.port))?.get_connection()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Requests per second that `redis-benchmark` reports for one command.
pub fn benchmark(
    port: u16,
    requests: usize,
    pipeline: usize,
    command: &[&str],
) -> Result<f64, String> {
    benchmark_over(port, requests, pipeline, 1_000_000, command)
}

/// The same, with `__rand_int__` drawn from `0..keyspace`.
pub fn benchmark_over(
    port: u16,
    requests: usize,
    pipeline: usize,
    keyspace: usize,
    command: &[&str],
) -> Result<f64, String> {
    let out = Command::new("redis-benchmark")
        .args(["-p", &port.to_string(), "-q", "-c", "50"])
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
    let _: () = redis::cmd("HK.RESERVE")
        .arg("bench:hk")
        .arg(100)
        .query(&mut con)
        .map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for pipeline in [1usize, 16] {
        let (mut incr, mut add, mut query) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..rounds {
            incr.push(benchmark(
                server.port,
                requests,
                pipeline,
                &["INCR", "bench:counter"],
            )?);
            add.push(benchmark(
                server.port,
                requests,
                pipeline,
                &["HK.ADD", "bench:hk", "item:__rand_int__"],
            )?);
            query.push(benchmark(
                server.port,
                requests,
                pipeline,
                &["HK.QUERY", "bench:hk", "item:__rand_int__"],
            )?);
        }
        out.push(VersusIncr {
            pipeline,
            incr_rps: median(&mut incr),
            add_rps: median(&mut add),
            query_rps: median(&mut query),
        });
    }
    Ok(out)
}

pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Server-side nanoseconds per item of `HK.ADD` with `batch`-item batches,
/// from `INFO commandstats`.
pub fn server_ns_per_item(
    server: &Server,
    w: &Workload,
    k: usize,
    batch: usize,
    batches: usize,
) -> Result<f64, String> {
    let mut con = server.connection().map_err(|e| e.to_string())?;
    let key = format!("bench:batch:{k}");
    let _: () = redis::cmd("HK.RESERVE")
        .arg(&key)
        .arg(k)
        .query(&mut con)
        .map_err(|e| e.to_string())?;
    // Warm the sketch up to a steady state first.
    let mut chunks = w.stream.chunks(batch).cycle();
    for _ in 0..batches / 4 {
        add_batch(&mut con, &key, w, chunks.next().unwrap_or(&[]))?;
    }
    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query(&mut con)
        .map_err(|e| e.to_string())?;
    for _ in 0..batches {
        add_batch(&mut con, &key, w, chunks.next().unwrap_or(&[]))?;
    }
    let (calls, usec) = command_stats(&mut con, "hk.add")?;
    Ok(usec * 1000.0 / (calls * batch as f64))
}

/// `(calls, usec)` of `command` from `INFO commandstats`.
pub fn command_stats(con: &mut redis::Connection, command: &str) -> Result<(f64, f64), String> {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(con)
        .map_err(|e| e.to_string())?;
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

fn add_batch(
    con: &mut redis::Connection,
    key: &str,
    w: &Workload,
    ids: &[u32],
) -> Result<(), String> {
    let mut cmd = redis::cmd("HK.ADD");
    cmd.arg(key);
    for &id in ids {
        cmd.arg(w.item(id));
    }
    cmd.query::<redis::Value>(con)
        .map(|_| ())
        .map_err(|e| e.to_string())
}
