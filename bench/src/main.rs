//! `make bench`: accuracy, memory and speed of the HeavyKeeper module,
//! side by side with its peers, with fixed seeds. Writes a markdown report
//! and PNG plots; prints every goal with its measured value.

mod accuracy;
mod contenders;
mod fading;
mod merging;
mod plots;
mod redis_phase;
mod report;
mod row_layout;
mod speed;
mod tracking;
mod watch_bench;
mod workloads;

use accuracy::Accuracy;
use contenders::{ours_default, Contender, Kind};
use report::Goal;
use std::fmt::Write;
use std::path::PathBuf;
use std::time::Instant;
use workloads::Workload;

/// `MEMORY USAGE` adds the key's own bookkeeping to what the type reports;
/// 64 bytes covers it for short key names (32 measured for a 1-byte key).
const KEY_OVERHEAD: usize = 64;

struct Options {
    quick: bool,
    stream: Option<PathBuf>,
    gcide: PathBuf,
    module: PathBuf,
    out: PathBuf,
    threads: usize,
    /// Only this stage (accuracy, speed, redis, fading, merge, layout, tracking, watch); all when `None`.
    only: Option<String>,
}

impl Options {
    fn runs(&self, stage: &str) -> bool {
        self.only.as_deref().is_none_or(|o| o == stage)
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
            other => {
                eprintln!("unknown argument {other}; usage: hk-bench [--quick] [--stream FILE] [--gcide FILE] [--module SO] [--out DIR] [--threads N] [--only accuracy|speed|redis|fading|merge|layout|tracking|watch]");
                std::process::exit(2);
            }
        }
    }
    o
}

