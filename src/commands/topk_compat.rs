//! RedisBloom's `TOPK.*` commands on this data type, for clients that speak
//! them (redis-py's `topk()`, go-redis, Jedis, node-redis). Registered only
//! with `topk-compat yes` at load time. Replies and the errors clients parse
//! are RedisBloom's:
//! - `TOPK.RESERVE key topk [width depth decay]` (defaults 8, 7, 0.9, as there)
//! - `TOPK.ADD key item [item ...]`, `TOPK.INCRBY key item increment [...]`:
//!   the expelled item or nil per arrival
//! - `TOPK.QUERY`, `TOPK.COUNT key item [item ...]`: integers
//! - `TOPK.LIST key [WITHCOUNT]`: flat `item, count, ...` on RESP2 and RESP3
//! - `TOPK.INFO key`: exactly `k, width, depth, decay`, decay a double
//!
//! Writes replicate as the `HK.*` commands they amount to, so a replica or
//! an AOF without `topk-compat` applies them too.

use super::{add, query, reserve};
use crate::args::{decimal, integer, is_keyword};
use crate::argv::ArgV;
use crate::callback;
use crate::command_spec::{Arg, CommandSpec, KeySpec, KEY_AND_ITEMS, WEIGHTED_ARRIVALS};
use crate::data_type::HK_TYPE;
use crate::{clock, keyspace_event, reply, sketch_key};
use heavykeeper_sketch::{HeavyKeeper, Params};
use redis_module::{raw, Context, RedisError, RedisResult, RedisString, RedisValue};
use std::os::raw::c_long;

/// RedisBloom's defaults when only `topk` is given.
const DEFAULT_WIDTH: u32 = 8;
const DEFAULT_DEPTH: u32 = 7;
const DEFAULT_DECAY: f64 = 0.9;
/// RedisBloom's bound on one increment.
const MAX_INCREMENT: u64 = 100_000;

fn bloom_error(message: &'static str) -> RedisError {
    RedisError::Str(message)
}

/// RedisBloom's errors for a missing key or one of another type.
fn check_key(ctx: &Context, name: &RedisString) -> Result<(), RedisError> {
    let key = ctx.open_key(name);
    if key.is_null() {
        return Err(bloom_error("TopK: key does not exist"));
    }
    match key.get_value::<HeavyKeeper>(&HK_TYPE) {
        Ok(Some(_)) => Ok(()),
        _ => Err(RedisError::WrongType),
    }
}

pub fn reserve(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() != 3 && args.len() != 6 {
        return Err(RedisError::WrongArity);
    }
    let name = sketch_key::name(&args)?;
    let key = ctx.open_key_writable(name);
    if !key.is_empty() {
        return Err(bloom_error("TopK: key already exists"));
    }
    let params = parse_params(&args)?;
    let created_ms = clock::now_ms();
    reserve::create_sketch(ctx, &key, params, created_ms)?;
    replicate_reserve(ctx, name, &params, created_ms);
    keyspace_event::key_changed(ctx, c"hk.reserve", name);
    Ok(RedisValue::SimpleStringStatic("OK"))
}

fn parse_params(args: &[RedisString]) -> Result<Params, RedisError> {
    let k = integer(&args[2], "k", 1, u64::from(Params::MAX_K))
        .map_err(|_| bloom_error("TopK: invalid k"))? as u32;
    let mut params = Params {
        width: DEFAULT_WIDTH,
        depth: DEFAULT_DEPTH,
        decay: DEFAULT_DECAY,
        ..Params::for_k(k, rand::random())
    };
    if let [_, _, _, width, depth, decay] = args {
        params.width = integer(width, "width", 1, u64::from(Params::MAX_WIDTH))
            .map_err(|_| bloom_error("TopK: invalid width"))? as u32;
        params.depth = integer(depth, "depth", 1, u64::from(Params::MAX_DEPTH))
            .map_err(|_| bloom_error("TopK: invalid depth"))? as u32;
        params.decay = decimal(decay, "decay")
            .ok()
            .filter(|d| *d > 0.0 && *d <= 1.0)
            .ok_or_else(|| bloom_error("TopK: invalid decay value. must be '<= 1' & '> 0'"))?;
    }
    Ok(params)
}

