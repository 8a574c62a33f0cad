//! `hk-top rebalance`: a plan of slot moves from the load each primary
//! measures per slot (the planner is `crates/rebalance`), printed as text
//! or JSON; with `--apply` carried out on the live cluster, with
//! `--roll-back` what an interrupted run left given back, and with
//! `--watch` left running, measuring, planning and moving in rounds. See
//! docs/rebalance.md.
//!
//! The load comes from the heavykeeper tracker where every primary has the
//! module, else from the servers' own `CLUSTER SLOT-STATS`. A run that
//! moves slots holds the cluster's lease (`lease.rs`) and keeps a journal
//! (`journal.rs`): one run at a time per cluster, what an interrupted run
//! began is finished by the next, and a slot moved is not moved again
//! within its cooldown.

mod apply;
mod atomic;
mod error;
#[cfg(test)]
mod fake_cluster;
mod health;
mod interrupt;
mod journal;
mod lease;
mod link;
mod measure;
mod migrate;
mod output;
mod plan_file;
mod slot_stats;
mod topology;
mod watching;

use crate::connection::settings::ConnectionSettings;
use crate::export::snapshot::put;
use apply::{Method, MoveMade, Report, Run, Settings};
use clap::builder::PossibleValuesParser;
use clap::ArgAction;
use error::Error;
use heavykeeper_rebalance::{Cooldown, Measure, Plan};
use interrupt::Stop;
use journal::Journal;
use lease::Lease;
use link::{Link, Patience, Pool};
use measure::{Meter, Source};
use migrate::Login;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(clap::Args, Debug)]
#[command(disable_help_flag = true)]
pub struct Args {
    /// Print help
    #[arg(long, action = ArgAction::Help)]
    help: Option<bool>,
    /// Print the plan (and with --apply what was done; with --watch each round and move) as JSON
    #[arg(long)]
    json: bool,
    /// Carry the plan out on the cluster
    #[arg(long)]
    apply: bool,
    /// Leave it running: measure, plan and move in rounds (Ctrl-C ends it between slots)
    #[arg(long, conflicts_with = "plan")]
    watch: bool,
    /// What measures the slots' load: the heavykeeper module's tracker, or the servers' own CLUSTER SLOT-STATS [auto: the module where every primary has it]
    #[arg(long, default_value = "auto", value_parser = PossibleValuesParser::new(["auto", "module", "slot-stats"]))]
    source: String,
    /// The load to balance: reads plus writes, reads or writes (the module); cpu or network (slot-stats) [auto: total with the module, cpu with slot-stats]
    #[arg(long, default_value = "auto", value_parser = PossibleValuesParser::new(["auto", "total", "reads", "writes", "cpu", "network"]))]
    measure: String,
    /// With slot-stats: the seconds between the two readings a rate is taken from
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=3600))]
    window_s: u64,
    /// How far above the mean share a primary may stay [0.2: 40% of three primaries; 0.1 with slot-stats' cpu, whose shares sit closer to the mean than the commands' (a busy node spends less CPU per command)]
    #[arg(long)]
    tolerance: Option<f64>,
    /// --apply: measure again after the moves and move again while a primary is still over the target, at most this many passes in all [2 with slot-stats: a node's CPU per command rises as its load falls; 1 with the module]
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=10))]
    passes: Option<u64>,
    /// At most this many slot moves in one run (with --watch: in one round) [--watch: 32]
    #[arg(long)]
    max_moves: Option<usize>,
    /// The least cluster-wide load worth balancing, in the measure's unit [100 commands/s; cpu: 250 µs/s, ~1,000 GETs a second of a busy node; network: 6000 bytes/s, ~100 GETs]
    #[arg(long)]
    min_load: Option<f64>,
    /// A slot moved is not moved again within this many seconds (remembered in the journal)
    #[arg(long, default_value_t = 300)]
    cooldown_s: u64,
    /// How slots move: the servers' own (Valkey 9 CLUSTER MIGRATESLOTS, Redis 8.4 CLUSTER MIGRATION) where every primary has it, or MIGRATE key by key
    #[arg(long, default_value = "auto", value_parser = PossibleValuesParser::new(["auto", "standard", "atomic"]))]
    migration: String,
    /// Give slots an interrupted run left half-migrated back to their source (alone: only that; with --apply: then plan and move)
    #[arg(long)]
    roll_back: bool,
    /// Take over half-migrated slots this tool did not start (finish or roll them back)
    #[arg(long)]
    adopt: bool,
    /// Where the moves under way and made are written [a file in the temporary directory, named after the cluster]
    #[arg(long, value_name = "FILE")]
    journal: Option<PathBuf>,
    /// Carry out this plan (the JSON an earlier `rebalance --json` printed) instead of measuring a new one
    #[arg(long, value_name = "FILE", requires = "apply")]
    plan: Option<PathBuf>,
    /// The longest one slot (or one job of the servers' own migration) may take, in seconds
    #[arg(long, default_value_t = 600)]
    timeout_s: u64,
    /// How long a node that stops answering (stalled, restarting, failing over) is waited for before the run stops between slots, in seconds
    #[arg(long, default_value_t = 60)]
    patience_s: u64,
    /// --watch: seconds between rounds
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..))]
    interval_s: u64,
    /// --watch: act only on an imbalance seen in this many rounds in a row
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..=100))]
    confirm: u64,
    /// --watch: pause while a node the moves touch uses more than this share of a core (main thread)
    #[arg(long, default_value_t = 0.9)]
    cpu_line: f64,
    /// --watch: end after this many rounds
    #[arg(long)]
    rounds: Option<u64>,
}

