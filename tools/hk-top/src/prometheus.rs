//! `hk-top --prometheus ADDRESS`: `/metrics` for Prometheus, read from every
//! node at each scrape (the node given, or every node of its cluster, found
//! again at each scrape):
//! - `heavykeeper_hotkey_reads_per_second`, `..._writes_per_second` and
//!   `..._misses_per_second` (where the node counts misses), one series per
//!   hot key (`node`, `db`, and `key`, or `key_base64` for a key that is
//!   not UTF-8); `--count` keys per node and kind bound the series;
//! - the module's `INFO heavykeeper` fields, named by Prometheus's rules
//!   (`info_fields`);
//! - `heavykeeper_up`: 0 for a node that does not answer, so that a node
//!   down is a value on a graph, never a failed scrape.

use crate::access::Access;
use crate::hot_keys::{node_hot_keys, KeyId};
use crate::info_fields::{info_field, Kind, TextField, AUTH_CHECK, CLUSTER_STATE, INFO_FIELDS};
use crate::info_metric::InfoSet;
use crate::metric::{Metric, Rates};
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
    /// One family per [`Metric`], in [`Metric::ALL`]'s order, and the
    /// families of their lower and upper 95% bounds.
    rates: Vec<Family<Labels, Value>>,
    lows: Vec<Family<Labels, Value>>,
    highs: Vec<Family<Labels, Value>>,
    gauges: Gauges,
    counters: Counters,
    /// The text fields, each an info metric.
    texts: Vec<(&'static TextField, InfoSet)>,
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
        let rates = rate_families(&mut registry, "", "");
        let lows = rate_families(&mut registry, "_low", "Lower 95% bound: ");
        let highs = rate_families(&mut registry, "_high", "Upper 95% bound: ");
        let (gauges, counters) = info_families(&mut registry);
        let texts = [&AUTH_CHECK, &CLUSTER_STATE]
            .into_iter()
            .map(|text| {
                let set = InfoSet::default();
                registry.register(text.name, text.help, set.clone());
                (text, set)
            })
            .collect();
        Self {
            registry,
            up,
            errors,
            rates,
            lows,
            highs,
            gauges,
            counters,
            texts,
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
        // A node that does not count misses answers without them: not a
        // failure, and no misses series.
        match node_hot_keys(&mut con, &node.address, Some(count)) {
            Ok(answer) => {
                for (id, rates) in answer.rows {
                    self.hot_key(&labels, &id, &rates);
                }
            }
            Err(_) => failed += 1,
        }
        self.errors.get_or_create(&labels).set(failed);
    }

    /// One row of `HK.HOTKEYS <KIND>`: its one rate, as a series of its key.
    fn hot_key(&self, node_labels: &Labels, id: &KeyId, rates: &Rates) {
        let mut labels = node_labels.clone();
        labels.push(("db".into(), id.db.to_string()));
        labels.push(match std::str::from_utf8(&id.key) {
            Ok(text) => ("key".into(), label_value(text)),
            Err(_) => (
                "key_base64".into(),
                base64::engine::general_purpose::STANDARD.encode(&id.key),
            ),
        });
        for (i, &metric) in Metric::ALL.iter().enumerate() {
            if rates.get(metric) <= 0.0 {
                continue;
            }
            self.rates[i].get_or_create(&labels).set(rates.get(metric));
            if let Some(bounds) = rates.bounds(metric) {
                self.lows[i].get_or_create(&labels).set(bounds.low);
                self.highs[i].get_or_create(&labels).set(bounds.high);
            }
        }
    }

    /// `heavykeeper_<field>:<value>` lines of `INFO heavykeeper`: numbers
    /// by the table, the auth check as its info metric.
    fn info(&self, info: &str, labels: &Labels) {
        for line in info.lines() {
            let Some((field, value)) = line
                .strip_prefix("heavykeeper_")
                .and_then(|l| l.split_once(':'))
            else {
                continue;
            };
            let value = value.trim();
            if let Some((text, set)) = self.texts.iter().find(|(t, _)| t.field == field) {
                let mut labels = labels.clone();
                labels.push((text.label.to_string(), label_value(value)));
                set.add(labels);
                continue;
            }
            let (Some(f), Ok(number)) = (info_field(field), value.parse::<f64>()) else {
                continue;
            };
            let number = number / f.divisor;
            if let Some(family) = self.gauges.get(field) {
                family.get_or_create(labels).set(number);
            } else if let Some(family) = self.counters.get(field) {
                family.get_or_create(labels).inc_by(number);
            }
        }
    }
}

/// `heavykeeper_hotkey_<metric>_per_second<suffix>`, one family per
/// [`Metric`] (the rates, or one of their bounds).
fn rate_families(registry: &mut Registry, suffix: &str, help: &str) -> Vec<Family<Labels, Value>> {
    Metric::ALL
        .iter()
        .map(|metric| {
            let family = Family::<Labels, Value>::default();
            let name = format!("heavykeeper_hotkey_{}{suffix}", metric.json_name());
            let help = format!("{help}{}", metric.prometheus_help());
            registry.register(name, help, family.clone());
            family
        })
        .collect()
}

type Gauges = HashMap<&'static str, Family<Labels, Value>>;
type Counters = HashMap<&'static str, Family<Labels, Total>>;

/// A family for each numeric INFO field, by the field's name.
fn info_families(registry: &mut Registry) -> (Gauges, Counters) {
    let (mut gauges, mut counters) = (HashMap::new(), HashMap::new());
    for f in INFO_FIELDS {
        let unit = f.unit.map(|u| u.prometheus());
        match f.kind {
            Kind::Gauge => {
                let family = Family::<Labels, Value>::default();
                register(registry, f.name, f.help, unit, family.clone());
                gauges.insert(f.field, family);
            }
            Kind::Counter => {
                let family = Family::<Labels, Total>::default();
                register(registry, f.name, f.help, unit, family.clone());
                counters.insert(f.field, family);
            }
        }
    }
    (gauges, counters)
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

    #[test]
    fn percentages_are_ratios_and_the_auth_check_a_label() {
        let metrics = Metrics::new();
        let labels = vec![("node".to_string(), "n:1".to_string())];
        metrics.info(
            "heavykeeper_tracker_cpu_percent:2.50\r\nheavykeeper_tracker_counted_slot_mean_ms:1.500\r\nheavykeeper_tracker_auth_check:per-client\r\nheavykeeper_tracker_commands_sampled:9\r\n",
            &labels,
        );
        let mut text = String::new();
        encode(&mut text, &metrics.registry).unwrap();
        assert!(
            text.contains("# UNIT heavykeeper_tracker_cpu_ratio ratio"),
            "{text}"
        );
        assert!(
            text.contains("heavykeeper_tracker_cpu_ratio{node=\"n:1\"} 0.025"),
            "{text}"
        );
        assert!(
            text.contains("heavykeeper_tracker_counted_slot_mean_seconds{node=\"n:1\"} 0.0015"),
            "{text}"
        );
        assert!(
            text.contains("# TYPE heavykeeper_tracker_auth_check info"),
            "{text}"
        );
        assert!(
            text.contains(
                "heavykeeper_tracker_auth_check_info{node=\"n:1\",check=\"per-client\"} 1"
            ),
            "{text}"
        );
        assert!(!text.contains("commands_sampled"), "{text}");
    }
}