fn main() {
    let o = options();
    let started = Instant::now();
    let stage = |n: usize, what: &str| {
        eprintln!("[{n}/9] {what} ({:.0} s)", started.elapsed().as_secs_f64())
    };
    let (arrivals, distinct) = if o.quick {
        (1_000_000, 100_000)
    } else {
        (10_000_000, 1_000_000)
    };
    let budgets: Vec<usize> = if o.quick {
        vec![8 << 10, 32 << 10, 128 << 10, 512 << 10]
    } else {
        vec![
            4 << 10,
            8 << 10,
            16 << 10,
            32 << 10,
            64 << 10,
            128 << 10,
            256 << 10,
            512 << 10,
            1 << 20,
        ]
    };
    let ks = [10usize, 100, 1000];

    stage(1, "generating workloads");
    let mut loads = vec![
        workloads::zipf(0.8, distinct, arrivals, 1),
        workloads::zipf(1.0, distinct, arrivals, 2),
        workloads::zipf(1.2, distinct, arrivals, 3),
    ];
    match workloads::gcide(&o.gcide, o.quick.then_some(arrivals)) {
        Ok(w) => loads.push(w),
        Err(e) => eprintln!(
            "  no real text ({}: {e}); install dict-gcide",
            o.gcide.display()
        ),
    }
    loads.push(workloads::uniform(distinct, arrivals, 4));
    loads.push(workloads::shifting(distinct, arrivals, 5));
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
    let rows = if o.runs("accuracy") {
        accuracy::grid(&loads, &ks, &budgets, o.threads, &progress)
    } else {
        Vec::new()
    };

    stage(3, "default parameters");
    let defaults = if o.runs("accuracy") {
        default_parameters(&loads, &ks)
    } else {
        Vec::new()
    };

    stage(4, "in-process speed");
    let zipf1 = &loads[1];
    let rounds = if o.quick { 1 } else { 3 };
    let (equal, by_k) = if o.runs("speed") {
        (
            speed::at_equal_memory(zipf1, 100, 64 << 10, rounds),
            speed::ns_by_k(zipf1, &[10, 100, 1000, 10_000], rounds),
        )
    } else {
        (Vec::new(), Vec::new())
    };

    stage(5, "through Redis");
    let redis = if o.runs("redis") {
        redis_measurements(&o, zipf1)
    } else {
        RedisFigures::default()
    };

    stage(
        6,
        "fading: takeover after a shift, rate error; merging shards",
    );
    let fade = o.runs("fading").then(|| fading::measure(o.quick));
    let merges = if o.runs("merge") {
        merging::measure(&loads, &ks)
    } else {
        Vec::new()
    };

    stage(
        7,
        "row layout: pairs sharing every column, precision effect",
    );
    let layout = o.runs("layout").then(|| row_layout::measure(&loads));

    stage(
        8,
        "tracking a server's own hot keys: cost per command, accuracy",
    );
    let tracked = o.runs("tracking").then(|| {
        let module = std::fs::canonicalize(&o.module).unwrap_or_else(|_| o.module.clone());
        tracking::measure(&module, zipf1, o.quick)
    });

    stage(
        9,
        "watched sketches: event delays, cost per arrival, the cap",
    );
    let watched = o.runs("watch").then(|| {
        let module = std::fs::canonicalize(&o.module).unwrap_or_else(|_| o.module.clone());
        watch_bench::measure(&module, zipf1, o.quick)
    });

    let names: Vec<String> = loads.iter().map(|w| w.name.clone()).collect();
    // A quick run never overwrites the full run's report and plots.
    let suffix = if o.quick { "-quick" } else { "" };
    let mut goals = goals(
        &rows,
        &defaults,
        &equal,
        &by_k,
        &redis,
        &loads,
        fade.as_ref(),
    );
    if let Some(t) = &tracked {
        tracking_goals(t, &mut goals);
    }
    if let Some(w) = &watched {
        watch_goals(w, &mut goals);
    }
    let mut md = String::new();
    let _ = writeln!(md, "# HeavyKeeper benchmark report\n");
    let _ = writeln!(
        md,
        "Mode: {}. {} arrivals per synthetic workload over {} distinct items; fixed seeds. Machine: {} ({} cores). Run took {:.0} s.\n",
        if o.quick { "quick (`make bench QUICK=1`)" } else { "full (`make bench`)" },
        arrivals,
        distinct,
        cpu_model(),
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        started.elapsed().as_secs_f64()
    );
    let _ = writeln!(md, "## Goals\n\n{}", report::goals_table(&goals));
    let _ = writeln!(md, "## Default `HK.RESERVE key k`\n\nMemory is what the type reports to `MEMORY USAGE` at the end of the stream (items included), before the key's own ~32-64 bytes.\n");
    md.push_str("| workload | k | width x depth | memory | precision | rel. error | over-estimates |\n|---|---|---|---|---|---|---|\n");
    for d in &defaults {
        let _ = writeln!(
            md,
            "| {} | {} | {} x {} | {} B | {:.3} | {:.4} | {} |",
            d.workload,
            d.k,
            d.width,
            d.depth,
            d.memory,
            d.precision,
            d.relative_error,
            d.overestimates
        );
    }
    md.push_str("\n## Precision at equal memory\n\nBudgets count everything a sketch holds, items included (peers: their own `mem_bytes`; Space-Saving: its counters, index, heap and filter). A sketch that cannot fit a budget shows —. Precision counts an item tied with the true k-th as correct; relative error is over the true top-k items reported.\n\n");
    for k in ks {
        let _ = writeln!(md, "![precision k={k}](precision_k{k}{suffix}.png)\n");
        for w in &names {
            let _ = writeln!(
                md,
                "### {w}, k = {k}\n\n{}",
                report::precision_table(&rows, w, k, &budgets)
            );
        }
    }
    let error_budget = if o.quick { 128 << 10 } else { 64 << 10 };
    let _ = writeln!(
        md,
        "## Count errors at {}\n\nHeavyKeeper counts are lower bounds (never above the truth without a fingerprint collision); Space-Saving counts are upper bounds.\n\n{}",
        plots::human_bytes(error_budget as f64),
        report::error_table(&rows, error_budget)
    );
    let _ = write!(md, "## Speed\n\n![throughput](throughput{suffix}.png)\n\n| sketch | memory | M arrivals/s |\n|---|---|---|\n");
    for t in &equal {
        let _ = writeln!(md, "| {} | {} B | {:.2} |", t.kind.name(), t.memory, t.mops);
    }
    md.push_str(
        "\nOur default sketch, ns per arrival by k (zipf-1.0):\n\n| k | ns/arrival |\n|---|---|\n",
    );
    for (k, ns) in &by_k {
        let _ = writeln!(md, "| {k} | {ns:.1} |");
    }
    md.push_str(&redis.markdown());
    if let Some(fade) = &fade {
        md.push_str(&fade.markdown());
    }
    if !merges.is_empty() {
        md.push_str(&merging::markdown(&merges));
    }
    if let Some(layout) = &layout {
        md.push_str(&layout.markdown());
    }
    if let Some(tracked) = &tracked {
        md.push_str(&tracked.markdown());
    }
    if let Some(watched) = &watched {
        md.push_str(&watched.markdown());
    }

    if let Err(e) = std::fs::create_dir_all(&o.out) {
        eprintln!("cannot create {}: {e}", o.out.display());
    }
    if plots::load_font() {
        for k in ks {
            if let Err(e) = plots::precision_vs_memory(
                &rows,
                k,
                &names,
                &o.out.join(format!("precision_k{k}{suffix}.png")),
            ) {
                eprintln!("plot k={k}: {e}");
            }
        }
        if let Err(e) = plots::throughput_bars(
            &equal,
            "k = 100, 64 KiB each, zipf-1.0",
            &o.out.join(format!("throughput{suffix}.png")),
        ) {
            eprintln!("plot throughput: {e}");
        }
    } else {
        eprintln!("no font found (apt-get install fonts-dejavu-core): plots skipped");
    }
    let report_path = o.out.join(if o.quick {
        "REPORT-quick.md"
    } else {
        "REPORT.md"
    });
    if let Err(e) = std::fs::write(&report_path, &md) {
        eprintln!("cannot write {}: {e}", report_path.display());
    }

    println!("\n{}", report::goals_table(&goals));
    println!(
        "Report: {}  ({:.0} s)",
        report_path.display(),
        started.elapsed().as_secs_f64()
    );
}

