//! An operator runs `hk-top --prometheus` beside a server and a real
//! Prometheus (Debian's `prometheus` package) scraping it every second; a
//! workload makes a key hot and reads keys that do not exist; the key, its
//! rate, the hot misses and every one of the module's own figures are then
//! read back through Prometheus's HTTP query API. A second exporter points
//! at a server that is not there: Prometheus scrapes it fine and records
//! `heavykeeper_up 0`.

use test_harness as common;

use crate::promkit::{sample_value, Exporter, Prometheus};
use crate::support::track_misses;
use base64::Engine;
use common::{free_port, repeat, run, value, wait_until, Server};
use std::collections::BTreeSet;
use std::time::Duration;

/// Each number `INFO heavykeeper` gives, and the series Prometheus holds
/// it as: every field the server has, none it no longer has
/// (`tracker_commands_sampled` went). Most fields keep their name
/// (`heavykeeper_<field>`), the counters with `_total`; the others, one
/// pair a line: percentages of a core are ratios, milliseconds seconds.
const SAME_NAME: &str = "\
sketches sketch_memory_bytes tracker_enabled tracker_k tracker_halflife_seconds \
tracker_sample tracker_reads_per_second tracker_writes_per_second \
tracker_reads_per_second_low tracker_reads_per_second_high tracker_writes_per_second_low \
tracker_writes_per_second_high tracker_cluster_slots_served tracker_memory_bytes \
tracker_client_rows tracker_client_rows_memory_bytes tracker_worker_heap_bytes \
tracker_worker_heap_used_bytes watched_keys watched_keys_timed tracker_counted_correction";
const COUNTERS: &str = "\
arrivals_counted commands_refused_by_limits panics_contained tracker_cpu_seconds \
tracker_worker_thinned_seconds tracker_keys_counted tracker_commands_seen \
tracker_commands_redirected tracker_accesses_dropped tracker_misses_seen \
tracker_unauthenticated_dropped tracker_auth_checks tracker_auth_refused tracker_slots \
tracker_slots_counted tracker_slots_discarded tracker_slots_first_passes tracker_worker_heap_overflows events_published \
events_dropped";
const RENAMED: &str = "\
tracker_share_counted heavykeeper_tracker_share_counted_ratio
tracker_cpu_percent heavykeeper_tracker_cpu_ratio
tracker_cpu_main_percent heavykeeper_tracker_cpu_main_ratio
tracker_cpu_worker_percent heavykeeper_tracker_cpu_worker_ratio
tracker_cpu_percent_counting_all heavykeeper_tracker_cpu_counting_all_ratio
tracker_cpu_budget_percent heavykeeper_tracker_cpu_budget_ratio
tracker_cpu_seconds_main heavykeeper_tracker_cpu_main_seconds_total
tracker_cpu_seconds_worker heavykeeper_tracker_cpu_worker_seconds_total
tracker_accesses_kept_share heavykeeper_tracker_accesses_kept_ratio
tracker_seconds_counted heavykeeper_tracker_counted_seconds_total
tracker_misses heavykeeper_tracker_misses_enabled
tracker_uncounted_slot_mean_ms heavykeeper_tracker_uncounted_slot_mean_seconds
tracker_counted_slot_mean_ms heavykeeper_tracker_counted_slot_mean_seconds";

/// `INFO heavykeeper`'s fields (without the prefix) and their values.
fn info_fields(con: &mut redis::Connection) -> Vec<(String, String)> {
    let info: String = redis::cmd("INFO").arg("heavykeeper").query(con).unwrap();
    info.lines()
        .filter_map(|l| l.strip_prefix("heavykeeper_")?.split_once(':'))
        .map(|(field, value)| (field.to_string(), value.trim().to_string()))
        .collect()
}

/// A key read while missing, with a quote (escaped in its label), and
/// one that is not UTF-8 (`key_base64`).
const MISSED: &str = "miss:\"q\"";
const MISSED_BINARY: &[u8] = b"gone:\xff";

