//! `make bench`: accuracy, memory and speed of the HeavyKeeper module,
//! side by side with its peers, with fixed seeds. Writes a markdown report
//! and PNG plots; prints every goal with its measured value.

mod accuracy;
mod contenders;
mod fading;
mod goals;
mod plots;
mod redis_phase;
mod report;
mod row_layout;
mod shapes;
mod steady_load;
mod ties;
mod tracker_settings;
mod tracking;
mod tracking_bounds;
mod tracking_bursts;
mod tracking_clients;
mod tracking_cost;
mod tracking_truth;
mod watch_bench;
mod workloads;

use accuracy::Accuracy;
use std::path::PathBuf;
use std::time::Instant;

/// `MEMORY USAGE` adds the key's own bookkeeping to what the type reports;
/// 64 bytes covers it for short key names (32 measured for a 1-byte key).
pub const KEY_OVERHEAD: usize = 64;

struct Options {
    quick: bool,
    stream: Option<PathBuf>,
    gcide: PathBuf,
    module: PathBuf,
    out: PathBuf,
    threads: usize,
    /// Only these stages, comma-separated (accuracy, shapes, speed, redis,
    /// fading, merge, layout, ties, tracking, bounds, bursts, clients, truth, watch); all when
    /// `None`.
    only: Option<String>,
    /// Only plot `hk-top rebalance --watch` from this file of figures.
    plot_watch: Option<PathBuf>,
}

impl Options {
    fn runs(&self, stage: &str) -> bool {
        self.only
            .as_deref()
            .is_none_or(|o| o.split(',').any(|s| s == stage))
    }

    /// What `measure` measures where `stage` runs, else nothing.
    fn measured<T: Default>(&self, stage: &str, measure: impl FnOnce() -> T) -> T {
        self.runs(stage).then(measure).unwrap_or_default()
    }
}

fn options() -> Options {
    let mut o = Options {
        quick: false,
        stream: None,
        gcide: PathBuf::from("/usr/share/dictd/gcide.dict.dz"),
        module: PathBuf::from("target/release/libheavykeeper_redis.so"),
        out: PathBuf::from("bench/results"),
        threads: 2,
        only: None,
        plot_watch: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--quick" => o.quick = true,
            "--stream" => o.stream = args.next().filter(|s| !s.is_empty()).map(PathBuf::from),
            "--gcide" => o.gcide = args.next().map(PathBuf::from).unwrap_or(o.gcide),
            "--module" => o.module = args.next().map(PathBuf::from).unwrap_or(o.module),
            "--out" => o.out = args.next().map(PathBuf::from).unwrap_or(o.out),
            "--threads" => o.threads = args.next().and_then(|t| t.parse().ok()).unwrap_or(2),
            "--only" => o.only = args.next(),
            "--plot-watch" => o.plot_watch = args.next().map(PathBuf::from),
            other => {
                eprintln!("unknown argument {other}; usage: hk-bench [--quick] [--stream FILE] [--gcide FILE] [--module SO] [--out DIR] [--threads N] [--only STAGE[,STAGE...]: accuracy|shapes|speed|redis|fading|merge|layout|ties|tracking|bounds|bursts|clients|truth|watch]");
                std::process::exit(2);
            }
        }
    }
    o
}