struct DefaultRun {
    workload: String,
    k: usize,
    width: u32,
    depth: u32,
    memory: usize,
    precision: f64,
    relative_error: f64,
    overestimates: usize,
}

fn default_parameters(loads: &[Workload], ks: &[usize]) -> Vec<DefaultRun> {
    let mut out = Vec::new();
    for w in loads
        .iter()
        .filter(|w| w.name.starts_with("zipf") || w.name.starts_with("gcide"))
    {
        let index = w.index();
        for &k in ks {
            let mut sketch = ours_default(k);
            for item in w.arrivals() {
                sketch.add(item);
            }
            let (precision, relative_error, _, overestimates) =
                accuracy::score(w, &index, k, &sketch.top());
            let p = sketch.0.params();
            out.push(DefaultRun {
                workload: w.name.clone(),
                k,
                width: p.width,
                depth: p.depth,
                memory: sketch.memory_bytes(),
                precision,
                relative_error,
                overestimates,
            });
        }
    }
    out
}

#[derive(Default)]
struct RedisFigures {
    versus_incr: Vec<redis_phase::VersusIncr>,
    server_ns: Vec<(usize, f64)>,
    error: Option<String>,
}

impl RedisFigures {
    fn markdown(&self) -> String {
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
        md.push_str("\nServer-side cost of `HK.ADD` with 1000-item batches (zipf-1.0), from `INFO commandstats`:\n\n| k | ns per item |\n|---|---|\n");
        for (k, ns) in &self.server_ns {
            let _ = writeln!(md, "| {k} | {ns:.1} |");
        }
        md
    }
}

