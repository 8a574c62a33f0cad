//! `hk-top --prometheus ADDRESS`: `/metrics` for Prometheus, read from every
//! node at each scrape (the node given, or every node of its cluster, found
//! again at each scrape):
//! - `heavykeeper_hotkey_reads_per_second` and `..._writes_per_second`, one
//!   series per hot key (`node`, `db`, and `key`, or `key_base64` for a key
//!   that is not UTF-8); `--count` keys per node and kind bound the series;
//! - the module's `INFO heavykeeper` fields, named by Prometheus's rules;
//! - `heavykeeper_up`: 0 for a node that does not answer, so that a node
//!   down is a value on a graph, never a failed scrape.

use crate::access::Access;
use crate::hot_keys::node_hot_keys;
use crate::metric::Metric;
use crate::nodes::{discover, Node};
use crate::Options;
use base64::Engine;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::{Registry, Unit};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;

type Labels = Vec<(String, String)>;
type Value = Gauge<f64, AtomicU64>;
type Total = Counter<f64, AtomicU64>;

/// What an `INFO heavykeeper` field becomes.
enum Kind {
    Gauge,
    Counter,
}

/// (INFO field after `heavykeeper_`, metric name before its suffixes,
/// kind, unit, help; the encoder ends the help with a period).
const INFO_FIELDS: [(&str, &str, Kind, Option<Unit>, &str); 18] = [
    (
        "sketches",
        "heavykeeper_sketches",
        Kind::Gauge,
        None,
        "Keys holding a HeavyKeeper sketch",
    ),
    (
        "sketch_memory_bytes",
        "heavykeeper_sketch_memory",
        Kind::Gauge,
        Some(Unit::Bytes),
        "Memory of all sketches, as MEMORY USAGE counts it without key overhead",
    ),
    (
        "arrivals_counted",
        "heavykeeper_arrivals_counted",
        Kind::Counter,
        None,
        "Total weight counted into sketches by commands since the module loaded",
    ),
    (
        "commands_refused_by_limits",
        "heavykeeper_commands_refused_by_limits",
        Kind::Counter,
        None,
        "Commands refused by max-sketch-bytes, max-future-ms or maxmemory",
    ),
    (
        "panics_contained",
        "heavykeeper_panics_contained",
        Kind::Counter,
        None,
        "Bugs caught outside a command (each also a log line)",
    ),
    (
        "tracker_enabled",
        "heavykeeper_tracker_enabled",
        Kind::Gauge,
        None,
        "1 if the server's own key accesses are tracked",
    ),
    (
        "tracker_k",
        "heavykeeper_tracker_k",
        Kind::Gauge,
        None,
        "Hot keys the tracker keeps, per kind of access",
    ),
    (
        "tracker_halflife_seconds",
        "heavykeeper_tracker_halflife",
        Kind::Gauge,
        Some(Unit::Seconds),
        "Half-life of the tracker's rates",
    ),
    (
        "tracker_sample",
        "heavykeeper_tracker_sample",
        Kind::Gauge,
        None,
        "The tracker counts one command in this many",
    ),
    (
        "tracker_memory_bytes",
        "heavykeeper_tracker_memory",
        Kind::Gauge,
        Some(Unit::Bytes),
        "Memory the tracker holds: sketches, batches, client table",
    ),
    (
        "tracker_keys_counted",
        "heavykeeper_tracker_keys_counted",
        Kind::Counter,
        None,
        "Key accesses the tracker counted, sampled ones weighted",
    ),
    (
        "tracker_commands_seen",
        "heavykeeper_tracker_commands_seen",
        Kind::Counter,
        None,
        "Commands the tracker's filter saw",
    ),
    (
        "tracker_commands_sampled",
        "heavykeeper_tracker_commands_sampled",
        Kind::Counter,
        None,
        "Commands whose keys the tracker counted",
    ),
    (
        "tracker_accesses_dropped",
        "heavykeeper_tracker_accesses_dropped",
        Kind::Counter,
        None,
        "Key accesses dropped because the tracker's queue was full",
    ),
    (
        "watched_keys",
        "heavykeeper_watched_keys",
        Kind::Gauge,
        None,
        "Watched sketches this server follows",
    ),
    (
        "watched_keys_timed",
        "heavykeeper_watched_keys_timed",
        Kind::Gauge,
        None,
        "Watched sketches waiting for a fade crossing",
    ),
    (
        "events_published",
        "heavykeeper_events_published",
        Kind::Counter,
        None,
        "Watch and tracker events published",
    ),
    (
        "events_dropped",
        "heavykeeper_events_dropped",
        Kind::Counter,
        None,
        "Watch events dropped by the per-sketch cap",
    ),
];

