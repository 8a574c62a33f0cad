//! One event as one JSON object, parseable by any standard library and
//! binary-safe: a key or item that is not valid UTF-8 travels as
//! `key_base64` / `item_base64` instead.

use heavykeeper_sketch::WatchEvent;
use serde_json::{json, Map, Value};

pub use crate::host::publish::{count, number, put_bytes};

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
        let parsed: Value = serde_json::from_str(&json(b"limiter", &event)).unwrap();
        assert_eq!(parsed["key"], "limiter");
        assert_eq!(parsed["item_base64"], "/wBpcA==");
        assert!(parsed.get("item").is_none());
        assert_eq!(parsed["event"], "hot");
        assert_eq!(parsed["count"], 120);
        assert_eq!(parsed["time"], 1_700_000_000_000i64);
    }
}
