//! One snapshot of the hottest keys across nodes: each node's
//! `HK.HOTKEYS <KIND>` for every [`Metric`], joined per key. In a cluster
//! every key lives on exactly one primary, so the union of the nodes' lists
//! is the cluster's list: nothing is double counted or estimated across
//! nodes. A node that tracks keys but not misses (`track-misses no`, the
//! default) answers `MISSES` with an error: that is a node without misses,
//! not a node that failed.
//!
//! And a node's hottest key prefixes (`HK.HOTKEYS PREFIXES`): the tenants.
//! A tenant spread over thousands of keys, none of them hot, can take a
//! third of a node's load and never be listed among its keys; its prefix
//! is. Each row's key is a `SCAN MATCH` pattern (`tenant:7:*`), its rate
//! the reads and writes of every key under it.

use crate::connection::nodes::{ask_each, Node};
use crate::connection::settings::ConnectionSettings;
use crate::reading::metric::{Bounds, Metric, Rates};
use crate::reading::senders::{self, Sender, KEYS_WITH_SENDERS};
use redis::{RedisResult, Value};
use std::collections::BTreeMap;

/// A key as one node serves it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KeyId {
    pub node: String,
    pub db: i64,
    pub key: Vec<u8>,
}

/// The tracked keys of every node asked, hottest (by total) first; nodes
/// that could not be read are listed with their error.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    pub nodes: Vec<Node>,
    pub keys: Vec<(KeyId, Rates)>,
    pub errors: Vec<(String, String)>,
    /// The metrics only some nodes count (misses: [`Metric::off_error`]),
    /// as (node address, metric) for each node that answered with them;
    /// every node that answered counts the others.
    pub optional_counted: Vec<(String, Metric)>,
    /// Each answering node's whole traffic as its tracker counts it (`INFO
    /// heavykeeper`'s `tracker_reads_per_second` and `_writes_`): every
    /// counted access, not only the listed keys'. Missing for a node whose
    /// user may not run `INFO`.
    pub totals: Vec<(String, Rates)>,
    /// Who drives each node's hottest few keys, where the node can say.
    pub senders: BTreeMap<KeyId, Vec<Sender>>,
    /// Each node's hottest clients, where it can say.
    pub hot_clients: Vec<(String, Vec<Sender>)>,
}

impl Snapshot {
    /// Why `address` did not answer, if it did not.
    pub fn error_of(&self, address: &str) -> Option<&str> {
        let error = self.errors.iter().find(|(node, _)| node == address);
        error.map(|(_, e)| e.as_str())
    }

    /// Does the node count this metric? Where it does not, its keys' figure
    /// is unknown (shown as `-`), not zero.
    pub fn counts(&self, address: &str, metric: Metric) -> bool {
        metric.off_error().is_none()
            || self
                .optional_counted
                .iter()
                .any(|(node, m)| node == address && *m == metric)
    }

    /// The metrics to show: those every node counts, and the others once
    /// any node counts them (no column of misses no node counts).
    pub fn metrics(&self) -> Vec<Metric> {
        let counted = |m: Metric| self.optional_counted.iter().any(|c| c.1 == m);
        let shown = |&m: &Metric| m.off_error().is_none() || counted(m);
        Metric::ALL.into_iter().filter(shown).collect()
    }
}

/// One node's answers: its rows per key and kind, and the metrics it
/// counts.
#[derive(Default)]
pub struct NodeHotKeys {
    pub rows: Vec<(KeyId, Rates)>,
    pub counted: Vec<Metric>,
    pub totals: Option<Rates>,
    pub senders: Vec<(KeyId, Vec<Sender>)>,
    pub hot_clients: Option<Vec<Sender>>,
}

/// Every key each node's tracker holds (at most its `track-k`), so that
/// filtering, sorting and cutting to `--count` afterwards are exact. The
/// nodes are asked at once ([`ask_each`]).
pub fn snapshot(connection: &ConnectionSettings, nodes: &[Node]) -> Snapshot {
    let answers = ask_each(
        nodes,
        |node| node_rates(connection, &node.address),
        |_| Err(std::io::Error::other("its reader panicked").into()),
    );
    let mut snapshot = Snapshot {
        nodes: nodes.to_vec(),
        ..Snapshot::default()
    };
    let mut joined: BTreeMap<KeyId, Rates> = BTreeMap::new();
    for (node, answer) in nodes.iter().zip(answers) {
        let address = node.address.clone();
        match answer {
            Ok(answer) => {
                snapshot.senders.extend(answer.senders);
                if let Some(clients) = answer.hot_clients {
                    snapshot.hot_clients.push((address.clone(), clients));
                }
                if let Some(rates) = answer.totals {
                    snapshot.totals.push((address.clone(), rates));
                }
                for (id, rates) in answer.rows {
                    joined.entry(id).or_default().add_all(&rates);
                }
                let optional = answer
                    .counted
                    .into_iter()
                    .filter(|m| m.off_error().is_some());
                (snapshot.optional_counted).extend(optional.map(|m| (address.clone(), m)));
            }
            Err(e) => snapshot.errors.push((address, e.to_string())),
        }
    }
    snapshot.keys = joined.into_iter().collect();
    snapshot.keys.sort_by(|a, b| {
        b.1.total()
            .total_cmp(&a.1.total())
            .then_with(|| a.0.cmp(&b.0))
    });
    snapshot
}

