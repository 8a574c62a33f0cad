//! Carrying moves out: the cluster checked, what an interrupted run left
//! finished (or rolled back), then the moves one slot at a time (or one
//! job per pair of primaries with the servers' own migration), with
//! progress. A signal stops it between two slots, never in one.
//!
//! Faults are waited out where they pass: the link retries a node that
//! stalls or restarts within its patience (`link.rs`), and a slot whose
//! source or target failed over mid-move goes on with the primary that
//! took over (every step of a move can be run again with the new node, see
//! `migrate.rs`). What cannot go on is stopped between slots, with the
//! node named; a slot that can be neither finished nor given back is said
//! to be half-way, and stays in the journal for the next run.

use super::atomic::{self, Flavor};
use super::error::Error;
use super::health::{self, Health, Open};
use super::interrupt::Stop;
use super::journal::{Done, Entry, Journal};
use super::lease::Lease;
use super::link::Link;
use super::migrate::{self, Endpoint, Login, Moved};
use super::topology::{ClusterNode, Views};
use crate::connection::settings::ConnectionSettings;
use heavykeeper_rebalance::Move;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How a slot moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// The servers' own where every primary has it, else the standard.
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
}

/// The method a run uses, once chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Chosen {
    Standard,
    Atomic(Flavor),
}

impl Chosen {
    pub fn name(self) -> &'static str {
        match self {
            Chosen::Standard => "standard",
            Chosen::Atomic(_) => "atomic",
        }
    }
}

pub struct Settings {
    pub method: Method,
    pub roll_back: bool,
    /// Take over half-migrated slots the journal does not list.
    pub adopt: bool,
    pub login: Login,
    /// The longest one slot (or one job of the servers' own migration) may
    /// take.
    pub timeout: Duration,
}

/// What was done.
#[derive(Clone, Debug, Default)]
pub struct Report {
    pub method: &'static str,
    pub resumed: usize,
    pub rolled_back: usize,
    pub moves_done: usize,
    pub keys_moved: u64,
    pub seconds: f64,
    pub interrupted: bool,
    /// Why the servers refused their own migration, when they did and the
    /// standard one was used instead.
    pub atomic_refused: Option<String>,
    /// Slots whose source or target failed over mid-move, and went on.
    pub failovers: usize,
}

/// A move made, as it is reported (one line or JSON object each).
#[derive(Clone, Debug, PartialEq)]
pub struct MoveMade {
    pub slot: u16,
    pub from: String,
    pub to: String,
    pub keys: u64,
    pub seconds: f64,
}

/// Everything a run carries out moves with.
pub struct Run<'a> {
    pub link: &'a mut dyn Link,
    /// To read the cluster again after a fault.
    pub connection: &'a ConnectionSettings,
    pub views: Views,
    pub journal: &'a mut Journal,
    pub settings: &'a Settings,
    pub stop: &'a Stop,
    pub lease: &'a Lease,
    pub report: Report,
    /// Progress and problems, for a person.
    pub log: &'a mut dyn FnMut(String),
    /// Each move as it is made.
    pub on_move: &'a mut dyn FnMut(&MoveMade),
}

/// What the cluster shows of a slot's move after a step failed.
enum Trace {
    /// Nothing, every node answering: the move never began.
    None,
    /// Nothing on the nodes that answer.
    NoneSeen,
    /// A node migrating or importing it, or its source no longer serving it.
    Begun,
}

/// How long the primaries get to agree on the slot map (gossip after a
/// move) before a disagreement counts as a problem.
const SETTLE: Duration = Duration::from_secs(10);
/// A slot whose nodes fail over again and again is given up after this
/// many.
const FAILOVERS_PER_SLOT: usize = 3;

