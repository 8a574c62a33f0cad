//! RedisBloom's `TOPK.*` commands on this data type, for clients that speak
//! them (redis-py's `topk()`, go-redis, Jedis, node-redis). Registered only
//! with `topk-compat yes` at load time. What a RedisBloom client can observe
//! is RedisBloom's, checked by its own TopK flow tests ported to
//! `tests/topk_redisbloom.rs`:
//! - `TOPK.RESERVE key topk [width depth decay]` (defaults 8, 7, 0.9, as
//!   there); the sketch settles ties by RedisBloom's rules (`Ties::RedisBloom`)
//! - `TOPK.ADD key item [item ...]`, `TOPK.INCRBY key item increment [...]`:
//!   the expelled item or nil per arrival; a bad increment is an error in
//!   its place in the array
//! - `TOPK.QUERY`: booleans on RESP3, integers on RESP2; `TOPK.COUNT`: integers
//! - `TOPK.LIST key [WITHCOUNT]`: flat `item, count, ...` on RESP2 and RESP3
//! - `TOPK.INFO key`: exactly `k, width, depth, decay`, decay a double
//!
//! Items are answered as simple strings, as RedisBloom does, unless they
//! could not be one (CR, LF, NUL or not UTF-8): then as bulk strings.
//! Writes replicate as the `HK.*` commands they amount to, so a replica or
//! an AOF without `topk-compat` applies them too.

use super::{add, query, reserve};
use crate::callback;
use crate::data_type::HK_TYPE;
use crate::data_type::{limits, sketch_key};
use crate::host::args::{decimal, integer};
use crate::host::argv::ArgV;
use crate::host::command_spec::{Arg, CommandSpec, KeySpec, KEY_AND_ITEMS};
use crate::host::reply::{self, Field};
use crate::host::{clock, keyspace_event};
use heavykeeper_sketch::{HeavyKeeper, Params, Ties};
use redis_module::{Context, RedisError, RedisResult, RedisString, RedisValue};

/// RedisBloom's defaults when only `topk` is given.
const DEFAULT_WIDTH: u64 = 8;
const DEFAULT_DEPTH: u64 = 7;
const DEFAULT_DECAY: f64 = 0.9;
/// RedisBloom's bound on one increment.
const MAX_INCREMENT: u64 = 100_000;
/// RedisBloom's text, word for word: the run of spaces is a line
/// continuation inside its C string literal, and clients match on it.
const BAD_INCREMENT: &str = "TopK: increment must be an integer greater or equal to 0                            and smaller or equal to 100,000";
/// Ours: in a command with a bad increment nothing is counted (RedisBloom
/// counts the pairs before the bad one), and the good pairs say so.
const NOT_COUNTED: &str = "TopK: not counted: another increment in this command is invalid";
/// RedisBloom's answer when its allocation of a sketch fails, word for word,
/// where an `HK.*` command says `OOM ...`: a `TOPK.*` client matches on
/// RedisBloom's text, so every refusal for size or memory (caps,
/// `max-sketch-bytes`, the `maxmemory` check, a refused allocation) says
/// this. Past `maxmemory` the server refuses first with its own `OOM`, as
/// for RedisBloom, whose `TOPK.RESERVE` is `deny-oom` too (docs/topk.md).
const NO_MEMORY: &str = "ERR Insufficient memory to create topk data structure";

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
    let params = parse_params(&args, limits::max_sketch_bytes(ctx))?;
    let created_ms = clock::now_ms();
    reserve::create_sketch(ctx, &key, params, created_ms, Ties::RedisBloom)
        .map_err(|_| bloom_error(NO_MEMORY))?;
    replicate_reserve(ctx, name, &params, created_ms);
    keyspace_event::key_changed(ctx, c"hk.reserve", name);
    Ok(RedisValue::SimpleStringStatic("OK"))
}