/// Every number of the server's INFO, as Prometheus holds it.
fn every_info_field_through_prometheus(
    prometheus: &Prometheus,
    con: &mut redis::Connection,
    node: &str,
) {
    let info = info_fields(con);
    let numbers = info.iter().filter(|(_, v)| v.parse::<f64>().is_ok());
    let numeric: BTreeSet<&str> = numbers.map(|(f, _)| f.as_str()).collect();
    let named = |fields: &'static str, end: &'static str| {
        (fields.split_whitespace()).map(move |f| (f, format!("heavykeeper_{f}{end}")))
    };
    let renamed = (RENAMED.lines()).map(|l| l.split_once(' ').unwrap());
    let pairs: Vec<(&str, String)> = (named(SAME_NAME, "").chain(named(COUNTERS, "_total")))
        .chain(renamed.map(|(f, s)| (f, s.to_string())))
        .collect();
    let mapped: BTreeSet<&str> = pairs.iter().map(|(f, _)| *f).collect();
    assert_eq!(numeric, mapped, "the server's INFO and the mapping differ");
    for (field, series) in pairs {
        let found = prometheus.query(&format!("{series}{{node=\"{node}\"}}"));
        assert_eq!(found.len(), 1, "{field} as {series}: {found:?}");
    }
    let one = |series: &str| sample_value(&prometheus.query(series)[0]);
    assert_eq!(one("heavykeeper_tracker_halflife_seconds"), 3600.0);
    assert_eq!(one("heavykeeper_tracker_misses_enabled"), 1.0);
    let budget = info.iter().find(|(f, _)| f == "tracker_cpu_budget_percent");
    let budget: f64 = budget.unwrap().1.parse().unwrap();
    assert_eq!(one("heavykeeper_tracker_cpu_budget_ratio"), budget / 100.0);
    assert!(one("heavykeeper_tracker_misses_seen_total") >= 30.0);
    let check = prometheus.query("heavykeeper_tracker_auth_check_info");
    assert_eq!(check[0]["metric"]["check"], "none-needed", "{check:?}");
    assert_eq!(sample_value(&check[0]), 1.0);
    assert!(prometheus
        .query("heavykeeper_tracker_commands_sampled_total")
        .is_empty());
}