/// Fails only where a fixed parameter is wrong (a generator's or a
/// sketch's): each stage that needs a server reports its own failure.
fn main() -> Result<(), String> {
    let o = options();
    if let Some(figures) = &o.plot_watch {
        return plot_watch(figures, &o.out);
    }
    let started = Instant::now();
    let stage = |n: usize, what: &str| {
        eprintln!("[{n}/9] {what} ({:.0} s)", started.elapsed().as_secs_f64())
    };
    let (arrivals, distinct) = if o.quick {
        (1_000_000, 100_000)
    } else {
        (10_000_000, 1_000_000)
    };
    // Bytes: 4 KiB to 1 MiB, doubling; quick, every other one from 8 KiB.
    let budgets: Vec<usize> = if o.quick {
        (13..=19).step_by(2).map(|b| 1 << b).collect()
    } else {
        (12..=20).map(|b| 1 << b).collect()
    };
    let mut m = Measurements {
        quick: o.quick,
        partial: o.only.is_some(),
        arrivals,
        distinct,
        ks: vec![10, 100, 1000],
        budgets,
        shape_seeds: if o.quick { 2 } else { 5 },
        ..Default::default()
    };

    stage(1, "generating workloads");
    let mut loads = vec![
        workloads::zipf(0.8, distinct, arrivals, 1)?,
        workloads::zipf(1.0, distinct, arrivals, 2)?,
        workloads::zipf(1.2, distinct, arrivals, 3)?,
    ];
    match workloads::gcide(&o.gcide, o.quick.then_some(arrivals)) {
        Ok(w) => loads.push(w),
        Err(e) => eprintln!(
            "  no real text ({}: {e}); install dict-gcide",
            o.gcide.display()
        ),
    }
    match workloads::python_tokens() {
        Ok(w) => loads.push(w),
        Err(e) => eprintln!("  no source tokens ({e}); install libpython3-stdlib"),
    }
    loads.push(workloads::uniform(distinct, arrivals, 4)?);
    loads.push(workloads::shifting(distinct, arrivals, 5)?);
    if let Some(path) = &o.stream {
        match workloads::lines_of(path) {
            Ok(w) => loads.push(w),
            Err(e) => eprintln!("  cannot read STREAM={}: {e}", path.display()),
        }
    }
    for w in &loads {
        eprintln!(
            "  {}: {} arrivals, {} distinct",
            w.name,
            w.stream.len(),
            w.distinct()
        );
    }

    stage(2, "accuracy at equal memory, every sketch, budget and k");
    let progress = |done: usize, total: usize, r: &Accuracy| {
        if done.is_multiple_of(10) || done == total {
            eprintln!(
                "  {done}/{total} runs ({} k={} {} {:.3})",
                r.workload,
                r.k,
                r.kind.short(),
                r.precision
            );
        }
    };
    m.rows = o.measured("accuracy", || {
        accuracy::grid(&loads, &m.ks, &m.budgets, o.threads, &progress)
    });

    stage(
        3,
        "default parameters, and the shapes they were chosen from",
    );
    m.defaults = o.measured("accuracy", || accuracy::default_parameters(&loads, &m.ks));

    m.shapes = o.measured("shapes", || shapes::measure(&loads, m.shape_seeds));

    stage(4, "in-process speed");
    // Zipf(1.0), the second of the three made first.
    let zipf1 = loads.get(1).ok_or("no Zipf(1.0) workload")?;
    let rounds = if o.quick { 1 } else { 3 };
    (m.equal, m.by_k) = o.measured("speed", || {
        (
            contenders::at_equal_memory(zipf1, 100, 64 << 10, rounds),
            contenders::ns_by_k(zipf1, &[10, 100, 1000, 10_000], rounds),
        )
    });

    stage(5, "through Redis");
    m.redis = o.measured("redis", || redis_phase::measure(&o.module, o.quick));

    stage(
        6,
        "fading: takeover after a shift, rate error; merging shards",
    );
    m.fade = o
        .runs("fading")
        .then(|| fading::measure(o.quick))
        .transpose()?;
    m.merges = o.measured("merge", || accuracy::merges(&loads, &m.ks));

    stage(
        7,
        "row layout: pairs sharing every column, precision effect",
    );
    m.layout = o.runs("layout").then(|| row_layout::measure(&loads));
    m.ties = o
        .runs("ties")
        .then(|| ties::measure(&loads, o.quick))
        .transpose()?;

    stage(
        8,
        "tracking a server's own hot keys: cost per command, accuracy",
    );
    let module = std::fs::canonicalize(&o.module).unwrap_or_else(|_| o.module.clone());
    m.tracked = o
        .runs("tracking")
        .then(|| tracking::measure(&module, zipf1, o.quick));
    if o.runs("bounds") {
        eprintln!("  counts and error bars by traffic shape, every server");
        let bounds = tracking_bounds::measure(&module, o.quick);
        m.tracked.get_or_insert_with(Default::default).bounds = bounds;
    }
    if o.runs("bursts") {
        eprintln!("  a key read in three pipelines beside a saturating load, reading after reading, every server");
        let bursts = tracking_bursts::measure(&module, o.quick);
        m.tracked.get_or_insert_with(Default::default).bursts = bursts;
    }
    if o.runs("clients") {
        eprintln!("  who drives a hot key: shares against what each host sent, every server");
        let clients = tracking_clients::measure(&module, o.quick);
        m.tracked.get_or_insert_with(Default::default).clients = clients;
    }
    if o.runs("truth") {
        eprintln!("  counts against truth at the default, every server");
        let truth = tracking_truth::measure(&module, o.quick);
        m.tracked.get_or_insert_with(Default::default).truth = truth;
    }

    stage(
        9,
        "watched sketches: event delays, cost per arrival, the cap",
    );
    m.watched = o
        .runs("watch")
        .then(|| watch_bench::measure(&module, zipf1, o.quick));

    m.names = loads.iter().map(|w| w.name.clone()).collect();
    m.seconds = started.elapsed().as_secs_f64();
    m.goals = goals::all(&m);
    let report_path = report::write(&m, &o.out);
    println!("\n{}", report::goals_table(&m.goals));
    println!(
        "Report: {}  ({:.0} s)",
        report_path.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Everything one run measured, for the report.
#[derive(Default)]
pub struct Measurements {
    pub quick: bool,
    /// Only some stages ran (`--only`).
    pub partial: bool,
    pub arrivals: usize,
    pub distinct: usize,
    pub seconds: f64,
    pub ks: Vec<usize>,
    pub budgets: Vec<usize>,
    pub names: Vec<String>,
    pub goals: Vec<report::Goal>,
    pub rows: Vec<Accuracy>,
    pub defaults: Vec<accuracy::DefaultRun>,
    pub equal: Vec<contenders::Throughput>,
    pub by_k: Vec<(usize, f64)>,
    pub redis: redis_phase::RedisFigures,
    pub ties: Option<ties::TieFigures>,
    pub fade: Option<fading::FadingFigures>,
    pub merges: Vec<accuracy::MergeRow>,
    pub layout: Option<row_layout::LayoutFigures>,
    pub shapes: Vec<shapes::ShapeRow>,
    pub shape_seeds: u64,
    pub tracked: Option<tracking::TrackingFigures>,
    pub watched: Option<watch_bench::WatchFigures>,
}

/// The `--watch` plot, from the `watch figures` lines of `figures` (each
/// prefixed with its server by bench/run.sh).
fn plot_watch(figures: &std::path::Path, out: &std::path::Path) -> Result<(), String> {
    let text =
        std::fs::read_to_string(figures).map_err(|e| format!("{}: {e}", figures.display()))?;
    let runs: Vec<(String, Vec<(f64, f64)>)> = (text.lines())
        .filter(|l| l.contains("watch figures"))
        .map(|l| {
            let server = l.split_once(':').map_or("", |(s, _)| s).to_string();
            (server, plots::watch_points(l))
        })
        .filter(|(_, points)| !points.is_empty())
        .collect();
    if runs.is_empty() {
        return Err(format!("no watch figures in {}", figures.display()));
    }
    plots::load_font();
    let path = out.join("rebalance-watch.png");
    plots::rebalance_watch(&runs, &path).map_err(|e| e.to_string())?;
    eprintln!("plot: {}", path.display());
    Ok(())
}
