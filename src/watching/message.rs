//! One event as one JSON object, parseable by any standard library and
//! binary-safe: a key or item that is not valid UTF-8 travels as
//! `key_base64` / `item_base64` instead.

use base64::Engine;
use heavykeeper_sketch::WatchEvent;
use serde_json::{json, Map, Value};

/// `bytes` under `name`, or under `name_base64` if they are not UTF-8.
pub fn put_bytes(object: &mut Map<String, Value>, name: &str, bytes: &[u8]) {
    match std::str::from_utf8(bytes) {
        Ok(text) => object.insert(name.to_string(), json!(text)),
        Err(_) => object.insert(
            format!("{name}_base64"),
            json!(base64::engine::general_purpose::STANDARD.encode(bytes)),
        ),
    };
}

/// A finite number as JSON (a non-finite one, which never should occur, as 0).
pub fn number(value: f64) -> Value {
    if value.is_finite() {
        json!(value)
    } else {
        json!(0)
    }
}

/// A count as the integer users read (faded counts to the nearest).
pub fn count(value: f64) -> Value {
    if value.is_finite() {
        json!(value.round() as i64)
    } else {
        json!(0)
    }
}

pub fn json(key: &[u8], event: &WatchEvent) -> String {
    let mut object = Map::new();
    put_bytes(&mut object, "key", key);
    put_bytes(&mut object, "item", &event.item);
    object.insert("event".into(), json!(event.kind.name()));
    object.insert("rate".into(), number(event.rate));
    object.insert("count".into(), count(event.count));
    object.insert("time".into(), json!(event.time_ms));
    Value::Object(object).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use heavykeeper_sketch::EventKind;

    #[test]
    fn messages_are_json_and_binary_safe() {
        let event = WatchEvent {
            kind: EventKind::Hot,
            item: b"\xff\x00ip".to_vec(),
            count: 120.4,
            rate: 8.3,
            time_ms: 1_700_000_000_000,
        };
        let parsed: Value = serde_json::from_str(&json(b"limiter", &event)).unwrap(); // panic-ok: unit test
        assert_eq!(parsed["key"], "limiter");
        assert_eq!(parsed["item_base64"], "/wBpcA==");
        assert!(parsed.get("item").is_none());
        assert_eq!(parsed["event"], "hot");
        assert_eq!(parsed["count"], 120);
        assert_eq!(parsed["time"], 1_700_000_000_000i64);
    }
}
