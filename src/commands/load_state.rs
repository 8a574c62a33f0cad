//! `HK.LOADSTATE key payload`: rebuilds a sketch from its encoded state.
//! Written by the AOF rewrite; also a way to move a sketch between servers
//! whose module versions differ (the payload carries its encoding version).

use crate::callback;
use crate::data_type::{limits, sketch_key};
use crate::host::args::err;
use crate::host::command_spec::{Arg, CommandSpec, KeySpec};
use crate::host::{channel_permission, keyspace_event};
use crate::watching;
use heavykeeper_sketch::{decode, DecodeError, HeavyKeeper};
use redis_module::{Context, RedisError, RedisResult, RedisString, RedisValue};

pub fn load_state(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() != 3 {
        return Err(RedisError::WrongArity);
    }
    let name = sketch_key::name(&args)?;
    let key = ctx.open_key_writable(name);
    let mut watched = false;
    sketch_key::create(&key, || {
        let payload = args.get(2).map_or(&[][..], RedisString::as_slice);
        let sketch = decode(payload, limits::max_sketch_bytes(ctx)).map_err(|e| match e {
            DecodeError::TooLarge(_) => limits::refused(err(e)),
            _ => err(e),
        })?;
        check_clocks(ctx, &sketch)?;
        if let Some(watch) = sketch.watch() {
            channel_permission::check_publish(ctx, &watch.channel)?;
            limits::check_watch_fits(ctx, &sketch, &watch.channel)?;
        }
        limits::check_fits_in_memory(ctx, sketch.memory_bytes() as u64)?;
        watched = sketch.watch().is_some();
        Ok(sketch)
    })?;
    if watched {
        watching::follow_here(ctx, name);
    }
    ctx.replicate_verbatim();
    keyspace_event::key_changed(ctx, c"hk.loadstate", name);
    Ok(RedisValue::SimpleStringStatic("OK"))
}

/// A client's payload may not carry a clock far ahead of the server's:
/// the same rule as a client's timestamps.
fn check_clocks(ctx: &Context, sketch: &HeavyKeeper) -> Result<(), RedisError> {
    limits::check_not_in_future(ctx, "the payload's creation time", sketch.created_ms())?;
    if let Some(clock) = sketch.clock_ms() {
        limits::check_not_in_future(ctx, "the payload's clock", clock)?;
    }
    Ok(())
}

pub static SPEC: CommandSpec = CommandSpec {
    name: "hk.loadstate",
    callback: callback!(load_state),
    flags: "write deny-oom",
    arity: 3,
    keys: &[KeySpec::one(KeySpec::CREATE, 1)],
    acl: "write slow dangerous",
    summary: "Creates a sketch from a saved state (what the AOF rewrite writes).",
    complexity: "O(size of the payload)",
    since: "1.0.0",
    args: &[Arg::key("key", 0), Arg::string("payload")],
};
