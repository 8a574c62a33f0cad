//! Per-item reads:
//! - `HK.QUERY key item [item ...]`: 1 if the item is in the top-k now, else 0.
//! - `HK.COUNT key item [item ...]`: each item's estimated current count.
//! - `HK.RATE key item [item ...]`: each item's estimated arrivals per second.

use crate::reply;
use crate::{clock, sketch_key};
use heavykeeper_sketch::HeavyKeeper;
use redis_module::{Context, RedisError, RedisResult, RedisString, RedisValue};

pub fn query(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    per_item(ctx, &args, |sketch, item, now| {
        RedisValue::Integer(i64::from(sketch.contains(item, now)))
    })
}

pub fn count(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    per_item(ctx, &args, |sketch, item, now| {
        reply::count(sketch.count(item, now))
    })
}

pub fn rate(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    per_item(ctx, &args, |sketch, item, now| {
        RedisValue::Float(sketch.rate(sketch.count(item, now), now))
    })
}

fn per_item(
    ctx: &Context,
    args: &[RedisString],
    answer: impl Fn(&HeavyKeeper, &[u8], i64) -> RedisValue,
) -> RedisResult {
    if args.len() < 3 {
        return Err(RedisError::WrongArity);
    }
    let key = ctx.open_key(sketch_key::name(args)?);
    let sketch = sketch_key::read(&key)?;
    let now = clock::now_ms();
    Ok(RedisValue::Array(
        args[2..]
            .iter()
            .map(|item| answer(sketch, item.as_slice(), now))
            .collect(),
    ))
}
