//! `--apply`: the cluster checked, what an interrupted run left finished
//! (or rolled back), then the plan's moves one slot at a time (or one job
//! per pair of primaries with the server's own migration), with progress.
//! A signal (Ctrl-C) stops it between two slots, never in one.

use super::atomic;
use super::health::{self, Health, Open};
use super::journal::{Entry, Journal};
use super::link::Link;
use super::migrate::{self, Endpoint, Login};
use super::topology::Views;
use crate::access::Access;
use heavykeeper_rebalance::{Move, Plan};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How a slot moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// The server's own where every primary has it, else the standard.
    Auto,
    Standard,
    Atomic,
}

impl Method {
    pub fn parse(name: &str) -> Method {
        match name {
            "standard" => Method::Standard,
            "atomic" => Method::Atomic,
            _ => Method::Auto,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Method::Auto => "auto",
            Method::Standard => "standard",
            Method::Atomic => "atomic",
        }
    }
}

pub struct Settings {
    pub method: Method,
    pub roll_back: bool,
    /// Take over half-migrated slots the journal does not list.
    pub adopt: bool,
    pub login: Login,
    pub timeout: Duration,
}

/// What `--apply` did.
#[derive(Clone, Debug, Default)]
pub struct Report {
    pub method: &'static str,
    pub resumed: usize,
    pub rolled_back: usize,
    pub moves_done: usize,
    pub keys_moved: u64,
    pub seconds: f64,
    pub interrupted: bool,
    /// Why the server refused its own migration, when it did and the
    /// standard one was used instead.
    pub atomic_refused: Option<String>,
}

/// How long the primaries get to agree on the slot map (gossip after a
/// move) before a disagreement counts as a problem.
const SETTLE: Duration = Duration::from_secs(10);