fn node_rates(connection: &ConnectionSettings, address: &str) -> RedisResult<NodeHotKeys> {
    let mut con = connection.connect(address)?;
    let mut answer = node_hot_keys(&mut con, address, None)?;
    answer.totals = tracker_totals(&mut con);
    answer.hot_clients = senders::of_node(&mut con);
    if answer.hot_clients.is_some() {
        // The node names clients: who drives its hottest keys.
        for id in hottest(&answer.rows, KEYS_WITH_SENDERS) {
            if let Some(senders) = senders::of_key(&mut con, id.db, &id.key) {
                answer.senders.push((id, senders));
            }
        }
    }
    Ok(answer)
}

/// The `n` hottest keys of a node's rows (a key's rows of every metric
/// joined).
pub fn hottest(rows: &[(KeyId, Rates)], n: usize) -> Vec<KeyId> {
    let mut joined: BTreeMap<&KeyId, Rates> = BTreeMap::new();
    for (id, rates) in rows {
        joined.entry(id).or_default().add_all(rates);
    }
    let mut keys: Vec<(&KeyId, Rates)> = joined.into_iter().collect();
    keys.sort_by(|a, b| b.1.total().total_cmp(&a.1.total()));
    keys.into_iter().take(n).map(|(id, _)| id.clone()).collect()
}

/// The node's reads and writes per second as its tracker counts them, with
/// their bounds where the module gives them.
pub fn tracker_totals(con: &mut dyn redis::ConnectionLike) -> Option<Rates> {
    let info: String = redis::cmd("INFO").arg("heavykeeper").query(con).ok()?;
    totals_of(&info)
}

/// The number an `INFO` reply gives for `field`.
pub fn info_number(info: &str, field: &str) -> Option<f64> {
    info.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().parse().ok())
}

/// [`tracker_totals`] from an `INFO heavykeeper` already read.
pub fn totals_of(info: &str) -> Option<Rates> {
    let field = |name: &str| info_number(info, name);
    let mut rates = Rates::default();
    for (metric, name) in [(Metric::Reads, "reads"), (Metric::Writes, "writes")] {
        let prefix = format!("heavykeeper_tracker_{name}_per_second");
        let rate = field(&prefix)?;
        let bounds = field(&format!("{prefix}_low"))
            .zip(field(&format!("{prefix}_high")))
            .map(|(low, high)| Bounds { low, high });
        rates.add_all(&Rates::bounded(metric, rate, bounds));
    }
    Some(rates)
}

/// `HK.HOTKEYS <KIND> [COUNT n]` of one node for every metric it counts, as
/// rows per key and kind.
pub fn node_hot_keys(
    con: &mut dyn redis::ConnectionLike,
    address: &str,
    count: Option<usize>,
) -> RedisResult<NodeHotKeys> {
    let mut answer = NodeHotKeys::default();
    let mut with_bounds = true;
    for metric in Metric::ALL {
        let kind = Some(metric.hotkeys_kind());
        let flat = match list(con, "HK.HOTKEYS", kind, count, with_bounds) {
            Ok((flat, bounds)) => {
                with_bounds = bounds;
                flat
            }
            Err(e) if is_off(metric, &e) => continue,
            Err(e) => return Err(e),
        };
        answer.counted.push(metric);
        answer
            .rows
            .extend(rows_of(&flat, address, metric, with_bounds)?);
    }
    Ok(answer)
}

/// `<command> [<kind>] [COUNT n] [WITHBOUNDS]` (`HK.HOTKEYS READS`,
/// `HK.HOTSLOTS`), as a RESP2 flat array, and whether it has the bounds: a
/// module from before WITHBOUNDS is asked again for the rates alone.
pub fn list(
    con: &mut dyn redis::ConnectionLike,
    command: &str,
    kind: Option<&str>,
    count: Option<usize>,
    with_bounds: bool,
) -> RedisResult<(Vec<Value>, bool)> {
    let mut ask = |with_bounds: bool| {
        let mut cmd = redis::cmd(command);
        cmd.arg(kind);
        if let Some(count) = count {
            cmd.arg("COUNT").arg(count);
        }
        if with_bounds {
            cmd.arg("WITHBOUNDS");
        }
        cmd.query::<Vec<Value>>(con)
    };
    // A module that does not know `WITHBOUNDS`.
    let unknown = |d: &str| d.contains("'WITHBOUNDS'") || d.contains("'withbounds'");
    match ask(with_bounds) {
        Err(e) if with_bounds && e.detail().is_some_and(unknown) => Ok((ask(false)?, false)),
        other => other.map(|flat| (flat, with_bounds)),
    }
}

