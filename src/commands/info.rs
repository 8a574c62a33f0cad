//! `HK.INFO key`: the sketch's parameters and state, as a map of numbers
//! (RESP3: integers and doubles) or flat name/value pairs (RESP2, where
//! fractions and 64-bit values are strings, as they always were).

use crate::callback;
use crate::data_type::sketch_key;
use crate::host::command_spec::{Arg, CommandSpec, KeySpec};
use crate::host::{clock, reply};
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
    let resp3 = reply::is_resp3(ctx);
    let int = |v: i64| RedisValue::Integer(v);
    let real = |v: f64| {
        if resp3 {
            RedisValue::Float(v)
        } else {
            RedisValue::BulkString(v.to_string())
        }
    };
    let unsigned = |v: u64| match i64::try_from(v) {
        Ok(v) if resp3 => RedisValue::Integer(v),
        _ if resp3 => RedisValue::BigNumber(v.to_string()),
        _ => RedisValue::BulkString(v.to_string()),
    };
    let fading = sketch.fading();
    let watch = sketch.watch();
    let float = |v: Option<f64>| v.map_or(RedisValue::Null, real);
    let fields: Vec<(&str, RedisValue)> = vec![
        ("k", int(i64::from(p.k))),
        ("width", int(i64::from(p.width))),
        ("depth", int(i64::from(p.depth))),
        ("decay", real(p.decay)),
        ("seed", unsigned(p.seed)),
        ("arrivals", unsigned(sketch.arrivals())),
        ("members", int(sketch.members(now) as i64)),
        ("memory", int(sketch.memory_bytes() as i64)),
        ("halflife", float(fading.map(|f| f.half_life_ms() / 1000.0))),
        ("lambda", float(fading.map(|f| f.lambda_per_second()))),
        ("created", int(sketch.created_ms())),
        ("clock", sketch.clock_ms().map_or(RedisValue::Null, int)),
        ("encoding", int(i64::from(ENCODING_VERSION))),
        ("ties", RedisValue::SimpleStringStatic(sketch.ties().name())),
        (
            "watch_channel",
            watch.map_or(RedisValue::Null, |w| {
                RedisValue::StringBuffer(w.channel.clone())
            }),
        ),
        (
            "watch_members",
            watch.map_or(RedisValue::Null, |w| int(i64::from(w.members))),
        ),
        ("watch_above", float(watch.and_then(|w| w.above))),
        ("watch_below", float(watch.and_then(|w| w.cool_line()))),
        (
            "watch_events_dropped",
            int(sketch.watch_events_dropped() as i64),
        ),
    ];
    let map: BTreeMap<RedisValueKey, RedisValue> = fields
        .into_iter()
        .map(|(name, value)| (RedisValueKey::String(name.to_string()), value))
        .collect();
    Ok(RedisValue::OrderedMap(map))
}

pub static SPEC: CommandSpec = CommandSpec {
    name: "hk.info",
    callback: callback!(info),
    flags: "readonly fast",
    arity: 2,
    keys: &[KeySpec::one(KeySpec::READ_METADATA, 1)],
    acl: "read fast",
    summary: "Returns a sketch's parameters and state.",
    complexity: "O(k)",
    since: "1.0.0",
    args: &[Arg::key("key", 0)],
};
