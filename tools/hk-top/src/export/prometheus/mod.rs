//! `hk-top --prometheus ADDRESS`: `/metrics` for Prometheus, read from every
//! node at each scrape (the node given, or every node of its cluster, found
//! again at each scrape; the nodes asked at once):
//! - `heavykeeper_hotkey_reads_per_second`, `..._writes_per_second` and
//!   `..._misses_per_second` (where the node counts misses), one series per
//!   hot key (`node`, `db`, `key`, or `key_base64` for a key that is not
//!   UTF-8, and `slot` in a cluster), with their 95% bounds (`_low`,
//!   `_high`);
//! - `heavykeeper_hotprefix_requests_per_second` (`node`, `db`, `prefix`):
//!   the hot tenants; `heavykeeper_hotslot_reads_per_second` and `_writes_`
//!   (`node`, `slot`): the hot slots; each with its bounds;
//! - `heavykeeper_slot_range_requests_per_second` (`node`, `le`): the load
//!   over the whole slot range, for a heat map;
//! - `heavykeeper_node_share_ratio`: each node's part of the load;
//! - the module's `INFO heavykeeper` fields, named by Prometheus's rules
//!   (`info_fields`);
//! - `heavykeeper_up`: 0 for a node that does not answer, so that a node
//!   down is a value on a graph, never a failed scrape.
//!
//! `--count` rows per node of each list (keys of each kind, prefixes,
//! slots) bound the series, whatever the traffic.

mod families;
mod info_fields;
mod labels;
mod node_read;

use crate::connection::nodes::{ask_each, discover, Node};
use crate::connection::settings::ConnectionSettings;
use crate::options::Options;
use crate::reading::balance::node_loads;
use crate::reading::hot_keys::Snapshot;
use families::Families;
use node_read::NodeRead;
use prometheus_client::encoding::text::encode;
use std::net::SocketAddr;