/// Replicas build the same sketch from `HK.RESERVE` with the primary's seed
/// and creation time.
fn replicate_reserve(ctx: &Context, name: &RedisString, params: &Params, created_ms: i64) {
    let texts = [
        params.k.to_string(),
        "WIDTH".into(),
        params.width.to_string(),
        "DEPTH".into(),
        params.depth.to_string(),
        "DECAY".into(),
        // Rust prints the shortest text that parses back to the same double.
        params.decay.to_string(),
        "SEED".into(),
        params.seed.to_string(),
        "CREATED".into(),
        created_ms.to_string(),
    ];
    let mut out: Vec<&[u8]> = vec![name.as_slice()];
    out.extend(texts.iter().map(String::as_bytes));
    ctx.replicate("HK.RESERVE", out.as_slice());
}

pub fn add(ctx: &Context, args: ArgV) -> RedisResult {
    if args.len() < 3 {
        return Err(RedisError::WrongArity);
    }
    check_key(ctx, &args.key()?)?;
    let arrivals = add::unit_arrivals(args, 2, "HK.ADD").replicated_as("HK.ADD");
    add::count_arrivals(ctx, args, None, arrivals)
}

pub fn incrby(ctx: &Context, args: ArgV) -> RedisResult {
    if args.len() < 4 || args.len() % 2 != 0 {
        return Err(RedisError::WrongArity);
    }
    check_key(ctx, &args.key()?)?;
    let weights = args
        .each(3, 2)
        .map(|increment| {
            integer(increment, "increment", 0, MAX_INCREMENT).map_err(|_| {
                bloom_error("TopK: increment must be an integer greater or equal to 0 and smaller or equal to 100,000")
            })
        })
        .collect::<Result<Vec<u64>, _>>()?;
    let arrivals = add::Arrivals::weighted(2, weights, "HK.INCRBY").replicated_as("HK.INCRBY");
    add::count_arrivals(ctx, args, None, arrivals)
}

pub fn query(ctx: &Context, args: ArgV) -> RedisResult {
    if args.len() < 3 {
        return Err(RedisError::WrongArity);
    }
    check_key(ctx, &args.key()?)?;
    query::query(ctx, args)
}

pub fn count(ctx: &Context, args: ArgV) -> RedisResult {
    if args.len() < 3 {
        return Err(RedisError::WrongArity);
    }
    check_key(ctx, &args.key()?)?;
    query::count(ctx, args)
}

pub fn list(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let with_count = match args.as_slice() {
        [_, _] => false,
        [_, _, option] if is_keyword(option, "WITHCOUNT") => true,
        [_, _, _] => return Err(bloom_error("WITHCOUNT keyword expected")),
        _ => return Err(RedisError::WrongArity),
    };
    let name = sketch_key::name(&args)?;
    check_key(ctx, name)?;
    let key = ctx.open_key(name);
    let sketch = sketch_key::read(&key)?;
    let mut out = Vec::new();
    for member in sketch.ranked(clock::now_ms()) {
        out.push(reply::bytes(member.item));
        if with_count {
            out.push(reply::count(member.count));
        }
    }
    // Flat on RESP3 too: RedisBloom's clients expect it.
    Ok(RedisValue::Array(out))
}

