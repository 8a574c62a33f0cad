//! `HK.LIST key [WITHCOUNT] [WITHRATE] [AT timestamp-ms]`: the top-k, highest
//! count first. `AT` reads a fading sketch as of a later time (never earlier
//! than its latest arrival), e.g. at the end of a backfilled log.

use crate::args::{err, is_keyword, printable, timestamp};
use crate::reply;
use crate::{clock, sketch_key};
use redis_module::{Context, RedisError, RedisResult, RedisString, RedisValue};

pub fn list(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() < 2 || args.len() > 6 {
        return Err(RedisError::WrongArity);
    }
    let (mut with_count, mut with_rate, mut at) = (false, false, None);
    let mut options = args[2..].iter();
    while let Some(option) = options.next() {
        if is_keyword(option, "WITHCOUNT") && !with_count {
            with_count = true;
        } else if is_keyword(option, "WITHRATE") && !with_rate {
            with_rate = true;
        } else if is_keyword(option, "AT") && at.is_none() {
            at = Some(timestamp(options.next().ok_or(RedisError::WrongArity)?)?);
        } else {
            return Err(err(format!(
                "unknown or repeated option '{}': expected WITHCOUNT, WITHRATE, AT timestamp",
                printable(option.as_slice())
            )));
        }
    }
    let key = ctx.open_key(sketch_key::name(&args)?);
    let sketch = sketch_key::read(&key)?;
    let now = at.unwrap_or_else(clock::now_ms);
    let rows = sketch
        .ranked(now)
        .into_iter()
        .map(|member| {
            let mut row = vec![reply::bytes(member.item)];
            if with_count {
                row.push(reply::count(member.count));
            }
            if with_rate {
                row.push(RedisValue::Float(sketch.rate(member.count, now)));
            }
            row
        })
        .collect();
    Ok(reply::rows(ctx, rows))
}
