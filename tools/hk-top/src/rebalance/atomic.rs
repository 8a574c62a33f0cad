//! Valkey 9's own slot migration (`CLUSTER MIGRATESLOTS`): the source
//! streams the slots to the target, which takes them over atomically, with
//! no `ASK` and no key briefly on neither node. hk-top starts one job per
//! pair of primaries and watches it in the source's `CLUSTER
//! GETSLOTMIGRATIONS` until it ends; the server carries a job on if hk-top
//! is interrupted, and a later run waits for it (see `apply.rs`).

use super::link::Link;
use super::migrate::Endpoint;
use redis::Value;
use std::time::{Duration, Instant};

/// How often a job is looked at.
const POLL: Duration = Duration::from_millis(50);

/// Does the node have `CLUSTER MIGRATESLOTS`?
pub fn supported(link: &mut dyn Link, address: &str) -> bool {
    let mut cmd = redis::cmd("COMMAND");
    cmd.arg("INFO").arg("CLUSTER|MIGRATESLOTS");
    matches!(link.run(address, &cmd), Ok(Value::Array(items)) if items.first().is_some_and(|i| *i != Value::Nil))
}

/// One row of `CLUSTER GETSLOTMIGRATIONS`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Job {
    pub name: String,
    pub operation: String,
    pub slot_ranges: String,
    pub source: String,
    pub target: String,
    pub state: String,
    pub message: String,
}

impl Job {
    /// `success`, `failed` or `cancelled`: the job is over.
    pub fn ended(&self) -> bool {
        matches!(self.state.as_str(), "success" | "failed" | "cancelled")
    }
}

/// The jobs a node knows, running or recently ended; none where the
/// command is unknown.
pub fn jobs(link: &mut dyn Link, address: &str) -> Vec<Job> {
    let mut cmd = redis::cmd("CLUSTER");
    cmd.arg("GETSLOTMIGRATIONS");
    match link.run(address, &cmd) {
        Ok(Value::Array(rows)) => rows.iter().filter_map(job_of).collect(),
        _ => Vec::new(),
    }
}

