//! `HK.MERGE destination source [source ...]`: the destination becomes the
//! merge of the listed sources (as `ZUNIONSTORE` does), created if missing;
//! e.g. shards of one stream counted on different keys or servers.
//!
//! Idempotent: running it twice (a client's retry after a timeout) gives the
//! same destination, because nothing the destination held before counts
//! unless it is itself listed. A source listed twice is refused: it would
//! count its sub-stream twice. Sources must count disjoint sub-streams.

use crate::callback;
use crate::data_type::{limits, sketch_key};
use crate::host::args::{err, printable};
use crate::host::command_spec::{Arg, CommandSpec, KeySpec};
use crate::host::keyspace_event;
use crate::watching;
use heavykeeper_sketch::{HeavyKeeper, MergeError, OutOfMemory};
use redis_module::key::RedisKey;
use redis_module::{Context, RedisError, RedisResult, RedisString, RedisValue};

pub fn merge(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let [_, destination, sources @ ..] = args.as_slice() else {
        return Err(RedisError::WrongArity);
    };
    if sources.is_empty() {
        return Err(RedisError::WrongArity);
    }
    refuse_repeated(sources)?;
    let is_destination = |name: &RedisString| name.as_slice() == destination.as_slice();
    let destination_listed = sources.iter().any(is_destination);

    // Sources are read in place, never copied.
    let source_keys: Vec<RedisKey> = sources
        .iter()
        .filter(|name| !is_destination(name))
        .map(|name| ctx.open_key(name))
        .collect();
    let others = source_keys
        .iter()
        .map(sketch_key::read)
        .collect::<Result<Vec<&HeavyKeeper>, _>>()?;
    let key = ctx.open_key_writable(destination);
    let existing = (!key.is_empty())
        .then(|| sketch_key::write(&key))
        .transpose()?;

    // Only an existing destination can be watched (a new one is made empty):
    // it derives what is hot afresh, and the timer must see it.
    let watched = existing.as_ref().is_some_and(|d| d.watch().is_some());
    // Every shape is checked before anything changes, and the result is
    // built beside the destination: a refused allocation leaves it as it
    // was (and unreplicated, as it must be).
    if destination_listed {
        // Listed as a source, the destination must exist like any source;
        // the others are folded into a copy of it.
        let mut destination = existing.ok_or_else(|| err("no such key"))?;
        check_mergeable(&destination, others.iter().copied())?;
        let merged = fold(ctx, &destination, || destination.try_clone(), &others)?;
        *destination = merged;
    } else {
        let first = *others.first().ok_or(RedisError::WrongArity)?;
        check_mergeable(first, others.iter().copied().chain(existing.as_deref()))?;
        match existing {
            Some(mut destination) => {
                let merged = fold(
                    ctx,
                    &destination,
                    || destination.try_cleared_like(first),
                    &others,
                )?;
                *destination = merged;
            }
            None => {
                let merged = fold(ctx, first, || HeavyKeeper::try_empty_like(first), &others)?;
                sketch_key::store(&key, merged)?;
            }
        }
    }
    if watched {
        watching::follow_here(ctx, destination);
    }
    ctx.replicate_verbatim();
    keyspace_event::key_changed(ctx, c"hk.merge", destination);
    Ok(RedisValue::SimpleStringStatic("OK"))
}

fn refuse_repeated(sources: &[RedisString]) -> Result<(), RedisError> {
    for (i, source) in sources.iter().enumerate() {
        let seen = sources.get(..i).unwrap_or_default();
        if seen.iter().any(|s| s.as_slice() == source.as_slice()) {
            return Err(err(format!(
                "source '{}' is listed twice: it would count its sub-stream twice",
                printable(source.as_slice())
            )));
        }
    }
    Ok(())
}

fn check_mergeable<'a>(
    template: &HeavyKeeper,
    mut sketches: impl Iterator<Item = &'a HeavyKeeper>,
) -> Result<(), RedisError> {
    sketches.try_for_each(|sketch| template.check_mergeable(sketch).map_err(err))
}

/// What `start` builds (a sketch shaped as `shape`), every source folded
/// in; shapes were checked already. The size cap and the memory left are
/// checked before it is built: it stands beside the destination until it
/// replaces it. A watched result derives what it announced afresh,
/// silently: a merge is a new state, not a stream of arrivals.
fn fold(
    ctx: &Context,
    shape: &HeavyKeeper,
    start: impl FnOnce() -> Result<HeavyKeeper, OutOfMemory>,
    sources: &[&HeavyKeeper],
) -> Result<HeavyKeeper, RedisError> {
    let params = shape.params();
    params
        .check_size(limits::max_sketch_bytes(ctx))
        .map_err(|e| limits::refused(err(e)))?;
    limits::check_fits_in_memory(ctx, params.fixed_bytes())?;
    let mut merged = start().map_err(|_| no_memory())?;
    for source in sources {
        merged.merge(source).map_err(|e| match e {
            MergeError::OutOfMemory => no_memory(),
            MergeError::Mismatch(why) => err(why),
        })?;
    }
    merged.forget_watch_state();
    Ok(merged)
}

/// The allocator refused: `OOM`, as for a sketch that would not fit.
fn no_memory() -> RedisError {
    limits::refused(RedisError::Str(
        "OOM not enough memory to merge the sketches",
    ))
}

pub static SPEC: CommandSpec = CommandSpec {
    name: "hk.merge",
    callback: callback!(merge),
    flags: "write deny-oom",
    arity: -3,
    keys: &[
        KeySpec::one(KeySpec::OVERWRITE, 1),
        KeySpec::to_end(KeySpec::READ, 2),
    ],
    acl: "write slow",
    summary: "Makes the destination the merge of the source sketches.",
    complexity: "O(sources * (width * depth + k log k))",
    since: "1.0.0",
    args: &[Arg::key("destination", 0), Arg::key("source", 1).multiple()],
};
