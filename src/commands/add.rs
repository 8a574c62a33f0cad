//! Counting arrivals:
//! - `HK.ADD key item [item ...]`
//! - `HK.INCRBY key item increment [item increment ...]`
//! - `HK.ADDAT key timestamp-ms item [item ...]`
//! - `HK.INCRBYAT key timestamp-ms item increment [item increment ...]`
//!
//! Every reply is an array with one entry per item: nil, or the item that
//! this arrival expelled from the top-k.

use crate::args::{integer, timestamp};
use crate::reply::bytes;
use crate::{clock, sketch_key};
use redis_module::{Context, NotifyEvent, RedisError, RedisResult, RedisString, RedisValue};

/// Largest increment: counts are exact integers up to 2^53.
pub const MAX_INCREMENT: u64 = 1 << 53;

pub fn add(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() < 3 {
        return Err(RedisError::WrongArity);
    }
    let arrivals = unit_arrivals(&args[2..]);
    count_arrivals(ctx, &args, None, &arrivals, "HK.ADDAT")
}

pub fn incrby(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() < 4 || args.len() % 2 != 0 {
        return Err(RedisError::WrongArity);
    }
    let arrivals = weighted_arrivals(&args[2..])?;
    count_arrivals(ctx, &args, None, &arrivals, "HK.INCRBYAT")
}

pub fn add_at(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() < 4 {
        return Err(RedisError::WrongArity);
    }
    let time = timestamp(&args[2])?;
    let arrivals = unit_arrivals(&args[3..]);
    count_arrivals(ctx, &args, Some(time), &arrivals, "HK.ADDAT")
}

pub fn incrby_at(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() < 5 || args.len() % 2 == 0 {
        return Err(RedisError::WrongArity);
    }
    let time = timestamp(&args[2])?;
    let arrivals = weighted_arrivals(&args[3..])?;
    count_arrivals(ctx, &args, Some(time), &arrivals, "HK.INCRBYAT")
}

fn unit_arrivals(items: &[RedisString]) -> Vec<(&[u8], u64)> {
    items.iter().map(|item| (item.as_slice(), 1)).collect()
}

/// Parses every pair before anything is applied: one bad increment fails the
/// whole command.
fn weighted_arrivals(pairs: &[RedisString]) -> Result<Vec<(&[u8], u64)>, RedisError> {
    pairs
        .chunks(2)
        .map(|pair| match pair {
            [item, increment] => Ok((
                item.as_slice(),
                integer(increment, "increment", 1, MAX_INCREMENT)?,
            )),
            _ => Err(RedisError::WrongArity),
        })
        .collect()
}

/// Applies the arrivals at `time` (the server clock if `None`). A fading
/// sketch replicates the explicit-time form `timed_command`, so replicas and
/// the AOF apply exactly the primary's timestamp.
fn count_arrivals(
    ctx: &Context,
    args: &[RedisString],
    time: Option<i64>,
    arrivals: &[(&[u8], u64)],
    timed_command: &str,
) -> RedisResult {
    let name = sketch_key::name(args)?;
    let key = ctx.open_key_writable(name);
    let sketch = sketch_key::write(&key)?;
    let fading = sketch.fading().is_some();
    let now = time.unwrap_or_else(clock::now_ms);
    let expelled: Vec<RedisValue> = arrivals
        .iter()
        .map(|&(item, weight)| {
            sketch
                .add(item, weight, now)
                .map_or(RedisValue::Null, |out| bytes(&out))
        })
        .collect();

    if fading && time.is_none() {
        let stamp = now.to_string();
        let mut out: Vec<&[u8]> = vec![name.as_slice(), stamp.as_bytes()];
        out.extend(args[2..].iter().map(RedisString::as_slice));
        ctx.replicate(timed_command, out.as_slice());
    } else {
        ctx.replicate_verbatim();
    }
    ctx.notify_keyspace_event(NotifyEvent::MODULE, "hk.add", name);
    Ok(RedisValue::Array(expelled))
}
