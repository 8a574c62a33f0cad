//! The tracker's counts and their error bars by traffic shape, at the
//! default settings, on every server: six keys of six shapes at once
//! (steady, ten bursts a second, three large bursts in the run, on and off,
//! from many clients, by `MGET`), beside background reads over 10,000 keys,
//! at ~20k commands a second and beside a saturating `redis-benchmark` over
//! 100,000 keys (with the keys then scaled up so that each has about 1% or
//! more of what the node serves). Each run reads `HK.HOTKEYS WITHBOUNDS`
//! once and holds every key's count and 95% bounds against what was sent:
//! how far off, whether listed, whether the truth lay inside its bounds,
//! and whether any key was listed above it that truly had a third of its
//! accesses or fewer (a phantom row); and `HK.HOTKEYS READS COUNT 20
//! WITHBOUNDS`, every row of it, hot or not, against its truth (what was
//! sent of it, or for a `redis-benchmark` key its share of what the
//! benchmark sent). And what `WITHBOUNDS` costs a reader.

use crate::redis_phase::{query, Server};
use crate::tracker_settings::{hotkeys, info_f64};
use crate::tracking_cost::{server_name, servers, start_counting};
use crate::tracking_truth::{commands_processed, saturate};
use std::fmt::Write;
use std::path::Path;
use std::time::{Duration, Instant};
use test_harness::CountBounds;
use traffic::Shape;

/// The keys held against what was sent, by shape.
pub const KEYS: [&str; 6] = ["steady", "bursty", "bursts3", "onoff", "many", "mget"];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Load {
    /// ~20,000 commands a second.
    Medium,
    /// Beside a saturating redis-benchmark, the keys ten times as hot.
    Saturating,
}

impl Load {
    pub fn label(self) -> &'static str {
        match self {
            Load::Medium => "~20k commands/s",
            Load::Saturating => "beside a saturating redis-benchmark",
        }
    }

    /// The six shapes and the background, for a run of `seconds`, at
    /// `scale` (1: ~20k/s).
    fn shapes(self, seconds: u64) -> Vec<Shape> {
        let scale = match self {
            Load::Medium => 1,
            Load::Saturating => 15,
        };
        let ms = Duration::from_millis;
        let mut shapes = vec![
            Shape::Steady {
                key: "steady".into(),
                per: 12 * scale,
                every: ms(10),
            },
            Shape::Bursty {
                key: "bursty".into(),
                min: 120 * scale,
                max: 240 * scale,
                every: ms(100),
            },
            // Three pipelines in the run, each a third of what the steady
            // key sends in it: each the steady key's share of the run.
            Shape::Bursty {
                key: "bursts3".into(),
                min: 12 * scale * 100 * seconds as usize / 3,
                max: 12 * scale * 100 * seconds as usize / 3,
                every: ms(seconds * 1000 / 3),
            },
            Shape::OnOff {
                key: "onoff".into(),
                per: 24 * scale,
                every: ms(10),
                on: ms(300),
                off: ms(300),
            },
            Shape::Mget {
                key: "mget".into(),
                prefix: "bg:".into(),
                keys: 10_000,
                width: 4,
                per: 12 * scale,
                every: ms(10),
            },
            Shape::Background {
                prefix: "bg:".into(),
                keys: 10_000,
                per: 120,
                every: ms(10),
            },
        ];
        // Many clients: twenty connections, each a little of one key.
        shapes.extend((0..20).map(|_| Shape::Steady {
            key: "many".into(),
            per: (6 * scale).div_ceil(10),
            every: ms(10),
        }));
        shapes
    }
}

pub const LOADS: [Load; 2] = [Load::Medium, Load::Saturating];

/// One key in one run.
#[derive(Clone, Debug)]
pub struct KeyReading {
    /// Its share of every command the node ran.
    pub share: f64,
    /// Counted over sent (0: not listed).
    pub ratio: f64,
    pub listed: bool,
    /// Not listed, but in `WITHNOISE`'s list, marked as a row the noise
    /// could have made (else, not listed, it was in no sketch at all).
    pub marked_noise: bool,
    /// Did the truth lie within the bounds?
    pub covered: bool,
    /// The bounds, as shares of the count: (low, high).
    pub bar: (f64, f64),
    /// Keys listed above it that truly had a third of its accesses or
    /// fewer (the background's and redis-benchmark's keys).
    pub phantoms_above: usize,
}

/// Every row of one `HK.HOTKEYS READS COUNT 20 WITHBOUNDS`, against the
/// truth.
#[derive(Clone, Debug, Default)]
pub struct ListedRows {
    pub listed: usize,
    /// The truth within the row's 95% bounds.
    pub held: usize,
    /// The count within three times the truth, either way.
    pub within_three: usize,
    /// The largest count over its truth of a row that was no key of the
    /// shapes (a background or benchmark key); 0 if none was listed.
    pub worst_background: f64,
}

