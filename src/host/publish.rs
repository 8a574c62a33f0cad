//! Publishing events: on a channel, as JSON any standard library parses,
//! and only where events are the node's to announce.

use crate::host::module_string;
use base64::Engine;
use redis_module::{raw, Context, ContextFlags, RedisString};
use serde_json::{json, Map, Value};

/// Does this node announce events? A primary, and not while it loads or
/// replays: a replica re-running the primary's commands, or a server
/// replaying its AOF, would announce twice what was announced once.
pub fn announces(ctx: &Context) -> bool {
    let flags = ctx.get_flags();
    flags.contains(ContextFlags::MASTER)
        && !flags.intersects(ContextFlags::REPLICATED | ContextFlags::LOADING)
}

/// Publishes `text` on `channel`: a shard message in a cluster (`shard`),
/// a plain one otherwise.
pub fn publish_message(ctx: &Context, channel: &RedisString, shard: bool, text: &str) {
    let message = module_string::of(ctx, text.as_bytes());
    // SAFETY: live strings and context; both functions exist since Redis 7.0.
    unsafe {
        let publish = if shard {
            raw::RedisModule_PublishMessageShard
        } else {
            raw::RedisModule_PublishMessage
        };
        if let Some(publish) = publish {
            publish(ctx.ctx, channel.inner, message.inner);
        }
    }
}

/// `bytes` under `name`, or under `name_base64` if they are not UTF-8:
/// every event is binary-safe.
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