pub fn serve(listen: SocketAddr, o: &Options) -> Result<(), String> {
    let server = tiny_http::Server::http(listen).map_err(|e| e.to_string())?;
    eprintln!("hk-top: serving http://{listen}/metrics for {}", o.address);
    // The last nodes found: a scrape while discovery fails reads these.
    let mut known = vec![Node {
        address: o.address.clone(),
        primary: true,
        cluster: false,
    }];
    let openmetrics = tiny_http::Header::from_bytes(
        &b"Content-Type"[..],
        &b"application/openmetrics-text; version=1.0.0; charset=utf-8"[..],
    )
    .map_err(|()| "bad header")?;
    for request in server.incoming_requests() {
        let response = match request.url().split('?').next() {
            Some("/metrics") => {
                if let Ok(nodes) = discover(&o.access, &o.address, o.replicas) {
                    known = nodes;
                }
                tiny_http::Response::from_string(scrape(&o.access, &known, o.count))
                    .with_header(openmetrics.clone())
            }
            Some("/") => tiny_http::Response::from_string("hk-top: see /metrics\n"),
            _ => tiny_http::Response::from_string("not found\n").with_status_code(404),
        };
        // A scraper that hung up is its own business.
        let _ = request.respond(response);
    }
    Ok(())
}

/// Every node read now, as the text Prometheus reads.
fn scrape(access: &Access, nodes: &[Node], count: usize) -> String {
    let metrics = Metrics::new();
    for node in nodes {
        metrics.read(access, node, count);
    }
    let mut text = String::new();
    // Writing into a String cannot fail.
    let _ = encode(&mut text, &metrics.registry);
    text
}

struct Metrics {
    registry: Registry,
    up: Family<Labels, Gauge>,
    errors: Family<Labels, Gauge>,
    reads: Family<Labels, Value>,
    writes: Family<Labels, Value>,
    gauges: HashMap<&'static str, Family<Labels, Value>>,
    counters: HashMap<&'static str, Family<Labels, Total>>,
}

impl Metrics {
    fn new() -> Self {
        let mut registry = Registry::default();
        let up = Family::<Labels, Gauge>::default();
        registry.register(
            "heavykeeper_up",
            "1 if the node answered this scrape, else 0",
            up.clone(),
        );
        let errors = Family::<Labels, Gauge>::default();
        registry.register(
            "heavykeeper_scrape_errors",
            "Queries to the node that failed during this scrape (INFO, HK.HOTKEYS)",
            errors.clone(),
        );
        let reads = Family::<Labels, Value>::default();
        registry.register(
            "heavykeeper_hotkey_reads_per_second",
            "Reads per second of one of the node's hottest keys (HK.HOTKEYS READS)",
            reads.clone(),
        );
        let writes = Family::<Labels, Value>::default();
        registry.register(
            "heavykeeper_hotkey_writes_per_second",
            "Writes per second of one of the node's hottest keys (HK.HOTKEYS WRITES)",
            writes.clone(),
        );
        let (mut gauges, mut counters) = (HashMap::new(), HashMap::new());
        for (field, name, kind, unit, help) in INFO_FIELDS {
            match kind {
                Kind::Gauge => {
                    let family = Family::<Labels, Value>::default();
                    register(&mut registry, name, help, unit, family.clone());
                    gauges.insert(field, family);
                }
                Kind::Counter => {
                    let family = Family::<Labels, Total>::default();
                    register(&mut registry, name, help, unit, family.clone());
                    counters.insert(field, family);
                }
            }
        }
        Self {
            registry,
            up,
            errors,
            reads,
            writes,
            gauges,
            counters,
        }
    }