/// What the command line asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Action {
    /// Print a plan.
    Plan,
    /// Give back what an interrupted run left, and stop.
    RollBack,
    /// Plan (or read a plan) and carry it out.
    Apply,
    /// Measure, plan and move in rounds.
    Watch,
}

impl Args {
    fn action(&self) -> Result<Action, Error> {
        let action = if self.watch {
            Action::Watch
        } else if self.apply {
            Action::Apply
        } else if self.roll_back {
            Action::RollBack
        } else {
            Action::Plan
        };
        if self.adopt && action == Action::Plan {
            return Err(Error::Usage(
                "--adopt takes over half-migrated slots: give it with --apply, --roll-back or --watch"
                    .into(),
            ));
        }
        Ok(action)
    }

    /// The measure asked for, checked against the source.
    fn measure_for(&self, source: Source) -> Result<Measure, Error> {
        let measure = match (self.measure.as_str(), source) {
            ("auto", Source::Module) | ("total", _) => Measure::Total,
            ("auto", Source::SlotStats) | ("cpu", _) => Measure::Cpu,
            ("reads", _) => Measure::Reads,
            ("writes", _) => Measure::Writes,
            _ => Measure::Network,
        };
        match (source, measure.is_slot_stats()) {
            (Source::Module, true) => Err(Error::Usage(format!(
                "--measure {}: the module measures reads and writes (total, reads, writes); cpu and network are --source slot-stats",
                measure.name()
            ))),
            (Source::SlotStats, false) => Err(Error::Usage(format!(
                "--measure {}: CLUSTER SLOT-STATS measures cpu and network; reads and writes are the module's",
                measure.name()
            ))),
            _ => Ok(measure),
        }
    }

    fn planner_options(&self, measure: Measure, action: Action) -> heavykeeper_rebalance::Options {
        // A simple command costs a busy Valkey ~0.25 µs of a slot's CPU
        // (4,000 a second read ~900 µs/s) and an idle one more (5 GETs a
        // second read 4-9 µs/s, once 26, 22 of it in one slot, over 2 s),
        // and ~60 bytes in and out: ~1,000 busy GETs a second of CPU, ~100
        // commands of network.
        let min_total = self.min_load.unwrap_or(match measure {
            Measure::Cpu => 250.0,
            Measure::Network => 6_000.0,
            _ => 100.0,
        });
        let max_moves = match action {
            Action::Watch => Some(self.max_moves.unwrap_or(32)),
            _ => self.max_moves,
        };
        heavykeeper_rebalance::Options {
            measure,
            tolerance: self.tolerance.unwrap_or(match measure {
                Measure::Cpu => 0.1,
                _ => 0.2,
            }),
            max_moves,
            min_total,
            frozen: Default::default(),
        }
    }

    fn settings(&self, connection: &ConnectionSettings) -> Settings {
        Settings {
            method: Method::parse(&self.migration),
            roll_back: self.roll_back,
            adopt: self.adopt,
            login: Login {
                username: connection.username.clone(),
                password: connection.password.clone(),
            },
            timeout: Duration::from_secs(self.timeout_s),
        }
    }

    /// The link to the nodes, saying in the log whenever it waits for one.
    fn link(&self, connection: &ConnectionSettings) -> Pool {
        let patience = Patience {
            wait: Duration::from_secs(self.patience_s),
            // Longer than MIGRATE's own timeout for a batch (10 s), but
            // never past the patience: a node has that long in all.
            reply: crate::fault::scaled(
                "HK_TOP_TEST_REPLY_MS",
                Duration::from_secs(self.patience_s.clamp(1, 15)),
            ),
        };
        Pool::new(connection, patience)
            .on_wait(|node, e| log(format!("{node} does not answer ({e}): waiting for it")))
    }