fn redis_measurements(o: &Options, w: &Workload) -> RedisFigures {
    let run = || -> Result<RedisFigures, String> {
        // redis-server resolves a relative module path from its --dir.
        let module =
            std::fs::canonicalize(&o.module).map_err(|e| format!("{}: {e}", o.module.display()))?;
        let server = redis_phase::Server::start(&module)?;
        let requests = if o.quick { 200_000 } else { 1_000_000 };
        let versus_incr = redis_phase::add_versus_incr(&server, requests, 3)?;
        let batches = if o.quick { 200 } else { 1000 };
        let mut server_ns = Vec::new();
        for k in [100, 1000] {
            server_ns.push((
                k,
                redis_phase::server_ns_per_item(&server, w, k, 1000, batches)?,
            ));
        }
        Ok(RedisFigures {
            versus_incr,
            server_ns,
            error: None,
        })
    };
    run().unwrap_or_else(|e| {
        eprintln!("  through-Redis phase failed: {e}");
        RedisFigures {
            error: Some(e),
            ..Default::default()
        }
    })
}

fn goals(
    rows: &[Accuracy],
    defaults: &[DefaultRun],
    equal: &[speed::Throughput],
    by_k: &[(usize, f64)],
    redis: &RedisFigures,
    loads: &[Workload],
    fade: Option<&fading::FadingFigures>,
) -> Vec<Goal> {
    let mut goals = Vec::new();
    let (compared, losses) = report::precision_losses(rows);
    if compared > 0 {
        goals.push(Goal::new(
            "precision at equal memory >= every peer (every workload, k, budget)",
            "0 losses",
            if losses.is_empty() {
                format!("0 losses in {compared} comparisons")
            } else {
                format!(
                    "{} losses in {compared}: {}",
                    losses.len(),
                    losses.join("; ")
                )
            },
            losses.is_empty(),
        ));
    }
    for (k, floor, limit) in [(100usize, 0.99, 64 * 1024usize), (1000, 0.97, 140_000)] {
        let runs: Vec<&DefaultRun> = defaults.iter().filter(|d| d.k == k).collect();
        if runs.is_empty() {
            continue;
        }
        let worst = runs.iter().map(|d| d.precision).fold(1.0, f64::min);
        let most = runs
            .iter()
            .map(|d| d.memory + KEY_OVERHEAD)
            .max()
            .unwrap_or(0);
        goals.push(Goal::new(
            format!("default k={k}: precision on every Zipf and the real text"),
            format!(">= {floor} within {limit} B"),
            format!("worst {worst:.3}, largest {most} B (with key overhead)"),
            !runs.is_empty() && worst >= floor && most <= limit,
        ));
    }
    let mops = |kind| equal.iter().find(|t| t.kind == kind).map(|t| t.mops);
    if let (Some(ours), Some(topk), Some(cuckoo)) = (
        mops(Kind::Ours),
        mops(Kind::CrateTopK),
        mops(Kind::CrateCuckoo),
    ) {
        goals.push(Goal::new(
            "in-process throughput vs heavykeeper TopK",
            ">= 1.5x",
            format!("{:.2}x ({ours:.1} vs {topk:.1} M/s)", ours / topk),
            ours >= 1.5 * topk,
        ));
        goals.push(Goal::new(
            "in-process throughput vs heavykeeper CuckooTopK",
            ">= 1.0x",
            format!("{:.2}x ({ours:.1} vs {cuckoo:.1} M/s)", ours / cuckoo),
            ours >= cuckoo,
        ));
    }
    if let Some(v) = redis.versus_incr.iter().find(|v| v.pipeline == 16) {
        let ratio = v.add_rps / v.incr_rps;
        goals.push(Goal::new(
            "HK.ADD through Redis vs INCR, -P 16",
            ">= 0.9x",
            format!(
                "{ratio:.3}x (a read-only HK.QUERY: {:.3}x)",
                v.query_rps / v.incr_rps
            ),
            ratio >= 0.9,
        ));
    }
    if let Some((_, ns)) = redis.server_ns.iter().find(|(k, _)| *k == 1000) {
        goals.push(Goal::new(
            "server-side HK.ADD cost, 1000-item batches, k=1000",
            "<= 150 ns/item",
            format!("{ns:.1} ns/item"),
            *ns <= 150.0,
        ));
    }
    let ns = |k| by_k.iter().find(|(kk, _)| *kk == k).map(|(_, ns)| *ns);
    if let (Some(small), Some(large)) = (ns(10), ns(10_000)) {
        goals.push(Goal::new(
            "ns/arrival at k=10000 vs k=10",
            "<= 1.5x",
            format!("{:.2}x ({large:.1} vs {small:.1} ns)", large / small),
            large <= 1.5 * small,
        ));
    }
    if let Some(f) = fade {
        goals.push(Goal::new(
            "fading: half-lives until the new hot set is >= 95% of the listing",
            "reported",
            f.takeover_half_lives
                .map_or("not within 10".into(), |h| format!("{h:.2}")),
            f.takeover_half_lives.is_some(),
        ));
        let worst = f
            .rates
            .iter()
            .map(|(t, r)| ((r - t) / t).abs())
            .fold(0.0, f64::max);
        goals.push(Goal::new(
            "fading: steady-rate error",
            "<= 10%",
            format!("{:.2}% worst", worst * 100.0),
            worst <= 0.10,
        ));
    }
    if !rows.is_empty() {
        if let Some(u) = loads.iter().find(|w| w.name == "uniform") {
            let over: usize = rows
                .iter()
                .filter(|r| r.kind == Kind::Ours && r.workload == u.name)
                .map(|r| r.overestimates)
                .sum();
            goals.push(Goal::new(
                "uniform stream: no reported count above the truth (ours)",
                "0",
                over.to_string(),
                over == 0,
            ));
        }
    }
    goals
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into())
}