#[derive(Clone, Debug)]
pub struct Run {
    pub load: Load,
    pub keys: Vec<KeyReading>,
    pub rows: ListedRows,
    pub share_counted: f64,
    pub kept_share: f64,
    pub server_rate: f64,
}

#[derive(Default)]
pub struct ServerBounds {
    pub server: String,
    pub runs: Vec<Run>,
    /// µs per `HK.HOTKEYS COUNT 100`, without and with `WITHBOUNDS`.
    pub read_us: Option<(f64, f64)>,
    pub error: Option<String>,
}

impl ServerBounds {
    /// The runs under each load, for the loads that have some.
    pub fn by_load(&self) -> impl Iterator<Item = (Load, Vec<&Run>)> {
        LOADS.into_iter().filter_map(move |load| {
            let runs: Vec<&Run> = self.runs.iter().filter(|r| r.load == load).collect();
            (!runs.is_empty()).then_some((load, runs))
        })
    }
}

/// A reading of the house under `load`: the load runs for a few seconds
/// first (the tracker settles into it: coming from another load, it takes
/// a second or two to count all again after a flood, and its first
/// seconds are a transition, not the load), then the counts are forgotten
/// and the shapes sent for `seconds`.
fn one_run(server: &Server, load: Load, seconds: u64) -> Result<Run, String> {
    const SETTLE: Duration = Duration::from_secs(4);
    let mut con = server.connection().map_err(|e| e.to_string())?;
    let url = format!("redis://127.0.0.1:{}/", server.port);
    let mut benchmark = match load {
        Load::Saturating => {
            let child = saturate(server.port)?;
            std::thread::sleep(SETTLE);
            Some(child)
        }
        Load::Medium => {
            traffic::send(&url, &load.shapes(seconds), SETTLE).map_err(|e| e.to_string())?;
            None
        }
    };
    query::<()>(&mut con, &["HK.HOTKEYS", "RESET"])?;
    let commands = commands_processed(&mut con);
    let started = Instant::now();
    let sent = traffic::send(&url, &load.shapes(seconds), Duration::from_secs(seconds));
    let rows = hotkeys(&mut con, &["COUNT", "200", "WITHBOUNDS"]);
    let twenty = hotkeys(&mut con, &["READS", "COUNT", "20", "WITHBOUNDS"]);
    let noise = rows_marked_noise(&mut con);
    let wall = started.elapsed().as_secs_f64();
    let ran = commands_processed(&mut con) - commands;
    if let Some(child) = benchmark.as_mut() {
        let _ = child.kill();
        let _ = child.wait();
    }
    let (sent, rows, twenty, noise) = (sent.map_err(|e| e.to_string())?, rows?, twenty?, noise?);
    // What each of redis-benchmark's 100,000 keys was read: the commands
    // the node ran that the shapes did not send (an MGET is one command of
    // several reads), shared out.
    let mgets = sent.of("mget") as f64;
    let shape_commands = sent.total() as f64 - 3.0 * mgets;
    let per_benchmark_key = match load {
        Load::Saturating => (ran - shape_commands).max(0.0) / 100_000.0,
        Load::Medium => 0.0,
    };
    let rows_figures = listed_rows(&twenty, &sent, per_benchmark_key);
    let keys = KEYS
        .iter()
        .map(|&key| {
            let truth = sent.of(key) as f64;
            let at = rows.iter().position(|(k, _)| k == key);
            let (count, low, high) = at
                .and_then(|i| rows.get(i))
                .map_or((0.0, 0.0, 0.0), |(_, b)| (b.count, b.low, b.high));
            // Every key that is not one of the four is a background or
            // benchmark key: none had a third of any of the four's.
            let background = |r: &&(String, CountBounds)| !KEYS.contains(&r.0.as_str());
            let phantoms_above = at.map_or(0, |i| rows.iter().take(i).filter(background).count());
            KeyReading {
                share: truth / ran.max(1.0),
                ratio: count / truth.max(1.0),
                listed: at.is_some(),
                marked_noise: noise.iter().any(|k| k == key),
                covered: at.is_some()
                    && low <= truth * (1.0 + 1e-9)
                    && truth <= high * (1.0 + 1e-9),
                bar: if count > 0.0 {
                    (low / count, high / count)
                } else {
                    (0.0, 0.0)
                },
                phantoms_above,
            }
        })
        .collect();
    Ok(Run {
        load,
        keys,
        rows: rows_figures,
        share_counted: info_f64(&mut con, "tracker_share_counted").unwrap_or(f64::NAN),
        kept_share: info_f64(&mut con, "tracker_accesses_kept_share").unwrap_or(f64::NAN),
        server_rate: ran / wall,
    })
}

