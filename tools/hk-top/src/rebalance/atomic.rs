//! The servers' own slot migration, where they have it: the source
//! streams the slots to the target, which takes them over atomically, with
//! no `ASK` and no key briefly on neither node. Two dialects:
//! - Valkey 9: `CLUSTER MIGRATESLOTS SLOTSRANGE .. NODE id` on the source,
//!   watched in its `CLUSTER GETSLOTMIGRATIONS` (ends `success`, `failed`
//!   or `cancelled`);
//! - Redis 8.4: `CLUSTER MIGRATION IMPORT lo hi ..` on the target, which
//!   answers a task id, watched in `CLUSTER MIGRATION STATUS ID id` (ends
//!   `completed` or `canceled`; a `failed` task is retried by the server
//!   itself, so hk-top gives up on it only after [`REDIS_RETRIES`], and
//!   then cancels it on the target).
//!
//! hk-top starts one job per pair of primaries and waits for it; the
//! server carries a job on if hk-top is interrupted, and a later run waits
//! for it (`apply.rs`).

use super::error::Error;
use super::link::{has_command, Link};
use super::migrate::Endpoint;
use redis::Value;
use std::time::{Duration, Instant};

/// How often a job is looked at.
const POLL: Duration = Duration::from_millis(50);
/// A Redis task that failed this many times is cancelled.
pub const REDIS_RETRIES: i64 = 5;

/// Which of the servers' own migrations a node has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    /// Valkey 9's `CLUSTER MIGRATESLOTS`.
    Valkey,
    /// Redis 8.4's `CLUSTER MIGRATION`.
    Redis,
}

impl Flavor {
    pub fn name(self) -> &'static str {
        match self {
            Flavor::Valkey => "CLUSTER MIGRATESLOTS",
            Flavor::Redis => "CLUSTER MIGRATION",
        }
    }
}

/// The node's own migration, if it has one.
pub fn flavor(link: &mut dyn Link, address: &str) -> Option<Flavor> {
    if has_command(link, address, "CLUSTER|MIGRATESLOTS") {
        Some(Flavor::Valkey)
    } else if has_command(link, address, "CLUSTER|MIGRATION") {
        Some(Flavor::Redis)
    } else {
        None
    }
}

/// One job, as either dialect lists it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Job {
    /// Valkey's `name`, Redis's `id`.
    pub name: String,
    pub slot_ranges: String,
    pub source: String,
    pub target: String,
    pub state: String,
    /// Valkey's `message`, Redis's `last_error`.
    pub message: String,
    /// Redis: how often the server retried a failed task.
    pub retries: i64,
}

impl Job {
    /// Over for good: Valkey's `success`, `failed`, `cancelled`; Redis's
    /// `completed`, `canceled` (a Redis `failed` task is retried).
    pub fn ended(&self, flavor: Flavor) -> bool {
        match flavor {
            Flavor::Valkey => matches!(self.state.as_str(), "success" | "failed" | "cancelled"),
            Flavor::Redis => matches!(self.state.as_str(), "completed" | "canceled"),
        }
    }

    pub fn succeeded(&self) -> bool {
        matches!(self.state.as_str(), "success" | "completed")
    }
}

/// The jobs a node knows, running or recently ended; none where the
/// command is unknown.
pub fn jobs(link: &mut dyn Link, flavor: Flavor, address: &str) -> Vec<Job> {
    let mut cmd = redis::cmd("CLUSTER");
    match flavor {
        Flavor::Valkey => cmd.arg("GETSLOTMIGRATIONS"),
        Flavor::Redis => cmd.arg("MIGRATION").arg("STATUS").arg("ALL"),
    };
    match link.run(address, &cmd) {
        Ok(Value::Array(rows)) => rows.iter().filter_map(job_of).collect(),
        _ => Vec::new(),
    }
}

