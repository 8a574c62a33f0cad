//! Watching a sketch:
//! - `HK.WATCH key channel [MEMBERS] [ABOVE threshold [BELOW threshold]]`:
//!   publish `enter`/`leave` (MEMBERS) and `hot`/`cool` (ABOVE: a rate in
//!   requests per second on a fading sketch, a count otherwise; `cool` below
//!   BELOW, by default 0.8 of ABOVE) on `channel`. One watch per sketch: a
//!   second HK.WATCH replaces the first.
//! - `HK.UNWATCH key`: 1 if a watch was removed, else 0.
//!
//! In a cluster the events go out as shard messages (`SSUBSCRIBE`), so the
//! channel must hash to the key's slot: give both the same hash tag.

use crate::callback;
use crate::data_type::{limits, sketch_key};
use crate::host::args::{decimal, err, printable};
use crate::host::command_spec::{Arg, CommandSpec, KeySpec};
use crate::host::options::Options;
use crate::host::{channel_permission, keyspace_event};
use crate::watching;
use heavykeeper_sketch::WatchSpec;
use heavykeeper_tracker::hash_slot;
use redis_module::{Context, ContextFlags, RedisError, RedisResult, RedisString, RedisValue};

pub fn watch(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let [_, name, channel, options @ ..] = args.as_slice() else {
        return Err(RedisError::WrongArity);
    };
    let spec = parse(channel, options)?;
    if ctx.get_flags().contains(ContextFlags::CLUSTER)
        && hash_slot(name.as_slice()) != hash_slot(channel.as_slice())
    {
        return Err(err(format!(
            "channel '{}' hashes to slot {}, the key to slot {}: give both the same hash tag",
            printable(channel.as_slice()),
            hash_slot(channel.as_slice()),
            hash_slot(name.as_slice())
        )));
    }
    channel_permission::check_publish(ctx, &spec.channel)?;
    let key = ctx.open_key_writable(name);
    let mut sketch = sketch_key::write(&key)?;
    limits::check_watch_fits(ctx, &sketch, &spec.channel)?;
    sketch.set_watch(Some(spec));
    watching::follow_here(ctx, name);
    ctx.replicate_verbatim();
    keyspace_event::key_changed(ctx, c"hk.watch", name);
    Ok(RedisValue::SimpleStringStatic("OK"))
}

pub fn unwatch(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let [_, name] = args.as_slice() else {
        return Err(RedisError::WrongArity);
    };
    let key = ctx.open_key_writable(name);
    let mut sketch = sketch_key::write(&key)?;
    let had = sketch.watch().is_some();
    sketch.set_watch(None);
    watching::unfollow(watching::selected_db(ctx), name.as_slice());
    ctx.replicate_verbatim();
    if had {
        keyspace_event::key_changed(ctx, c"hk.unwatch", name);
    }
    Ok(RedisValue::Integer(i64::from(had)))
}

fn parse(channel: &RedisString, options: &[RedisString]) -> Result<WatchSpec, RedisError> {
    let mut spec = WatchSpec {
        channel: channel.as_slice().to_vec(),
        members: false,
        above: None,
        below: None,
    };
    let mut options = Options::new(
        options,
        &["MEMBERS", "ABOVE", "BELOW"],
        "MEMBERS, ABOVE threshold, BELOW threshold",
    );
    while let Some(option) = options.next_option()? {
        match option {
            "MEMBERS" => spec.members = true,
            "ABOVE" => spec.above = Some(decimal(options.value()?, "ABOVE")?),
            _ => spec.below = Some(decimal(options.value()?, "BELOW")?),
        }
    }
    spec.validate().map_err(err)?;
    Ok(spec)
}

pub static SPECS: [CommandSpec; 2] = [
    CommandSpec {
        name: "hk.watch",
        callback: callback!(watch),
        flags: "write",
        arity: -3,
        keys: &[KeySpec::one(KeySpec::CONFIGURE, 1)],
        acl: "write fast pubsub",
        summary: "Publishes on a channel when items enter or leave the top-k or turn hot or cool.",
        complexity: "O(1)",
        since: "1.0.0",
        args: &[
            Arg::key("key", 0),
            Arg::string("channel"),
            Arg::flag("members", "MEMBERS").optional(),
            Arg::block(
                "thresholds",
                &[
                    Arg::double("hot").token("ABOVE"),
                    Arg::double("cool").token("BELOW").optional(),
                ],
            )
            .optional(),
        ],
    },
    CommandSpec {
        name: "hk.unwatch",
        callback: callback!(unwatch),
        flags: "write",
        arity: 2,
        keys: &[KeySpec::one(KeySpec::CONFIGURE, 1)],
        acl: "write fast",
        summary: "Stops a sketch's watch events.",
        complexity: "O(1)",
        since: "1.0.0",
        args: &[Arg::key("key", 0)],
    },
];
