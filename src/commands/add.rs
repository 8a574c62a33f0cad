//! Counting arrivals:
//! - `HK.ADD key item [item ...]`
//! - `HK.INCRBY key item increment [item increment ...]`
//! - `HK.ADDAT key timestamp-ms item [item ...]`
//! - `HK.INCRBYAT key timestamp-ms item increment [item increment ...]`
//!
//! Every reply is an array with one entry per item: nil, or the item that
//! this arrival expelled from the top-k.

use crate::args::{integer, timestamp};
use crate::{clock, keyspace_event, sketch_key};
use redis_module::{raw, Context, RedisError, RedisResult, RedisString, RedisValue};
use std::os::raw::{c_char, c_long};

/// Largest increment: counts are exact integers up to 2^53.
pub const MAX_INCREMENT: u64 = 1 << 53;

pub fn add(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() < 3 {
        return Err(RedisError::WrongArity);
    }
    count_arrivals(ctx, &args, None, unit_arrivals(&args[2..]), "HK.ADDAT")
}

pub fn incrby(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() < 4 || args.len() % 2 != 0 {
        return Err(RedisError::WrongArity);
    }
    let arrivals = weighted_arrivals(&args[2..])?;
    count_arrivals(ctx, &args, None, arrivals.into_iter(), "HK.INCRBYAT")
}

pub fn add_at(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() < 4 {
        return Err(RedisError::WrongArity);
    }
    let time = timestamp(&args[2])?;
    count_arrivals(
        ctx,
        &args,
        Some(time),
        unit_arrivals(&args[3..]),
        "HK.ADDAT",
    )
}

pub fn incrby_at(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() < 5 || args.len() % 2 == 0 {
        return Err(RedisError::WrongArity);
    }
    let time = timestamp(&args[2])?;
    let arrivals = weighted_arrivals(&args[3..])?;
    count_arrivals(ctx, &args, Some(time), arrivals.into_iter(), "HK.INCRBYAT")
}

fn unit_arrivals(items: &[RedisString]) -> impl ExactSizeIterator<Item = (&[u8], u64)> {
    items.iter().map(|item| (item.as_slice(), 1))
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
///
/// The reply is written as the arrivals are applied rather than collected
/// first: this is the hot path, and every allocation shows.
fn count_arrivals<'a>(
    ctx: &Context,
    args: &[RedisString],
    time: Option<i64>,
    arrivals: impl ExactSizeIterator<Item = (&'a [u8], u64)>,
    timed_command: &str,
) -> RedisResult {
    let name = sketch_key::name(args)?;
    let key = ctx.open_key_writable(name);
    let sketch = sketch_key::write(&key)?;
    let fading = sketch.fading().is_some();
    // Only a fading sketch reads the clock; the others ignore time.
    let now = match time {
        Some(t) => t,
        None if fading => clock::now_ms(),
        None => 0,
    };
    raw::reply_with_array(ctx.ctx, arrivals.len() as c_long);
    for (item, weight) in arrivals {
        match sketch.add(item, weight, now) {
            Some(out) => {
                raw::reply_with_string_buffer(ctx.ctx, out.as_ptr().cast::<c_char>(), out.len())
            }
            None => raw::reply_with_null(ctx.ctx),
        };
    }

    if fading && time.is_none() {
        let stamp = now.to_string();
        let mut out: Vec<&[u8]> = vec![name.as_slice(), stamp.as_bytes()];
        out.extend(args[2..].iter().map(RedisString::as_slice));
        ctx.replicate(timed_command, out.as_slice());
    } else {
        ctx.replicate_verbatim();
    }
    keyspace_event::key_changed(ctx, c"hk.add", name);
    Ok(RedisValue::NoReply)
}
