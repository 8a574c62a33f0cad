//! `HK.LOADSTATE key payload`: rebuilds a sketch from its encoded state.
//! Written by the AOF rewrite; also a way to move a sketch between servers
//! whose module versions differ (the payload carries its encoding version).

use crate::args::err;
use crate::{config, keyspace_event, sketch_key};
use heavykeeper_sketch::decode;
use redis_module::{Context, RedisError, RedisResult, RedisString, RedisValue};

pub fn load_state(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() != 3 {
        return Err(RedisError::WrongArity);
    }
    let name = sketch_key::name(&args)?;
    let key = ctx.open_key_writable(name);
    sketch_key::create(&key, || {
        decode(args[2].as_slice(), config::max_sketch_bytes()).map_err(|e| err(e.to_string()))
    })?;
    ctx.replicate_verbatim();
    keyspace_event::key_changed(ctx, c"hk.loadstate", name);
    Ok(RedisValue::SimpleStringStatic("OK"))
}