/// The cluster's views and health once the primaries agree, or after
/// [`SETTLE`] with whatever problems are left.
pub fn settled(access: &Access, first: &str) -> Result<(Views, Health), String> {
    let deadline = Instant::now() + SETTLE;
    loop {
        let views = Views::read(access, first).map_err(|e| format!("{first}: {e}"))?;
        let health = health::check(&views);
        if health.problems.is_empty() || Instant::now() > deadline {
            return Ok((views, health));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Finishes (or rolls back) the half-migrated slots that are this tool's,
/// waits for the server's own jobs, and refuses (an error) if anything else
/// is in the way.
pub fn recover(
    link: &mut dyn Link,
    views: &Views,
    health: &Health,
    journal: &mut Journal,
    settings: &Settings,
    report: &mut Report,
    log: &mut dyn FnMut(String),
) -> Result<(), String> {
    if !health.problems.is_empty() {
        return Err(format!(
            "refusing to move slots: {}",
            health.problems.join("; ")
        ));
    }
    let foreign: Vec<&Open> = (health.open.iter())
        .filter(|o| !settings.adopt && !journal.owns(o.slot, &o.source, &o.target))
        .collect();
    if !foreign.is_empty() {
        let listed: Vec<String> = foreign.iter().map(|o| o.slot.to_string()).collect();
        return Err(format!(
            "refusing to move slots: slots {} are half-migrated by someone else (not in {}); finish them, or run with --adopt to take them over",
            listed.join(", "),
            journal.path().display()
        ));
    }
    let addresses: Vec<String> = views
        .primaries()
        .iter()
        .map(|n| n.address().to_string())
        .collect();
    atomic::wait_running(link, &addresses, settings.timeout, &mut |job| {
        log(format!(
            "waiting for the server's slot migration {} ({}): {}",
            job.name, job.slot_ranges, job.state
        ))
    })?;
    for open in &health.open {
        let (Some(source), Some(target)) =
            (endpoint(views, &open.source), endpoint(views, &open.target))
        else {
            return Err(format!(
                "slot {} is half-migrated between nodes not in the cluster",
                open.slot
            ));
        };
        if settings.roll_back {
            let back = migrate::roll_back(link, open.slot, &source, &target, &settings.login)?;
            log(format!(
                "rolled back slot {} to {} ({back} keys back)",
                open.slot, source.address
            ));
            report.rolled_back += 1;
        } else {
            let others = others(views, &source, &target);
            let moved = migrate::migrate_slot(
                link,
                open.slot,
                &source,
                &target,
                &others,
                &settings.login,
                &mut |_| {},
            )?;
            log(format!(
                "finished slot {}: {} -> {} ({} keys)",
                open.slot, source.address, target.address, moved.keys
            ));
            report.resumed += 1;
        }
        journal.end(open.slot)?;
    }
    Ok(())
}

fn endpoint(views: &Views, id: &str) -> Option<Endpoint> {
    views.by_id(id).map(|n| Endpoint {
        id: n.id().to_string(),
        address: n.address().to_string(),
    })
}

fn by_address(views: &Views, address: &str) -> Option<Endpoint> {
    (views.primaries().into_iter())
        .find(|n| n.address() == address)
        .map(|n| Endpoint {
            id: n.id().to_string(),
            address: n.address().to_string(),
        })
}

fn others(views: &Views, source: &Endpoint, target: &Endpoint) -> Vec<Endpoint> {
    (views.primaries().into_iter())
        .filter(|n| n.id() != source.id && n.id() != target.id)
        .map(|n| Endpoint {
            id: n.id().to_string(),
            address: n.address().to_string(),
        })
        .collect()
}

/// The method to use: the server's own only where every primary has it.
pub fn choose(link: &mut dyn Link, views: &Views, asked: Method) -> Result<Method, String> {
    let everywhere = (views.primaries().iter()).all(|n| atomic::supported(link, n.address()));
    match asked {
        Method::Atomic if !everywhere => {
            Err("--migration atomic: not every primary has CLUSTER MIGRATESLOTS (Valkey 9)".into())
        }
        Method::Auto if everywhere => Ok(Method::Atomic),
        Method::Auto => Ok(Method::Standard),
        other => Ok(other),
    }
}

/// Carries the plan's moves out.
#[allow(clippy::too_many_arguments)]
pub fn execute(
    link: &mut dyn Link,
    views: &Views,
    plan: &Plan,
    method: Method,
    journal: &mut Journal,
    settings: &Settings,
    stop: &AtomicBool,
    report: &mut Report,
    log: &mut dyn FnMut(String),
) -> Result<(), String> {
    report.method = method.name();
    let started = Instant::now();
    let mut result = match method {
        Method::Atomic => by_jobs(link, views, plan, settings, stop, report, log),
        _ => by_slots(link, views, plan, journal, settings, stop, report, log),
    };
    // Valkey refuses its own migration where a loaded module has not
    // declared it can follow one: before anything moved, and where the
    // method was left to hk-top, the standard migration does the job.
    if let Err(e) = &result {
        let refused = e.contains("does not support atomic slot migration");
        if refused && settings.method == Method::Auto && report.moves_done == 0 {
            log(format!("the server's own slot migration is refused ({e}): moving slots with the standard migration"));
            report.atomic_refused = Some(e.clone());
            report.method = Method::Standard.name();
            result = by_slots(link, views, plan, journal, settings, stop, report, log);
        }
    }
    report.seconds = started.elapsed().as_secs_f64();
    result
}

fn pair(views: &Views, m: &Move) -> Result<(Endpoint, Endpoint), String> {
    let find = |address: &str| {
        by_address(views, address).ok_or_else(|| format!("{address} is no longer a primary"))
    };
    Ok((find(&m.from)?, find(&m.to)?))
}

#[allow(clippy::too_many_arguments)]
fn by_slots(
    link: &mut dyn Link,
    views: &Views,
    plan: &Plan,
    journal: &mut Journal,
    settings: &Settings,
    stop: &AtomicBool,
    report: &mut Report,
    log: &mut dyn FnMut(String),
) -> Result<(), String> {
    for (i, m) in plan.moves.iter().enumerate() {
        if stop.load(Ordering::Relaxed) {
            report.interrupted = true;
            return Ok(());
        }
        let (source, target) = pair(views, m)?;
        let began = Instant::now();
        journal.begin(Entry {
            slot: m.slot,
            source: source.id.clone(),
            target: target.id.clone(),
        })?;
        let others = others(views, &source, &target);
        let moved = migrate::migrate_slot(
            link,
            m.slot,
            &source,
            &target,
            &others,
            &settings.login,
            &mut |_| {},
        )?;
        journal.end(m.slot)?;
        report.moves_done += 1;
        report.keys_moved += moved.keys;
        log(format!(
            "[{}/{}] slot {} {} -> {}: {} keys in {:.3} s",
            i + 1,
            plan.moves.len(),
            m.slot,
            m.from,
            m.to,
            moved.keys,
            began.elapsed().as_secs_f64()
        ));
    }
    Ok(())
}

fn by_jobs(
    link: &mut dyn Link,
    views: &Views,
    plan: &Plan,
    settings: &Settings,
    stop: &AtomicBool,
    report: &mut Report,
    log: &mut dyn FnMut(String),
) -> Result<(), String> {
    let mut groups: Vec<(String, String, Vec<&Move>)> = Vec::new();
    for m in &plan.moves {
        match groups.iter_mut().find(|g| g.0 == m.from && g.1 == m.to) {
            Some(g) => g.2.push(m),
            None => groups.push((m.from.clone(), m.to.clone(), vec![m])),
        }
    }
    for (from, to, moves) in &groups {
        if stop.load(Ordering::Relaxed) {
            report.interrupted = true;
            return Ok(());
        }
        let (source, target) = pair(views, moves[0])?;
        let slots: Vec<u16> = moves.iter().map(|m| m.slot).collect();
        let began = Instant::now();
        atomic::migrate_slots(
            link,
            &source,
            &target,
            &slots,
            settings.timeout,
            &mut |state| log(format!("{from} -> {to}: {} slots: {state}", slots.len())),
        )?;
        report.moves_done += moves.len();
        report.keys_moved += moves.iter().map(|m| m.keys).sum::<u64>();
        log(format!(
            "{from} -> {to}: {} slots in {:.3} s",
            slots.len(),
            began.elapsed().as_secs_f64()
        ));
    }
    Ok(())
}
