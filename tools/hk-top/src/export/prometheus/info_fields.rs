//! What the module's `INFO heavykeeper` fields become in Prometheus: one
//! table that the exporter registers and reads by. Names follow
//! Prometheus's rules: base units (a percentage of a core is a ratio,
//! milliseconds are seconds), the unit and then `_total` as suffixes.
//! Fields that are not numbers have no place here: `tracker_auth_check`
//! (text) is an info metric of its own ([`AUTH_CHECK`]), and so is
//! `tracker_cluster_state` ([`CLUSTER_STATE`]).

/// What a field becomes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Gauge,
    /// Only ever grows while the module is loaded: `_total`, for `rate()`.
    Counter,
}

/// The unit a metric is in, and the suffix of its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    Bytes,
    Seconds,
    /// 0 to 1 (Prometheus's `_ratio`, where a person would say percent).
    Ratio,
}

impl Unit {
    pub fn prometheus(self) -> prometheus_client::registry::Unit {
        use prometheus_client::registry::Unit as P;
        match self {
            Unit::Bytes => P::Bytes,
            Unit::Seconds => P::Seconds,
            // The client's own `Ratios` would end the name in `_ratios`.
            Unit::Ratio => P::Other("ratio".to_string()),
        }
    }
}

pub struct InfoField {
    /// The INFO field after its `heavykeeper_` prefix.
    pub field: &'static str,
    /// The metric's name after `heavykeeper_` where it is not the field's
    /// (see [`InfoField::name`]).
    named: Option<&'static str>,
    pub kind: Kind,
    pub unit: Option<Unit>,
    /// The INFO figure over this is the metric's value: a percentage
    /// becomes a ratio (100), milliseconds seconds (1000). (Dividing keeps
    /// 0.05% as 0.0005 exactly where times 0.01 could be off in the last
    /// digit.)
    pub divisor: f64,
    /// The encoder ends it with a period.
    pub help: &'static str,
}

const fn field(field: &'static str, kind: Kind, help: &'static str) -> InfoField {
    InfoField {
        field,
        named: None,
        kind,
        unit: None,
        divisor: 1.0,
        help,
    }
}

const fn gauge(info: &'static str, help: &'static str) -> InfoField {
    field(info, Kind::Gauge, help)
}

const fn counter(info: &'static str, help: &'static str) -> InfoField {
    field(info, Kind::Counter, help)
}

impl InfoField {
    /// The metric's name before its unit and `_total`: the field's, less
    /// the unit it ends in (`sketch_memory_bytes` is
    /// `heavykeeper_sketch_memory`, in bytes), unless [`Self::named`] says.
    pub fn name(&self) -> String {
        let units = ["_bytes", "_seconds", "_percent", "_ms", "_share"];
        let unit = units.iter().find_map(|u| self.field.strip_suffix(u));
        let base = self.named.or(unit.filter(|_| self.unit.is_some()));
        format!("heavykeeper_{}", base.unwrap_or(self.field))
    }

    /// A name that is not the field's.
    const fn named(self, name: &'static str) -> Self {
        InfoField {
            named: Some(name),
            ..self
        }
    }

    const fn in_unit(self, unit: Unit) -> Self {
        InfoField {
            unit: Some(unit),
            ..self
        }
    }

    /// A percentage of one core, as a ratio.
    const fn percent(self) -> Self {
        InfoField {
            divisor: 100.0,
            ..self.in_unit(Unit::Ratio)
        }
    }

    /// Milliseconds, as seconds.
    const fn milliseconds(self) -> Self {
        InfoField {
            divisor: 1000.0,
            ..self.in_unit(Unit::Seconds)
        }
    }
}

/// A field whose value is text, shown as an info metric: one sample of 1,
/// the text in a label.
pub struct TextField {
    pub field: &'static str,
    /// The metric's name (the encoder adds `_info`).
    pub name: &'static str,
    /// The label that holds the text.
    pub label: &'static str,
    pub help: &'static str,
}

pub const AUTH_CHECK: TextField = TextField {
    field: "tracker_auth_check",
    name: "heavykeeper_tracker_auth_check",
    label: "check",
    help: "How the tracker keeps out clients not logged in: none-needed, per-client or per-slot",
};

pub const CLUSTER_STATE: TextField = TextField {
    field: "tracker_cluster_state",
    name: "heavykeeper_tracker_cluster_state",
    label: "state",
    help: "The cluster's state as the tracker last read it: ok or fail (none outside a cluster)",
};