/// A job as flat `name value` pairs (RESP2) or a map (RESP3), in either
/// dialect's field names.
fn job_of(row: &Value) -> Option<Job> {
    let pairs: Vec<(String, String)> = match row {
        Value::Array(flat) => (flat.chunks(2))
            .filter_map(|p| Some((text(p.first()?)?, text(p.get(1)?).unwrap_or_default())))
            .collect(),
        Value::Map(map) => (map.iter())
            .filter_map(|(k, v)| Some((text(k)?, text(v).unwrap_or_default())))
            .collect(),
        _ => return None,
    };
    let field = |names: &[&str]| {
        (pairs.iter())
            .find(|(k, _)| names.contains(&k.as_str()))
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    Some(Job {
        name: field(&["name", "id"]),
        slot_ranges: field(&["slot_ranges", "slots"]),
        source: field(&["source_node", "source"]),
        target: field(&["target_node", "dest"]),
        state: field(&["state"]),
        message: field(&["message", "last_error"]),
        retries: field(&["retries"]).parse().unwrap_or(0),
    })
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::BulkString(b) => Some(String::from_utf8_lossy(b).into_owned()),
        Value::SimpleString(s) => Some(s.clone()),
        Value::Int(i) => Some(i.to_string()),
        _ => None,
    }
}

/// Consecutive slots as `(first, last)` ranges.
pub fn ranges(slots: &[u16]) -> Vec<(u16, u16)> {
    let mut sorted = slots.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut out: Vec<(u16, u16)> = Vec::new();
    for s in sorted {
        match out.last_mut() {
            Some((_, hi)) if *hi + 1 == s => *hi = s,
            _ => out.push((s, s)),
        }
    }
    out
}

/// Valkey refuses its own migration where a loaded module has not
/// declared it can follow one: the one place its text is read.
fn refusal(node: &str, reply: &str) -> Option<Error> {
    reply
        .contains("does not support atomic slot migration")
        .then(|| Error::AtomicRefused {
            node: node.to_string(),
            reply: reply.to_string(),
        })
}

/// Moves `slots` from `source` to `target` in one job and waits for it;
/// `progress` hears the job's state as it changes.
pub fn migrate_slots(
    link: &mut dyn Link,
    flavor: Flavor,
    pair: (&Endpoint, &Endpoint),
    slots: &[u16],
    timeout: Duration,
    progress: &mut dyn FnMut(&str),
) -> Result<(), Error> {
    let (source, target) = pair;
    // Valkey's jobs are the source's, Redis's the target's.
    let watched = match flavor {
        Flavor::Valkey => source,
        Flavor::Redis => target,
    };
    let before: Vec<String> = (jobs(link, flavor, &watched.address).into_iter())
        .map(|j| j.name)
        .collect();
    let task = start(link, flavor, source, target, slots)?;
    let deadline = Instant::now() + timeout;
    let mut last_state = String::new();
    loop {
        let job = (jobs(link, flavor, &watched.address).into_iter()).find(|j| match &task {
            Some(id) => &j.name == id,
            None => !before.contains(&j.name) && j.target == target.id,
        });
        if let Some(job) = job {
            if job.state != last_state {
                progress(&job.state);
                last_state = job.state.clone();
            }
            if job.succeeded() {
                return Ok(());
            }
            let given_up = flavor == Flavor::Redis && job.retries >= REDIS_RETRIES;
            if job.ended(flavor) || given_up {
                if given_up {
                    cancel(link, flavor, &watched.address, &job.name);
                }
                let reply = format!("slot migration {}: {} {}", job.name, job.state, job.message);
                return Err(refusal(&source.address, &job.message)
                    .unwrap_or_else(|| Error::node(&watched.address, flavor.name(), reply)));
            }
        }
        if Instant::now() > deadline {
            if let Some(id) = &task {
                cancel(link, flavor, &watched.address, id);
            }
            return Err(Error::node(
                &watched.address,
                flavor.name(),
                format!(
                    "the slot migration to {} did not end in {timeout:?}",
                    target.address
                ),
            ));
        }
        std::thread::sleep(POLL);
    }
}

