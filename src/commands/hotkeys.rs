//! `HK.HOTKEYS [READS | WRITES] [COUNT n]`: the server's hottest keys now,
//! hottest first, as `key, db, rate, count` rows (rate in requests per
//! second; reads and writes together unless one is named).
//! `HK.HOTKEYS RESET` forgets every count.

use crate::args::{err, integer, is_keyword, printable};
use crate::callback;
use crate::command_spec::{Arg, CommandSpec};
use crate::{clock, reply, tracking};
use heavykeeper_sketch::Access;
use redis_module::{Context, RedisError, RedisResult, RedisString, RedisValue};

const OFF: &str = "key tracking is off: CONFIG SET heavykeeper.track yes";

pub fn hotkeys(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if let [_, only] = args.as_slice() {
        if is_keyword(only, "RESET") {
            return if tracking::reset() {
                Ok(RedisValue::SimpleStringStatic("OK"))
            } else {
                Err(err(OFF))
            };
        }
    }
    let (only, count) = parse(args.get(1..).unwrap_or_default())?;
    let now = clock::now_ms();
    let hottest = tracking::with_state(|state| {
        state
            .as_mut()
            .map(|t| t.current().hottest(only, count, now))
    })
    .flatten()
    .ok_or_else(|| err(OFF))?;
    let rows = hottest
        .into_iter()
        .map(|hot| {
            vec![
                reply::bytes(&hot.key),
                RedisValue::Integer(i64::from(hot.db)),
                RedisValue::Float(match only {
                    Some(Access::Read) => hot.reads_per_second,
                    Some(Access::Write) => hot.writes_per_second,
                    None => hot.rate(),
                }),
                reply::count(hot.count),
            ]
        })
        .collect();
    Ok(reply::rows(ctx, rows))
}

fn parse(options: &[RedisString]) -> Result<(Option<Access>, usize), RedisError> {
    let (mut only, mut count) = (None, None);
    let mut options = options.iter();
    while let Some(option) = options.next() {
        if is_keyword(option, "READS") && only.is_none() {
            only = Some(Access::Read);
        } else if is_keyword(option, "WRITES") && only.is_none() {
            only = Some(Access::Write);
        } else if is_keyword(option, "COUNT") && count.is_none() {
            let n = options.next().ok_or(RedisError::WrongArity)?;
            count = Some(integer(n, "COUNT", 1, 1_000_000)? as usize);
        } else {
            return Err(err(format!(
                "unknown or repeated option '{}': expected READS or WRITES, COUNT n, or RESET alone",
                printable(option.as_slice())
            )));
        }
    }
    Ok((only, count.unwrap_or(usize::MAX)))
}

pub static SPEC: CommandSpec = CommandSpec {
    name: "hk.hotkeys",
    callback: callback!(hotkeys),
    flags: "readonly",
    arity: -1,
    keys: &[],
    // It names keys of every database, whatever the caller's key patterns.
    acl: "read slow dangerous",
    summary:
        "Lists the server's hottest keys now (needs heavykeeper.track), or RESET forgets them.",
    complexity: "O(track-k)",
    since: "1.0.0",
    args: &[Arg::one_of(
        "mode",
        &[
            Arg::flag("reset", "RESET"),
            Arg::block(
                "listing",
                &[
                    Arg::one_of(
                        "access",
                        &[Arg::flag("reads", "READS"), Arg::flag("writes", "WRITES")],
                    )
                    .optional(),
                    Arg::integer("n").token("COUNT").optional(),
                ],
            ),
        ],
    )
    .optional()],
};