/// One row of an `HK.HOTKEYS` reply, whatever its kind: a key (or a
/// prefix's pattern), its database, its rate and, with `WITHBOUNDS`, the
/// rate's 95% bounds.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub key: Vec<u8>,
    pub db: i64,
    pub rate: f64,
    pub bounds: Option<Bounds>,
}

/// A RESP2 reply's flat `key, db, rate, count[, low, high]` rows.
pub fn parse_rows(flat: &[Value], with_bounds: bool) -> RedisResult<Vec<Row>> {
    let mut rows = Vec::new();
    for row in flat.chunks(if with_bounds { 6 } else { 4 }) {
        let (key, db, rate) = match row {
            [key, db, rate, _count] | [key, db, rate, _count, _, _] => (key, db, rate),
            _ => continue,
        };
        let bounds = match row {
            [_, _, _, _, low, high] => Some(Bounds {
                low: redis::from_redis_value(low)?,
                high: redis::from_redis_value(high)?,
            }),
            _ => None,
        };
        rows.push(Row {
            key: redis::from_redis_value(key)?,
            db: redis::from_redis_value(db)?,
            rate: redis::from_redis_value(rate)?,
            bounds,
        });
    }
    Ok(rows)
}

/// A reply's rows as keys of `address` and their rate of `metric`.
fn rows_of(
    flat: &[Value],
    address: &str,
    metric: Metric,
    with_bounds: bool,
) -> RedisResult<Vec<(KeyId, Rates)>> {
    let rows = parse_rows(flat, with_bounds)?;
    Ok(rows
        .into_iter()
        .map(|row| {
            let id = KeyId {
                node: address.to_string(),
                db: row.db,
                key: row.key,
            };
            (id, Rates::bounded(metric, row.rate, row.bounds))
        })
        .collect())
}

/// Is `e` the node saying it does not count this metric?
fn is_off(metric: Metric, e: &redis::RedisError) -> bool {
    let detail = e.detail().unwrap_or_default();
    metric
        .off_error()
        .is_some_and(|off| detail.starts_with(off))
}

/// The node's `count` hottest prefixes, with their bounds where the module
/// gives them; `None` where the node does not count prefixes
/// (`track-prefix-depths 0`): nothing to show, not a failure.
pub fn node_hot_prefixes(
    con: &mut redis::Connection,
    count: usize,
) -> RedisResult<Option<Vec<Row>>> {
    let answer = list(con, "HK.HOTKEYS", Some("PREFIXES"), Some(count), true)
        .and_then(|(flat, with_bounds)| parse_rows(&flat, with_bounds));
    match answer {
        Ok(rows) => Ok(Some(rows)),
        Err(e) if prefixes_off(&e) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Is `e` the node saying it counts no prefixes (or, from a module older
/// than prefixes, that it knows no such kind)?
fn prefixes_off(e: &redis::RedisError) -> bool {
    let detail = e.detail().unwrap_or_default();
    detail.starts_with("prefix tracking is off")
        || detail.contains("'PREFIXES'")
        || detail.contains("'prefixes'")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn misses_are_shown_once_a_node_counts_them_and_only_for_it() {
        let mut snapshot = Snapshot::default();
        assert_eq!(snapshot.metrics(), [Metric::Reads, Metric::Writes]);
        assert!(snapshot.counts("a:1", Metric::Reads));
        assert!(!snapshot.counts("a:1", Metric::Misses));
        snapshot
            .optional_counted
            .push(("a:2".into(), Metric::Misses));
        assert_eq!(snapshot.metrics(), Metric::ALL);
        assert!(snapshot.counts("a:2", Metric::Misses));
        assert!(!snapshot.counts("a:1", Metric::Misses));
    }

    #[test]
    fn off_is_told_apart_from_a_failure() {
        let off = redis::RedisError::from((
            redis::ErrorKind::ResponseError,
            "An error was signalled by the server",
            "prefix tracking is off: CONFIG SET heavykeeper.track-prefix-depths 2".to_string(),
        ));
        assert!(prefixes_off(&off));
        let other = redis::RedisError::from((
            redis::ErrorKind::ResponseError,
            "An error was signalled by the server",
            "key tracking is off: CONFIG SET heavykeeper.track yes".to_string(),
        ));
        assert!(!prefixes_off(&other));
    }
}