pub fn serve(listen: SocketAddr, o: &Options) -> Result<(), String> {
    let server = tiny_http::Server::http(listen).map_err(|e| e.to_string())?;
    eprintln!("hk-top: serving http://{listen}/metrics for {}", o.address);
    // The last nodes found: a scrape while discovery fails reads these.
    let mut known = vec![Node::alone(&o.address)];
    let openmetrics = tiny_http::Header::from_bytes(
        &b"Content-Type"[..],
        &b"application/openmetrics-text; version=1.0.0; charset=utf-8"[..],
    )
    .map_err(|()| "bad header")?;
    for request in server.incoming_requests() {
        let response = match request.url().split('?').next() {
            Some("/metrics") => {
                if let Ok(nodes) = discover(&o.connection, &o.address, o.replicas) {
                    known = nodes;
                }
                tiny_http::Response::from_string(scrape(&o.connection, &known, o.count))
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
fn scrape(connection: &ConnectionSettings, nodes: &[Node], count: usize) -> String {
    let reads = read_all(connection, nodes, count);
    let families = Families::new();
    for read in &reads {
        match &read.answer {
            Some(answer) => families.answered(&read.node.address, read.node.cluster, answer),
            None => families.unreached(&read.node.address),
        }
    }
    for (address, share) in shares(&reads) {
        families.share(&address, share);
    }
    let mut text = String::new();
    // Writing into a String cannot fail.
    let _ = encode(&mut text, families.registry());
    text
}

/// The nodes asked at once: a slow node delays the scrape by its own
/// time, not by the sum of every node's.
fn read_all(connection: &ConnectionSettings, nodes: &[Node], count: usize) -> Vec<NodeRead> {
    let read = |node: &Node| NodeRead::read(connection, node, count);
    ask_each(nodes, read, NodeRead::unreached)
}

/// Each answering node's share of their load, as the console's nodes view
/// works it out ([`node_loads`]).
fn shares(reads: &[NodeRead]) -> Vec<(String, f64)> {
    let mut snapshot = Snapshot {
        nodes: reads.iter().map(|r| r.node.clone()).collect(),
        ..Snapshot::default()
    };
    for read in reads {
        let address = read.node.address.clone();
        match &read.answer {
            Some(answer) => {
                snapshot.keys.extend(answer.keys.iter().cloned());
                if let Some(totals) = answer.totals() {
                    snapshot.totals.push((address, totals));
                }
            }
            None => snapshot.errors.push((address, "not answering".into())),
        }
    }
    node_loads(&snapshot)
        .into_iter()
        .filter_map(|load| Some((load.node.address, load.share?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::labels::node_labels;
    use super::*;

    fn text_of(families: &Families) -> String {
        let mut text = String::new();
        encode(&mut text, families.registry()).unwrap();
        text
    }

    #[test]
    fn info_fields_become_named_gauges_counters_ratios_seconds_and_an_info_label() {
        let families = Families::new();
        families.info(
            "# heavykeeper_sketches\r\nheavykeeper_sketches:3\r\nheavykeeper_sketch_memory_bytes:4096\r\nheavykeeper_arrivals_counted:17\r\nheavykeeper_unknown:5\r\nheavykeeper_tracker_cpu_percent:2.50\r\nheavykeeper_tracker_counted_slot_mean_ms:1.500\r\nheavykeeper_tracker_cpu_seconds:7\r\nheavykeeper_tracker_auth_check:per-client\r\nheavykeeper_tracker_commands_sampled:9\r\n",
            &node_labels("n:1"),
        );
        let text = text_of(&families);
        for line in [
            "heavykeeper_sketches{node=\"n:1\"} 3",
            "heavykeeper_sketch_memory_bytes{node=\"n:1\"} 4096",
            "# TYPE heavykeeper_arrivals_counted counter",
            "heavykeeper_arrivals_counted_total{node=\"n:1\"} 17",
            "# HELP heavykeeper_sketches ",
            // Percentages of a core are ratios, milliseconds seconds.
            "# UNIT heavykeeper_tracker_cpu_ratio ratio",
            "heavykeeper_tracker_cpu_ratio{node=\"n:1\"} 0.025",
            "heavykeeper_tracker_counted_slot_mean_seconds{node=\"n:1\"} 0.0015",
            "heavykeeper_tracker_cpu_seconds_total{node=\"n:1\"} 7",
            // The auth check, text, is an info metric's label.
            "# TYPE heavykeeper_tracker_auth_check info",
            "heavykeeper_tracker_auth_check_info{node=\"n:1\",check=\"per-client\"} 1",
        ] {
            assert!(text.contains(line), "{line} in {text}");
        }
        assert!(!text.contains("unknown"), "{text}");
        assert!(!text.contains("commands_sampled"), "{text}");
    }

    fn answer() -> node_read::Answer {
        use crate::reading::hot_keys::Row;
        use crate::reading::hot_slots::SlotRow;
        use crate::reading::metric::{Bounds, Metric, Rates};
        let bounds = Some(Bounds {
            low: 90.0,
            high: 110.0,
        });
        let key = |key: &[u8]| crate::fixtures::key_id("n:1", 0, key);
        node_read::Answer {
            keys: vec![
                (key(b"user:1"), Rates::bounded(Metric::Reads, 100.0, bounds)),
                (key(b"\xff"), Rates::only(Metric::Writes, 5.0)),
            ],
            prefixes: vec![Row {
                key: b"tenant:7:*".to_vec(),
                db: 0,
                rate: 100.0,
                bounds,
            }],
            hot_slots: vec![SlotRow::new(
                866,
                Rates::bounded(Metric::Reads, 100.0, bounds),
            )],
            all_slots: vec![SlotRow::new(866, Rates::only(Metric::Reads, 100.0))],
            ..node_read::Answer::default()
        }
    }

    #[test]
    fn a_cluster_node_s_keys_prefixes_slots_and_ranges() {
        let families = Families::new();
        families.answered("n:1", true, &answer());
        families.share("n:1", 0.5);
        let text = text_of(&families);
        for line in [
            "heavykeeper_up{node=\"n:1\"} 1",
            "heavykeeper_hotkey_reads_per_second{node=\"n:1\",db=\"0\",key=\"user:1\",slot=\"10778\"} 100.0",
            "heavykeeper_hotkey_reads_per_second_high{node=\"n:1\",db=\"0\",key=\"user:1\",slot=\"10778\"} 110.0",
            "heavykeeper_hotkey_writes_per_second{node=\"n:1\",db=\"0\",key_base64=\"/w==\",slot=\"7920\"} 5.0",
            "heavykeeper_hotprefix_requests_per_second{node=\"n:1\",db=\"0\",prefix=\"tenant:7:*\"} 100.0",
            "heavykeeper_hotprefix_requests_per_second_low{node=\"n:1\",db=\"0\",prefix=\"tenant:7:*\"} 90.0",
            "heavykeeper_hotslot_reads_per_second{node=\"n:1\",slot=\"866\"} 100.0",
            "heavykeeper_hotslot_writes_per_second{node=\"n:1\",slot=\"866\"} 0.0",
            "heavykeeper_slot_range_requests_per_second{node=\"n:1\",le=\"767\"} 0.0",
            "heavykeeper_slot_range_requests_per_second{node=\"n:1\",le=\"1023\"} 100.0",
            "heavykeeper_slot_range_requests_per_second{node=\"n:1\",le=\"16383\"} 100.0",
            "# UNIT heavykeeper_node_share_ratio ratio",
            "heavykeeper_node_share_ratio{node=\"n:1\"} 0.5",
        ] {
            assert!(text.contains(line), "{line} in {text}");
        }
        // No writes series for a key listed by reads only, no bounds a
        // node did not give.
        assert!(!text.contains("writes_per_second{node=\"n:1\",db=\"0\",key=\"user:1\""));
        assert!(!text.contains("writes_per_second_low{node=\"n:1\",db=\"0\",key_base64"));
    }

    #[test]
    fn outside_a_cluster_no_slot_labels_and_a_node_down_is_up_0() {
        let families = Families::new();
        families.answered("n:1", false, &answer());
        families.unreached("n:2");
        let text = text_of(&families);
        for (line, shown) in [
            ("key=\"user:1\"} 100.0", true),
            ("heavykeeper_slot_range_requests_per_second{", false),
            ("heavykeeper_up{node=\"n:2\"} 0", true),
            ("heavykeeper_scrape_errors{node=\"n:2\"}", false),
        ] {
            assert_eq!(text.contains(line), shown, "{line} in {text}");
        }
    }

    #[test]
    fn shares_of_the_trackers_totals_and_none_for_a_node_down() {
        let node = crate::fixtures::node;
        let info = |reads: f64| {
            node_read::Answer {
            info: Some(format!(
                "heavykeeper_tracker_reads_per_second:{reads}\r\nheavykeeper_tracker_writes_per_second:0\r\n"
            )),
            ..node_read::Answer::default()
        }
        };
        let reads = vec![
            NodeRead::answered(node("a:1"), info(300.0)),
            NodeRead::answered(node("a:2"), info(100.0)),
            NodeRead::unreached(&node("a:3")),
        ];
        let share = |node: &str, share| (node.to_string(), share);
        assert_eq!(shares(&reads), [share("a:1", 0.75), share("a:2", 0.25)]);
    }
}
