//! The tracker's own events: `hot` when a key's rate (reads plus writes)
//! rises to `heavykeeper.track-notify-above` requests per second, `cool`
//! when it falls below 0.8 of that, published on `heavykeeper.track-channel`
//! by the tracker's tick (a primary only, like every event). In a cluster
//! they go to every node's subscribers.

use super::{config, with_state};
use crate::host::publish::{count, number, publish_message, put_bytes};
use crate::host::{clock, module_string};
use heavykeeper_tracker::{HotKey, KeyTracker, Ranking};
use redis_module::Context;
use serde_json::{json, Map, Value};
use std::collections::HashSet;

/// The share of the line below which a hot key cools.
const COOL_SHARE: f64 = 0.8;

/// A key that turned `hot` or `cool`.
pub type Change = (&'static str, HotKey);

pub fn tick(ctx: &Context) {
    let above = config::notify_above();
    if above <= 0.0 {
        return;
    }
    let now = clock::now_ms();
    let events = with_state(|state| state.as_mut().map(|t| t.announcements(above, now)))
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

/// Keys announced `hot` and not yet `cool`.
#[derive(Default)]
pub struct Announced(HashSet<(u16, Vec<u8>)>);

impl Announced {
    /// Keys of `tracker` that turned hot (a rate of `above`) or cool since
    /// the last look.
    pub fn changes(&mut self, tracker: &KeyTracker, above: f64, now: i64) -> Vec<Change> {
        let still: Vec<HotKey> = (self.0.iter())
            .map(|(db, key)| tracker.key(*db, key, now))
            .collect();
        let hot = (tracker.hottest(Ranking::Total, usize::MAX, now).into_iter())
            .take_while(|key| key.total().per_second >= above);
        let mut events = Vec::new();
        for key in hot {
            if self.0.insert((key.db, key.key.clone())) {
                events.push(("hot", key));
            }
        }
        for key in still {
            if key.total().per_second < COOL_SHARE * above {
                self.0.remove(&(key.db, key.key.clone()));
                events.push(("cool", key));
            }
        }
        events
    }
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
