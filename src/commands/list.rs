//! `HK.LIST key [WITHCOUNT] [WITHRATE]`: the top-k, highest count first.

use crate::args::{err, is_keyword};
use crate::reply;
use crate::{clock, sketch_key};
use redis_module::{Context, RedisError, RedisResult, RedisString, RedisValue};

pub fn list(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() < 2 || args.len() > 4 {
        return Err(RedisError::WrongArity);
    }
    let (mut with_count, mut with_rate) = (false, false);
    for option in &args[2..] {
        if is_keyword(option, "WITHCOUNT") && !with_count {
            with_count = true;
        } else if is_keyword(option, "WITHRATE") && !with_rate {
            with_rate = true;
        } else {
            return Err(err(format!(
                "unknown or repeated option '{}': expected WITHCOUNT and/or WITHRATE",
                String::from_utf8_lossy(option.as_slice())
            )));
        }
    }
    let key = ctx.open_key(sketch_key::name(&args)?);
    let sketch = sketch_key::read(&key)?;
    let now = clock::now_ms();
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