#[test]
fn prometheus_scrapes_the_hot_keys_and_the_module_figures() {
    let server = Server::start_configured(&track_misses("3600"), &[]);
    let node = server.address();
    let mut con = server.client();
    let live = Exporter::start(server.port, &["--count", "5"]);
    let missing_server = free_port();
    let dead = Exporter::start(missing_server, &["--count", "5"]);
    // What Prometheus will read, straight from the exporter: a key that
    // exists, read often.
    value(&mut con, &["SET", "product:1", "p"]);
    repeat(&mut con, 50, &["GET", "product:1"]);
    value(&mut con, &["SET", "cart:\"quoted\"\n", "x"]);
    value(&mut con, &["SET", "cart:\"quoted\"\n", "y"]);
    for i in 0..20 {
        value(&mut con, &["GET", MISSED]);
        if i % 2 == 0 {
            run::<Option<Vec<u8>>>(&mut con, &[b"GET", MISSED_BINARY]).unwrap();
        }
    }
    let metrics = live.metrics();
    // The hot misses and the text INFO field, straight from it too.
    let binary = base64::engine::general_purpose::STANDARD.encode(MISSED_BINARY);
    let series = format!("heavykeeper_hotkey_misses_per_second{{node=\"{node}\",db=\"0\",key");
    for line in [
        "# TYPE heavykeeper_hotkey_reads_per_second gauge".to_string(),
        "key=\"product:1\"".into(),
        // Label values are escaped as the format says.
        "key=\"cart:\\\"quoted\\\"\\n\"".into(),
        "heavykeeper_tracker_memory_bytes{".into(),
        "heavykeeper_tracker_commands_seen_total{".into(),
        "# TYPE heavykeeper_hotkey_misses_per_second gauge".into(),
        format!("{series}=\"miss:\\\"q\\\"\"}}"),
        format!("{series}_base64=\"{binary}\"}}"),
        format!("heavykeeper_tracker_auth_check_info{{node=\"{node}\",check=\"none-needed\"}} 1"),
    ] {
        assert!(metrics.contains(&line), "{line} in {metrics}");
    }
    // A key that exists is never a miss.
    assert!(
        !metrics
            .lines()
            .any(|l| l.starts_with("heavykeeper_hotkey_misses") && l.contains("product:1")),
        "{metrics}"
    );
    assert!(!metrics.contains("commands_sampled"), "{metrics}");
    assert!(metrics.trim_end().ends_with("# EOF"), "{metrics}");

    let prometheus = Prometheus::start(&[live.port, dead.port], None);
    let hot = "heavykeeper_hotkey_reads_per_second{key=\"product:1\"}";
    wait_until(
        "Prometheus to have scraped the hot key",
        Duration::from_secs(90),
        || {
            // Keep the key hot while Prometheus starts.
            value(&mut con, &["GET", "product:1"]);
            !prometheus.query(hot).is_empty()
        },
    );
    let series = &prometheus.query(hot)[0];
    assert_eq!(series["metric"]["node"], node);
    assert_eq!(series["metric"]["db"], "0");
    assert!(sample_value(series) > 0.0, "{series}");
    // Its error bar: the bounds as series of the same key, around it.
    let bound = |end: &str| {
        let name = format!("heavykeeper_hotkey_reads_per_second_{end}{{key=\"product:1\"}}");
        wait_until("the bounds scraped", Duration::from_secs(30), || {
            !prometheus.query(&name).is_empty()
        });
        sample_value(&prometheus.query(&name)[0])
    };
    let (low, high) = (bound("low"), bound("high"));
    assert!(0.0 < low && low <= high, "{low} {high}");
    // The top-10 query the README gives.
    let top = prometheus.query("topk(10, max_over_time(heavykeeper_hotkey_reads_per_second[1h]))");
    assert_eq!(top[0]["metric"]["key"], "product:1", "{top:?}");
    // The module's figures, with Prometheus's names.
    let seen = prometheus.query("heavykeeper_tracker_commands_seen_total");
    assert!(sample_value(&seen[0]) > 50.0, "{seen:?}");
    let enabled = prometheus.query("heavykeeper_tracker_enabled");
    assert_eq!(sample_value(&enabled[0]), 1.0);
    // The hot misses, hottest first in a topk.
    let misses = prometheus.query("topk(1, heavykeeper_hotkey_misses_per_second)");
    assert_eq!(misses[0]["metric"]["key"], MISSED, "{misses:?}");
    assert!(sample_value(&misses[0]) > 0.0, "{misses:?}");
    every_info_field_through_prometheus(&prometheus, &mut con, &node);
    // A server that is not there: its exporter is scraped all right (up 1)
    // and says heavykeeper_up 0.
    let missing = format!("heavykeeper_up{{node=\"127.0.0.1:{missing_server}\"}}");
    wait_until(
        "the missing node's heavykeeper_up",
        Duration::from_secs(30),
        || !prometheus.query(&missing).is_empty(),
    );
    assert_eq!(sample_value(&prometheus.query(&missing)[0]), 0.0);
    let scraped = prometheus.query(&format!("up{{instance=\"127.0.0.1:{}\"}}", dead.port));
    assert_eq!(sample_value(&scraped[0]), 1.0, "{scraped:?}");
    let present = format!("heavykeeper_up{{node=\"127.0.0.1:{}\"}}", server.port);
    assert_eq!(sample_value(&prometheus.query(&present)[0]), 1.0);
}