pub const INFO_FIELDS: &[InfoField] = &[
    // heavykeeper_sketches
    gauge("sketches", "Keys holding a HeavyKeeper sketch"),
    gauge(
        "sketch_memory_bytes",
        "Memory of all sketches, as MEMORY USAGE counts it without key overhead",
    )
    .in_unit(Unit::Bytes),
    counter(
        "arrivals_counted",
        "Total weight counted into sketches by commands since the module loaded",
    ),
    counter(
        "commands_refused_by_limits",
        "Commands refused by max-sketch-bytes, max-future-ms or maxmemory",
    ),
    counter(
        "panics_contained",
        "Bugs caught outside a command (each also a log line)",
    ),
    // heavykeeper_tracking: its settings
    gauge(
        "tracker_enabled",
        "1 if the server's own key accesses are tracked",
    ),
    gauge(
        "tracker_k",
        "Hot keys the tracker keeps, per kind of access",
    ),
    gauge(
        "tracker_halflife_seconds",
        "Half-life of the tracker's rates",
    )
    .in_unit(Unit::Seconds),
    gauge(
        "tracker_sample",
        "track-sample: counting one slot of time in this many; 0 as much as the CPU budget allows",
    ),
    gauge(
        "tracker_misses",
        "1 if reads of keys that do not exist are counted as hot misses (track-misses)",
    )
    .named("tracker_misses_enabled"),
    // what it counts now, and what that costs
    gauge(
        "tracker_share_counted",
        "Share of the time whose commands the tracker counts now",
    )
    .in_unit(Unit::Ratio),
    gauge(
        "tracker_cpu_percent",
        "The tracker's CPU over the last few seconds, a share of one core",
    )
    .percent(),
    gauge(
        "tracker_cpu_main_percent",
        "The tracker's CPU on the server's main thread over the last few seconds, a share of one core",
    )
    .percent(),
    gauge(
        "tracker_cpu_worker_percent",
        "The tracker's worker thread's CPU over the last few seconds, a share of one core",
    )
    .percent(),
    gauge(
        "tracker_cpu_percent_counting_all",
        "What counting every command would cost now, a share of one core (0 until measured)",
    )
    .percent()
    .named("tracker_cpu_counting_all"),
    gauge(
        "tracker_cpu_budget_percent",
        "The CPU the tracker may take, a share of one core",
    )
    .percent(),
    counter(
        "tracker_cpu_seconds",
        "CPU time the tracker has spent, main thread and worker",
    )
    .in_unit(Unit::Seconds),
    counter(
        "tracker_cpu_seconds_main",
        "CPU time the tracker has spent on the server's main thread",
    )
    .in_unit(Unit::Seconds)
    .named("tracker_cpu_main"),
    counter(
        "tracker_cpu_seconds_worker",
        "CPU time the tracker's worker thread has spent",
    )
    .in_unit(Unit::Seconds)
    .named("tracker_cpu_worker"),
    // the node's whole traffic (what HK.HOTSLOTS adds up to), and how
    // long the worker thinned to keep to its CPU share
    gauge(
        "tracker_reads_per_second",
        "The node's reads per second now, every key counted",
    ),
    gauge(
        "tracker_writes_per_second",
        "The node's writes per second now, every key counted",
    ),
    gauge(
        "tracker_reads_per_second_low",
        "Lower 95% bound of the node's reads per second",
    ),
    gauge(
        "tracker_reads_per_second_high",
        "Upper 95% bound of the node's reads per second",
    ),
    gauge(
        "tracker_writes_per_second_low",
        "Lower 95% bound of the node's writes per second",
    ),
    gauge(
        "tracker_writes_per_second_high",
        "Upper 95% bound of the node's writes per second",
    ),
    gauge(
        "tracker_accesses_kept_share",
        "Share of the accesses of counted time the tracker keeps (one in n, each standing for n)",
    )
    .in_unit(Unit::Ratio),
    gauge(
        "tracker_counted_correction",
        "What each counted access stands for beyond its slot's share on a saturated server (1: nothing corrected)",
    ),
    gauge(
        "tracker_cluster_slots_served",
        "Hash slots the tracker takes this cluster node to serve (0 outside a cluster)",
    ),
    counter(
        "tracker_worker_thinned_seconds",
        "Time the tracker's worker thinned keys (without bias) to keep within its CPU share",
    )
    .in_unit(Unit::Seconds),
    counter(
        "tracker_seconds_counted",
        "Time whose commands the tracker counted",
    )
    .in_unit(Unit::Seconds)
    .named("tracker_counted"),
    gauge(
        "tracker_memory_bytes",
        "Memory the tracker holds: sketches, batches, client table",
    )
    .in_unit(Unit::Bytes),
    gauge(
        "tracker_client_rows",
        "Rows whose senders the tracker counts (7.2+, Valkey)",
    ),
    gauge(
        "tracker_client_rows_memory_bytes",
        "Memory the rows' senders take (part of the tracker's)",
    )
    .in_unit(Unit::Bytes),
    gauge(
        "tracker_worker_heap_bytes",
        "The tracker worker's own heap, reserved from the server's allocator",
    )
    .in_unit(Unit::Bytes),
    gauge(
        "tracker_worker_heap_used_bytes",
        "What the tracker's worker holds of its heap",
    )
    .in_unit(Unit::Bytes),
    counter(
        "tracker_worker_heap_overflows",
        "Allocations the tracker's worker made from the server's allocator because its heap was full",
    ),
    // what it saw
    counter(
        "tracker_keys_counted",
        "Key accesses the tracker counted, sampled ones weighted",
    ),
    counter("tracker_commands_seen", "Commands the tracker's filter saw"),
    counter(
        "tracker_commands_redirected",
        "Commands not counted because this cluster node does not serve them (MOVED, ASK, CROSSSLOT, TRYAGAIN, CLUSTERDOWN)",
    ),
    counter(
        "tracker_accesses_dropped",
        "Key accesses dropped because the tracker's queue was full",
    ),
    counter(
        "tracker_misses_seen",
        "Reads of keys that did not exist that the tracker counted",
    ),
    // who is let in
    counter(
        "tracker_unauthenticated_dropped",
        "Key accesses dropped because their client was not logged in (or not checked yet)",
    ),
    counter("tracker_auth_checks", "Clients checked for being logged in"),
    counter(
        "tracker_auth_refused",
        "Clients checked and found not logged in",
    ),
    // slots of time
    counter("tracker_slots", "Slots of time begun, counted or not"),
    counter(
        "tracker_slots_counted",
        "Slots of time whose commands were counted",
    ),
    gauge(
        "tracker_uncounted_slot_mean_ms",
        "Mean length of a slot of time not counted, since tracking started",
    )
    .milliseconds(),
    gauge(
        "tracker_counted_slot_mean_ms",
        "Mean length of a counted slot of time, since tracking started",
    )
    .milliseconds(),
    counter(
        "tracker_slots_discarded",
        "Counted slots discarded whole: too many accesses, or a command refused for want of a login (Redis 7.0)",
    ),
    counter(
        "tracker_slots_first_passes",
        "Counted slots whose first pass began after a pass longer than a slot, and stood for one over its chance",
    ),
    // heavykeeper_watch
    gauge("watched_keys", "Watched sketches this server follows"),
    gauge(
        "watched_keys_timed",
        "Watched sketches waiting for a fade crossing",
    ),
    counter("events_published", "Watch and tracker events published"),
    counter(
        "events_dropped",
        "Watch events dropped by the per-sketch cap",
    ),
];

/// The mapping of an INFO field, if it has one.
pub fn info_field(field: &str) -> Option<&'static InfoField> {
    INFO_FIELDS.iter().find(|f| f.field == field)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// Its name as Prometheus shows it.
    fn full_name(f: &InfoField) -> String {
        let unit = f
            .unit
            .map_or(String::new(), |u| format!("_{}", u.prometheus().as_str()));
        let total = if f.kind == Kind::Counter {
            "_total"
        } else {
            ""
        };
        format!("{}{unit}{total}", f.name())
    }

    #[test]
    fn every_field_once_every_name_once() {
        let fields: HashSet<&str> = INFO_FIELDS.iter().map(|f| f.field).collect();
        assert_eq!(fields.len(), INFO_FIELDS.len());
        let names: HashSet<String> = INFO_FIELDS.iter().map(full_name).collect();
        assert_eq!(names.len(), INFO_FIELDS.len(), "{names:?}");
        assert!(!names.contains(AUTH_CHECK.name));
        // The field the tracker no longer has.
        assert!(info_field("tracker_commands_sampled").is_none());
        assert!(
            info_field(AUTH_CHECK.field).is_none(),
            "text is not a number"
        );
    }
}