/// The keys `HK.HOTKEYS COUNT 400 WITHNOISE` marks as rows the noise
/// could have made (left out of the plain list).
pub(crate) fn rows_marked_noise(con: &mut redis::Connection) -> Result<Vec<String>, String> {
    let flat: Vec<redis::Value> = query(con, &["HK.HOTKEYS", "COUNT", "400", "WITHNOISE"])?;
    let marked = |row: &[redis::Value]| match row {
        [key, _, _, _, redis::Value::Int(1)] => redis::from_redis_value::<String>(key).ok(),
        _ => None,
    };
    Ok(flat.chunks(5).filter_map(marked).collect())
}

/// Every row of a list against its truth.
fn listed_rows(
    rows: &[(String, CountBounds)],
    sent: &traffic::Sent,
    per_benchmark_key: f64,
) -> ListedRows {
    let mut figures = ListedRows::default();
    for (key, b) in rows {
        let (count, low, high) = (b.count, b.low, b.high);
        let truth = match sent.of(key) {
            0 => per_benchmark_key,
            n => n as f64,
        };
        figures.listed += 1;
        let held = low <= truth * (1.0 + 1e-9) && truth <= high * (1.0 + 1e-9);
        if !held && std::env::var_os("HK_BENCH_ROWS").is_some() {
            eprintln!("    row {key}: {count:.0} [{low:.0}, {high:.0}] truth {truth:.0}");
        }
        figures.held += usize::from(held);
        let ratio = count / truth.max(1e-9);
        figures.within_three += usize::from((1.0 / 3.0..=3.0).contains(&ratio));
        if !KEYS.contains(&key.as_str()) {
            figures.worst_background = figures.worst_background.max(ratio);
        }
    }
    figures
}

/// µs per `HK.HOTKEYS COUNT 100`, without and with `WITHBOUNDS`, the best
/// of five rounds of 200 each.
fn read_cost(server: &Server) -> Result<(f64, f64), String> {
    let mut con = server.connection().map_err(|e| e.to_string())?;
    let mut best = [f64::INFINITY; 2];
    for _ in 0..5 {
        for (best, bounds) in best.iter_mut().zip([false, true]) {
            let started = Instant::now();
            let command: &[&str] = if bounds {
                &["HK.HOTKEYS", "COUNT", "100", "WITHBOUNDS"]
            } else {
                &["HK.HOTKEYS", "COUNT", "100"]
            };
            for _ in 0..200 {
                query::<redis::Value>(&mut con, command)?;
            }
            *best = best.min(started.elapsed().as_secs_f64() * 1e6 / 200.0);
        }
    }
    Ok((best[0], best[1]))
}

/// Every load on every server, `runs` runs each.
pub fn measure(module: &Path, quick: bool) -> Vec<ServerBounds> {
    let (runs, seconds) = if quick { (2, 8) } else { (6, 10) };
    let mut all = Vec::new();
    for binary in servers() {
        let mut out = ServerBounds {
            server: binary.clone(),
            ..Default::default()
        };
        let server = start_counting(&binary, module);
        let result = server.and_then(|server| {
            out.server = server_name(&server)?;
            for _ in 0..runs {
                for load in LOADS {
                    let r = one_run(&server, load, seconds)?;
                    let key = |(k, r): (&&str, &KeyReading)| {
                        let outside = match (r.covered, r.marked_noise) {
                            (true, _) => "",
                            (false, true) => " OUTSIDE (marked noise)",
                            (false, false) => " OUTSIDE",
                        };
                        let phantoms = match r.phantoms_above {
                            0 => String::new(),
                            n => format!(" {n} phantoms above"),
                        };
                        let (ratio, (low, high)) = (r.ratio, r.bar);
                        format!("{k} {ratio:.3} [{low:.2}, {high:.2}]{outside}{phantoms}")
                    };
                    let keys: Vec<String> = KEYS.iter().zip(&r.keys).map(key).collect();
                    eprintln!(
                        "  {} {}: {} (share counted {:.4}, kept {:.4}, {:.0} commands/s; rows {:?})",
                        out.server,
                        load.label(),
                        keys.join(", "),
                        r.share_counted,
                        r.kept_share,
                        r.server_rate,
                        r.rows
                    );
                    out.runs.push(r);
                }
            }
            out.read_us = Some(read_cost(&server)?);
            Ok(())
        });
        if let Err(e) = result {
            eprintln!("  error bars on {}: {e}", out.server);
            out.error = Some(e);
        }
        all.push(out);
    }
    all
}

