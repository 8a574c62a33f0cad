//! `HK.RESERVE key k [WIDTH w] [DEPTH d] [DECAY p] [SEED n] [HALFLIFE s | ALPHA a] [CREATED ms]
//! [TIES ITEM | REDISBLOOM]`

use crate::callback;
use crate::data_type::limits::timestamp;
use crate::data_type::{limits, sketch_key};
use crate::host::args::{decimal, err, integer};
use crate::host::command_spec::{Arg, CommandSpec, KeySpec};
use crate::host::options::Options;
use crate::host::{clock, keyspace_event};
use heavykeeper_sketch::{HeavyKeeper, Params, Ties};
use redis_module::key::RedisKeyWritable;
use redis_module::{Context, RedisError, RedisResult, RedisString, RedisValue};

/// What the user asked for; `None` means "use the default".
#[derive(Default)]
struct Request {
    width: Option<u32>,
    depth: Option<u32>,
    decay: Option<f64>,
    seed: Option<u64>,
    half_life_ms: Option<f64>,
    created_ms: Option<i64>,
    ties: Option<Ties>,
}

pub fn reserve(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() < 3 || args.len() % 2 == 0 {
        return Err(RedisError::WrongArity);
    }
    let [_, _, k, options @ ..] = args.as_slice() else {
        return Err(RedisError::WrongArity);
    };
    let k = integer(k, "k", 1, u64::from(Params::MAX_K))? as u32;
    let request = parse_options(options)?;
    let seed = request.seed.unwrap_or_else(rand::random);
    if let Some(created) = request.created_ms {
        limits::check_not_in_future(ctx, "CREATED", created)?;
    }
    let created_ms = request.created_ms.unwrap_or_else(clock::now_ms);
    let params = Params {
        k,
        width: request
            .width
            .unwrap_or_else(|| Params::default_width(k, request.half_life_ms.is_some())),
        depth: request.depth.unwrap_or(Params::DEFAULT_DEPTH),
        decay: request.decay.unwrap_or(Params::DEFAULT_DECAY),
        seed,
        half_life_ms: request.half_life_ms,
        layout: Default::default(),
    };
    let name = sketch_key::name(&args)?;
    let key = ctx.open_key_writable(name);
    create_sketch(
        ctx,
        &key,
        params,
        created_ms,
        request.ties.unwrap_or_default(),
    )?;
    replicate_pinned(ctx, &args, &request, &params, created_ms);
    keyspace_event::key_changed(ctx, c"hk.reserve", name);
    Ok(RedisValue::SimpleStringStatic("OK"))
}

/// Creates an empty sketch of `params` at `key`: the shape is checked, then
/// the size cap, then that the key is free, then that it fits in memory,
/// and only then is anything allocated (without aborting if it cannot be).
pub(crate) fn create_sketch(
    ctx: &Context,
    key: &RedisKeyWritable,
    params: Params,
    created_ms: i64,
    ties: Ties,
) -> Result<(), RedisError> {
    params.validate_shape().map_err(err)?;
    params
        .check_size(limits::max_sketch_bytes(ctx))
        .map_err(|e| limits::refused(err(e)))?;
    sketch_key::create(key, || {
        limits::check_fits_in_memory(ctx, params.fixed_bytes())?;
        HeavyKeeper::try_new_with_ties(params, created_ms, ties).map_err(err)
    })
}

