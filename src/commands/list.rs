//! `HK.LIST key [WITHCOUNT] [WITHRATE] [AT timestamp-ms] [COUNT n]`: the
//! top-k (or its n highest), highest count first. `AT` reads a fading sketch as of a later time (never earlier
//! than its latest arrival), e.g. at the end of a backfilled log.

use crate::callback;
use crate::data_type::limits::timestamp;
use crate::data_type::sketch_key;
use crate::host::args::integer;
use crate::host::clock;
use crate::host::command_spec::{Arg, CommandSpec, KeySpec};
use crate::host::options::Options;
use crate::host::reply;
use redis_module::{Context, RedisError, RedisResult, RedisString, RedisValue};

pub fn list(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() < 2 || args.len() > 8 {
        return Err(RedisError::WrongArity);
    }
    let (mut with_count, mut with_rate, mut at, mut count) = (false, false, None, None);
    let mut options = Options::new(
        args.get(2..).unwrap_or_default(),
        &["WITHCOUNT", "WITHRATE", "AT", "COUNT"],
        "WITHCOUNT, WITHRATE, AT timestamp, COUNT n",
    );
    while let Some(option) = options.next_option()? {
        match option {
            "WITHCOUNT" => with_count = true,
            "WITHRATE" => with_rate = true,
            "AT" => at = Some(timestamp(options.value()?)?),
            _ => count = Some(integer(options.value()?, "COUNT", 1, u64::from(u32::MAX))? as usize),
        }
    }
    let key = ctx.open_key(sketch_key::name(&args)?);
    let sketch = sketch_key::read(&key)?;
    let now = at.unwrap_or_else(clock::now_ms);
    let rows = sketch
        .top(now, count.unwrap_or(usize::MAX))
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

pub static SPEC: CommandSpec = CommandSpec {
    name: "hk.list",
    callback: callback!(list),
    flags: "readonly",
    arity: -2,
    keys: &[KeySpec::one(KeySpec::READ, 1)],
    acl: "read slow",
    summary: "Lists the top-k, highest count first.",
    complexity: "O(k) to find the n highest, O(n log n) to order them",
    since: "1.0.0",
    args: &[
        Arg::key("key", 0),
        Arg::flag("withcount", "WITHCOUNT").optional(),
        Arg::flag("withrate", "WITHRATE").optional(),
        Arg::unix_time("timestamp-ms").token("AT").optional(),
        Arg::integer("n").token("COUNT").optional(),
    ],
};
