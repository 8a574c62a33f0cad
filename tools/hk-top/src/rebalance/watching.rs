//! `rebalance --watch`: left running, it measures, plans and moves in
//! rounds, `--interval-s` apart. A round moves slots only when the
//! imbalance has lasted `--confirm` rounds beyond the measurement's bounds
//! and no node the moves touch is over `--cpu-line`
//! ([`heavykeeper_rebalance::Watch`]); it moves at most `--max-moves`, and
//! never a slot moved within `--cooldown-s` (the journal remembers, across
//! runs). It holds the cluster's lease the whole time. Each move is a line
//! on stdout (a JSON object with `--json`, as is each round); Ctrl-C ends
//! it between two slots.

use super::apply::{self, MoveMade, Run};
use super::error::Error;
use super::interrupt::Stop;
use super::link::Link;
use super::measure::{self, Meter, Source};
use super::{hold_cluster, interrupted, log, open_journal, report_json, Action, Args, Cluster};
use crate::reading::hot_keys::info_number;
use heavykeeper_rebalance::{Plan, Verdict, Watch};
use serde_json::json;
use std::cell::Cell;
use std::collections::HashMap;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Rounds in a row whose moves failed before the watch gives up.
const FAILED_ROUNDS: u32 = 3;

pub fn watch(args: &Args, o: &Cluster<'_>, stop: &Stop) -> Result<ExitCode, Error> {
    let mut link = args.link(o.connection);
    let (lease, views, health) = hold_cluster(o, &mut link)?;
    let asked = Source::parse(&args.source);
    let source = measure::choose_source(&mut link, &views.primaries(), asked)?;
    let measure = args.measure_for(source)?;
    let mut journal = open_journal(args, &views)?;
    let settings = args.settings(o.connection);
    let round = Cell::new(0u64);
    let json = args.json;
    let on_move = &mut |m: &MoveMade| print_move(json, round.get(), m);
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
    let mut watcher = Watcher {
        meter: Meter::new(source, Duration::from_secs(args.window_s)),
        options: args.planner_options(measure, Action::Watch),
        cpu: CpuWatch::default(),
        watch: Watch::new(args.confirm as usize, args.cpu_line),
    };
    let mut method = None;
    let mut failed_rounds = 0;
    while !stop.asked() && args.rounds.is_none_or(|most| round.get() < most) {
        round.set(round.get() + 1);
        let began = Instant::now();
        lease.check()?;
        // The first round measures the cluster as read under the lease,
        // unless recovering changed it.
        let fresh = round.get() == 1 && run.report().resumed + run.report().rolled_back == 0;
        let settled = if fresh {
            Ok(health.clone())
        } else {
            run.settle()
        };
        match settled.and_then(|health| watcher.plan(&mut run, &health, args, stop)) {
            Ok(Some(plan)) => {
                let chosen = match method {
                    Some(chosen) => chosen,
                    None => *method.insert(run.choose()?),
                };
                match run.execute(&plan.moves, chosen) {
                    Ok(()) => failed_rounds = 0,
                    Err(e) => {
                        failed_rounds += 1;
                        log(format!("round {}: {e}", round.get()));
                        if failed_rounds >= FAILED_ROUNDS {
                            return Err(e);
                        }
                    }
                }
                watcher.watch.acted();
            }
            Ok(None) => {}
            // A round that cannot measure (a node down, the cluster
            // unsettled) waits for the next.
            Err(e) => log(format!("round {}: {e}", round.get())),
        }
        // The rest of the interval, waking for a signal.
        let next = began + Duration::from_secs(args.interval_s);
        measure::wait_until(next, &|| stop.asked());
    }
    if json {
        let applied = report_json(run.report());
        let end = json!({"event": "end", "rounds": round.get(), "applied": applied});
        println!("{end}");
    } else {
        println!(
            "watched {} rounds: {} slots moved, {} keys",
            round.get(),
            run.report().moves_done,
            run.report().keys_moved
        );
    }
    if stop.asked() {
        return Ok(interrupted(stop));
    }
    Ok(ExitCode::SUCCESS)
}

/// What a watch carries from round to round.
struct Watcher {
    meter: Meter,
    options: heavykeeper_rebalance::Options,
    cpu: CpuWatch,
    watch: Watch,
}

impl Watcher {
    /// Measures and plans on the cluster as `run` last read it (`health`
    /// its health); the plan to carry out, if the round acts.
    fn plan(
        &mut self,
        run: &mut Run<'_>,
        health: &super::health::Health,
        args: &Args,
        stop: &Stop,
    ) -> Result<Option<Plan>, Error> {
        if !health.problems.is_empty() || !health.open.is_empty() {
            run.recover(health)?;
        }
        self.options.frozen = run.cooldown(args.cooldown_ms()).frozen(apply::now_ms());
        let (input, busy) = run.with_cluster(|link, views| {
            let primaries = views.primaries();
            let input = self.meter.input(link, &primaries, &|| stop.asked())?;
            let addresses: Vec<String> = primaries.iter().map(|n| n.address.clone()).collect();
            Ok::<_, Error>((input, self.cpu.sample(link, &addresses)))
        })?;
        let plan = heavykeeper_rebalance::plan(&input, &self.options);
        let verdict = self.watch.observe(&plan, |node| busy.get(node).copied());
        print_round(args.json, run, &plan, &verdict, self.options.frozen.len());
        Ok((verdict == Verdict::Act).then_some(plan))
    }
}