    fn cooldown_ms(&self) -> i64 {
        i64::try_from(self.cooldown_s.saturating_mul(1000)).unwrap_or(i64::MAX)
    }
}

/// Progress and problems go to stderr: stdout is the plan (or its JSON).
fn log(line: String) {
    eprintln!("{line}");
}

/// The cluster to balance: the node named on the command line, and how to
/// reach it and the others.
pub struct Cluster<'a> {
    pub address: &'a str,
    pub connection: &'a ConnectionSettings,
}

pub fn run(args: &Args, o: &Cluster<'_>) -> ExitCode {
    let result = args.action().and_then(|action| {
        // Signals are taken by a thread of their own before any other
        // starts, when slots may move (`interrupt.rs`).
        let stop = match action {
            Action::Plan => Stop::never(),
            _ => interrupt::on_signal_stop(),
        };
        match action {
            Action::Watch => watching::watch(args, o, &stop),
            _ => once(args, o, action, &stop),
        }
    });
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("hk-top rebalance: {e}");
            e.exit_code()
        }
    }
}

/// The exit status of a run a signal stopped between slots.
fn interrupted(stop: &Stop) -> ExitCode {
    ExitCode::from(128 + stop.signal().unwrap_or(2).clamp(1, 127) as u8)
}

/// Plan, apply or roll back once.
fn once(args: &Args, o: &Cluster<'_>, action: Action, stop: &Stop) -> Result<ExitCode, Error> {
    let mut link = args.link(o.connection);
    let first = [o.address.to_string()];
    if action == Action::Plan {
        let (views, health) = apply::settled(&mut link, &first)?;
        let cooldown = Cooldown::new(0, []);
        let (plan, source) = measured_plan(args, &mut link, &views, action, &cooldown, stop)?;
        print_plan(args, &plan, source, &health.problems);
        print_result(args, &plan, source, &health, None, &[]);
        return Ok(ExitCode::SUCCESS);
    }
    let (lease, views, health) = hold_cluster(o, &mut link)?;
    let mut journal = open_journal(args, &views)?;
    let settings = args.settings(o.connection);
    let on_move = &mut |_: &MoveMade| {};
    let mut run = Run::new(
        &mut link,
        views,
        &mut journal,
        &settings,
        stop,
        &lease,
        on_move,
    );
    run.recover(&health)?;
    if action == Action::RollBack {
        print_recovery(args, run.report());
        return Ok(ExitCode::SUCCESS);
    }
    let health = if run.report().resumed + run.report().rolled_back > 0 {
        run.settle()?
    } else {
        health
    };
    let cooldown = run.cooldown(args.cooldown_ms());
    let (plan, source) = match &args.plan {
        Some(path) => (
            run.with_cluster(|_, views| reviewed_plan(path, views))?,
            "plan-file",
        ),
        None => run.with_cluster(|link, views| {
            measured_plan(args, link, views, action, &cooldown, stop)
        })?,
    };
    if args.plan.is_some() && !args.json {
        println!("{} slots to move, as planned", plan.moves.len());
    } else {
        print_plan(args, &plan, source, &health.problems);
    }
    let mut done = carry_out(&mut run, &plan, None);
    let mut later = Vec::new();
    let passes = args
        .passes
        .unwrap_or(if source == "slot-stats" { 2 } else { 1 });
    while done.as_ref().is_ok_and(|m| m.is_some())
        && !run.report().interrupted
        && args.plan.is_none()
        && (later.len() as u64) + 1 < passes
    {
        run.settle()?;
        let cooldown = run.cooldown(args.cooldown_ms());
        let (again, _) = run.with_cluster(|link, views| {
            measured_plan(args, link, views, action, &cooldown, stop)
        })?;
        if again.moves.is_empty() {
            later.push(again);
            break;
        }
        log(format!(
            "measured again: {} more slots to move",
            again.moves.len()
        ));
        done = carry_out(&mut run, &again, done.ok().flatten());
        later.push(again);
    }
    print_result(args, &plan, source, &health, Some(run.report()), &later);
    done?;
    if run.report().interrupted {
        return Ok(interrupted(stop));
    }
    Ok(ExitCode::SUCCESS)
}

/// Moves `plan`'s slots (the method chosen once per run: `method`, or
/// chosen now); the method, where anything was moved.
fn carry_out(
    run: &mut Run,
    plan: &Plan,
    method: Option<apply::Chosen>,
) -> Result<Option<apply::Chosen>, Error> {
    if plan.moves.is_empty() {
        return Ok(method);
    }
    let method = match method {
        Some(method) => method,
        None => run.choose()?,
    };
    run.execute(&plan.moves, method)?;
    Ok(Some(method))
}

