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
//!
//! The run owns the cluster's view: it reads it through its [`Link`], and
//! only it replaces it (after a fault, or when asked to [`Run::settle`]).

use super::atomic::{self, Flavor};
use super::error::Error;
use super::health::{self, Health, Open};
use super::interrupt::Stop;
use super::journal::{Done, Journal};
use super::lease::Lease;
use super::link::Link;
use super::log;
use super::migrate::{self, Endpoint, Login, Moved};
use super::topology::{ClusterNode, Views};
use heavykeeper_rebalance::{Cooldown, Move};
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
    link: &'a mut dyn Link,
    /// The cluster as last read: only the run replaces it.
    views: Views,
    journal: &'a mut Journal,
    settings: &'a Settings,
    stop: &'a Stop,
    lease: &'a Lease,
    report: Report,
    /// Each move as it is made (progress and problems go to the log).
    on_move: &'a mut dyn FnMut(&MoveMade),
}

/// Where a slot's move goes on after a step failed.
enum Next {
    /// With this pair: the same, or the primaries that took over.
    Pair(Endpoint, Endpoint),
    /// Another primary (`owner`) serves the slot, neither the source nor
    /// one that took over from it: the view the move was planned on is
    /// stale.
    Stale { owner: String },
    /// The cluster could not be read, or no primary serves the slot.
    Unknown,
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
/// move) before a disagreement counts as a problem (a test's scripted
/// cluster never agrees later than now).
const SETTLE: Duration = Duration::from_millis(if cfg!(test) { 0 } else { 10_000 });
/// Between two tries of a slot left half-way.
const RETRY_PAUSE: Duration = Duration::from_millis(if cfg!(test) { 1 } else { 1000 });
/// A slot whose nodes fail over again and again is given up after this
/// many.
const FAILOVERS_PER_SLOT: usize = 3;

/// The cluster's views (read from the first of `addresses` that answers)
/// and health once the primaries agree, or after [`SETTLE`] with whatever
/// problems are left.
pub fn settled(link: &mut dyn Link, addresses: &[String]) -> Result<(Views, Health), Error> {
    let deadline = Instant::now() + crate::fault::scaled("HK_TOP_TEST_SETTLE_MS", SETTLE);
    let first = addresses.first().map_or("", String::as_str);
    loop {
        let views = (Views::read_any(link, addresses))
            .map_err(|e| Error::node(first, "CLUSTER NODES", e))?;
        let health = health::check(&views);
        if health.problems.is_empty() || Instant::now() > deadline {
            return Ok((views, health));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The moves grouped per (from, to), in the order the pairs first appear.
pub fn by_pair(moves: &[Move]) -> Vec<(&str, &str, Vec<&Move>)> {
    let mut groups: Vec<(&str, &str, Vec<&Move>)> = Vec::new();
    for m in moves {
        match groups.iter_mut().find(|g| g.0 == m.from && g.1 == m.to) {
            Some(g) => g.2.push(m),
            None => groups.push((&m.from, &m.to, vec![m])),
        }
    }
    groups
}

pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

fn endpoint(node: &ClusterNode) -> Endpoint {
    Endpoint {
        id: node.id.clone(),
        address: node.address.clone(),
    }
}

/// Where a move of `slot` goes on after a fault, as `views` show the
/// cluster now: a failed-over node's part is its new primary's.
fn next_pair(views: &Views, slot: u16, source: &Endpoint, target: &Endpoint) -> Next {
    let successor = |e: &Endpoint| {
        let node = views.by_id(&e.id)?;
        views.successor(node).map(endpoint)
    };
    let (Some(new_target), Some(owner)) = (successor(target), views.owner_of(slot)) else {
        return Next::Unknown;
    };
    if owner.id == new_target.id {
        // Given already: what is left is telling the others.
        Next::Pair(source.clone(), new_target)
    } else if successor(source).is_some_and(|s| s.id == owner.id) {
        Next::Pair(endpoint(owner), new_target)
    } else {
        Next::Stale {
            owner: owner.address.clone(),
        }
    }
}

/// What `views` show of a move of `slot` from `source`.
fn trace(views: &Views, slot: u16, source: &Endpoint) -> Trace {
    let open = health::check(views).open.iter().any(|o| o.slot == slot);
    let served = views.owner_of(slot).is_some_and(|o| o.id == source.id);
    let all_answered = views.all().all(|(_, v)| v.is_ok());
    match (open || !served, all_answered) {
        (true, _) => Trace::Begun,
        (false, true) => Trace::None,
        (false, false) => Trace::NoneSeen,
    }
}

impl<'a> Run<'a> {
    pub fn new(
        link: &'a mut dyn Link,
        views: Views,
        journal: &'a mut Journal,
        settings: &'a Settings,
        stop: &'a Stop,
        lease: &'a Lease,
        on_move: &'a mut dyn FnMut(&MoveMade),
    ) -> Self {
        Run {
            link,
            views,
            journal,
            settings,
            stop,
            lease,
            report: Report::default(),
            on_move,
        }
    }

    pub fn report(&self) -> &Report {
        &self.report
    }

    /// The cooldown of `period_ms`, knowing the moves the journal remembers.
    pub fn cooldown(&self, period_ms: i64) -> Cooldown {
        Cooldown::new(period_ms, self.journal.moved())
    }

    /// Reads the cluster again (once its primaries agree): its health.
    pub fn settle(&mut self) -> Result<Health, Error> {
        let (views, health) = settled(self.link, &self.views.addresses())?;
        self.views = views;
        Ok(health)
    }

    /// Runs `f` on the link and the cluster as last read (to measure it).
    pub fn with_cluster<T>(&mut self, f: impl FnOnce(&mut dyn Link, &Views) -> T) -> T {
        f(self.link, &self.views)
    }

    /// Finishes (or rolls back) the half-migrated slots that are this
    /// tool's, waits for the servers' own jobs, and refuses if anything
    /// else is in the way.
    pub fn recover(&mut self, health: &Health) -> Result<(), Error> {
        if !health.problems.is_empty() {
            return Err(Error::Unfit(health.problems.join("; ")));
        }
        let foreign: Vec<&Open> = (health.open.iter())
            .filter(|o| !self.settings.adopt && !self.journal.open_moves().contains(o))
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
        let begun = self.journal.open_moves().iter().map(|e| e.slot);
        let untouched: Vec<u16> = begun
            .filter(|&s| !health.open.iter().any(|o| o.slot == s))
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
                log(format!(
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
                let (back, ..) = self.move_slot(open.slot, target, source.clone())?;
                log(format!(
                    "rolled back slot {} to {} ({} keys back)",
                    open.slot, source.address, back.keys
                ));
                self.report.rolled_back += 1;
                self.journal.end(open.slot).map_err(Error::Local)?;
            } else {
                let (moved, _, to) = self.move_slot(open.slot, source, target)?;
                log(format!(
                    "finished slot {}: -> {} ({} keys)",
                    open.slot, to, moved.keys
                ));
                self.report.resumed += 1;
            }
        }
        Ok(())
    }

    /// The primaries' addresses, and the servers' own migration of each.
    fn flavors(&mut self) -> (Vec<String>, Vec<Option<Flavor>>) {
        let addresses: Vec<String> = (self.views.primaries().iter())
            .map(|n| n.address.clone())
            .collect();
        let flavors = (addresses.iter())
            .map(|a| atomic::flavor(self.link, a))
            .collect();
        (addresses, flavors)
    }

    fn wait_for_servers_jobs(&mut self) -> Result<(), Error> {
        let (addresses, flavors) = self.flavors();
        let Some(&flavor) = flavors.iter().flatten().next() else {
            return Ok(());
        };
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
        let (_, flavors) = self.flavors();
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
                log(format!("the server's own slot migration is refused ({reply}): moving slots with the standard migration"));
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

    /// The slot's source and target as the run last read the cluster: the
    /// plan's, or where one of them failed over since, the primary that
    /// took over its part. A change not read yet is met at the slot's first
    /// step, which the node refuses ([`Run::move_slot`]).
    fn pair(&mut self, m: &Move) -> Result<(Endpoint, Endpoint), Error> {
        let views = &self.views;
        let now = |address: &str| {
            let node = views.by_address(address)?;
            views.successor(node).map(endpoint)
        };
        let (Some(source), Some(target)) = (now(&m.from), now(&m.to)) else {
            return Err(Error::Unfit(format!(
                "{} or {} is no longer a primary, and no primary took its part over",
                m.from, m.to
            )));
        };
        if views.owner_of(m.slot).is_none_or(|o| o.id != source.id) {
            return Err(Error::Unfit(format!(
                "slot {} is no longer served by {} (or the primary that took over from it): plan again",
                m.slot, m.from
            )));
        }
        if source.address != m.from || target.address != m.to {
            log(format!(
                "slot {}: {} -> {} failed over since the plan: moving it {} -> {}",
                m.slot, m.from, m.to, source.address, target.address
            ));
        }
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
            let (moved, from, to) = self.move_slot(m.slot, source, target)?;
            let made = MoveMade {
                slot: m.slot,
                from,
                to,
                keys: moved.keys,
                seconds: began.elapsed().as_secs_f64(),
            };
            self.report.moves_done += 1;
            self.report.keys_moved += moved.keys;
            log(format!(
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
    /// what it moved, from where and to where (the nodes it ended with:
    /// primaries that took over, where any did). A slot begun is finished, not left: a step that
    /// fails is tried again (with the new primary where one took over)
    /// until the slot's `--timeout-s`; a slot the cluster shows no trace of
    /// is left alone and the run stops between slots.
    fn move_slot(
        &mut self,
        slot: u16,
        mut source: Endpoint,
        mut target: Endpoint,
    ) -> Result<(Moved, String, String), Error> {
        let deadline = Instant::now() + self.settings.timeout;
        let mut failovers = 0;
        loop {
            self.journal
                .begin(Open {
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
                    return Ok((moved, source.address, target.address));
                }
                Err(e) => e,
            };
            // The cluster read once after the fault: where the move goes
            // on, and what it shows of the move.
            let mut ask = vec![target.address.clone(), source.address.clone()];
            ask.extend(self.views.addresses());
            let (next, trace) = match Views::read_any(self.link, &ask) {
                Ok(views) => {
                    let seen = (
                        next_pair(&views, slot, &source, &target),
                        trace(&views, slot, &source),
                    );
                    self.views = views;
                    seen
                }
                Err(_) => (Next::Unknown, Trace::Begun),
            };
            if let Next::Stale { owner } = next {
                return Err(self.abandon(slot, &source, &target, &owner));
            }
            if let Next::Pair(s, t) = next {
                if s.id != source.id || t.id != target.id {
                    failovers += 1;
                    if failovers > FAILOVERS_PER_SLOT {
                        return Err(self.half_way(slot, &source, &target, cause));
                    }
                    log(format!(
                        "slot {slot}: {} -> {} failed over ({cause}): going on {} -> {}",
                        source.address, target.address, s.address, t.address
                    ));
                    self.report.failovers += 1;
                    (source, target) = (s, t);
                    continue;
                }
            }
            match trace {
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
            log(format!(
                "slot {slot} is half-way ({cause}): trying again to finish it"
            ));
            std::thread::sleep(RETRY_PAUSE);
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
        let primaries = self.views.primaries().into_iter();
        let others = primaries.filter(|n| n.id != source.id && n.id != target.id);
        others.map(endpoint).collect()
    }

    /// A move begun on a stale view: the target's `IMPORTING` (this run's
    /// own, the only trace it left) is taken back, and the run stops.
    fn abandon(&mut self, slot: u16, source: &Endpoint, target: &Endpoint, owner: &str) -> Error {
        let mut stable = redis::cmd("CLUSTER");
        stable.arg("SETSLOT").arg(slot).arg("STABLE");
        if self.link.run(&target.address, &stable).is_ok() {
            let _ = self.journal.end(slot);
        }
        Error::Unfit(format!(
            "slot {slot} is served by {owner}, not {} (nor a primary that took over from it): plan again",
            source.address
        ))
    }

    fn by_jobs(&mut self, moves: &[Move], flavor: Flavor) -> Result<(), Error> {
        for (from, to, moves) in by_pair(moves) {
            if !self.may_go_on()? {
                return Ok(());
            }
            let Some(first) = moves.first() else {
                continue;
            };
            let (source, target) = self.pair(first)?;
            let slots: Vec<u16> = moves.iter().map(|m| m.slot).collect();
            let began = Instant::now();
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
            log(format!(
                "{from} -> {to}: {} slots in {seconds:.3} s",
                slots.len()
            ));
            for m in &moves {
                self.made(m.slot, &source, &target)?;
                (self.on_move)(&MoveMade {
                    slot: m.slot,
                    from: from.to_string(),
                    to: to.to_string(),
                    keys: m.keys,
                    seconds: seconds / moves.len() as f64,
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rebalance::fake_cluster::{address, FakeCluster, Fault, LeaseKey};

    /// Node 0's, with keys.
    const SLOT: u16 = 100;

    fn planned(slot: u16, from: usize, to: usize) -> Move {
        Move {
            slot,
            from: address(from),
            to: address(to),
            reads_per_second: 1.0,
            ..Move::default()
        }
    }

    /// A scripted cluster (150 keys in each of `slots`, `fault` after the
    /// first command that starts with a text) and a journal of its own.
    struct Case {
        cluster: FakeCluster,
        dir: tempfile::TempDir,
    }

    impl Case {
        fn new(slots: &[u16], after: &str, fault: Fault) -> Case {
            let mut cluster = FakeCluster::new(slots, 150);
            cluster.on(after, fault);
            let dir = tempfile::tempdir().unwrap();
            Case { cluster, dir }
        }

        /// `act` in a run (rolling back or not, a slot given `timeout`),
        /// its lease renewed once as `renewed` says; what `act` returned,
        /// and the report.
        fn run<T>(
            &mut self,
            (roll_back, timeout): (bool, Duration),
            renewed: i64,
            act: impl FnOnce(&mut Run, &Health) -> Result<T, Error>,
        ) -> (Result<T, Error>, Report) {
            let settings = Settings {
                method: Method::Standard,
                roll_back,
                adopt: false,
                login: Login::default(),
                timeout,
            };
            let key = LeaseKey {
                held: None,
                renewed,
            };
            let lease = Lease::take(Box::new(key), "b:1").unwrap();
            lease.renew();
            let (views, health) = settled(&mut self.cluster, &[address(0)]).unwrap();
            let mut journal = Journal::open(&self.dir.path().join("journal.json")).unwrap();
            let stop = self.cluster.stop.clone();
            let (link, on_move) = (&mut self.cluster, &mut |_: &MoveMade| {});
            let mut run = Run::new(link, views, &mut journal, &settings, &stop, &lease, on_move);
            let result = act(&mut run, &health);
            (result, run.report.clone())
        }

        /// `moves` carried out by a run whose lease holds.
        fn execute(&mut self, moves: &[Move]) -> (Result<(), Error>, Report) {
            let patient = (false, Duration::from_secs(5));
            self.run(patient, 1, |run, _| run.execute(moves, Chosen::Standard))
        }

        /// Nothing half-way on the nodes nor open in the journal.
        fn settled(&self) -> bool {
            let journal = Journal::open(&self.dir.path().join("journal.json")).unwrap();
            !self.cluster.half_way() && journal.open_moves().is_empty()
        }
    }

    #[test]
    fn a_node_that_fails_over_mid_slot_is_followed_by_the_primary_that_took_over() {
        // The source after its first batch of keys, the target once told
        // to import: the replicas 3 and 4 take over.
        for (failed, after, source, target) in [
            (0, "MIGRATE", 3, 1),
            (1, "CLUSTER SETSLOT 100 MIGRATING", 0, 4),
        ] {
            let mut case = Case::new(&[SLOT], after, Fault::FailOver(failed));
            let (result, report) = case.execute(&[planned(SLOT, 0, 1)]);
            result.unwrap();
            let cluster = &case.cluster;
            assert_eq!(cluster.owner_of(SLOT), target, "{:#?}", cluster.sent);
            assert_eq!(cluster.holders(SLOT), [target % 3]);
            assert!(case.settled());
            assert_eq!((report.moves_done, report.failovers), (1, 1));
            let from_source = format!("{} MIGRATE", address(source));
            assert!(cluster.sent.iter().any(|l| l.starts_with(&from_source)));
        }
    }

    #[test]
    fn a_move_killed_at_any_of_its_four_steps_is_finished_or_rolled_back_by_the_next_run() {
        let steps = [
            "CLUSTER SETSLOT 100 IMPORTING",
            "CLUSTER SETSLOT 100 MIGRATING",
            "MIGRATE",
            "CLUSTER SETSLOT 100 NODE",
        ];
        for (step, after) in steps.iter().enumerate() {
            for roll_back in [false, true] {
                let mut case = Case::new(&[SLOT], after, Fault::Kill);
                // Killed: the slot is given up on at once, half-way.
                let (killed, _) = case.run((false, Duration::ZERO), 1, |run, _| {
                    run.execute(&[planned(SLOT, 0, 1)], Chosen::Standard)
                });
                assert!(matches!(killed, Err(Error::HalfWay { .. })), "{after}");
                assert!(!case.settled(), "{after}");
                case.cluster.revive();
                let patient = (roll_back, Duration::from_secs(5));
                let (next, report) = case.run(patient, 1, |run, health| run.recover(health));
                next.unwrap();
                // A slot given to the target already cannot go back.
                let back = roll_back && step < 3;
                let owner = if back { 0 } else { 1 };
                assert_eq!(case.cluster.owner_of(SLOT), owner, "{after}, {roll_back}");
                assert_eq!(case.cluster.holders(SLOT), [owner], "{after}, {roll_back}");
                let done = (report.rolled_back, report.resumed);
                assert_eq!(done, (back as usize, !back as usize));
                assert!(case.settled(), "{after}");
            }
        }
    }

    #[test]
    fn a_move_on_a_stale_view_is_abandoned_and_its_trace_taken_back() {
        // Someone else gives the slot to node 2 once the target imports it.
        let after = "CLUSTER SETSLOT 100 IMPORTING";
        let mut case = Case::new(&[SLOT], after, Fault::Give(SLOT, 2));
        let (result, report) = case.execute(&[planned(SLOT, 0, 1)]);
        let error = result.unwrap_err();
        assert!(
            matches!(&error, Error::Unfit(why) if why.contains("plan again")),
            "{error}"
        );
        assert_eq!(case.cluster.owner_of(SLOT), 2);
        assert_eq!(case.cluster.holders(SLOT), [2]);
        assert!(case.settled() && report.moves_done == 0);
    }

    #[test]
    fn a_signal_mid_slot_stops_the_run_once_the_slot_is_made() {
        let mut case = Case::new(&[SLOT, 200], "MIGRATE", Fault::Signal);
        let (result, report) = case.execute(&[planned(SLOT, 0, 1), planned(200, 0, 2)]);
        result.unwrap();
        assert!(report.interrupted && report.moves_done == 1);
        let cluster = &case.cluster;
        assert_eq!((cluster.owner_of(SLOT), cluster.owner_of(200)), (1, 0));
        assert_eq!(cluster.holders(SLOT), [1]);
        assert!(case.settled());
    }

    #[test]
    fn a_run_whose_lease_is_lost_stops_before_its_next_slot() {
        let mut case = Case::new(&[SLOT], "never", Fault::Kill);
        let (result, report) = case.run((false, Duration::from_secs(5)), 0, |run, _| {
            run.execute(&[planned(SLOT, 0, 1)], Chosen::Standard)
        });
        assert!(matches!(result, Err(Error::LeaseLost(_))), "{result:?}");
        assert_eq!((report.moves_done, case.cluster.owner_of(SLOT)), (0, 0));
        assert!(!case.cluster.sent.iter().any(|l| l.contains("SETSLOT")));
    }
}