fn tracking_goals(t: &tracking::TrackingFigures, goals: &mut Vec<Goal>) {
    for (sampled, limit, what) in [
        (false, 0.01, "full tracking"),
        (true, 0.003, "1-in-16 sampling"),
    ] {
        if let Some(loss) = t.worst_loss(sampled) {
            goals.push(Goal::new(
                format!("tracking throughput loss, {what} (GET/SET/MGET, -P 16 and -P 1)"),
                format!("<= {:.1}%", limit * 100.0),
                format!("worst {:.2}%", loss * 100.0),
                loss <= limit,
            ));
        }
    }
    if let Some(p) = t.precision {
        goals.push(Goal::new(
            "tracking: top-100 of a Zipf(1.0) GET stream through the server",
            ">= 0.99",
            format!("{p:.3}"),
            p >= 0.99,
        ));
    }
    for (sample, limit) in [(1u64, 0.05), (16, 0.10)] {
        if let Some(e) = t.worst_rate_error(sample) {
            goals.push(Goal::new(
                format!("tracking: steady-key rate error, sampling 1 in {sample}"),
                format!("<= {:.0}%", limit * 100.0),
                format!("worst {:.2}%", e * 100.0),
                e <= limit,
            ));
        }
    }
}

fn watch_goals(w: &watch_bench::WatchFigures, goals: &mut Vec<Goal>) {
    if let Some((p50, p99)) = w.arrival_delay_ms {
        goals.push(Goal::new(
            "watch: arrival to subscriber, p99 (loopback)",
            "<= 5 ms",
            format!("p50 {p50:.2} ms, p99 {p99:.2} ms"),
            p99 <= 5.0,
        ));
    }
    if let Some((p50, p99, interval)) = w.fade_delay_ms {
        goals.push(Goal::new(
            "watch: fade crossing to subscriber, p99",
            format!("<= {} ms (interval + 5)", interval + 5),
            format!("p50 {p50:.1} ms, p99 {p99:.1} ms"),
            p99 <= interval as f64 + 5.0,
        ));
    }
    if let Some((plain, above, members)) = w.add_ns {
        let extra = above / plain - 1.0;
        goals.push(Goal::new(
            "watch: HK.ADD cost per item, watched (ABOVE) vs unwatched",
            "<= +5%",
            format!(
                "{:+.1}% ({above:.1} vs {plain:.1} ns); MEMBERS on a churning top-1000: {:+.1}%",
                extra * 100.0,
                (members / plain - 1.0) * 100.0
            ),
            extra <= 0.05,
        ));
    }
    if let Some((rate, cap)) = w.capped {
        goals.push(Goal::new(
            "watch: events per second at the cap (reported)",
            format!("<= {cap}"),
            format!("{rate:.0}"),
            rate <= cap as f64 * 1.05,
        ));
    }
}