    fn read(&self, access: &Access, node: &Node, count: usize) {
        let labels = vec![("node".to_string(), label_value(&node.address))];
        let mut con = match access.connect(&node.address) {
            Ok(con) => con,
            Err(_) => {
                self.up.get_or_create(&labels).set(0);
                return;
            }
        };
        self.up.get_or_create(&labels).set(1);
        let mut failed = 0;
        match redis::cmd("INFO")
            .arg("heavykeeper")
            .query::<String>(&mut con)
        {
            Ok(info) => self.info(&info, &labels),
            Err(_) => failed += 1,
        }
        match node_hot_keys(&mut con, &node.address, Some(count)) {
            Ok(answer) => {
                for (id, rates) in answer.rows {
                    let mut key_labels = labels.clone();
                    key_labels.push(("db".into(), id.db.to_string()));
                    key_labels.push(match std::str::from_utf8(&id.key) {
                        Ok(text) => ("key".into(), label_value(text)),
                        Err(_) => (
                            "key_base64".into(),
                            base64::engine::general_purpose::STANDARD.encode(&id.key),
                        ),
                    });
                    for (metric, family) in
                        [(Metric::Reads, &self.reads), (Metric::Writes, &self.writes)]
                    {
                        if rates.get(metric) > 0.0 {
                            family.get_or_create(&key_labels).set(rates.get(metric));
                        }
                    }
                }
            }
            Err(_) => failed += 1,
        }
        self.errors.get_or_create(&labels).set(failed);
    }

    /// `heavykeeper_<field>:<number>` lines of `INFO heavykeeper`.
    fn info(&self, info: &str, labels: &Labels) {
        for line in info.lines() {
            let Some((field, number)) = line
                .strip_prefix("heavykeeper_")
                .and_then(|l| l.split_once(':'))
            else {
                continue;
            };
            let Ok(number) = number.trim().parse::<f64>() else {
                continue;
            };
            if let Some(family) = self.gauges.get(field) {
                family.get_or_create(labels).set(number);
            } else if let Some(family) = self.counters.get(field) {
                family.get_or_create(labels).inc_by(number);
            }
        }
    }
}

fn register<M: prometheus_client::registry::Metric>(
    registry: &mut Registry,
    name: &str,
    help: &str,
    unit: Option<Unit>,
    metric: M,
) {
    match unit {
        Some(unit) => registry.register_with_unit(name, help, unit, metric),
        None => registry.register(name, help, metric),
    }
}

/// A label value as the text format needs it: the encoder writes values as
/// given, so backslashes, quotes and line breaks are escaped here.
fn label_value(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(label_value("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
        assert_eq!(label_value("user:1"), "user:1");
    }

    #[test]
    fn info_fields_become_named_gauges_and_counters() {
        let metrics = Metrics::new();
        let labels = vec![("node".to_string(), "n:1".to_string())];
        metrics.info(
            "# heavykeeper_sketches\r\nheavykeeper_sketches:3\r\nheavykeeper_sketch_memory_bytes:4096\r\nheavykeeper_arrivals_counted:17\r\nheavykeeper_unknown:5\r\n",
            &labels,
        );
        let mut text = String::new();
        encode(&mut text, &metrics.registry).unwrap();
        assert!(
            text.contains("heavykeeper_sketches{node=\"n:1\"} 3"),
            "{text}"
        );
        assert!(
            text.contains("heavykeeper_sketch_memory_bytes{node=\"n:1\"} 4096"),
            "{text}"
        );
        assert!(
            text.contains("# TYPE heavykeeper_arrivals_counted counter"),
            "{text}"
        );
        assert!(
            text.contains("heavykeeper_arrivals_counted_total{node=\"n:1\"} 17"),
            "{text}"
        );
        assert!(text.contains("# HELP heavykeeper_sketches "), "{text}");
        assert!(!text.contains("unknown"), "{text}");
    }
}
