//! Keys as a text table (`--once`) or JSON (`--json`), and the pieces the
//! live view shares with them: printable key names, sparklines.
//!
//! A figure the key's node does not count (misses where `track-misses` is
//! off) is unknown, not zero: `-` in the table, and left out of the key's
//! JSON object; a misses column only appears once some node counts them.

use crate::reading::balance::node_loads;
use crate::reading::hot_keys::{KeyId, Snapshot};
use crate::reading::metric::{error_bar, Bounds, Metric, Rates};
use crate::reading::senders::Sender;
use base64::Engine;
use heavykeeper_tracker::hash_slot::hash_slot;
use serde_json::{json, Value};

/// A key as printable text: UTF-8 as is, other bytes as `\xNN`.
pub fn printable_key(key: &[u8]) -> String {
    match std::str::from_utf8(key) {
        Ok(text) if !text.chars().any(char::is_control) => text.to_string(),
        _ => (key.iter())
            .map(|&b| match b {
                b' '..=b'~' => char::from(b).to_string(),
                _ => format!("\\x{b:02x}"),
            })
            .collect(),
    }
}

/// The NODE column is as wide as the longest address: never cut.
pub fn node_width<'a>(nodes: impl Iterator<Item = &'a str>) -> usize {
    nodes.map(str::len).max().unwrap_or(0).max("NODE".len())
}

/// The keys listed (of `snapshot`), then each node that did not answer.
pub fn table(keys: &[(KeyId, Rates)], snapshot: &Snapshot) -> String {
    let metrics = snapshot.metrics();
    let width = node_width(keys.iter().map(|(id, _)| id.node.as_str()));
    let mut out = format!("{:<40} {:>3}  {:<width$}", "KEY", "DB", "NODE");
    for metric in &metrics {
        out.push_str(&format!(" {:>12}", metric.title()));
    }
    out.push_str(&format!(" {:>7}", "±"));
    out.push('\n');
    for (id, rates) in keys {
        out.push_str(&format!(
            "{:<40} {:>3}  {:<width$}",
            printable_key(&id.key),
            id.db,
            id.node,
        ));
        for &metric in &metrics {
            let counted = snapshot.counts(&id.node, metric);
            let figure = counted.then(|| format!("{:.1}", rates.get(metric)));
            out.push_str(&format!(" {:>12}", figure.as_deref().unwrap_or("-")));
        }
        let bar = error_bar(rates.total(), rates.total_bounds());
        out.push_str(&format!(" {:>7}", bar.as_deref().unwrap_or("-")));
        out.push('\n');
    }
    for (node, error) in &snapshot.errors {
        out.push_str(&format!("{node}: {error}\n"));
    }
    out.trim_end().to_string()
}

fn key_json(id: &KeyId, rates: &Rates, snapshot: &Snapshot) -> Value {
    let mut row = json!({
        "db": id.db,
        "node": id.node,
    });
    let in_cluster = (snapshot.nodes.iter()).any(|n| n.address == id.node && n.cluster);
    if in_cluster {
        put(&mut row, "slot", json!(hash_slot(&id.key)));
    }
    for metric in Metric::ALL {
        if snapshot.counts(&id.node, metric) {
            put(&mut row, metric.json_name(), json!(rates.get(metric)));
            put_bounds(&mut row, metric.json_name(), rates.bounds(metric));
        }
    }
    if let Some(bar) = error_bar(rates.total(), rates.total_bounds()) {
        put(&mut row, "error_bar", json!(bar));
    }
    if let Some(senders) = snapshot.senders.get(id) {
        put(&mut row, "clients", senders_json(senders));
    }
    put_bytes(&mut row, "key", &id.key);
    row
}

/// Senders as JSON rows: `client` (or `client_base64`), `rate`, bounds.
fn senders_json(senders: &[Sender]) -> Value {
    (senders.iter())
        .map(|s| {
            let mut row = json!({"rate": s.rate, "rate_low": s.low, "rate_high": s.high});
            put_bytes(&mut row, "client", &s.who);
            row
        })
        .collect()
}

/// `bytes` (a key's name, a client's) as `name` where they are UTF-8, else
/// as `<name>_base64`: JSON strings cannot carry other bytes exactly.
pub fn put_bytes(row: &mut Value, name: &str, bytes: &[u8]) {
    let base64 = || base64::engine::general_purpose::STANDARD.encode(bytes);
    match std::str::from_utf8(bytes) {
        Ok(text) => put(row, name, json!(text)),
        Err(_) => put(row, &format!("{name}_base64"), json!(base64())),
    }
}

/// Sets a field of `row`, a JSON object (each starts as `json!({...})`):
/// as `row[name] = value` does, without its panic on a value of another kind.
pub fn put(row: &mut Value, name: &str, value: Value) {
    if let Some(fields) = row.as_object_mut() {
        fields.insert(name.to_string(), value);
    }
}

/// The keys listed (of `snapshot`) and each node that did not answer.
pub fn json(keys: &[(KeyId, Rates)], snapshot: &Snapshot) -> String {
    let keys: Vec<Value> = (keys.iter())
        .map(|(id, rates)| key_json(id, rates, snapshot))
        .collect();
    let errors: Vec<Value> = (snapshot.errors.iter())
        .map(|(node, error)| json!({"node": node, "error": error}))
        .collect();
    let clients: Vec<Value> = (snapshot.hot_clients.iter())
        .map(|(node, senders)| json!({"node": node, "clients": senders_json(senders)}))
        .collect();
    let nodes = nodes_json(snapshot);
    json!({"keys": keys, "nodes": nodes, "clients": clients, "errors": errors}).to_string()
}