pub fn info(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() != 2 {
        return Err(RedisError::WrongArity);
    }
    let name = sketch_key::name(&args)?;
    check_key(ctx, name)?;
    let key = ctx.open_key(name);
    let p = *sketch_key::read(&key)?.params();
    // A map on RESP3 (an array of pairs on RESP2), in RedisBloom's order:
    // some clients read exactly these four fields.
    let c = ctx.ctx;
    // SAFETY: the command's own context; four pairs follow the map header.
    unsafe {
        match raw::RedisModule_ReplyWithMap {
            Some(map) => map(c, 4 as c_long),
            None => raw::RedisModule_ReplyWithArray.map_or(0, |array| array(c, 8 as c_long)),
        };
    }
    for (field, value) in [(c"k", p.k), (c"width", p.width), (c"depth", p.depth)] {
        raw::reply_with_simple_string(c, field.as_ptr());
        raw::reply_with_long_long(c, i64::from(value));
    }
    raw::reply_with_simple_string(c, c"decay".as_ptr());
    raw::reply_with_double(c, p.decay);
    Ok(RedisValue::NoReply)
}

pub static SPECS: [CommandSpec; 7] = [
    CommandSpec {
        name: "topk.reserve",
        callback: callback!(reserve),
        flags: "write deny-oom",
        arity: -3,
        keys: &[KeySpec::one(KeySpec::CREATE, 1)],
        acl: "write fast",
        summary: "Creates a top-k sketch (RedisBloom syntax).",
        complexity: "O(width * depth + k)",
        since: "1.0.0",
        args: &[
            Arg::key("key", 0),
            Arg::integer("topk"),
            Arg::block(
                "params",
                &[
                    Arg::integer("width"),
                    Arg::integer("depth"),
                    Arg::double("decay"),
                ],
            )
            .optional(),
        ],
    },
    CommandSpec {
        name: "topk.add",
        callback: callback!(argv add),
        flags: "write deny-oom fast",
        arity: -3,
        keys: &[KeySpec::one(KeySpec::UPDATE, 1)],
        acl: "write fast",
        summary: "Counts one arrival of each item (RedisBloom syntax).",
        complexity: "O(depth) per item",
        since: "1.0.0",
        args: KEY_AND_ITEMS,
    },
    CommandSpec {
        name: "topk.incrby",
        callback: callback!(argv incrby),
        flags: "write deny-oom fast",
        arity: -4,
        keys: &[KeySpec::one(KeySpec::UPDATE, 1)],
        acl: "write fast",
        summary: "Counts weighted arrivals (RedisBloom syntax).",
        complexity: "O(depth) per item",
        since: "1.0.0",
        args: &[Arg::key("key", 0), WEIGHTED_ARRIVALS],
    },
    CommandSpec {
        name: "topk.query",
        callback: callback!(argv query),
        flags: "readonly fast",
        arity: -3,
        keys: &[KeySpec::one(KeySpec::READ, 1)],
        acl: "read fast",
        summary: "Tells for each item whether it is in the top-k (RedisBloom syntax).",
        complexity: "O(1) per item",
        since: "1.0.0",
        args: KEY_AND_ITEMS,
    },
    CommandSpec {
        name: "topk.count",
        callback: callback!(argv count),
        flags: "readonly fast",
        arity: -3,
        keys: &[KeySpec::one(KeySpec::READ, 1)],
        acl: "read fast",
        summary: "Returns each item's estimated count (RedisBloom syntax).",
        complexity: "O(depth) per item",
        since: "1.0.0",
        args: KEY_AND_ITEMS,
    },
    CommandSpec {
        name: "topk.list",
        callback: callback!(list),
        flags: "readonly",
        arity: -2,
        keys: &[KeySpec::one(KeySpec::READ, 1)],
        acl: "read slow",
        summary: "Lists the top-k, highest first (RedisBloom syntax).",
        complexity: "O(k log k)",
        since: "1.0.0",
        args: &[
            Arg::key("key", 0),
            Arg::flag("withcount", "WITHCOUNT").optional(),
        ],
    },
    CommandSpec {
        name: "topk.info",
        callback: callback!(info),
        flags: "readonly fast",
        arity: 2,
        keys: &[KeySpec::one(KeySpec::READ_METADATA, 1)],
        acl: "read fast",
        summary: "Returns k, width, depth and decay (RedisBloom syntax).",
        complexity: "O(1)",
        since: "1.0.0",
        args: &[Arg::key("key", 0)],
    },
];
