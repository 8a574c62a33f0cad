//! Every goal the issues set, with its measured value: met or not.

use crate::accuracy::DefaultRun;
use crate::contenders::Kind;
use crate::report::{self, Goal, Measure};
use crate::tracking_bounds::farthest_from_one;
use crate::tracking_cost::Mode;
use crate::tracking_truth::{Scenario, SCENARIOS};
use crate::Measurements;
use crate::{tracking, watch_bench, KEY_OVERHEAD};

/// Every goal of the stages that ran, from what they measured.
pub fn all(m: &Measurements) -> Vec<Goal> {
    let mut goals = sketch_goals(m);
    if let Some(t) = &m.tracked {
        tracking_goals(t, &mut goals);
    }
    if let Some(w) = &m.watched {
        watch_goals(w, &mut goals);
    }
    goals
}

/// The sketch's own goals: accuracy and memory against its peers, speed,
/// through the server, fading.
fn sketch_goals(m: &Measurements) -> Vec<Goal> {
    let (rows, defaults, equal, by_k, redis) = (&m.rows, &m.defaults, &m.equal, &m.by_k, &m.redis);
    let fade = m.fade.as_ref();
    let mut goals = Vec::new();
    for (measure, name) in [
        (Measure::Precision, "precision"),
        (Measure::CountError, "relative count error"),
    ] {
        let (compared, losses) = report::losses(rows, measure);
        if compared == 0 {
            continue;
        }
        goals.push(Goal::new(
            format!(
                "{name} at equal memory at least as good as every peer (every workload, k, budget)"
            ),
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
    for (k, floor, limit) in [(100usize, 0.99, 32 * 1024usize), (1000, 0.99, 140_000)] {
        let runs: Vec<&DefaultRun> = defaults.iter().filter(|d| d.k == k).collect();
        if runs.is_empty() {
            continue;
        }
        let worst = runs.iter().map(|d| d.precision).fold(1.0, f64::min);
        let most = runs
            .iter()
            .fold(0, |most, d| most.max(d.memory + KEY_OVERHEAD));
        goals.push(Goal::new(
            format!("default k={k}: precision on every Zipf and real stream"),
            format!(">= {floor} within {limit} B"),
            format!("worst {worst:.3}, largest {most} B (with key overhead)"),
            worst >= floor && most <= limit,
        ));
    }
    let mops = |kind| equal.iter().find(|t| t.kind == kind).map(|t| t.mops);
    for (peer, name, times) in [
        (Kind::CrateTopK, "TopK", 1.5),
        (Kind::CrateCuckoo, "CuckooTopK", 1.3),
    ] {
        if let (Some(ours), Some(theirs)) = (mops(Kind::Ours), mops(peer)) {
            goals.push(Goal::new(
                format!("in-process throughput vs heavykeeper {name}"),
                format!(">= {times}x"),
                format!("{:.2}x ({ours:.1} vs {theirs:.1} M/s)", ours / theirs),
                ours >= times * theirs,
            ));
        }
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
    if let Some(costs) = &redis.batch_costs {
        let ns = |k| at_k(&costs.add_ns, k);
        for k in [100, 1000] {
            if let Some(ns) = ns(k) {
                let ratio = ns / costs.pfadd_ns;
                goals.push(Goal::new(
                    format!("server-side HK.ADD vs PFADD per item, 1000-item batches, k={k}"),
                    "<= 1.5x",
                    format!("{ratio:.2}x ({ns:.1} vs {:.1} ns)", costs.pfadd_ns),
                    ratio <= 1.5,
                ));
            }
        }
        if let (Some(small), Some(large)) = (ns(10), ns(10_000)) {
            goals.push(Goal::new(
                "server-side ns/item at k=10000 vs k=10 (Zipf(1.0), 100k distinct)",
                "<= 1.3x",
                format!("{:.2}x ({large:.1} vs {small:.1} ns)", large / small),
                large <= 1.3 * small,
            ));
        }
    }
    let ns = |k| at_k(by_k, k);
    if let (Some(small), Some(large)) = (ns(10), ns(10_000)) {
        goals.push(Goal::new(
            "in-process ns/arrival at k=10000 vs k=10 (reported)",
            "reported",
            format!("{:.2}x ({large:.1} vs {small:.1} ns)", large / small),
            true,
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
    if !rows.is_empty() && m.names.iter().any(|name| name == "uniform") {
        let over: usize = rows
            .iter()
            .filter(|r| r.kind == Kind::Ours && r.workload == "uniform")
            .map(|r| r.overestimates)
            .sum();
        goals.push(Goal::new(
            "uniform stream: no reported count above the truth (ours)",
            "0",
            over.to_string(),
            over == 0,
        ));
    }
    goals
}

/// The figure for `k` among figures by k.
fn at_k(figures: &[(usize, f64)], k: usize) -> Option<f64> {
    figures.iter().find(|(kk, _)| *kk == k).map(|(_, x)| *x)
}

/// Issues 33 and 44's targets for every reading: per server and load, every
/// key of the six shapes listed in every run, the steady one within ±40% in
/// each run and ±20% over the runs, the truth inside the bounds in at least
/// 90% of the readings, no phantom row above any of them; and of every row
/// of `HK.HOTKEYS READS COUNT 20`, hot or not, at least 90% within their
/// bounds and within three times their truth.
fn bounds_goals(t: &tracking::TrackingFigures, goals: &mut Vec<Goal>) {
    use crate::tracking_bounds::KEYS;
    for s in &t.bounds {
        for (load, runs) in s.by_load() {
            let what = |goal: &str| format!("{goal}, {}, on {}", load.label(), s.server);
            let readings = runs.len() * KEYS.len();
            let keys = || runs.iter().flat_map(|r| &r.keys);
            let listed = keys().filter(|k| k.listed).count();
            // Their shares of what the node ran: ~10% each at ~20k commands/s,
            // a few tenths of a percent beside a saturating load (the issue's
            // line is 1%; held to every reading all the same).
            let least = keys().map(|k| k.share).fold(f64::INFINITY, f64::min);
            let most = keys().map(|k| k.share).fold(0.0, f64::max);
            goals.push(Goal::new(
                what("every key of the six shapes (steady, ten bursts a second, three large bursts, on-off, many clients, MGET) listed"),
                "in every reading",
                format!(
                    "{listed} of {readings} (each {:.2}-{:.2}% of the node's commands; of those unlisted, {} marked noise, the rest in no sketch)",
                    100.0 * least,
                    100.0 * most,
                    keys().filter(|k| k.marked_noise).count()
                ),
                listed == readings,
            ));
            // `steady` is KEYS' first, and each run has a reading per key.
            let steady: Vec<f64> = runs
                .iter()
                .filter_map(|r| r.keys.first())
                .map(|k| k.ratio)
                .collect();
            let worst = farthest_from_one(steady.iter().copied());
            let mean = steady.iter().sum::<f64>() / steady.len() as f64;
            goals.push(Goal::new(
                what("the steady key's count"),
                "within ±40% each reading, ±20% over the runs",
                format!(
                    "worst {:+.1}%, mean {:+.1}% ({} runs)",
                    100.0 * (worst - 1.0),
                    100.0 * (mean - 1.0),
                    steady.len()
                ),
                (worst - 1.0).abs() <= 0.4 && (mean - 1.0).abs() <= 0.2,
            ));
            let covered = keys().filter(|k| k.covered).count();
            goals.push(Goal::new(
                what("the truth inside the 95% bounds"),
                ">= 90% of readings",
                format!("{covered} of {readings}"),
                covered as f64 >= 0.9 * readings as f64,
            ));
            let phantoms: usize = keys().map(|k| k.phantoms_above).sum();
            goals.push(Goal::new(
                what("phantom rows (a key with a third of the accesses or fewer listed above)"),
                "none",
                format!("{phantoms}"),
                phantoms == 0,
            ));
            let rows = runs.iter().map(|r| &r.rows);
            let listed: usize = rows.clone().map(|r| r.listed).sum();
            let held: usize = rows.clone().map(|r| r.held).sum();
            let within: usize = rows.clone().map(|r| r.within_three).sum();
            let share = |n: usize| n as f64 / listed.max(1) as f64;
            goals.push(Goal::new(
                what("every row of HK.HOTKEYS READS COUNT 20: the truth inside its 95% bounds"),
                ">= 90% of all rows listed",
                format!("{held} of {listed} ({:.3})", share(held)),
                share(held) >= 0.9,
            ));
            goals.push(Goal::new(
                what("every row of HK.HOTKEYS READS COUNT 20: its count within 3 times its truth"),
                ">= 90% of all rows listed",
                format!("{within} of {listed} ({:.3})", share(within)),
                share(within) >= 0.9,
            ));
        }
    }
}

/// Issue 44's "no hot key invisible for when it arrives", for the shape
/// that time slots find hardest: a key read in three pipelines, 1% of a
/// saturated node's reading, listed in every reading and within its bounds.
fn bursts_goals(t: &tracking::TrackingFigures, goals: &mut Vec<Goal>) {
    for s in t.bursts.iter().filter(|s| s.error.is_none()) {
        let n = s.readings.len();
        goals.push(Goal::new(
            format!("a key read in three pipelines (1% of the reading) beside a saturating load, listed, on {}", s.server),
            "in every 8 s reading",
            format!("{} of {n}", s.listed()),
            s.listed() == n,
        ));
        goals.push(Goal::new(
            format!(
                "the same key, the truth within its 95% bounds, on {}",
                s.server
            ),
            ">= 90% of readings",
            format!("{} of {n}", s.covered()),
            s.covered() * 10 >= n * 9,
        ));
    }
}

/// Issue 27's targets for the tracker: counts at the default against the
/// truth at each load, and what it costs per `GET` (instructions, callgrind)
/// at the default and counting every command, on every server measured.
fn tracking_goals(t: &tracking::TrackingFigures, goals: &mut Vec<Goal>) {
    bounds_goals(t, goals);
    bursts_goals(t, goals);
    for sampling in t.samplings.iter().filter(|s| s.sample == 1) {
        if let Some(worst) = sampling.precision_20k.iter().copied().reduce(f64::min) {
            goals.push(Goal::new(
                "tracking every command (track-sample 1): top-100 of 300,000 Zipf(1.0) GETs over 20,000 keys",
                ">= 0.99 in every seed",
                format!("{:?}", sampling.precision_20k),
                worst >= 0.99,
            ));
        }
    }
    for s in &t.truth {
        let on = |what: &str| format!("{what} on {}", s.server);
        if let Some(e) = &s.error {
            goals.push(Goal::new(
                on("tracking at the default, counts against truth"),
                "measured",
                format!("not measured: {e}"),
                false,
            ));
        }
        let runs = |scenario| s.of(scenario).count();
        for scenario in SCENARIOS {
            // Every command and beside a saturating load have goals of their own.
            let within = match scenario {
                Scenario::Light => 0.03,
                Scenario::Every | Scenario::Saturating => continue,
                _ => 0.15,
            };
            if let Some(worst) = s.worst(scenario) {
                goals.push(Goal::new(
                    on(&format!(
                        "tracking at the default, {}: counts of x and steady",
                        scenario.label()
                    )),
                    format!("every count within {:.0}% of the truth", 100.0 * within),
                    format!("worst {:.1}% ({} runs)", 100.0 * worst, runs(scenario)),
                    worst <= within,
                ));
            }
        }
        if let Some(worst) = s.worst(Scenario::Every) {
            goals.push(Goal::new(
                on("tracking every command (track-sample 1): counts of x and steady"),
                "exact (within 0.5%)",
                format!(
                    "worst {:.2}% ({} runs)",
                    100.0 * worst,
                    runs(Scenario::Every)
                ),
                worst <= 0.005,
            ));
        }
        if let (Some(means), Some(worst_run)) =
            (s.means(Scenario::Saturating), s.worst(Scenario::Saturating))
        {
            let worst_mean = farthest_from_one(means.into_iter());
            goals.push(Goal::new(
                on("tracking at the default, beside a saturating load: unbiased"),
                "each key's mean over runs within 20% of the truth",
                format!(
                    "worst mean {:+.1}% ({} runs); worst single run {:.1}%",
                    100.0 * (worst_mean - 1.0),
                    runs(Scenario::Saturating),
                    100.0 * worst_run
                ),
                (worst_mean - 1.0).abs() <= 0.20,
            ));
        }
        let noauth: Vec<(f64, u64)> = s
            .of(Scenario::Unauthenticated)
            .filter_map(|r| r.noauth.map(|n| (n.0, n.2)))
            .collect();
        if !noauth.is_empty() {
            let most = noauth.iter().map(|n| n.0).fold(0.0, f64::max);
            let least_sent = noauth.iter().map(|n| n.1).min().unwrap_or(0);
            goals.push(Goal::new(
                on("tracking: 5,000 GETs from a client not logged in"),
                "never listed",
                format!(
                    "counted {most:.0} ({} runs, at least {least_sent} GETs sent in each)",
                    noauth.len()
                ),
                most == 0.0 && least_sent > 0,
            ));
        }
    }
    for server in &t.costs {
        let Some(i) = &server.instructions else {
            continue;
        };
        let pct = |x: f64| format!("{:+.2}%", 100.0 * x);
        let on = |what: &str| format!("{what} on {}", server.server);
        if let Some(extra) = i.share_of_all(i.added_all(Mode::Default)) {
            let shares = i.default_share.map_or(String::new(), |(_, over)| {
                format!("; {over:.4} of the time counted under callgrind")
            });
            let main = i
                .share_of_main(i.added_main(Mode::Default))
                .map_or(String::new(), |m| format!("; main thread {}", pct(m)));
            goals.push(Goal::new(
                on("tracking at the default (track-sample 0), GET -P16: instructions per GET, all threads,"),
                "<= +10%",
                format!("{}{main}{shares}", pct(extra)),
                extra <= 0.10,
            ));
        }
        // The default's own promise: what it adds where it runs per
        // command (the filter and the worker), a share of the main
        // thread's; the timers run by wall time, so callgrind's slowness
        // inflates them per GET (they are in the row above).
        if let Some(extra) = i.share_of_main(i.added_command_and_worker(Mode::Default)) {
            goals.push(Goal::new(
                on("tracking at the default (track-sample 0), GET -P16: instructions per GET in processCommand + worker,"),
                "<= +1%",
                pct(extra),
                extra <= 0.01,
            ));
        }
        if let Some(extra) = i.share_of_main(i.added_main(Mode::Every)) {
            // The least any filter reading a command's name and key costs
            // there: a goal below it cannot be met by a filter.
            let parts: Vec<String> = [
                i.share_of_main(i.added_in_command(Mode::Every))
                    .map(|c| format!("processCommand {}", pct(c))),
                i.share_of_main(i.added_in_command(Mode::FloorRead))
                    .map(|f| format!("floor {}", pct(f))),
            ]
            .into_iter()
            .flatten()
            .collect();
            goals.push(Goal::new(
                on("tracking every command (track-sample 1): main-thread instructions per GET"),
                "<= +10%",
                format!("{} ({})", pct(extra), parts.join("; ")),
                extra <= 0.10,
            ));
        }
        if let Some(extra) = i.share_of_all(i.added_all(Mode::Every)) {
            let worker = i.at(Mode::Every).map_or(String::new(), |m| {
                let kept = m
                    .kept_share
                    .map_or(String::new(), |k| format!(", accesses kept {k:.3}"));
                // The worker is bounded in time: its instructions per GET
                // follow the pace callgrind ran at (slower on a loaded machine).
                format!(
                    " (worker {:.0} per GET{kept}, at {:.0} GET/s under callgrind)",
                    m.worker, m.gets_per_s
                )
            });
            goals.push(Goal::new(
                on("tracking every command (track-sample 1): instructions per GET, all threads,"),
                "<= +15%",
                format!("{}{worker}", pct(extra)),
                extra <= 0.15,
            ));
        }
    }
    if let Some(h) = &t.huge_keys {
        goals.push(Goal::new(
            "tracking: memory after 300 distinct 1 MB keys",
            "tracker <= 8 MiB",
            format!(
                "tracker {} B, used_memory {:+} B",
                h.tracker_bytes, h.used_memory_growth
            ),
            h.tracker_bytes <= 8 << 20,
        ));
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
    if let Some((n, without, with)) = w.idle_watches {
        goals.push(Goal::new(
            format!("watch: {n} idle watched sketches, main-thread CPU over an idle server"),
            "<= +1 ms per second",
            format!("{:+.2} ms/s ({with:.2} vs {without:.2})", with - without),
            with - without <= 1.0,
        ));
    }
    if let Some((rate, busiest, cap)) = w.capped {
        goals.push(Goal::new(
            "watch: events in one second of the limiter, at the cap",
            format!("<= {cap}"),
            format!("{busiest} ({rate:.0} per second of flooding)"),
            busiest <= cap,
        ));
    }
}
