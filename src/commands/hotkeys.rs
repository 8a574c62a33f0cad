//! `HK.HOTKEYS [READS | WRITES | MISSES | PREFIXES] [COUNT n] [WITHBOUNDS]`:
//! the server's hottest keys now, hottest first, as `key, db, rate, count`
//! rows (rate in requests per second; reads and writes together unless one
//! is named; `MISSES`: reads of keys that did not exist, with
//! `track-misses yes`, listing only keys that still do not exist;
//! `PREFIXES`: hot tenants, each row's key a `SCAN MATCH` pattern such as
//! `tenant:7:*`, ranked by the reads and writes of every key under it),
//! each followed with `WITHBOUNDS` by its rate's 95% bounds (`low, high`).
//! A row the noise of what the node serves could have made (sampled, the
//! luckiest of many cool keys) is left out, so a list may be shorter than
//! `COUNT`; `WITHNOISE` lists those rows too, each row then ending with `1`
//! if it is such a row, else `0`. `HK.HOTKEYS RESET` forgets every count.
//! `HK.HOTKEYS CLIENTS key ...` says who drives a row: see
//! [`super::clients`].

use crate::callback;
use crate::host::args::{err, integer, is_keyword};
use crate::host::command_spec::{Arg, CommandSpec};
use crate::host::options::Options;
use crate::host::{keyspace, reply};
use crate::tracking;
use heavykeeper_tracker::counting::prefixes::as_pattern;
use heavykeeper_tracker::{Picked, Ranking};
use redis_module::{Context, RedisError, RedisResult, RedisString, RedisValue};

const OFF: &str = "key tracking is off: CONFIG SET heavykeeper.track yes";
const MISSES_OFF: &str = "miss tracking is off: CONFIG SET heavykeeper.track-misses yes";
const PREFIXES_OFF: &str = "prefix tracking is off: CONFIG SET heavykeeper.track-prefix-depths 2";

pub fn hotkeys(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if let [_, mode, rest @ ..] = args.as_slice() {
        if is_keyword(mode, "CLIENTS") {
            return super::clients::of_row(ctx, rest);
        }
    }
    if let [_, only] = args.as_slice() {
        if is_keyword(only, "RESET") {
            let reset = tracking::reset().then_some(RedisValue::SimpleStringStatic("OK"));
            return reset.ok_or_else(|| err(OFF));
        }
    }
    let query = parse(args.get(1..).unwrap_or_default())?;
    // A list that is off says which config turns it on, once tracking is.
    let off = |why| err(if tracking::counting() { why } else { OFF });
    if query.ranking == Ranking::Misses && !tracking::config::misses_on() {
        return Err(off(MISSES_OFF));
    }
    if query.ranking == Ranking::Prefixes && tracking::config::prefix_rule().is_none() {
        return Err(off(PREFIXES_OFF));
    }
    // Misses are listed from more candidates: some may exist by now.
    let candidates = if query.ranking == Ranking::Misses {
        usize::MAX
    } else {
        query.count
    };
    let mut hottest =
        tracking::hottest(query.ranking, candidates, query.with_noise).ok_or_else(|| err(OFF))?;
    if query.ranking == Ranking::Misses {
        // Looked up without touching the key or raising a key-miss event.
        hottest.retain(|hot| !keyspace::exists(ctx, hot.row.db, &hot.row.key));
        hottest.truncate(query.count);
    }
    let rows = hottest
        .into_iter()
        .map(|Picked { row: hot, noise }| {
            let tally = hot.ranked(query.ranking);
            let name = if query.ranking == Ranking::Prefixes {
                as_pattern(&hot.key)
            } else {
                hot.key
            };
            let mut row = vec![
                RedisValue::StringBuffer(name),
                RedisValue::Integer(i64::from(hot.db)),
                RedisValue::Float(tally.per_second),
                reply::count(tally.count),
            ];
            if query.with_bounds {
                let bounds = tally.bounds();
                row.push(RedisValue::Float(bounds.low));
                row.push(RedisValue::Float(bounds.high));
            }
            if query.with_noise {
                row.push(RedisValue::Integer(i64::from(noise)));
            }
            row
        })
        .collect();
    Ok(reply::rows(ctx, rows))
}

/// What `HK.HOTKEYS` was asked for.
struct Query {
    ranking: Ranking,
    count: usize,
    with_bounds: bool,
    with_noise: bool,
}

fn parse(args: &[RedisString]) -> Result<Query, RedisError> {
    let mut query = Query {
        ranking: Ranking::Total,
        count: usize::MAX,
        with_bounds: false,
        with_noise: false,
    };
    let mut options = Options::new(
        args,
        &[
            "READS|WRITES|MISSES|PREFIXES",
            "COUNT",
            "WITHBOUNDS",
            "WITHNOISE",
        ],
        "READS, WRITES, MISSES or PREFIXES, COUNT n, WITHBOUNDS, WITHNOISE, or RESET alone",
    );
    while let Some(option) = options.next_option()? {
        match option {
            "READS" => query.ranking = Ranking::Reads,
            "WRITES" => query.ranking = Ranking::Writes,
            "MISSES" => query.ranking = Ranking::Misses,
            "PREFIXES" => query.ranking = Ranking::Prefixes,
            "WITHBOUNDS" => query.with_bounds = true,
            "WITHNOISE" => query.with_noise = true,
            _ => query.count = integer(options.value()?, "COUNT", 1, 1_000_000)? as usize,
        }
    }
    Ok(query)
}

/// Which list a row is of.
const ACCESS: &[Arg] = &[
    Arg::flag("reads", "READS"),
    Arg::flag("writes", "WRITES"),
    Arg::flag("misses", "MISSES"),
    Arg::flag("prefixes", "PREFIXES"),
];

pub static SPEC: CommandSpec = CommandSpec {
    name: "hk.hotkeys",
    callback: callback!(hotkeys),
    flags: "readonly",
    arity: -1,
    keys: &[],
    // It names keys of every database, whatever the caller's key patterns.
    acl: "read slow dangerous",
    summary:
        "Lists the server's hottest keys now (needs heavykeeper.track), its hottest missing keys (MISSES, needs track-misses) or key prefixes (PREFIXES: hot tenants), leaving out rows its sampling's noise could have made (WITHNOISE: marked); CLIENTS names the clients that drive one row (Redis 7.2+ or Valkey); RESET forgets every count.",
    complexity: "O(track-k)",
    since: "1.0.0",
    args: &[Arg::one_of(
        "mode",
        &[
            Arg::flag("reset", "RESET"),
            Arg::block(
                "clients",
                &[
                    Arg::string("key").token("CLIENTS"),
                    Arg::integer("db").token("DB").optional(),
                    Arg::one_of("access", ACCESS).optional(),
                    Arg::one_of("by", super::clients::BY).token("BY").optional(),
                    Arg::integer("n").token("COUNT").optional(),
                    Arg::flag("withbounds", "WITHBOUNDS").optional(),
                ],
            ),
            Arg::block(
                "listing",
                &[
                    Arg::one_of("access", ACCESS).optional(),
                    Arg::integer("n").token("COUNT").optional(),
                    Arg::flag("withbounds", "WITHBOUNDS").optional(),
                    Arg::flag("withnoise", "WITHNOISE").optional(),
                ],
            ),
        ],
    )
    .optional()],
};
