//! The tracker's own events: `hot` when a key's rate (reads plus writes)
//! rises to `heavykeeper.track-notify-above` requests per second, `cool`
//! when it falls below 0.8 of that, published on `heavykeeper.track-channel`
//! by the tracker's tick (a primary only, like every event). In a cluster
//! they go to every node's subscribers. Where the server names clients
//! (7.2+, Valkey), a `hot` event names the host that sends the key most
//! (`top_client`) and its share of the key's accesses (`top_client_share`).

use super::{config, with_state};
use crate::host::publish::{count, number, publish_message, put_bytes};
use crate::host::{clock, module_string};
use heavykeeper_tracker::counting::key_tracker::item_of;
use heavykeeper_tracker::{HotKey, KeyTracker, Ranking};
use redis_module::Context;
use serde_json::{json, Map, Value};
use std::collections::HashSet;

/// The share of the line below which a hot key cools.
const COOL_SHARE: f64 = 0.8;

/// A key that turned `hot` or `cool`, and (hot) its top sender's host
/// number and share.
pub type Change = (&'static str, HotKey, Option<(u64, f64)>);

/// A change with its top sender's host named.
type Named = (&'static str, HotKey, Option<(Vec<u8>, f64)>);

pub fn tick(ctx: &Context) {
    let above = config::notify_above();
    if above <= 0.0 {
        return;
    }
    let now = clock::now_ms();
    let events = with_state(|state| {
        let tracking = state.as_mut()?;
        let changes = tracking.announcements(above, now);
        let hosts = tracking.senders().names().0;
        let name = |(number, share): (u64, f64)| (hosts.host(number as u32).to_vec(), share);
        let named = changes
            .into_iter()
            .map(|(kind, key, top)| (kind, key, top.map(name)));
        Some(named.collect::<Vec<Named>>())
    })
    .flatten()
    .unwrap_or_default();
    if events.is_empty() {
        return;
    }
    // A plain message, never a shard one: in a cluster it reaches the
    // channel's subscribers on every node, so one subscriber anywhere hears
    // every node's hot keys (a shard channel lives on one node's slot).
    let channel = module_string::of(ctx, &config::channel());
    for (kind, key, top) in events {
        publish_message(ctx, &channel, false, &json(kind, &key, top, now));
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
                let top = top_sender(tracker, &key, now);
                events.push(("hot", key, top));
            }
        }
        for key in still {
            if key.total().per_second < COOL_SHARE * above {
                self.0.remove(&(key.db, key.key.clone()));
                events.push(("cool", key, None));
            }
        }
        events
    }
}

/// The host that sends `key` most, and its share of the key's accesses.
fn top_sender(tracker: &KeyTracker, key: &HotKey, now: i64) -> Option<(u64, f64)> {
    let item = item_of(key.db, &key.key);
    let senders = tracker.senders(Ranking::Total, &item, true, now)?;
    let all: f64 = senders.parts.iter().map(|p| p.count).sum();
    let top = senders.parts.first().filter(|_| all > 0.0)?;
    Some((top.client, top.count / all))
}

fn json(kind: &str, key: &HotKey, top: Option<(Vec<u8>, f64)>, now: i64) -> String {
    let mut object = Map::new();
    if let Some((host, share)) = top {
        put_bytes(&mut object, "top_client", &host);
        object.insert("top_client_share".into(), number(share));
    }
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
