//! The metric families of one scrape, and how a node's answers fill them.
//! A fresh set is made at each scrape, so a key, prefix or slot that left
//! its node's list leaves `/metrics` with it: no series is left behind
//! with its last value, and Prometheus marks it stale at the next scrape.

use super::info_fields::{info_field, Kind, TextField, AUTH_CHECK, CLUSTER_STATE, INFO_FIELDS};
use super::labels::{bytes_label, label_value, node_labels, InfoSet, Labels};
use super::node_read::Answer;
use crate::reading::hot_keys::{KeyId, Row};
use crate::reading::hot_slots::{cumulative, SlotRow};
use crate::reading::metric::{Bounds, Metric, Rates};
use crate::reading::senders::Sender;
use heavykeeper_tracker::hash_slot::hash_slot;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::{Registry, Unit};
use std::collections::HashMap;
use std::sync::atomic::AtomicU64;

type Value = Gauge<f64, AtomicU64>;
type Total = Counter<f64, AtomicU64>;

/// A rate and the families of its lower and upper 95% bounds.
struct Bounded {
    rate: Family<Labels, Value>,
    low: Family<Labels, Value>,
    high: Family<Labels, Value>,
}

impl Bounded {
    /// `name`, `name_low` and `name_high`.
    fn register(registry: &mut Registry, name: &str, help: &str) -> Self {
        let family = |registry: &mut Registry, suffix: &str, prefix: &str| {
            let (name, help) = (format!("{name}{suffix}"), format!("{prefix}{help}"));
            registered(registry, &name, &help, None)
        };
        Bounded {
            rate: family(registry, "", ""),
            low: family(registry, "_low", "Lower 95% bound: "),
            high: family(registry, "_high", "Upper 95% bound: "),
        }
    }

    fn set(&self, labels: &Labels, rate: f64, bounds: Option<Bounds>) {
        self.rate.get_or_create(labels).set(rate);
        if let Some(bounds) = bounds {
            self.low.get_or_create(labels).set(bounds.low);
            self.high.get_or_create(labels).set(bounds.high);
        }
    }
}

pub struct Families {
    registry: Registry,
    up: Family<Labels, Gauge>,
    errors: Family<Labels, Gauge>,
    /// One per [`Metric`], in [`Metric::ALL`]'s order.
    hot_keys: Vec<Bounded>,
    hot_prefixes: Bounded,
    /// Reads, then writes.
    hot_slots: [Bounded; 2],
    slot_ranges: Family<Labels, Value>,
    share: Family<Labels, Value>,
    /// Who drives a hot key, and a node's hottest clients (by host).
    key_clients: Bounded,
    hot_clients: Bounded,
    /// The numeric INFO fields' families, by field.
    info: (Gauges, Counters),
    /// The text fields, each an info metric.
    texts: Vec<(&'static TextField, InfoSet)>,
}

impl Families {
    pub fn new() -> Self {
        let mut registry = Registry::default();
        let r = &mut registry;
        let hot_slots = [(Metric::Reads, "Reads"), (Metric::Writes, "Writes")];
        Families {
            up: registered(
                r,
                "heavykeeper_up",
                "1 if the node answered this scrape, else 0",
                None,
            ),
            errors: registered(
                r,
                "heavykeeper_scrape_errors",
                "Queries to the node that failed during this scrape (INFO, HK.HOTKEYS, HK.HOTSLOTS)",
                None,
            ),
            hot_keys: (Metric::ALL.iter())
                .map(|metric| {
                    let name = format!("heavykeeper_hotkey_{}", metric.json_name());
                    Bounded::register(r, &name, metric.prometheus_help())
                })
                .collect(),
            hot_prefixes: Bounded::register(
                r,
                "heavykeeper_hotprefix_requests_per_second",
                "Reads and writes per second of every key under one of the node's hottest prefixes (HK.HOTKEYS PREFIXES), the prefix a SCAN MATCH pattern",
            ),
            hot_slots: hot_slots.map(|(metric, what)| {
                let name = format!("heavykeeper_hotslot_{}", metric.json_name());
                let help =
                    format!("{what} per second of one of the node's hottest hash slots (HK.HOTSLOTS)");
                Bounded::register(r, &name, &help)
            }),
            slot_ranges: registered(
                r,
                "heavykeeper_slot_range_requests_per_second",
                "Reads and writes per second of the node's hash slots numbered up to le, cumulative as a histogram's buckets (64 ranges of 256 slots): a heat map over the slot range",
                None,
            ),
            share: registered(
                r,
                "heavykeeper_node_share",
                "The node's part of the reads and writes per second of every node that answered this scrape, 0 to 1 (its tracker's totals, or its listed keys where a node gives no totals)",
                Some(Unit::Other("ratio".to_string())),
            ),
            key_clients: Bounded::register(
                r,
                "heavykeeper_hotkey_client_requests_per_second",
                "Reads and writes per second one host sends one of the node's 5 hottest keys, its 3 biggest senders (HK.HOTKEYS CLIENTS; Redis 7.2+, Valkey)",
            ),
            hot_clients: Bounded::register(
                r,
                "heavykeeper_hotclient_key_accesses_per_second",
                "Key accesses per second of one of the node's 10 hottest client hosts, whatever the keys (HK.HOTCLIENTS; Redis 7.2+, Valkey)",
            ),
            info: info_families(r),
            texts: [&AUTH_CHECK, &CLUSTER_STATE]
                .into_iter()
                .map(|text| (text, registered(r, text.name, text.help, None)))
                .collect(),
            registry,
        }
    }

    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// A node that could not be reached: `heavykeeper_up 0`, nothing else.
    pub fn unreached(&self, address: &str) {
        self.up.get_or_create(&node_labels(address)).set(0);
    }