/// The verdict's name (for scripts) and what it says to a person.
fn verdict_words(verdict: &Verdict) -> (&'static str, String) {
    match verdict {
        Verdict::Balanced => ("balanced", "balanced".into()),
        Verdict::Confirming { rounds, needed } => (
            "confirming",
            format!("over the target ({rounds} of {needed} rounds)"),
        ),
        Verdict::Stuck => (
            "stuck",
            "over the target, but nothing may move (cooldown, or slots too hot)".into(),
        ),
        Verdict::Paused { node, cpu } => (
            "paused",
            format!("paused: {node} at {:.0}% of a core", cpu * 100.0),
        ),
        Verdict::Act => ("act", "moving".into()),
    }
}

fn print_round(json: bool, run: &Run<'_>, plan: &Plan, verdict: &Verdict, frozen: usize) {
    let round = run.report().moves_done;
    let shares: serde_json::Map<String, serde_json::Value> = (plan.nodes.iter())
        .map(|n| (n.node.clone(), json!(plan.share(n.before))))
        .collect();
    let largest = (plan.nodes.iter())
        .map(|n| plan.share(n.before))
        .fold(0.0, f64::max);
    if json {
        let event = json!({
            "event": "round",
            "at_ms": apply::now_ms(),
            "verdict": verdict_words(verdict).0,
            "shares": shares,
            "largest_share": largest,
            "target_share": plan.share(plan.target),
            "moves_planned": plan.moves.len(),
            "slots_in_cooldown": frozen,
            "moves_so_far": round,
        });
        println!("{event}");
    } else {
        log(format!(
            "largest share {:.1}% (target {:.1}%): {}; {} moves planned",
            largest * 100.0,
            plan.share(plan.target) * 100.0,
            verdict_words(verdict).1,
            plan.moves.len()
        ));
    }
}

fn print_move(json: bool, round: u64, m: &MoveMade) {
    if json {
        let event = json!({
            "event": "move",
            "round": round,
            "at_ms": apply::now_ms(),
            "slot": m.slot,
            "from": m.from,
            "to": m.to,
            "keys": m.keys,
            "seconds": m.seconds,
        });
        println!("{event}");
    } else {
        println!(
            "round {round}: moved slot {} {} -> {} ({} keys, {:.3} s)",
            m.slot, m.from, m.to, m.keys, m.seconds
        );
    }
}

/// How busy each node is: the CPU its main thread used between two looks
/// (`INFO cpu`: `used_cpu_sys_main_thread` plus `used_cpu_user_main_thread`,
/// the process's where a server has no per-thread figure), as a share of
/// one core. What `--watch` pauses on: moving slots costs the source and
/// the target work of their own, and a node already at its limit should
/// not be handed more.
#[derive(Default)]
struct CpuWatch {
    last: HashMap<String, (Instant, f64)>,
}

impl CpuWatch {
    /// Each node's share of a core since it was last looked at (none the
    /// first time, or where `INFO` does not answer).
    fn sample(&mut self, link: &mut dyn Link, addresses: &[String]) -> HashMap<String, f64> {
        let mut shares = HashMap::new();
        for address in addresses {
            let Some(seconds) = used_seconds(link, address) else {
                continue;
            };
            let now = Instant::now();
            if let Some((then, before)) = self.last.insert(address.clone(), (now, seconds)) {
                let wall = now.duration_since(then).as_secs_f64();
                if wall > 0.0 && seconds >= before {
                    shares.insert(address.clone(), (seconds - before) / wall);
                }
            }
        }
        shares
    }
}

fn used_seconds(link: &mut dyn Link, address: &str) -> Option<f64> {
    let info = link.ask(address, redis::cmd("INFO").arg("cpu")).ok()?;
    let info: String = redis::from_redis_value(&info).ok()?;
    parse(&info)
}

fn parse(info: &str) -> Option<f64> {
    let field = |name: &str| info_number(info, name);
    match (
        field("used_cpu_sys_main_thread"),
        field("used_cpu_user_main_thread"),
    ) {
        (Some(sys), Some(user)) => Some(sys + user),
        _ => Some(field("used_cpu_sys")? + field("used_cpu_user")?),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_main_threads_figure_first_the_processs_otherwise() {
        let info = "used_cpu_sys:2.5\r\nused_cpu_user:3.5\r\nused_cpu_sys_main_thread:1.0\r\nused_cpu_user_main_thread:2.0\r\n";
        assert_eq!(parse(info), Some(3.0));
        let process_only = "used_cpu_sys:2.5\r\nused_cpu_user:3.5\r\n";
        assert_eq!(parse(process_only), Some(6.0));
        assert_eq!(parse("nothing"), None);
    }
}