/// The cluster's views and health once the primaries agree, or after
/// [`SETTLE`] with whatever problems are left.
pub fn settled(connection: &ConnectionSettings, first: &str) -> Result<(Views, Health), Error> {
    let deadline = Instant::now() + SETTLE;
    loop {
        let views =
            Views::read(connection, first).map_err(|e| Error::node(first, "CLUSTER NODES", e))?;
        let health = health::check(&views);
        if health.problems.is_empty() || Instant::now() > deadline {
            return Ok((views, health));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

fn endpoint(node: &ClusterNode) -> Endpoint {
    Endpoint {
        id: node.id().to_string(),
        address: node.address().to_string(),
    }
}

impl Run<'_> {
    /// Finishes (or rolls back) the half-migrated slots that are this
    /// tool's, waits for the servers' own jobs, and refuses if anything
    /// else is in the way.
    pub fn recover(&mut self, health: &Health) -> Result<(), Error> {
        if !health.problems.is_empty() {
            return Err(Error::Unfit(health.problems.join("; ")));
        }
        let foreign: Vec<&Open> = (health.open.iter())
            .filter(|o| !self.settings.adopt && !self.journal.owns(o.slot, &o.source, &o.target))
            .collect();
        if !foreign.is_empty() {
            let listed: Vec<String> = foreign.iter().map(|o| o.slot.to_string()).collect();
            return Err(Error::Unfit(format!(
                "slots {} are half-migrated by someone else (not in {}); finish them, or run with --adopt to take them over",
                listed.join(", "),
                self.journal.path().display()
            )));
        }
        self.wait_for_servers_jobs()?;
        // Begun moves the cluster shows no trace of were never started on
        // it (stopped before their first command): nothing to do.
        let untouched: Vec<u16> = (self.journal.open_moves().iter())
            .filter(|e| !health.open.iter().any(|o| o.slot == e.slot))
            .map(|e| e.slot)
            .collect();
        for slot in untouched {
            self.journal.end(slot).map_err(Error::Local)?;
        }
        for open in &health.open {
            self.lease.check()?;
            let (Some(source), Some(target)) = (
                self.views.by_id(&open.source),
                self.views.by_id(&open.target),
            ) else {
                return Err(Error::Unfit(format!(
                    "slot {} is half-migrated between nodes not in the cluster",
                    open.slot
                )));
            };
            // A slot the target was given already cannot go back: its
            // ownership moved with a new epoch. What is left is finishing.
            let given = target.owns(open.slot);
            let (source, target) = (endpoint(source), endpoint(target));
            if given && self.settings.roll_back {
                (self.log)(format!(
                    "slot {} was given to {} already: finishing it rather than rolling it back",
                    open.slot, target.address
                ));
            }
            if self.settings.roll_back && !given {
                // Keys only ever travel the way clients' `ASK` points: the
                // move is finished, then made the other way. Serving the
                // slot from the source again while the target still held
                // keys answered reads of those keys with nothing.
                self.move_slot(open.slot, source.clone(), target.clone())?;
                let (back, _) = self.move_slot(open.slot, target, source.clone())?;
                (self.log)(format!(
                    "rolled back slot {} to {} ({} keys back)",
                    open.slot, source.address, back.keys
                ));
                self.report.rolled_back += 1;
                self.journal.end(open.slot).map_err(Error::Local)?;
            } else {
                let moved = self.move_slot(open.slot, source, target)?;
                (self.log)(format!(
                    "finished slot {}: -> {} ({} keys)",
                    open.slot, moved.1, moved.0.keys
                ));
                self.report.resumed += 1;
            }
        }
        Ok(())
    }

    fn wait_for_servers_jobs(&mut self) -> Result<(), Error> {
        let addresses: Vec<String> = (self.views.primaries().iter())
            .map(|n| n.address().to_string())
            .collect();
        let flavors: Vec<Flavor> = (addresses.iter())
            .filter_map(|a| atomic::flavor(self.link, a))
            .collect();
        let Some(&flavor) = flavors.first() else {
            return Ok(());
        };
        let log = &mut self.log;
        atomic::wait_running(
            self.link,
            flavor,
            &addresses,
            self.settings.timeout,
            &mut |job| {
                log(format!(
                    "waiting for the server's slot migration {} ({}): {}",
                    job.name, job.slot_ranges, job.state
                ))
            },
        )
    }

    /// The method to use: the servers' own only where every primary has
    /// the same one.
    pub fn choose(&mut self) -> Result<Chosen, Error> {
        let primaries: Vec<String> = (self.views.primaries().iter())
            .map(|n| n.address().to_string())
            .collect();
        let flavors: Vec<Option<Flavor>> = (primaries.iter())
            .map(|a| atomic::flavor(self.link, a))
            .collect();
        let everywhere = match flavors.first() {
            Some(Some(first)) if flavors.iter().all(|f| *f == Some(*first)) => Some(*first),
            _ => None,
        };
        match (self.settings.method, everywhere) {
            (Method::Atomic, None) => Err(Error::Usage(
                "--migration atomic: not every primary has the same slot migration of its own (Valkey 9 CLUSTER MIGRATESLOTS, Redis 8.4 CLUSTER MIGRATION)".into(),
            )),
            (Method::Atomic | Method::Auto, Some(flavor)) => Ok(Chosen::Atomic(flavor)),
            _ => Ok(Chosen::Standard),
        }
    }

    /// Carries `moves` out.
    pub fn execute(&mut self, moves: &[Move], method: Chosen) -> Result<(), Error> {
        self.report.method = method.name();
        let started = Instant::now();
        let mut result = match method {
            Chosen::Atomic(flavor) => self.by_jobs(moves, flavor),
            Chosen::Standard => self.by_slots(moves),
        };
        // Valkey refuses its own migration where a loaded module has not
        // declared it can follow one: before anything moved, and where the
        // method was left to hk-top, the standard migration does the job.
        if let Err(Error::AtomicRefused { reply, .. }) = &result {
            if self.settings.method == Method::Auto && self.report.moves_done == 0 {
                (self.log)(format!("the server's own slot migration is refused ({reply}): moving slots with the standard migration"));
                self.report.atomic_refused = Some(reply.clone());
                self.report.method = Chosen::Standard.name();
                result = self.by_slots(moves);
            }
        }
        self.report.seconds += started.elapsed().as_secs_f64();
        result
    }

    /// Between two slots: stop if asked, go on only while the lease holds.
    fn may_go_on(&mut self) -> Result<bool, Error> {
        if self.stop.asked() {
            self.report.interrupted = true;
            return Ok(false);
        }
        self.lease.check()?;
        Ok(true)
    }

    /// The slot's source and target now: the plan's, or where one of
    /// them failed over since, the primary that took over its part.
    fn pair(&mut self, m: &Move) -> Result<(Endpoint, Endpoint), Error> {
        let primary_at = |views: &Views, address: &str| {
            (views.by_address(address))
                .filter(|n| n.is_primary())
                .map(endpoint)
        };
        let serves =
            |views: &Views, e: &Endpoint| views.owner_of(m.slot).is_some_and(|o| o.id() == e.id);
        if let (Some(s), Some(t)) = (
            primary_at(&self.views, &m.from),
            primary_at(&self.views, &m.to),
        ) {
            if serves(&self.views, &s) {
                return Ok((s, t));
            }
        }
        // The cluster changed since it was read: read it again.
        let (from, to) = (
            self.views.by_address(&m.from).cloned(),
            self.views.by_address(&m.to).cloned(),
        );
        let views = Views::read_any(self.connection, &self.views.addresses())
            .map_err(|e| Error::node(&m.from, "CLUSTER NODES", e))?;
        let successor = |node: &Option<ClusterNode>| {
            node.as_ref().and_then(|n| views.successor(n)).map(endpoint)
        };
        let (Some(source), Some(target)) = (successor(&from), successor(&to)) else {
            return Err(Error::Unfit(format!(
                "{} or {} is no longer a primary, and no primary took its part over",
                m.from, m.to
            )));
        };
        if !serves(&views, &source) {
            return Err(Error::Unfit(format!(
                "slot {} is no longer served by {} (or the primary that took over from it): plan again",
                m.slot, m.from
            )));
        }
        if source.address != m.from || target.address != m.to {
            (self.log)(format!(
                "slot {}: {} -> {} failed over since the plan: moving it {} -> {}",
                m.slot, m.from, m.to, source.address, target.address
            ));
        }
        self.views = views;
        Ok((source, target))
    }

    fn by_slots(&mut self, moves: &[Move]) -> Result<(), Error> {
        for (i, m) in moves.iter().enumerate() {
            crate::fault::pause_before_slot();
            if !self.may_go_on()? {
                return Ok(());
            }
            let (source, target) = self.pair(m)?;
            let began = Instant::now();
            let from = source.address.clone();
            let (moved, to) = self.move_slot(m.slot, source, target)?;
            let made = MoveMade {
                slot: m.slot,
                from,
                to,
                keys: moved.keys,
                seconds: began.elapsed().as_secs_f64(),
            };
            self.report.moves_done += 1;
            self.report.keys_moved += moved.keys;
            (self.log)(format!(
                "[{}/{}] slot {} {} -> {}: {} keys in {:.3} s",
                i + 1,
                moves.len(),
                made.slot,
                made.from,
                made.to,
                made.keys,
                made.seconds
            ));
            (self.on_move)(&made);
        }
        Ok(())
    }

    /// One slot from `source` to `target`, whatever fails over on the way:
    /// what it moved and to where (the target, or the primary that took
    /// over from it). A slot begun is finished, not left: a step that
    /// fails is tried again (with the new primary where one took over)
    /// until the slot's `--timeout-s`; a slot the cluster shows no trace of
    /// is left alone and the run stops between slots.
    fn move_slot(
        &mut self,
        slot: u16,
        mut source: Endpoint,
        mut target: Endpoint,
    ) -> Result<(Moved, String), Error> {
        let deadline = Instant::now() + self.settings.timeout;
        let mut failovers = 0;
        loop {
            self.journal
                .begin(Entry {
                    slot,
                    source: source.id.clone(),
                    target: target.id.clone(),
                })
                .map_err(Error::Local)?;
            let others = self.others(&source, &target);
            let tried = migrate::migrate_slot(
                self.link,
                slot,
                &source,
                &target,
                &others,
                &self.settings.login,
                &mut |_| {},
            );
            let cause = match tried {
                Ok(moved) => {
                    self.made(slot, &source, &target)?;
                    return Ok((moved, target.address));
                }
                Err(e) => e,
            };
            if let Some((s, t)) = self.after_fault(slot, &source, &target) {
                if s.id != source.id || t.id != target.id {
                    failovers += 1;
                    if failovers > FAILOVERS_PER_SLOT {
                        return Err(self.half_way(slot, &source, &target, cause));
                    }
                    (self.log)(format!(
                        "slot {slot}: {} -> {} failed over ({cause}): going on {} -> {}",
                        source.address, target.address, s.address, t.address
                    ));
                    self.report.failovers += 1;
                    (source, target) = (s, t);
                    continue;
                }
            }
            match self.trace_of(slot, &source) {
                Trace::None => {
                    let _ = self.journal.end(slot);
                    return Err(cause);
                }
                // The source serves it alone as far as can be seen: stop
                // between slots; the journal keeps the slot, in case the
                // node that does not answer was told to import it.
                Trace::NoneSeen => return Err(cause),
                Trace::Begun => {}
            }
            if Instant::now() > deadline {
                return Err(self.half_way(slot, &source, &target, cause));
            }
            (self.log)(format!(
                "slot {slot} is half-way ({cause}): trying again to finish it"
            ));
            std::thread::sleep(Duration::from_secs(1));
        }
    }

    fn half_way(&self, slot: u16, source: &Endpoint, target: &Endpoint, cause: Error) -> Error {
        Error::HalfWay {
            slot,
            source: source.address.clone(),
            target: target.address.clone(),
            cause: Box::new(cause),
        }
    }

    fn made(&mut self, slot: u16, source: &Endpoint, target: &Endpoint) -> Result<(), Error> {
        self.journal
            .moved_now(Done {
                slot,
                from: source.address.clone(),
                to: target.address.clone(),
                at_ms: now_ms(),
            })
            .map_err(Error::Local)
    }

    fn others(&self, source: &Endpoint, target: &Endpoint) -> Vec<Endpoint> {
        (self.views.primaries().into_iter())
            .filter(|n| n.id() != source.id && n.id() != target.id)
            .map(endpoint)
            .collect()
    }

    /// The cluster read again after a failed step: the slot's source and
    /// target now (a failed-over node's part is its new primary's).
    fn after_fault(
        &mut self,
        slot: u16,
        source: &Endpoint,
        target: &Endpoint,
    ) -> Option<(Endpoint, Endpoint)> {
        let mut ask: Vec<String> = vec![target.address.clone(), source.address.clone()];
        ask.extend(self.views.addresses());
        let views = Views::read_any(self.connection, &ask).ok()?;
        let new_target = endpoint(views.successor(self.views.by_id(&target.id)?)?);
        let new_source = match views.owner_of(slot) {
            // Given already: what is left is telling the others.
            Some(owner) if owner.id() == new_target.id => source.clone(),
            Some(owner) => endpoint(owner),
            None => return None,
        };
        self.views = views;
        Some((new_source, new_target))
    }

    /// What the cluster shows of a move of `slot` from `source`.
    fn trace_of(&mut self, slot: u16, source: &Endpoint) -> Trace {
        let ask: Vec<String> = self.views.addresses();
        let Ok(views) = Views::read_any(self.connection, &ask) else {
            return Trace::Begun;
        };
        let open = health::check(&views).open.iter().any(|o| o.slot == slot);
        let served = (views.selves().into_iter())
            .filter(|n| n.is_primary())
            .find(|n| n.owns(slot))
            .is_some_and(|o| o.id() == source.id);
        let all_answered = views.all().all(|(_, v)| v.is_ok());
        match (open || !served, all_answered) {
            (true, _) => Trace::Begun,
            (false, true) => Trace::None,
            (false, false) => Trace::NoneSeen,
        }
    }

    fn by_jobs(&mut self, moves: &[Move], flavor: Flavor) -> Result<(), Error> {
        let mut groups: Vec<(String, String, Vec<&Move>)> = Vec::new();
        for m in moves {
            match groups.iter_mut().find(|g| g.0 == m.from && g.1 == m.to) {
                Some(g) => g.2.push(m),
                None => groups.push((m.from.clone(), m.to.clone(), vec![m])),
            }
        }
        for (from, to, moves) in &groups {
            if !self.may_go_on()? {
                return Ok(());
            }
            let Some(first) = moves.first() else {
                continue;
            };
            let (source, target) = self.pair(first)?;
            let slots: Vec<u16> = moves.iter().map(|m| m.slot).collect();
            let began = Instant::now();
            let log = &mut self.log;
            atomic::migrate_slots(
                self.link,
                flavor,
                (&source, &target),
                &slots,
                self.settings.timeout,
                &mut |state| log(format!("{from} -> {to}: {} slots: {state}", slots.len())),
            )?;
            let seconds = began.elapsed().as_secs_f64();
            self.report.moves_done += moves.len();
            self.report.keys_moved += moves.iter().map(|m| m.keys).sum::<u64>();
            (self.log)(format!(
                "{from} -> {to}: {} slots in {seconds:.3} s",
                slots.len()
            ));
            for m in moves {
                self.made(m.slot, &source, &target)?;
                (self.on_move)(&MoveMade {
                    slot: m.slot,
                    from: from.clone(),
                    to: to.clone(),
                    keys: m.keys,
                    seconds: seconds / moves.len() as f64,
                });
            }
        }
        Ok(())
    }
}
