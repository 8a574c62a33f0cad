//! The tracker's counts against what was sent, at the default settings:
//! the issue's mix (a bursty key, a steady key, background reads over
//! 10,000 keys) at light and medium load, and the same beside a saturating
//! `redis-benchmark` on other keys, several runs each (the estimator is
//! unbiased; its spread is what the runs show).

use crate::redis_phase::Server;
use std::fmt::Write;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use traffic::Shape;

/// One run: each key's count over what was sent, and how the tracker ran.
#[derive(Clone, Debug)]
pub struct Run {
    pub load: &'static str,
    pub rate: f64,
    pub bursty: f64,
    pub steady: f64,
    pub share: f64,
    pub cpu_percent: f64,
}

/// The issue's mix at ~10,000 commands a second times `scale`: `x`, a
/// pipeline of 300-600 `GET`s every 100 ms, `steady` 5 every 10 ms,
/// background 45 every 10 ms over 10,000 keys (the issue's own: 500-1,000,
/// 10 and 90, at `scale` 2).
pub fn mix(scale: usize) -> Vec<Shape> {
    vec![
        Shape::Bursty {
            key: "x".into(),
            min: 300 * scale,
            max: 600 * scale,
            every: Duration::from_millis(100),
        },
        Shape::Steady {
            key: "steady".into(),
            per: 5 * scale,
            every: Duration::from_millis(10),
        },
        Shape::Background {
            prefix: "bg:".into(),
            keys: 10_000,
            per: 45 * scale,
            every: Duration::from_millis(10),
        },
    ]
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

fn info_f64(con: &mut redis::Connection, field: &str) -> f64 {
    let info: String = redis::cmd("INFO")
        .arg("heavykeeper")
        .query(con)
        .unwrap_or_default();
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("heavykeeper_{field}:")))
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

fn one_run(
    server: &Server,
    load: &'static str,
    scale: usize,
    saturating: bool,
    seconds: u64,
) -> Result<Run, String> {
    let mut con = server.connection().map_err(|e| e.to_string())?;
    let mut benchmark = if saturating {
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
    let url = format!("redis://127.0.0.1:{}/", server.port);
    let sent = traffic::send(&url, &mix(scale), Duration::from_secs(seconds));
    let counts = listed(&mut con);
    let (share, cpu) = (
        info_f64(&mut con, "tracker_share_counted"),
        info_f64(&mut con, "tracker_cpu_percent"),
    );
    if let Some(child) = benchmark.as_mut() {
        let _ = child.kill();
        let _ = child.wait();
    }
    let (sent, counts) = (sent.map_err(|e| e.to_string())?, counts?);
    let ratio = |key: &str| counts.get(key).copied().unwrap_or(0.0) / sent.of(key).max(1) as f64;
    Ok(Run {
        load,
        rate: sent.rate(),
        bursty: ratio("x"),
        steady: ratio("steady"),
        share,
        cpu_percent: cpu,
    })
}

/// Every load in turn on one server, `runs` runs each.
pub fn measure(module: &Path, quick: bool) -> Result<Vec<Run>, String> {
    let server = Server::start_modules(
        "redis-server",
        &[(
            module.to_path_buf(),
            ["track", "yes", "track-halflife", "86400"]
                .map(String::from)
                .to_vec(),
        )],
    )?;
    let (runs, seconds) = if quick { (1, 10) } else { (3, 30) };
    let mut all = Vec::new();
    for (load, scale, saturating) in [
        ("~10k commands/s", 1, false),
        ("~20k commands/s", 2, false),
        ("beside a saturating redis-benchmark", 2, true),
    ] {
        for _ in 0..runs {
            all.push(one_run(&server, load, scale, saturating, seconds)?);
        }
    }
    Ok(all)
}

pub fn markdown(runs: &[Run]) -> String {
    let mut md = String::from("The issue's mix at the default settings (`track yes`, half-life 86,400 s so that counts are totals): `x`, a pipeline of 500-1,000 `GET`s every 100 ms; `steady`, 10 (20) `GET`s every 10 ms; background `GET`s over 10,000 keys; each from its own connection, paced on the clock. Each count from `HK.HOTKEYS` over what was sent (1.000 is exact):\n\n| load | commands/s | `x` | `steady` | share counted | tracker CPU (% of a core) |\n|---|---|---|---|---|---|\n");
    for r in runs {
        let _ = writeln!(
            md,
            "| {} | {:.0} | {:.3} | {:.3} | {:.4} | {:.2} |",
            r.load, r.rate, r.bursty, r.steady, r.share, r.cpu_percent
        );
    }
    md
}