fn parse_options(args: &[RedisString]) -> Result<Request, RedisError> {
    let mut request = Request::default();
    let mut options = Options::new(
        args,
        &[
            "WIDTH",
            "DEPTH",
            "DECAY",
            "SEED",
            "HALFLIFE|ALPHA",
            "CREATED",
            "TIES",
        ],
        "WIDTH, DEPTH, DECAY, SEED, HALFLIFE or ALPHA, CREATED, TIES",
    );
    while let Some(option) = options.next_option()? {
        let value = options.value()?;
        match option {
            "WIDTH" => {
                let max = u64::from(Params::MAX_WIDTH);
                request.width = Some(integer(value, "WIDTH", 1, max)? as u32);
            }
            "DEPTH" => {
                let max = u64::from(Params::MAX_DEPTH);
                request.depth = Some(integer(value, "DEPTH", 1, max)? as u32);
            }
            // Its range is checked with the other parameters, in `Params::validate`.
            "DECAY" => request.decay = Some(decimal(value, "DECAY")?),
            "SEED" => request.seed = Some(integer(value, "SEED", 0, u64::MAX)?),
            "CREATED" => request.created_ms = Some(timestamp(value)?),
            "TIES" => {
                let ties = Ties::from_name(value.as_slice());
                request.ties = Some(ties.ok_or_else(|| err("TIES must be ITEM or REDISBLOOM"))?);
            }
            fading => request.half_life_ms = Some(half_life_ms(fading, value)?),
        }
    }
    Ok(request)
}

/// `HALFLIFE` in seconds, or `ALPHA`, the per-second smoothing factor
/// (`count <- count * (1 - a) + arrivals`, half-life `ln 2 / -ln(1 - a)`).
fn half_life_ms(option: &str, value: &RedisString) -> Result<f64, RedisError> {
    if option == "ALPHA" {
        let a = decimal(value, "ALPHA")?;
        if !(a > 0.0 && a < 1.0) {
            return Err(err("ALPHA must be greater than 0 and less than 1"));
        }
        return Ok(Params::half_life_ms_from_alpha(a));
    }
    let seconds = decimal(value, "HALFLIFE")?;
    if seconds <= 0.0 {
        return Err(err("HALFLIFE must be a positive number of seconds"));
    }
    Ok(seconds * 1000.0)
}

/// Replicates the command with everything it left to this server spelled
/// out: the seed and creation time it drew, and the default shape (a replica
/// or an AOF replayed by a later version with other defaults must build the
/// same sketch).
fn replicate_pinned(
    ctx: &Context,
    args: &[RedisString],
    request: &Request,
    params: &Params,
    created_ms: i64,
) {
    let given = args.get(1..).unwrap_or_default();
    let mut out: Vec<Vec<u8>> = given.iter().map(|a| a.as_slice().to_vec()).collect();
    let mut pin = |given: bool, name: &[u8], value: String| {
        if !given {
            out.push(name.to_vec());
            out.push(value.into_bytes());
        }
    };
    pin(request.seed.is_some(), b"SEED", params.seed.to_string());
    pin(
        request.created_ms.is_some(),
        b"CREATED",
        created_ms.to_string(),
    );
    pin(request.width.is_some(), b"WIDTH", params.width.to_string());
    pin(request.depth.is_some(), b"DEPTH", params.depth.to_string());
    pin(request.decay.is_some(), b"DECAY", params.decay.to_string());
    let refs: Vec<&[u8]> = out.iter().map(Vec::as_slice).collect();
    ctx.replicate("HK.RESERVE", refs.as_slice());
}

pub static SPEC: CommandSpec = CommandSpec {
    name: "hk.reserve",
    callback: callback!(reserve),
    flags: "write deny-oom",
    arity: -3,
    keys: &[KeySpec::one(KeySpec::CREATE, 1)],
    acl: "write slow",
    summary: "Creates an empty top-k sketch.",
    complexity: "O(width * depth + k)",
    since: "1.0.0",
    args: &[
        Arg::key("key", 0),
        Arg::integer("k"),
        Arg::integer("width").token("WIDTH").optional(),
        Arg::integer("depth").token("DEPTH").optional(),
        Arg::double("decay").token("DECAY").optional(),
        Arg::integer("seed").token("SEED").optional(),
        Arg::one_of(
            "fading",
            &[
                Arg::double("seconds").token("HALFLIFE"),
                Arg::double("alpha").token("ALPHA"),
            ],
        )
        .optional(),
        Arg::unix_time("created-ms").token("CREATED").optional(),
        Arg::one_of(
            "ties",
            &[
                Arg::flag("item", "ITEM"),
                Arg::flag("redisbloom", "REDISBLOOM"),
            ],
        )
        .token("TIES")
        .optional(),
    ],
};
