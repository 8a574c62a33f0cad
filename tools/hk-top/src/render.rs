//! A snapshot as a text table (`--once`) or JSON (`--json`).

use crate::hot_keys::{KeyId, Rates, Snapshot};
use base64::Engine;
use serde_json::{json, Value};

/// A key as printable text: UTF-8 as is, other bytes as `\xNN`.
pub fn printable_key(key: &[u8]) -> String {
    match std::str::from_utf8(key) {
        Ok(text) if !text.chars().any(char::is_control) => text.to_string(),
        _ => key
            .iter()
            .map(|&b| {
                if b.is_ascii_graphic() || b == b' ' {
                    char::from(b).to_string()
                } else {
                    format!("\\x{b:02x}")
                }
            })
            .collect(),
    }
}

/// The NODE column is as wide as the longest address: never cut.
pub fn node_width<'a>(nodes: impl Iterator<Item = &'a str>) -> usize {
    nodes.map(str::len).max().unwrap_or(0).max("NODE".len())
}

pub fn table(snapshot: &Snapshot) -> String {
    let width = node_width(snapshot.keys.iter().map(|(id, _)| id.node.as_str()));
    let mut out = format!(
        "{:<40} {:>3}  {:<width$} {:>12} {:>12}\n",
        "KEY", "DB", "NODE", "READS/S", "WRITES/S"
    );
    for (id, rates) in &snapshot.keys {
        out.push_str(&format!(
            "{:<40} {:>3}  {:<width$} {:>12.1} {:>12.1}\n",
            printable_key(&id.key),
            id.db,
            id.node,
            rates.reads_per_second,
            rates.writes_per_second
        ));
    }
    for (node, error) in &snapshot.errors {
        out.push_str(&format!("{node}: {error}\n"));
    }
    out.trim_end().to_string()
}

fn key_json(id: &KeyId, rates: &Rates) -> Value {
    let mut row = json!({
        "db": id.db,
        "node": id.node,
        "reads_per_second": rates.reads_per_second,
        "writes_per_second": rates.writes_per_second,
    });
    match std::str::from_utf8(&id.key) {
        Ok(text) => row["key"] = json!(text),
        Err(_) => {
            row["key_base64"] = json!(base64::engine::general_purpose::STANDARD.encode(&id.key))
        }
    }
    row
}

pub fn json(snapshot: &Snapshot) -> String {
    let keys: Vec<Value> = snapshot
        .keys
        .iter()
        .map(|(id, rates)| key_json(id, rates))
        .collect();
    let errors: Vec<Value> = snapshot
        .errors
        .iter()
        .map(|(node, error)| json!({"node": node, "error": error}))
        .collect();
    json!({"keys": keys, "errors": errors}).to_string()
}

/// The last values as block characters, scaled to the largest.
pub fn sparkline(values: impl Iterator<Item = f64> + Clone) -> String {
    const BLOCKS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let max = values.clone().fold(0.0f64, f64::max);
    values
        .map(|v| {
            if max <= 0.0 || v <= 0.0 {
                ' '
            } else {
                let level = ((v / max) * (BLOCKS.len() - 1) as f64).round() as usize;
                BLOCKS[level.min(BLOCKS.len() - 1)]
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_keys_stay_readable_and_json_stays_exact() {
        assert_eq!(printable_key(b"user:1"), "user:1");
        assert_eq!(printable_key(b"a\xff\x00"), "a\\xff\\x00");
        let snapshot = Snapshot {
            keys: vec![(
                KeyId {
                    node: "n:1".into(),
                    db: 2,
                    key: b"\xff".to_vec(),
                },
                Rates {
                    reads_per_second: 3.0,
                    writes_per_second: 0.5,
                },
            )],
            errors: vec![],
        };
        let parsed: Value = serde_json::from_str(&json(&snapshot)).unwrap();
        assert_eq!(parsed["keys"][0]["key_base64"], "/w==");
        assert_eq!(parsed["keys"][0]["db"], 2);
        assert!(table(&snapshot).contains("\\xff"));
    }

    #[test]
    fn the_node_column_holds_the_whole_address() {
        let long = "cache-node-17.eu-west.example.internal:63791";
        let snapshot = Snapshot {
            keys: vec![(
                KeyId {
                    node: long.into(),
                    db: 0,
                    key: b"k".to_vec(),
                },
                Rates::default(),
            )],
            errors: vec![],
        };
        assert!(table(&snapshot).contains(long), "{}", table(&snapshot));
    }

    #[test]
    fn sparklines_scale_to_the_largest_value() {
        let line = sparkline([0.0, 1.0, 2.0, 4.0].into_iter());
        assert_eq!(line, " ▃▅█");
    }
}