/// A job as flat `name value` pairs (RESP2) or a map (RESP3).
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
    let field = |name: &str| {
        (pairs.iter())
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    Some(Job {
        name: field("name"),
        operation: field("operation"),
        slot_ranges: field("slot_ranges"),
        source: field("source_node"),
        target: field("target_node"),
        state: field("state"),
        message: field("message"),
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

/// Moves `slots` from `source` to `target` in one job and waits for it;
/// `progress` hears the job's state as it changes.
pub fn migrate_slots(
    link: &mut dyn Link,
    source: &Endpoint,
    target: &Endpoint,
    slots: &[u16],
    timeout: Duration,
    progress: &mut dyn FnMut(&str),
) -> Result<(), String> {
    let before: Vec<String> = jobs(link, &source.address)
        .into_iter()
        .map(|j| j.name)
        .collect();
    let mut cmd = redis::cmd("CLUSTER");
    // One SLOTSRANGE, then every range's pair: the keyword once per
    // target (a second SLOTSRANGE before NODE is a syntax error).
    cmd.arg("MIGRATESLOTS").arg("SLOTSRANGE");
    for (lo, hi) in ranges(slots) {
        cmd.arg(lo).arg(hi);
    }
    cmd.arg("NODE").arg(&target.id);
    (link.run(&source.address, &cmd))
        .map_err(|e| format!("{}: CLUSTER MIGRATESLOTS: {e}", source.address))?;
    let deadline = Instant::now() + timeout;
    let mut last_state = String::new();
    loop {
        let job = (jobs(link, &source.address).into_iter())
            .find(|j| !before.contains(&j.name) && j.target == target.id);
        if let Some(job) = job {
            if job.state != last_state {
                progress(&job.state);
                last_state = job.state.clone();
            }
            if job.ended() {
                return match job.state.as_str() {
                    "success" => Ok(()),
                    _ => Err(format!(
                        "{}: slot migration {}: {} {}",
                        source.address, job.name, job.state, job.message
                    )),
                };
            }
        }
        if Instant::now() > deadline {
            return Err(format!(
                "{}: slot migration to {} did not end in {timeout:?}",
                source.address, target.address
            ));
        }
        std::thread::sleep(POLL);
    }
}

/// Waits for every job still running on `addresses` (one an interrupted
/// run left to the server) to end.
pub fn wait_running(
    link: &mut dyn Link,
    addresses: &[String],
    timeout: Duration,
    progress: &mut dyn FnMut(&Job),
) -> Result<(), String> {
    let deadline = Instant::now() + timeout;
    loop {
        let running: Vec<Job> = (addresses.iter())
            .flat_map(|a| jobs(link, a))
            .filter(|j| !j.ended())
            .collect();
        if running.is_empty() {
            return Ok(());
        }
        running.iter().for_each(&mut *progress);
        if Instant::now() > deadline {
            return Err(format!(
                "{} slot migrations still running after {timeout:?}",
                running.len()
            ));
        }
        std::thread::sleep(POLL * 4);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use redis::{Cmd, RedisResult};
    use std::collections::VecDeque;

    /// Answers GETSLOTMIGRATIONS from a list of job states (an old job
    /// first), everything else OK; records the commands.
    struct Server {
        states: VecDeque<&'static str>,
        sent: Vec<String>,
    }

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
                .flat_map(|(k, v)| {
                    [
                        Value::BulkString(k.as_bytes().to_vec()),
                        Value::BulkString(v.as_bytes().to_vec()),
                    ]
                })
                .collect(),
        )
    }

    impl Link for Server {
        fn run(&mut self, _address: &str, cmd: &Cmd) -> RedisResult<Value> {
            let words: Vec<String> = (cmd.args_iter())
                .map(|a| match a {
                    redis::Arg::Simple(b) => String::from_utf8_lossy(b).to_string(),
                    redis::Arg::Cursor => String::new(),
                })
                .collect();
            let line = words.join(" ");
            self.sent.push(line.clone());
            if line != "CLUSTER GETSLOTMIGRATIONS" {
                return Ok(Value::Okay);
            }
            let mut rows = vec![job_row("old", "T", "success")];
            if self
                .sent
                .iter()
                .any(|l| l.starts_with("CLUSTER MIGRATESLOTS"))
            {
                let state = if self.states.len() > 1 {
                    self.states.pop_front()
                } else {
                    self.states.front().copied()
                };
                rows.push(job_row("new", "T", state.unwrap_or("success")));
            }
            Ok(Value::Array(rows))
        }
    }

    #[test]
    fn one_job_per_pair_watched_until_it_ends() {
        let endpoint = |id: &str| Endpoint {
            id: id.into(),
            address: format!("h:{id}"),
        };
        let mut server = Server {
            states: VecDeque::from(["connecting", "snapshotting", "success"]),
            sent: Vec::new(),
        };
        let mut seen = Vec::new();
        migrate_slots(
            &mut server,
            &endpoint("S"),
            &endpoint("T"),
            &[9, 3, 4, 5],
            Duration::from_secs(5),
            &mut |s| seen.push(s.to_string()),
        )
        .unwrap();
        assert_eq!(
            seen,
            ["connecting", "snapshotting", "success"],
            "the old job is not ours"
        );
        assert!(
            server
                .sent
                .contains(&"CLUSTER MIGRATESLOTS SLOTSRANGE 3 5 9 9 NODE T".to_string()),
            "{:?}",
            server.sent
        );
        let mut failing = Server {
            states: VecDeque::from(["failed"]),
            sent: Vec::new(),
        };
        let error = migrate_slots(
            &mut failing,
            &endpoint("S"),
            &endpoint("T"),
            &[1],
            Duration::from_secs(5),
            &mut |_| {},
        )
        .unwrap_err();
        assert!(error.contains("failed"), "{error}");
    }

    #[test]
    fn slots_become_ranges_and_rows_become_jobs() {
        assert_eq!(ranges(&[5, 3, 4, 9, 9, 11]), [(3, 5), (9, 9), (11, 11)]);
        let bulk = |s: &str| Value::BulkString(s.as_bytes().to_vec());
        let row = Value::Array(
            [
                "name",
                "j1",
                "operation",
                "EXPORT",
                "slot_ranges",
                "0-100",
                "target_node",
                "T",
                "source_node",
                "S",
                "state",
                "success",
                "message",
                "",
            ]
            .iter()
            .map(|s| bulk(s))
            .collect(),
        );
        let job = job_of(&row).unwrap();
        assert_eq!(
            (
                job.name.as_str(),
                job.target.as_str(),
                job.slot_ranges.as_str()
            ),
            ("j1", "T", "0-100")
        );
        assert!(job.ended());
        assert_eq!(job_of(&Value::Int(3)), None);
    }
}
