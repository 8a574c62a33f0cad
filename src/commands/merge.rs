//! `HK.MERGE destination source [source ...]`: folds sketches of the same
//! shape (WIDTH, DEPTH, SEED, DECAY, HALFLIFE) into an existing destination,
//! e.g. shards of one stream counted on different keys or servers.

use crate::args::err;
use crate::{keyspace_event, sketch_key};
use redis_module::{Context, RedisError, RedisResult, RedisString, RedisValue};

pub fn merge(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() < 3 {
        return Err(RedisError::WrongArity);
    }
    // Sources are copied first: one of them may be the destination itself.
    let mut sources = Vec::with_capacity(args.len() - 2);
    for name in &args[2..] {
        let key = ctx.open_key(name);
        sources.push(sketch_key::read(&key)?.clone());
    }
    let name = sketch_key::name(&args)?;
    let key = ctx.open_key_writable(name);
    let destination = sketch_key::write(&key)?;
    // Merged aside and swapped in: a refused source leaves nothing half-merged.
    let mut merged = destination.clone();
    for source in &sources {
        merged.merge(source).map_err(|e| err(e.to_string()))?;
    }
    *destination = merged;
    ctx.replicate_verbatim();
    keyspace_event::key_changed(ctx, c"hk.merge", name);
    Ok(RedisValue::SimpleStringStatic("OK"))
}