/// RedisBloom's checks in its order (each of k, width and depth a whole
/// number from 1 to 2^32 - 1, then the decay), then what this module can
/// hold: past its caps or `max-sketch-bytes`, RedisBloom's out-of-memory
/// error. More than 16 rows is the one shape RedisBloom takes and this
/// module does not.
fn parse_params(args: &[RedisString], max_bytes: u64) -> Result<Params, RedisError> {
    let whole = |arg: &RedisString, error: &'static str| {
        integer(arg, "", 1, u64::from(u32::MAX)).map_err(|_| bloom_error(error))
    };
    let k = whole(
        args.get(2).ok_or(RedisError::WrongArity)?,
        "TopK: invalid k",
    )?;
    let (width, depth, decay) = match args {
        [_, _, _, width, depth, decay] => (
            whole(width, "TopK: invalid width")?,
            whole(depth, "TopK: invalid depth")?,
            decimal(decay, "decay")
                .ok()
                .filter(|d| *d > 0.0 && *d <= 1.0)
                .ok_or_else(|| bloom_error("TopK: invalid decay value. must be '<= 1' & '> 0'"))?,
        ),
        _ => (DEFAULT_WIDTH, DEFAULT_DEPTH, DEFAULT_DECAY),
    };
    let bytes = u128::from(width) * u128::from(depth) * 8 + u128::from(k) * 32;
    if k > u64::from(Params::MAX_K)
        || width > u64::from(Params::MAX_WIDTH)
        || bytes > u128::from(max_bytes)
    {
        return Err(bloom_error(NO_MEMORY));
    }
    if depth > u64::from(Params::MAX_DEPTH) {
        return Err(bloom_error(
            "TopK: invalid depth: this module keeps at most 16 rows",
        ));
    }
    let params = Params {
        width: width as u32,
        depth: depth as u32,
        decay,
        ..Params::for_k(k as u32, rand::random())
    };
    params
        .check_size(max_bytes)
        .map_err(|_| bloom_error(NO_MEMORY))?;
    Ok(params)
}

/// Replicas build the same sketch from `HK.RESERVE` with the primary's seed,
/// creation time and tie rule.
fn replicate_reserve(ctx: &Context, name: &RedisString, params: &Params, created_ms: i64) {
    // Rust prints the shortest text that parses back to the same double.
    let text = format!(
        "{} WIDTH {} DEPTH {} DECAY {} SEED {} CREATED {created_ms} TIES {}",
        params.k,
        params.width,
        params.depth,
        params.decay,
        params.seed,
        Ties::RedisBloom.name()
    );
    let mut out: Vec<&[u8]> = vec![name.as_slice()];
    out.extend(text.split(' ').map(str::as_bytes));
    ctx.replicate("HK.RESERVE", out.as_slice());
}

pub fn add(ctx: &Context, args: ArgV) -> RedisResult {
    if args.len() < 3 {
        return Err(RedisError::WrongArity);
    }
    check_key(ctx, &args.key()?)?;
    let arrivals = add::unit_arrivals(args, 2, "HK.ADD")
        .replicated_as("HK.ADD")
        .answered_as_redisbloom();
    add::count_arrivals(ctx, args, None, arrivals)
}

pub fn incrby(ctx: &Context, args: ArgV) -> RedisResult {
    if args.len() < 4 || args.len() % 2 != 0 {
        return Err(RedisError::WrongArity);
    }
    check_key(ctx, &args.key()?)?;
    let weights: Vec<Option<u64>> = args
        .each(3, 2)
        .map(|increment| integer(increment, "increment", 0, MAX_INCREMENT).ok())
        .collect();
    if weights.iter().any(Option::is_none) {
        // RedisBloom's shape: the error stands in the array, in the place of
        // the pair it belongs to.
        let error = |w: &Option<u64>| w.map_or(BAD_INCREMENT, |_| NOT_COUNTED);
        let errors = weights.iter().map(|w| RedisValue::StaticError(error(w)));
        return Ok(RedisValue::Array(errors.collect()));
    }
    let weights = weights.into_iter().flatten().collect();
    let arrivals = add::Arrivals::weighted(2, weights, "HK.INCRBY")
        .replicated_as("HK.INCRBY")
        .answered_as_redisbloom();
    add::count_arrivals(ctx, args, None, arrivals)
}

pub fn query(ctx: &Context, args: ArgV) -> RedisResult {
    if args.len() < 3 {
        return Err(RedisError::WrongArity);
    }
    check_key(ctx, &args.key()?)?;
    // Booleans: `#t`/`#f` on RESP3, `:1`/`:0` on RESP2, as RedisBloom's.
    query::per_item(ctx, args, true, |sketch, item, now| {
        RedisValue::Bool(sketch.contains(item, now))
    })
}

