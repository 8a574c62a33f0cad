//! Per-item reads:
//! - `HK.QUERY key item [item ...]`: 1 if the item is in the top-k now, else 0.
//! - `HK.COUNT key item [item ...]`: each item's estimated current count.
//! - `HK.RATE key item [item ...]`: each item's estimated arrivals per second.

use crate::callback;
use crate::data_type::sketch_key;
use crate::host::argv::ArgV;
use crate::host::clock;
use crate::host::command_spec::{CommandSpec, KeySpec, KEY_AND_ITEMS};
use crate::host::reply;
use heavykeeper_sketch::HeavyKeeper;
use redis_module::{Context, RedisError, RedisResult, RedisValue};

pub fn query(ctx: &Context, args: ArgV) -> RedisResult {
    per_item(ctx, args, false, |sketch, item, now| {
        RedisValue::Integer(i64::from(sketch.contains(item, now)))
    })
}

pub fn count(ctx: &Context, args: ArgV) -> RedisResult {
    per_item(ctx, args, false, |sketch, item, now| {
        reply::count(sketch.count(item, now))
    })
}

pub fn rate(ctx: &Context, args: ArgV) -> RedisResult {
    // A rate without fading is measured since creation: it needs the clock.
    per_item(ctx, args, true, |sketch, item, now| {
        RedisValue::Float(sketch.rate(sketch.count(item, now), now))
    })
}

pub(crate) fn per_item(
    ctx: &Context,
    args: ArgV,
    needs_clock: bool,
    answer: impl Fn(&HeavyKeeper, &[u8], i64) -> RedisValue,
) -> RedisResult {
    if args.len() < 3 {
        return Err(RedisError::WrongArity);
    }
    let key = ctx.open_key(&args.key()?);
    let sketch = sketch_key::read(&key)?;
    // Only fading counts depend on the time they are read at.
    let now = if needs_clock || sketch.fading().is_some() {
        clock::now_ms()
    } else {
        0
    };
    Ok(RedisValue::Array(
        args.each(2, 1)
            .map(|item| answer(sketch, item, now))
            .collect(),
    ))
}

pub static SPECS: [CommandSpec; 3] = [
    CommandSpec {
        name: "hk.query",
        callback: callback!(argv query),
        flags: "readonly fast",
        arity: -3,
        keys: &[KeySpec::one(KeySpec::READ, 1)],
        acl: "read fast",
        summary: "Tells for each item whether it is in the top-k now (1 or 0).",
        complexity: "O(1) per item",
        since: "1.0.0",
        args: KEY_AND_ITEMS,
    },
    CommandSpec {
        name: "hk.count",
        callback: callback!(argv count),
        flags: "readonly fast",
        arity: -3,
        keys: &[KeySpec::one(KeySpec::READ, 1)],
        acl: "read fast",
        summary: "Returns each item's estimated count (a lower bound).",
        complexity: "O(depth) per item",
        since: "1.0.0",
        args: KEY_AND_ITEMS,
    },
    CommandSpec {
        name: "hk.rate",
        callback: callback!(argv rate),
        flags: "readonly fast",
        arity: -3,
        keys: &[KeySpec::one(KeySpec::READ, 1)],
        acl: "read fast",
        summary: "Returns each item's estimated arrivals per second.",
        complexity: "O(depth) per item",
        since: "1.0.0",
        args: KEY_AND_ITEMS,
    },
];