/// Starts the job: Redis answers its task id, Valkey only `OK`.
fn start(
    link: &mut dyn Link,
    flavor: Flavor,
    source: &Endpoint,
    target: &Endpoint,
    slots: &[u16],
) -> Result<Option<String>, Error> {
    let mut cmd = redis::cmd("CLUSTER");
    // Valkey: one SLOTSRANGE, then every range's pair, the keyword once per
    // target (a second SLOTSRANGE before NODE is a syntax error).
    let (at, words) = match flavor {
        Flavor::Valkey => (source, ["MIGRATESLOTS", "SLOTSRANGE"]),
        Flavor::Redis => (target, ["MIGRATION", "IMPORT"]),
    };
    cmd.arg(&words);
    for (lo, hi) in ranges(slots) {
        cmd.arg(lo).arg(hi);
    }
    if flavor == Flavor::Valkey {
        cmd.arg("NODE").arg(&target.id);
    }
    match link.run(&at.address, &cmd) {
        Ok(Value::BulkString(id)) => Ok(Some(String::from_utf8_lossy(&id).into_owned())),
        Ok(_) => Ok(None),
        Err(e) => {
            let reply = e.to_string();
            Err(refusal(&at.address, &reply)
                .unwrap_or_else(|| Error::node(&at.address, flavor.name(), reply)))
        }
    }
}

fn cancel(link: &mut dyn Link, flavor: Flavor, address: &str, id: &str) {
    let mut cmd = redis::cmd("CLUSTER");
    match flavor {
        // Valkey cancels every export of the source at once.
        Flavor::Valkey => cmd.arg("CANCELSLOTMIGRATIONS"),
        Flavor::Redis => cmd.arg("MIGRATION").arg("CANCEL").arg("ID").arg(id),
    };
    let _ = link.run(address, &cmd);
}

