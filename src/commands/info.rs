//! `HK.INFO key`: the sketch's parameters and state, as a map (RESP3) or flat
//! name/value pairs (RESP2).

use crate::{clock, sketch_key};
use heavykeeper_sketch::ENCODING_VERSION;
use redis_module::redisvalue::RedisValueKey;
use redis_module::{Context, RedisError, RedisResult, RedisString, RedisValue};
use std::collections::BTreeMap;

pub fn info(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() != 2 {
        return Err(RedisError::WrongArity);
    }
    let key = ctx.open_key(sketch_key::name(&args)?);
    let sketch = sketch_key::read(&key)?;
    let now = clock::now_ms();
    let p = sketch.params();
    let int = |v: i64| RedisValue::Integer(v);
    let text = |v: String| RedisValue::BulkString(v);
    let half_life = sketch.fading().map(|f| f.half_life_ms() / 1000.0);
    let fields: Vec<(&str, RedisValue)> = vec![
        ("k", int(i64::from(p.k))),
        ("width", int(i64::from(p.width))),
        ("depth", int(i64::from(p.depth))),
        ("decay", text(p.decay.to_string())),
        ("seed", text(p.seed.to_string())),
        ("arrivals", text(sketch.arrivals().to_string())),
        ("members", int(sketch.members(now) as i64)),
        ("memory", int(sketch.memory_bytes() as i64)),
        (
            "halflife",
            half_life.map_or(RedisValue::Null, |h| text(h.to_string())),
        ),
        (
            "lambda",
            sketch.fading().map_or(RedisValue::Null, |f| {
                text(f.lambda_per_second().to_string())
            }),
        ),
        ("created", int(sketch.created_ms())),
        ("clock", sketch.clock_ms().map_or(RedisValue::Null, int)),
        ("encoding", int(i64::from(ENCODING_VERSION))),
    ];
    let watch = sketch.watch().cloned();
    let dropped = sketch.watch_events_dropped();
    let float = |v: Option<f64>| v.map_or(RedisValue::Null, |v| text(v.to_string()));
    let fields = fields.into_iter().chain([
        (
            "watch_channel",
            watch.as_ref().map_or(RedisValue::Null, |w| {
                RedisValue::StringBuffer(w.channel.clone())
            }),
        ),
        (
            "watch_members",
            watch
                .as_ref()
                .map_or(RedisValue::Null, |w| int(i64::from(w.members))),
        ),
        ("watch_above", float(watch.as_ref().and_then(|w| w.above))),
        (
            "watch_below",
            float(watch.as_ref().and_then(|w| w.cool_line())),
        ),
        ("watch_events_dropped", int(dropped as i64)),
    ]);
    let map: BTreeMap<RedisValueKey, RedisValue> = fields
        .into_iter()
        .map(|(name, value)| (RedisValueKey::String(name.to_string()), value))
        .collect();
    Ok(RedisValue::OrderedMap(map))
}
