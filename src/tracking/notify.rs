//! The tracker's own events: `hot` when a key's rate (reads plus writes)
//! rises to `heavykeeper.track-notify-above` requests per second, `cool`
//! when it falls below 0.8 of that, published on `heavykeeper.track-channel`
//! by the tracker's tick (a primary only, like every event). In a cluster
//! they go to every node's subscribers.

use super::{config, with_state, Tracking};
use crate::host::publish::{count, number, publish_message, put_bytes};
use crate::host::{clock, module_string};
use heavykeeper_tracker::{HotKey, Ranking};
use redis_module::Context;
use serde_json::{json, Map, Value};

/// The share of the line below which a hot key cools.
const COOL_SHARE: f64 = 0.8;

pub fn tick(ctx: &Context) {
    let above = config::notify_above();
    if above <= 0.0 {
        return;
    }
    let now = clock::now_ms();
    let events = with_state(|state| state.as_mut().map(|t| changes(t, above, now)))
        .flatten()
        .unwrap_or_default();
    if events.is_empty() {
        return;
    }
    // A plain message, never a shard one: in a cluster it reaches the
    // channel's subscribers on every node, so one subscriber anywhere hears
    // every node's hot keys (a shard channel lives on one node's slot).
    let channel = module_string::of(ctx, &config::channel());
    for (kind, key) in events {
        publish_message(ctx, &channel, false, &json(kind, &key, now));
    }
}

/// Keys that turned hot or cool since the last tick (the sketches as the
/// worker has counted them; a tick when the worker holds them is skipped).
fn changes(t: &mut Tracking, above: f64, now: i64) -> Vec<(&'static str, HotKey)> {
    let announced: Vec<(u16, Vec<u8>)> = t.notified().iter().cloned().collect();
    let (hot, still) = {
        let Some(counting) = t.worker().try_counting() else {
            return Vec::new();
        };
        let tracker = counting.tracker();
        let hot: Vec<HotKey> = tracker
            .hottest(Ranking::Total, usize::MAX, now)
            .into_iter()
            .take_while(|key| key.total().per_second >= above)
            .collect();
        let still: Vec<HotKey> = announced
            .iter()
            .map(|(db, key)| tracker.key(*db, key, now))
            .collect();
        (hot, still)
    };
    let mut events = Vec::new();
    for key in hot {
        if t.notified().insert((key.db, key.key.clone())) {
            events.push(("hot", key));
        }
    }
    for key in still {
        if key.total().per_second < COOL_SHARE * above {
            t.notified().remove(&(key.db, key.key.clone()));
            events.push(("cool", key));
        }
    }
    events
}

fn json(kind: &str, key: &HotKey, now: i64) -> String {
    let mut object = Map::new();
    put_bytes(&mut object, "key", &key.key);
    object.insert("db".into(), json!(key.db));
    object.insert("event".into(), json!(kind));
    object.insert("rate".into(), number(key.total().per_second));
    object.insert("reads_per_second".into(), number(key.reads.per_second));
    object.insert("writes_per_second".into(), number(key.writes.per_second));
    object.insert("count".into(), count(key.total().count));
    object.insert("time".into(), json!(now));
    Value::Object(object).to_string()
}