/// A plan from the cluster's load now, slots in their cooldown frozen.
fn measured_plan(
    args: &Args,
    link: &mut dyn Link,
    views: &topology::Views,
    action: Action,
    cooldown: &Cooldown,
    stop: &Stop,
) -> Result<(Plan, &'static str), Error> {
    let primaries = views.primaries();
    let source = measure::choose_source(link, &primaries, Source::parse(&args.source))?;
    let measure = args.measure_for(source)?;
    let mut meter = Meter::new(source, Duration::from_secs(args.window_s));
    if source == Source::SlotStats {
        log(format!(
            "measuring CLUSTER SLOT-STATS over {} s",
            args.window_s
        ));
    }
    let input = meter.input(link, &primaries, &|| stop.asked())?;
    let mut options = args.planner_options(measure, action);
    options.frozen = cooldown.frozen(apply::now_ms());
    Ok((heavykeeper_rebalance::plan(&input, &options), source.name()))
}

/// The plan in `path`, checked whole against the cluster now.
fn reviewed_plan(path: &std::path::Path, views: &topology::Views) -> Result<Plan, Error> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::Local(format!("{}: {e}", path.display())))?;
    let plan =
        plan_file::parse(&text).map_err(|e| Error::Usage(format!("{}: {e}", path.display())))?;
    plan_file::check(&plan, views)?;
    Ok(plan)
}

/// Takes the cluster's lease, then reads the cluster, once, under it: a
/// run that held the lease until a moment ago may have moved slots, and a
/// plan checked against a reading from before would pass stale (seen: a
/// second run "moving" five slots already moved).
fn hold_cluster(
    o: &Cluster<'_>,
    link: &mut dyn Link,
) -> Result<(Lease, topology::Views, health::Health), Error> {
    // The lease's own link (it renews on a thread of its own): a renewal
    // that fails is tried at the next, not waited for.
    let (wait, reply) = (Duration::ZERO, Duration::from_secs(5));
    let lease_link = Pool::new(o.connection, Patience { wait, reply });
    let lease = Lease::take(Box::new(lease_link), o.address)?;
    let (views, health) = apply::settled(link, &[o.address.to_string()])?;
    crate::fault::pause_after_read();
    Ok((lease, views, health))
}

fn open_journal(args: &Args, views: &topology::Views) -> Result<Journal, Error> {
    let path = match &args.journal {
        Some(path) => path.clone(),
        None => {
            let ids = views.primaries().into_iter().map(|n| n.id.clone());
            let first = ids.min().unwrap_or_default();
            Journal::default_path(&first)
        }
    };
    Journal::open(&path).map_err(Error::Local)
}

fn report_json(report: &Report) -> Value {
    json!({
        "method": report.method,
        "resumed": report.resumed,
        "rolled_back": report.rolled_back,
        "moves_done": report.moves_done,
        "keys_moved": report.keys_moved,
        "seconds": report.seconds,
        "interrupted": report.interrupted,
        "atomic_refused": report.atomic_refused,
        "failovers": report.failovers,
    })
}

fn print_plan(args: &Args, plan: &Plan, source: &str, problems: &[String]) {
    if !args.json {
        println!("{}", output::plan_text(plan, source));
        problems.iter().for_each(|p| log(format!("warning: {p}")));
    }
}

fn print_recovery(args: &Args, report: &Report) {
    if args.json {
        println!("{}", json!({ "applied": report_json(report) }));
    } else {
        println!(
            "rolled back {} slots, finished {}",
            report.rolled_back, report.resumed
        );
    }
}

fn print_result(
    args: &Args,
    plan: &Plan,
    source: &str,
    health: &health::Health,
    report: Option<&Report>,
    later: &[Plan],
) {
    if args.json {
        let mut out = output::plan_json(plan, source);
        put(&mut out, "problems", json!(health.problems));
        // The plans of the passes after the first, each measured afresh.
        let passes: Value = later.iter().map(|p| output::plan_json(p, source)).collect();
        put(&mut out, "later_passes", passes);
        if let Some(report) = report {
            put(&mut out, "applied", report_json(report));
        }
        println!("{out}");
    } else if let Some(r) = report {
        let (method, moved, keys, seconds) = (r.method, r.moves_done, r.keys_moved, r.seconds);
        let again = (r.interrupted).then_some("; interrupted: run again to go on");
        let again = again.unwrap_or_default();
        println!("applied ({method}): {moved} slots moved, {keys} keys, in {seconds:.2} s{again}");
    }
}