/// Waits for every job still running on `addresses` (one an interrupted
/// run left to the server) to end.
pub fn wait_running(
    link: &mut dyn Link,
    flavor: Flavor,
    addresses: &[String],
    timeout: Duration,
    progress: &mut dyn FnMut(&Job),
) -> Result<(), Error> {
    let deadline = Instant::now() + timeout;
    loop {
        let all = addresses.iter().flat_map(|a| jobs(link, flavor, a));
        let running: Vec<Job> = all.filter(|j| !j.ended(flavor)).collect();
        if running.is_empty() {
            return Ok(());
        }
        running.iter().for_each(&mut *progress);
        if Instant::now() > deadline {
            return Err(Error::Unfit(format!(
                "{} slot migrations of the servers' own still running after {timeout:?}",
                running.len()
            )));
        }
        std::thread::sleep(POLL * 4);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::bulk;
    use crate::rebalance::fake_cluster::words;
    use redis::{Cmd, RedisResult};
    use std::collections::VecDeque;

    fn job_row(name: &str, target: &str, state: &str) -> Value {
        let fields = [
            ("name", name),
            ("operation", "EXPORT"),
            ("slot_ranges", "3-5 9-9"),
            ("target_node", target),
            ("source_node", "S"),
            ("state", state),
            ("message", ""),
        ];
        Value::Array(
            fields
                .iter()
                .flat_map(|(k, v)| [bulk(k), bulk(v)])
                .collect(),
        )
    }

    /// A server of either dialect, its new job in scripted states (with
    /// Redis's retries; the last state stays) once started: Valkey's
    /// GETSLOTMIGRATIONS lists an old job first, Redis 8.4's IMPORT on the
    /// target answers a task id that STATUS follows. Everything else OK;
    /// every command recorded with the node it went to.
    struct Server {
        states: VecDeque<(&'static str, i64)>,
        sent: Vec<(String, String)>,
    }

    fn server(states: &[(&'static str, i64)]) -> Server {
        Server {
            states: states.iter().copied().collect(),
            sent: Vec::new(),
        }
    }

    impl Link for Server {
        fn run(&mut self, address: &str, cmd: &Cmd) -> RedisResult<Value> {
            let line = words(cmd).join(" ");
            self.sent.push((address.to_string(), line.clone()));
            let started = |cmd: &str| self.sent.iter().any(|(_, l)| l.starts_with(cmd));
            let valkey = started("CLUSTER MIGRATESLOTS");
            let redis = started("CLUSTER MIGRATION IMPORT");
            let states = &mut self.states;
            let mut next = || {
                let state = if states.len() > 1 {
                    states.pop_front()
                } else {
                    states.front().copied()
                };
                state.unwrap_or(("completed", 0))
            };
            Ok(match line.as_str() {
                "CLUSTER GETSLOTMIGRATIONS" if valkey => Value::Array(vec![
                    job_row("old", "T", "success"),
                    job_row("new", "T", next().0),
                ]),
                "CLUSTER GETSLOTMIGRATIONS" => Value::Array(vec![job_row("old", "T", "success")]),
                "CLUSTER MIGRATION STATUS ALL" if redis => {
                    let (state, retries) = next();
                    Value::Array(vec![Value::Map(vec![
                        (bulk("id"), bulk("task1")),
                        (bulk("slots"), bulk("3-5")),
                        (bulk("dest"), bulk("T")),
                        (bulk("state"), bulk(state)),
                        (bulk("last_error"), bulk("")),
                        (bulk("retries"), Value::Int(retries)),
                    ])])
                }
                "CLUSTER MIGRATION STATUS ALL" => Value::Array(Vec::new()),
                l if l.starts_with("CLUSTER MIGRATION IMPORT") => bulk("task1"),
                _ => Value::Okay,
            })
        }
    }

    /// `slots` moved from `h:S` to `h:T` over `link`: the outcome, and the
    /// states the job was seen in.
    fn migrate(
        link: &mut dyn Link,
        flavor: Flavor,
        slots: &[u16],
    ) -> (Result<(), Error>, Vec<String>) {
        let endpoint = |id: &str| Endpoint {
            id: id.into(),
            address: format!("h:{id}"),
        };
        let (mut seen, pair) = (Vec::new(), (&endpoint("S"), &endpoint("T")));
        let five = Duration::from_secs(5);
        let done = migrate_slots(link, flavor, pair, slots, five, &mut |s| {
            seen.push(s.to_string())
        });
        (done, seen)
    }

    /// `line` sent to `node`.
    fn on(node: &str, line: &str) -> (String, String) {
        (node.to_string(), line.to_string())
    }

    #[test]
    fn one_job_per_pair_watched_until_it_ends() {
        let mut server = server(&[("connecting", 0), ("snapshotting", 0), ("success", 0)]);
        let (done, seen) = migrate(&mut server, Flavor::Valkey, &[9, 3, 4, 5]);
        done.unwrap();
        assert_eq!(
            seen,
            ["connecting", "snapshotting", "success"],
            "the old job is not ours"
        );
        let started = on("h:S", "CLUSTER MIGRATESLOTS SLOTSRANGE 3 5 9 9 NODE T");
        assert!(server.sent.contains(&started), "{:?}", server.sent);
        let mut failing = self::server(&[("failed", 0)]);
        let error = migrate(&mut failing, Flavor::Valkey, &[1]).0.unwrap_err();
        assert!(error.to_string().contains("failed"), "{error}");
    }

    #[test]
    fn redis_imports_on_the_target_and_cancels_a_task_that_keeps_failing() {
        let states = [("connecting", 0), ("streaming-buffer", 0), ("completed", 0)];
        let mut server = server(&states);
        let (done, seen) = migrate(&mut server, Flavor::Redis, &[3, 4, 5]);
        done.unwrap();
        assert_eq!(seen, ["connecting", "streaming-buffer", "completed"]);
        let import = on("h:T", "CLUSTER MIGRATION IMPORT 3 5");
        assert!(server.sent.contains(&import), "{:?}", server.sent);
        let mut failing = self::server(&[("failed", 1), ("failed", REDIS_RETRIES)]);
        let error = migrate(&mut failing, Flavor::Redis, &[3]).0.unwrap_err();
        assert!(error.to_string().contains("failed"), "{error}");
        let cancel = on("h:T", "CLUSTER MIGRATION CANCEL ID task1");
        assert!(failing.sent.contains(&cancel), "{:?}", failing.sent);
    }

    #[test]
    fn slots_become_ranges_and_rows_become_jobs() {
        assert_eq!(ranges(&[5, 3, 4, 9, 9, 11]), [(3, 5), (9, 9), (11, 11)]);
        let job = job_of(&job_row("j1", "T", "success")).unwrap();
        let read = (
            job.name.as_str(),
            job.target.as_str(),
            job.slot_ranges.as_str(),
        );
        assert_eq!(read, ("j1", "T", "3-5 9-9"));
        assert!(job.ended(Flavor::Valkey) && job.succeeded());
        assert_eq!(job_of(&Value::Int(3)), None);
    }
}