    /// Everything a node answered. `in_cluster`: its keys have slots.
    pub fn answered(&self, address: &str, in_cluster: bool, answer: &Answer) {
        let labels = node_labels(address);
        self.up.get_or_create(&labels).set(1);
        self.errors.get_or_create(&labels).set(answer.failed.into());
        if let Some(info) = &answer.info {
            self.info(info, &labels);
        }
        for (id, rates) in &answer.keys {
            self.hot_key(&labels, id, rates, in_cluster);
        }
        for row in &answer.prefixes {
            self.hot_prefix(&labels, row);
        }
        for row in &answer.hot_slots {
            self.hot_slot(&labels, row);
        }
        if in_cluster {
            self.slot_ranges(&labels, &answer.all_slots);
        }
        for (id, senders) in &answer.key_senders {
            let mut key = labels.clone();
            key.push(("db".into(), id.db.to_string()));
            key.push(bytes_label("key", &id.key));
            self.senders(&self.key_clients, &key, senders);
        }
        self.senders(&self.hot_clients, &labels, &answer.hot_clients);
    }

    /// Each sender's rate, as a series of its host.
    fn senders(&self, family: &Bounded, labels: &Labels, senders: &[Sender]) {
        for sender in senders {
            let mut labels = labels.clone();
            labels.push(bytes_label("client", &sender.who));
            let bounds = Bounds {
                low: sender.low,
                high: sender.high,
            };
            family.set(&labels, sender.rate, Some(bounds));
        }
    }

    /// The node's share of every answering node's load.
    pub fn share(&self, address: &str, share: f64) {
        self.share.get_or_create(&node_labels(address)).set(share);
    }

    /// One row of `HK.HOTKEYS <KIND>`: its one rate, as a series of its key.
    fn hot_key(&self, node: &Labels, id: &KeyId, rates: &Rates, in_cluster: bool) {
        let mut labels = node.clone();
        labels.push(("db".into(), id.db.to_string()));
        labels.push(bytes_label("key", &id.key));
        if in_cluster {
            labels.push(("slot".into(), hash_slot(&id.key).to_string()));
        }
        for (family, &metric) in self.hot_keys.iter().zip(Metric::ALL.iter()) {
            if rates.get(metric) > 0.0 {
                family.set(&labels, rates.get(metric), rates.bounds(metric));
            }
        }
    }

    fn hot_prefix(&self, node: &Labels, row: &Row) {
        let mut labels = node.clone();
        labels.push(("db".into(), row.db.to_string()));
        labels.push(bytes_label("prefix", &row.key));
        self.hot_prefixes.set(&labels, row.rate, row.bounds);
    }

    /// Both rates of a listed slot, a 0 included: the slot is listed, so
    /// its figures are known.
    fn hot_slot(&self, node: &Labels, row: &SlotRow) {
        let mut labels = node.clone();
        labels.push(("slot".into(), row.slot().to_string()));
        for (family, metric) in self.hot_slots.iter().zip([Metric::Reads, Metric::Writes]) {
            let rates = row.rates();
            family.set(&labels, rates.get(metric), rates.bounds(metric));
        }
    }

    fn slot_ranges(&self, node: &Labels, rows: &[SlotRow]) {
        for (le, load) in cumulative(rows) {
            let mut labels = node.clone();
            labels.push(("le".into(), le.to_string()));
            self.slot_ranges.get_or_create(&labels).set(load);
        }
    }

    /// `heavykeeper_<field>:<value>` lines of `INFO heavykeeper`: numbers
    /// by the table, the auth check as its info metric.
    pub fn info(&self, info: &str, labels: &Labels) {
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
            let (gauges, counters) = &self.info;
            if let Some(family) = gauges.get(field) {
                family.get_or_create(labels).set(number);
            } else if let Some(family) = counters.get(field) {
                family.get_or_create(labels).inc_by(number);
            }
        }
    }
}

type Gauges = HashMap<&'static str, Family<Labels, Value>>;
type Counters = HashMap<&'static str, Family<Labels, Total>>;

/// A family for each numeric INFO field, by the field's name.
fn info_families(registry: &mut Registry) -> (Gauges, Counters) {
    let (mut gauges, mut counters) = (HashMap::new(), HashMap::new());
    for f in INFO_FIELDS {
        let (name, unit) = (f.name(), f.unit.map(|u| u.prometheus()));
        match f.kind {
            Kind::Gauge => drop(gauges.insert(f.field, registered(registry, &name, f.help, unit))),
            Kind::Counter => {
                drop(counters.insert(f.field, registered(registry, &name, f.help, unit)))
            }
        }
    }
    (gauges, counters)
}

/// A new metric registered as `name`, in `unit` where it has one.
fn registered<M: prometheus_client::registry::Metric + Clone + Default>(
    registry: &mut Registry,
    name: &str,
    help: &str,
    unit: Option<Unit>,
) -> M {
    let metric = M::default();
    match unit {
        Some(unit) => registry.register_with_unit(name, help, unit, metric.clone()),
        None => registry.register(name, help, metric.clone()),
    }
    metric
}