pub fn count(ctx: &Context, args: ArgV) -> RedisResult {
    if args.len() < 3 {
        return Err(RedisError::WrongArity);
    }
    check_key(ctx, &args.key()?)?;
    query::count(ctx, args)
}

/// RedisBloom compares the option with `strncasecmp` over the option's own
/// length: any prefix of `WITHCOUNT`, even an empty one, asks for counts.
fn is_withcount(option: &[u8]) -> bool {
    b"WITHCOUNT"
        .get(..option.len())
        .is_some_and(|prefix| prefix.eq_ignore_ascii_case(option))
}

pub fn list(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let with_count = match args.as_slice() {
        [_, _] => false,
        [_, _, option] if is_withcount(option.as_slice()) => true,
        [_, _, _] => return Err(bloom_error("WITHCOUNT keyword expected")),
        _ => return Err(RedisError::WrongArity),
    };
    let name = sketch_key::name(&args)?;
    check_key(ctx, name)?;
    let key = ctx.open_key(name);
    let sketch = sketch_key::read(&key)?;
    let mut out = Vec::new();
    for member in sketch.ranked(clock::now_ms()) {
        out.push(reply::redisbloom_item(member.item));
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
    let fields = [
        (c"k", Field::Integer(i64::from(p.k))),
        (c"width", Field::Integer(i64::from(p.width))),
        (c"depth", Field::Integer(i64::from(p.depth))),
        (c"decay", Field::Double(p.decay)),
    ];
    Ok(reply::ordered_map(ctx, &fields))
}

/// `item increment`, repeated, under RedisBloom's name for the block.
const ITEM_INCREMENT: Arg = Arg::block(
    "item_increment",
    &[Arg::string("item"), Arg::integer("increment")],
)
.multiple();

pub static SPECS: [CommandSpec; 7] = [
    CommandSpec {
        name: "topk.reserve",
        callback: callback!(reserve),
        flags: "write deny-oom",
        arity: -3,
        keys: &[KeySpec::one(KeySpec::CREATE, 1)],
        acl: "write fast",
        summary: "Initializes a Top-K sketch with specified parameters",
        complexity: "O(1)",
        since: "2.0.0",
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
        summary: "Adds an item to a Top-k sketch. Multiple items can be added at the same time. If an item enters the Top-K sketch, the item that is expelled (if any) is returned",
        complexity: "O(n * k) where n is the number of items and k is the depth",
        since: "2.0.0",
        args: KEY_AND_ITEMS,
    },
    CommandSpec {
        name: "topk.incrby",
        callback: callback!(argv incrby),
        flags: "write deny-oom fast",
        arity: -4,
        keys: &[KeySpec::one(KeySpec::UPDATE, 1)],
        acl: "write fast",
        summary: "Increases the count of one or more items by increment",
        complexity: "O(n * k * incr) where n is the number of items, k is the depth and incr is the increment",
        since: "2.0.0",
        args: &[Arg::key("key", 0), ITEM_INCREMENT],
    },
    CommandSpec {
        name: "topk.query",
        callback: callback!(argv query),
        flags: "readonly fast",
        arity: -3,
        keys: &[KeySpec::one(KeySpec::READ, 1)],
        acl: "read fast",
        summary: "Checks whether one or more items are one of the Top-K items",
        complexity: "O(n) where n is the number of items",
        since: "2.0.0",
        args: KEY_AND_ITEMS,
    },
    CommandSpec {
        name: "topk.count",
        callback: callback!(argv count),
        flags: "readonly fast",
        arity: -3,
        keys: &[KeySpec::one(KeySpec::READ, 1)],
        acl: "read fast",
        summary: "Return the count for one or more items are in a sketch",
        complexity: "O(n) where n is the number of items",
        since: "2.0.0",
        args: KEY_AND_ITEMS,
    },
    CommandSpec {
        name: "topk.list",
        callback: callback!(list),
        flags: "readonly",
        arity: -2,
        keys: &[KeySpec::one(KeySpec::READ, 1)],
        acl: "read slow",
        summary: "Return the full list of items in Top-K sketch",
        complexity: "O(k*log(k)) where k is the value of top-k",
        since: "2.0.0",
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
        summary: "Returns number of required items (k), width, depth, and decay values of a given sketch",
        complexity: "O(1)",
        since: "2.0.0",
        args: &[Arg::key("key", 0)],
    },
];
