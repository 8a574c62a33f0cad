//! `HK.MERGE destination source [source ...]`: the destination becomes the
//! merge of the listed sources (as `ZUNIONSTORE` does), created if missing;
//! e.g. shards of one stream counted on different keys or servers.
//!
//! Idempotent: running it twice (a client's retry after a timeout) gives the
//! same destination, because nothing the destination held before counts
//! unless it is itself listed. A source listed twice is refused: it would
//! count its sub-stream twice. Sources must count disjoint sub-streams.

use crate::args::{err, printable};
use crate::data_type::HK_TYPE;
use crate::{keyspace_event, sketch_key};
use heavykeeper_sketch::HeavyKeeper;
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
    let existing = if key.is_empty() {
        if destination_listed {
            // Listed as a source, it must exist like every other source.
            return Err(err("no such key"));
        }
        None
    } else {
        Some(sketch_key::write(&key)?)
    };

    // Every shape is checked before anything changes.
    let template: &HeavyKeeper = match (&existing, others.first()) {
        (Some(d), _) if destination_listed => d,
        (_, Some(first)) => first,
        (Some(d), None) => d,
        (None, None) => return Err(err("no such key")),
    };
    for other in others.iter().copied().chain(existing.as_deref()) {
        template
            .check_mergeable(other)
            .map_err(|e| err(e.to_string()))?;
    }

    match existing {
        Some(d) if destination_listed => fold(d, &others),
        Some(d) => {
            let first = *others.first().ok_or_else(|| err("no such key"))?;
            d.clear_like(first);
            fold(d, &others);
        }
        None => {
            let first = *others.first().ok_or_else(|| err("no such key"))?;
            let mut merged = HeavyKeeper::empty_like(first);
            fold(&mut merged, &others);
            key.set_value(&HK_TYPE, merged)
                .map_err(|e| err(format!("could not store the sketch: {e}")))?;
        }
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

/// Folds every source into `destination`; shapes were checked already.
fn fold(destination: &mut HeavyKeeper, sources: &[&HeavyKeeper]) {
    for source in sources {
        // Cannot fail: the same check passed above.
        let _ = destination.merge(source);
    }
}