/// Each node's traffic and share, as the balance view has them: the
/// tracker's own totals where the nodes give them (`"tracked": true`),
/// else the listed keys' sums.
fn nodes_json(snapshot: &Snapshot) -> Vec<Value> {
    (node_loads(snapshot).into_iter())
        .map(|load| {
            let mut row = json!({
                "node": load.node.address,
                "primary": load.node.primary,
            });
            if let Some(error) = &load.error {
                put(&mut row, "error", json!(error));
                return row;
            }
            let rates = load.tracked.unwrap_or(load.rates);
            for metric in [Metric::Reads, Metric::Writes] {
                put(&mut row, metric.json_name(), json!(rates.get(metric)));
                put_bounds(&mut row, metric.json_name(), rates.bounds(metric));
            }
            put(&mut row, "tracked", json!(load.tracked.is_some()));
            put(&mut row, "share", json!(load.share));
            row
        })
        .collect()
}

/// A rate's bounds as `<name>_low` and `<name>_high`, where there are any.
fn put_bounds(row: &mut Value, name: &str, bounds: Option<Bounds>) {
    if let Some(b) = bounds {
        put(row, &format!("{name}_low"), json!(b.low));
        put(row, &format!("{name}_high"), json!(b.high));
    }
}

/// The last values as block characters, scaled to the largest.
pub fn sparkline(values: impl Iterator<Item = f64> + Clone) -> String {
    const BLOCKS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let [.., full] = BLOCKS;
    let max = values.clone().fold(0.0f64, f64::max);
    values
        .map(|v| {
            if max <= 0.0 || v <= 0.0 {
                ' '
            } else {
                let level = ((v / max) * (BLOCKS.len() - 1) as f64).round() as usize;
                BLOCKS.get(level).copied().unwrap_or(full)
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(node: &str, name: &[u8], rates: Rates) -> (KeyId, Rates) {
        (crate::fixtures::key_id(node, 2, name), rates)
    }

    #[test]
    fn binary_keys_stay_readable_and_json_stays_exact() {
        assert_eq!(printable_key(b"user:1"), "user:1");
        assert_eq!(printable_key(b"a\xff\x00"), "a\\xff\\x00");
        let mut rates = Rates::only(Metric::Reads, 3.0);
        rates.add(Metric::Writes, 0.5);
        let keys = vec![key("n:1", b"\xff", rates)];
        let snapshot = Snapshot::default();
        let parsed: Value = serde_json::from_str(&json(&keys, &snapshot)).unwrap();
        assert_eq!(parsed["keys"][0]["key_base64"], "/w==");
        assert_eq!(parsed["keys"][0]["db"], 2);
        assert_eq!(parsed["keys"][0]["reads_per_second"], 3.0);
        assert_eq!(parsed["keys"][0]["writes_per_second"], 0.5);
        assert!(table(&keys, &snapshot).contains("\\xff"));
    }

    #[test]
    fn misses_show_where_their_node_counts_them_and_nowhere_else() {
        let mut missed = Rates::only(Metric::Reads, 4.0);
        missed.add(Metric::Misses, 4.0);
        let keys = vec![
            key("n:1", b"gone", missed),
            key("n:2", b"elsewhere", Rates::only(Metric::Reads, 1.0)),
        ];
        let mut snapshot = Snapshot::default();
        // No node counts misses: no column, no field.
        assert!(!table(&keys, &snapshot).contains("MISSES/S"));
        let parsed: Value = serde_json::from_str(&json(&keys, &snapshot)).unwrap();
        assert!(parsed["keys"][0].get("misses_per_second").is_none());
        // n:1 counts them, n:2 does not: n:2's figure is unknown, not 0.
        snapshot.optional_counted = vec![("n:1".into(), Metric::Misses)];
        let text = table(&keys, &snapshot);
        let lines: Vec<&str> = text.lines().collect();
        // The error bar after the rates: none given here.
        assert!(lines[0].trim_end().ends_with("MISSES/S       ±"), "{text}");
        assert!(lines[1].trim_end().ends_with(" 4.0       -"), "{text}");
        assert!(lines[2].trim_end().ends_with(" -       -"), "{text}");
        let parsed: Value = serde_json::from_str(&json(&keys, &snapshot)).unwrap();
        assert_eq!(parsed["keys"][0]["misses_per_second"], 4.0);
        assert!(parsed["keys"][1].get("misses_per_second").is_none());
        assert_eq!(parsed["keys"][1]["reads_per_second"], 1.0);
    }

    #[test]
    fn the_node_column_holds_the_whole_address() {
        let long = "cache-node-17.eu-west.example.internal:63791";
        let keys = vec![key(long, b"k", Rates::default())];
        let text = table(&keys, &Snapshot::default());
        assert!(text.contains(long), "{text}");
    }

    #[test]
    fn sparklines_scale_to_the_largest_value() {
        let line = sparkline([0.0, 1.0, 2.0, 4.0].into_iter());
        assert_eq!(line, " ▃▅█");
    }
}
