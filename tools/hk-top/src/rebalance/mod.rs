//! `hk-top rebalance`: a plan of slot moves from the slot rates the
//! primaries' trackers measure (the planner is `crates/rebalance`), printed
//! as text or JSON, and with `--apply` carried out on the live cluster.
//! See docs/rebalance.md.

mod apply;
mod atomic;
mod health;
mod journal;
mod link;
mod measure;
mod migrate;
mod output;
mod plan_file;
mod topology;

use crate::Options;
use apply::{Method, Report, Settings};
use clap::builder::PossibleValuesParser;
use clap::ArgAction;
use heavykeeper_rebalance::{Measure, Plan};
use journal::Journal;
use link::Pool;
use migrate::Login;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

#[derive(clap::Args, Debug)]
#[command(disable_help_flag = true)]
pub struct Args {
    /// Print help
    #[arg(long, action = ArgAction::Help)]
    help: Option<bool>,
    /// Print the plan (and with --apply what was done) as JSON
    #[arg(long)]
    json: bool,
    /// Carry the plan out on the cluster
    #[arg(long)]
    apply: bool,
    /// The rate to balance: reads plus writes, reads or writes
    #[arg(long, default_value = "total", value_parser = PossibleValuesParser::new(["total", "reads", "writes"]))]
    measure: String,
    /// How far above the mean share a primary may stay (0.2: 40% of three primaries)
    #[arg(long, default_value_t = 0.2)]
    tolerance: f64,
    /// At most this many slot moves in one run
    #[arg(long)]
    max_moves: Option<usize>,
    /// How slots move: the server's own (Valkey 9 CLUSTER MIGRATESLOTS) where every primary has it, or MIGRATE key by key
    #[arg(long, default_value = "auto", value_parser = PossibleValuesParser::new(["auto", "standard", "atomic"]))]
    migration: String,
    /// A slot left half-migrated by an interrupted run is rolled back to its source instead of finished
    #[arg(long)]
    roll_back: bool,
    /// Take over half-migrated slots this tool did not start (finish or roll them back)
    #[arg(long)]
    adopt: bool,
    /// Where the moves under way are written [a file in the temporary directory, named after the cluster]
    #[arg(long, value_name = "FILE")]
    journal: Option<PathBuf>,
    /// Carry out this plan (the JSON an earlier `rebalance --json` printed) instead of measuring a new one
    #[arg(long, value_name = "FILE", requires = "apply")]
    plan: Option<PathBuf>,
    /// The longest one slot (or one job of the server's own migration) may take, in seconds
    #[arg(long, default_value_t = 600)]
    timeout_s: u64,
}

impl Args {
    fn planner_options(&self) -> heavykeeper_rebalance::Options {
        let measure = match self.measure.as_str() {
            "reads" => Measure::Reads,
            "writes" => Measure::Writes,
            _ => Measure::Total,
        };
        heavykeeper_rebalance::Options {
            measure,
            tolerance: self.tolerance,
            max_moves: self.max_moves,
        }
    }
}

/// Progress and problems go to stderr: stdout is the plan (or its JSON).
fn log(line: String) {
    eprintln!("{line}");
}

pub fn run(args: &Args, o: &Options) -> ExitCode {
    match plan_and_apply(args, o) {
        Ok(code) => code,
        Err(Failure::Refused(message)) => {
            eprintln!("hk-top rebalance: {message}");
            ExitCode::from(3)
        }
        Err(Failure::Error(message)) => {
            eprintln!("hk-top rebalance: {message}");
            ExitCode::FAILURE
        }
    }
}

enum Failure {
    /// The cluster is not fit to move slots in: nothing was done.
    Refused(String),
    Error(String),
}

fn plan_and_apply(args: &Args, o: &Options) -> Result<ExitCode, Failure> {
    let (mut views, mut health) = apply::settled(&o.access, &o.address).map_err(Failure::Error)?;
    let mut link = Pool::new(&o.access);
    let mut report = Report::default();
    let settings = Settings {
        method: Method::parse(&args.migration),
        roll_back: args.roll_back,
        adopt: args.adopt,
        login: Login {
            username: o.access.username.clone(),
            password: o.access.password.clone(),
        },
        timeout: Duration::from_secs(args.timeout_s),
    };
    let mut journal = open_journal(args, &views).map_err(Failure::Error)?;
    if args.apply {
        apply::recover(
            &mut link,
            &views,
            &health,
            &mut journal,
            &settings,
            &mut report,
            &mut log,
        )
        .map_err(Failure::Refused)?;
        if report.resumed + report.rolled_back > 0 {
            (views, health) = apply::settled(&o.access, &o.address).map_err(Failure::Error)?;
        }
    }
    let plan = match &args.plan {
        Some(path) => reviewed_plan(path, &views)?,
        None => {
            let primaries = views.primaries();
            let input = measure::measure(&o.access, &primaries)
                .map_err(|e| Failure::Error(e.to_string()))?;
            heavykeeper_rebalance::plan(&input, &args.planner_options())
        }
    };
    if !args.json && args.plan.is_some() {
        println!("{} slots to move, as planned", plan.moves.len());
    } else if !args.json {
        println!("{}", output::plan_text(&plan));
        health
            .problems
            .iter()
            .for_each(|p| log(format!("warning: {p}")));
    }
    if args.apply && !plan.moves.is_empty() {
        let method = apply::choose(&mut link, &views, settings.method).map_err(Failure::Error)?;
        let stop = stop_on_signal();
        let done = apply::execute(
            &mut link,
            &views,
            &plan,
            method,
            &mut journal,
            &settings,
            &stop,
            &mut report,
            &mut log,
        );
        print_result(args, &plan, &health, Some(&report));
        done.map_err(Failure::Error)?;
    } else {
        print_result(args, &plan, &health, args.apply.then_some(&report));
    }
    Ok(ExitCode::SUCCESS)
}

/// The plan in `path`, if the cluster is still where it found it.
fn reviewed_plan(path: &std::path::Path, views: &topology::Views) -> Result<Plan, Failure> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Failure::Error(format!("{}: {e}", path.display())))?;
    let plan =
        plan_file::parse(&text).map_err(|e| Failure::Error(format!("{}: {e}", path.display())))?;
    plan_file::check(&plan, views).map_err(Failure::Refused)?;
    Ok(plan)
}

fn open_journal(args: &Args, views: &topology::Views) -> Result<Journal, String> {
    let path = match &args.journal {
        Some(path) => path.clone(),
        None => {
            let first = (views.primaries().iter())
                .map(|n| n.id().to_string())
                .min()
                .unwrap_or_default();
            Journal::default_path(&first)
        }
    };
    Journal::open(&path)
}

/// A signal ends the run between two slots (a second one as usual).
fn stop_on_signal() -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        let _ = signal_hook::flag::register_conditional_shutdown(signal, 1, Arc::clone(&stop));
        let _ = signal_hook::flag::register(signal, Arc::clone(&stop));
    }
    stop
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
    })
}

fn print_result(args: &Args, plan: &Plan, health: &health::Health, report: Option<&Report>) {
    if args.json {
        let mut out = output::plan_json(plan);
        out["problems"] = json!(health.problems);
        if let Some(report) = report {
            out["applied"] = report_json(report);
        }
        println!("{out}");
    } else if let Some(r) = report {
        println!(
            "applied ({}): {} slots moved, {} keys, in {:.2} s{}",
            r.method,
            r.moves_done,
            r.keys_moved,
            r.seconds,
            if r.interrupted {
                "; interrupted: run again to go on"
            } else {
                ""
            }
        );
    }
}