/// The ratio farthest from 1 (NaN for none).
pub fn farthest_from_one(ratios: impl Iterator<Item = f64>) -> f64 {
    (ratios.max_by(|a, b| (a - 1.0).abs().total_cmp(&(b - 1.0).abs()))).unwrap_or(f64::NAN)
}

pub fn markdown(servers: &[ServerBounds]) -> String {
    let mut md = String::from(include_str!("../prose/tracking-bounds-intro.md"));
    for s in servers {
        if let Some(e) = &s.error {
            let _ = writeln!(
                md,
                "| {} | not measured: {e} | | | | | | | | | | |",
                s.server
            );
        }
        for (load, runs) in s.by_load() {
            for (k, key) in KEYS.iter().enumerate() {
                // Each run has a reading per key of KEYS, in order.
                let readings: Vec<&KeyReading> =
                    runs.iter().filter_map(|r| r.keys.get(k)).collect();
                let n = readings.len() as f64;
                let mean =
                    |f: &dyn Fn(&KeyReading) -> f64| readings.iter().map(|r| f(r)).sum::<f64>() / n;
                let worst = farthest_from_one(readings.iter().map(|r| r.ratio));
                let _ = writeln!(
                    md,
                    "| {} | {} | `{key}` | {:.2}% | {} | {}/{} | {} | {:.3} | {:.3} | {}/{} | [{:.2}, {:.2}] | {} |",
                    s.server,
                    load.label(),
                    100.0 * mean(&|r| r.share),
                    readings.len(),
                    readings.iter().filter(|r| r.listed).count(),
                    readings.len(),
                    readings.iter().filter(|r| r.marked_noise).count(),
                    mean(&|r| r.ratio),
                    worst,
                    readings.iter().filter(|r| r.covered).count(),
                    readings.len(),
                    mean(&|r| r.bar.0),
                    mean(&|r| r.bar.1),
                    readings.iter().map(|r| r.phantoms_above).sum::<usize>()
                );
            }
        }
    }
    md.push_str("\nEvery row of `HK.HOTKEYS READS COUNT 20 WITHBOUNDS` (the list an operator reads), hot key or not, against its truth: what was sent of it, or for one of `redis-benchmark`'s keys its share of what the benchmark sent. Rows listed over the runs (a list is shorter than 20 where the rest cannot be told from the noise), how many held their truth within their bounds, how many read within three times it, and the largest count over its truth of a row that was no key of the shapes:\n\n| server | load | rows listed | truth inside bounds | within 3x | worst background row |\n|---|---|---|---|---|---|\n");
    for s in servers {
        for (load, runs) in s.by_load() {
            let sum =
                |f: &dyn Fn(&ListedRows) -> usize| runs.iter().map(|r| f(&r.rows)).sum::<usize>();
            let listed = sum(&|r| r.listed);
            let worst = runs
                .iter()
                .map(|r| r.rows.worst_background)
                .fold(0.0, f64::max);
            let share = |n: usize| n as f64 / listed.max(1) as f64;
            let _ = writeln!(
                md,
                "| {} | {} | {listed} | {:.3} | {:.3} | {} |",
                s.server,
                load.label(),
                share(sum(&|r| r.held)),
                share(sum(&|r| r.within_three)),
                if worst > 0.0 {
                    format!("{worst:.2}")
                } else {
                    "none listed".into()
                }
            );
        }
    }
    md.push_str("\nHow the tracker ran (means over the runs): the share of time counted and of accesses kept, and what the node ran:\n\n| server | load | share of time counted | share of accesses kept | node commands/s |\n|---|---|---|---|---|\n");
    for s in servers {
        for (load, runs) in s.by_load() {
            let n = runs.len() as f64;
            let _ = writeln!(
                md,
                "| {} | {} | {:.4} | {:.4} | {:.0} |",
                s.server,
                load.label(),
                runs.iter().map(|r| r.share_counted).sum::<f64>() / n,
                runs.iter().map(|r| r.kept_share).sum::<f64>() / n,
                runs.iter().map(|r| r.server_rate).sum::<f64>() / n
            );
        }
    }
    md.push_str("\nWhat `WITHBOUNDS` costs a reader: µs per `HK.HOTKEYS COUNT 100` from one client (best of five rounds of 200, after the runs):\n\n| server | without | with `WITHBOUNDS` |\n|---|---|---|\n");
    for s in servers {
        if let Some((without, with)) = s.read_us {
            let _ = writeln!(md, "| {} | {without:.1} | {with:.1} |", s.server);
        }
    }
    md
}
