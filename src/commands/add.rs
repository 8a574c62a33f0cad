//! Counting arrivals:
//! - `HK.ADD key item [item ...]`
//! - `HK.INCRBY key item increment [item increment ...]`
//! - `HK.ADDAT key timestamp-ms item [item ...]`
//! - `HK.INCRBYAT key timestamp-ms item increment [item increment ...]`
//!
//! Every reply is an array with one entry per item: nil, or the item that
//! this arrival expelled from the top-k.

use crate::callback;
use crate::data_type::limits::timestamp;
use crate::data_type::{limits, sketch_key, stats};
use crate::host::args::{err, integer};
use crate::host::argv::ArgV;
use crate::host::command_spec::{Arg, CommandSpec, KeySpec, KEY_AND_ITEMS, WEIGHTED_ARRIVALS};
use crate::host::{clock, fault, keyspace_event, reply};
use crate::watching;
use heavykeeper_sketch::Params;
use redis_module::{Context, RedisError, RedisResult, RedisString, RedisValue};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Largest increment: counts are exact integers up to 2^53.
pub const MAX_INCREMENT: u64 = 1 << 53;

/// Where a command's arrivals sit among its arguments.
pub(crate) struct Arrivals {
    /// Index of the first item argument.
    first: usize,
    /// Arguments per arrival: 1 (`item`) or 2 (`item increment`).
    stride: usize,
    weights: Weights,
    /// The command as given, and its form with an explicit time: what is
    /// replicated.
    command: &'static str,
    timed_command: &'static str,
    /// The command may be replicated as it came (false for `TOPK.*`, which
    /// replicas may not have: those replicate as `HK.*`).
    verbatim: bool,
    /// Expelled items answered as RedisBloom answers them (`TOPK.*`).
    redisbloom_items: bool,
}

/// The weight of each arrival, parsed before anything is applied.
pub(crate) enum Weights {
    /// `count` arrivals of weight 1 (nothing to allocate on the hot path).
    Unit(usize),
    Each(Vec<u64>),
}

impl Weights {
    fn len(&self) -> usize {
        match self {
            Weights::Unit(count) => *count,
            Weights::Each(weights) => weights.len(),
        }
    }

    /// Total weight of the first `n` arrivals, saturating.
    fn weight_of_first(&self, n: usize) -> u64 {
        match self {
            Weights::Unit(count) => (*count).min(n) as u64,
            Weights::Each(weights) => weights.iter().take(n).fold(0, |a, &w| a.saturating_add(w)),
        }
    }

    fn get(&self, i: usize) -> u64 {
        match self {
            Weights::Unit(_) => 1,
            Weights::Each(weights) => weights.get(i).copied().unwrap_or(0),
        }
    }
}

pub fn add(ctx: &Context, args: ArgV) -> RedisResult {
    if args.len() < 3 {
        return Err(RedisError::WrongArity);
    }
    let arrivals = unit_arrivals(args, 2, "HK.ADD");
    count_arrivals(ctx, args, None, arrivals)
}

pub fn incrby(ctx: &Context, args: ArgV) -> RedisResult {
    if args.len() < 4 || args.len() % 2 != 0 {
        return Err(RedisError::WrongArity);
    }
    let arrivals = weighted_arrivals(args, 2, "HK.INCRBY")?;
    count_arrivals(ctx, args, None, arrivals)
}

pub fn add_at(ctx: &Context, args: ArgV) -> RedisResult {
    if args.len() < 4 {
        return Err(RedisError::WrongArity);
    }
    let time = timestamp(args.bytes(2))?;
    let arrivals = unit_arrivals(args, 3, "HK.ADDAT");
    count_arrivals(ctx, args, Some(time), arrivals)
}

pub fn incrby_at(ctx: &Context, args: ArgV) -> RedisResult {
    if args.len() < 5 || args.len() % 2 == 0 {
        return Err(RedisError::WrongArity);
    }
    let time = timestamp(args.bytes(2))?;
    let arrivals = weighted_arrivals(args, 3, "HK.INCRBYAT")?;
    count_arrivals(ctx, args, Some(time), arrivals)
}

pub(crate) fn unit_arrivals(args: ArgV, first: usize, command: &'static str) -> Arrivals {
    Arrivals {
        first,
        stride: 1,
        weights: Weights::Unit(args.len().saturating_sub(first)),
        command,
        timed_command: "HK.ADDAT",
        verbatim: true,
        redisbloom_items: false,
    }
}

impl Arrivals {
    /// Replicated as `command`, never verbatim.
    pub(crate) fn replicated_as(self, command: &'static str) -> Self {
        Self {
            command,
            verbatim: false,
            ..self
        }
    }

    /// `item weight` pairs from `first` on, with weights parsed already.
    pub(crate) fn weighted(first: usize, weights: Vec<u64>, command: &'static str) -> Self {
        Arrivals {
            first,
            stride: 2,
            weights: Weights::Each(weights),
            command,
            timed_command: "HK.INCRBYAT",
            verbatim: true,
            redisbloom_items: false,
        }
    }

    /// Expelled items answered as RedisBloom answers them.
    pub(crate) fn answered_as_redisbloom(self) -> Self {
        Self {
            redisbloom_items: true,
            ..self
        }
    }
}

/// Parses every increment before anything is applied: one bad increment
/// fails the whole command.
fn weighted_arrivals(
    args: ArgV,
    first: usize,
    command: &'static str,
) -> Result<Arrivals, RedisError> {
    let weights = args
        .each(first + 1, 2)
        .map(|increment| integer(increment, "increment", 1, MAX_INCREMENT))
        .collect::<Result<_, _>>()?;
    Ok(Arrivals::weighted(first, weights, command))
}

/// Applies the arrivals at `time` (the server clock if `None`). A fading
/// sketch replicates the explicit-time form, so replicas and the AOF apply
/// exactly the primary's timestamp.
///
/// The reply is written only once every arrival is applied: if one of them
/// panicked, the client gets one error (not a half-written array) and the
/// replicas get exactly the arrivals that were applied.
pub(crate) fn count_arrivals(
    ctx: &Context,
    args: ArgV,
    time: Option<i64>,
    arrivals: Arrivals,
) -> RedisResult {
    if let Some(t) = time {
        limits::check_not_in_future(ctx, "the timestamp", t)?;
    }
    let name = args.key()?;
    let name = &name;
    check_weights(ctx, name, &arrivals.weights)?;
    let key = ctx.open_key_writable(name);
    let mut sketch = sketch_key::write(&key)?;
    let fading = sketch.fading().is_some();
    // Only a primary's watched sketch announces what its arrivals cause.
    let announcing = sketch.watch().is_some() && watching::announces(ctx);
    // Only a fading or announcing sketch reads the clock; others ignore time.
    let now = match time {
        Some(t) => t,
        None if fading || announcing => clock::now_ms(),
        None => 0,
    };
    let mut events = Vec::new();
    let mut items = args
        .each(arrivals.first, arrivals.stride)
        .take(arrivals.weights.len());
    let mut expelled = Vec::with_capacity(arrivals.weights.len());
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        // One item ahead: its buckets load while this one is counted.
        let mut next = items.next().map(|item| sketch.upcoming(item));
        while let Some(item) = next {
            next = items.next().map(|item| sketch.upcoming(item));
            fault::on_add(item.item());
            let weight = arrivals.weights.get(expelled.len());
            expelled.push(if announcing {
                sketch.add_watched_upcoming(item, weight, now, &mut events)
            } else {
                sketch.add_upcoming(item, weight, now)
            });
        }
    }));
    // A panicking arrival may have changed the sketch before it stopped:
    // replicas replay it too, and deterministically stop at the same point.
    let applied = expelled.len() + usize::from(outcome.is_err());
    stats::counted(arrivals.weights.weight_of_first(applied));
    replicate(ctx, args, &arrivals, applied, fading && time.is_none(), now);
    keyspace_event::key_changed(ctx, c"hk.add", name);
    if outcome.is_err() {
        ctx.log_warning("heavykeeper: an arrival panicked; the arrivals before it were applied");
        return Err(err(format!(
            "internal error in the heavykeeper module after {} of {} arrivals (those were applied)",
            applied - 1,
            arrivals.weights.len()
        )));
    }
    if arrivals.redisbloom_items {
        let items = expelled.iter().map(|out| match out {
            Some(item) => reply::redisbloom_item(item),
            None => RedisValue::Null,
        });
        ctx.reply(Ok(RedisValue::Array(items.collect())));
    } else {
        reply::items_or_nulls(ctx, &expelled);
    }
    if announcing {
        watching::publish(ctx, name, &mut sketch, &events);
        watching::arrived(ctx, name, &sketch);
    }
    Ok(RedisValue::NoReply)
}

/// A sketch whose decay lies between 0.999 and 1 takes bounded weights
/// only: each unit of weight can cost a coin per row. Looked at (read-only:
/// a refused command must not signal the key as modified) only when some
/// increment is that large.
fn check_weights(ctx: &Context, name: &RedisString, weights: &Weights) -> Result<(), RedisError> {
    let Weights::Each(each) = weights else {
        return Ok(());
    };
    let largest = each.iter().copied().max().unwrap_or(0);
    if largest <= Params::CLOSE_DECAY_MAX_WEIGHT {
        return Ok(());
    }
    let key = ctx.open_key(name);
    let Ok(sketch) = sketch_key::read(&key) else {
        return Ok(()); // no sketch there: the writer says so
    };
    let max = sketch.params().max_weight();
    if largest > max {
        return Err(err(format!(
            "increment above {max}: this sketch's DECAY is above 0.999 and below 1, where each unit of an increment can cost a coin per row"
        )));
    }
    Ok(())
}

/// Replicates the first `applied` arrivals: verbatim when that is all of
/// them and the command carries its own time; otherwise rebuilt, with the
/// primary's clock for a fading sketch.
fn replicate(
    ctx: &Context,
    args: ArgV,
    arrivals: &Arrivals,
    applied: usize,
    stamp_clock: bool,
    now: i64,
) {
    let all = applied >= arrivals.weights.len();
    if all && !stamp_clock && arrivals.verbatim {
        ctx.replicate_verbatim();
        return;
    }
    // Arrivals of weight 0 (TOPK.INCRBY allows them) change nothing.
    let counted = |i: &usize| arrivals.weights.get(*i) > 0;
    if !(0..applied).any(|i| counted(&i)) {
        return;
    }
    let end = (arrivals.first + applied * arrivals.stride).min(args.len());
    let stamp = now.to_string();
    let mut out: Vec<&[u8]> = Vec::with_capacity(end);
    out.push(args.bytes(1));
    let command = if stamp_clock {
        out.push(stamp.as_bytes());
        arrivals.timed_command
    } else {
        // The command as given (with its own timestamp, if any), cut short.
        out.extend((2..arrivals.first).map(|i| args.bytes(i)));
        arrivals.command
    };
    for i in (0..applied).filter(counted) {
        let first = arrivals.first + i * arrivals.stride;
        out.extend((first..first + arrivals.stride).map(|a| args.bytes(a)));
    }
    ctx.replicate(command, out.as_slice());
}

const WEIGHTED: &[Arg] = &[Arg::key("key", 0), WEIGHTED_ARRIVALS];
const TIMED_ITEMS: &[Arg] = &[
    Arg::key("key", 0),
    Arg::unix_time("timestamp-ms"),
    Arg::string("item").multiple(),
];
const TIMED_WEIGHTED: &[Arg] = &[
    Arg::key("key", 0),
    Arg::unix_time("timestamp-ms"),
    WEIGHTED_ARRIVALS,
];

pub static SPECS: [CommandSpec; 4] = [
    CommandSpec {
        name: "hk.add",
        callback: callback!(argv add),
        flags: "write deny-oom fast",
        arity: -3,
        keys: &[KeySpec::one(KeySpec::UPDATE, 1)],
        acl: "write fast",
        summary: "Counts one arrival of each item; returns the items they expelled from the top-k.",
        complexity: "O(depth) per item, O(log k) when an item moves in the top-k",
        since: "1.0.0",
        args: KEY_AND_ITEMS,
    },
    CommandSpec {
        name: "hk.incrby",
        callback: callback!(argv incrby),
        flags: "write deny-oom fast",
        arity: -4,
        keys: &[KeySpec::one(KeySpec::UPDATE, 1)],
        acl: "write fast",
        summary: "Counts weighted arrivals; returns the items they expelled from the top-k.",
        complexity: "O(depth) per item, O(log k) when an item moves in the top-k",
        since: "1.0.0",
        args: WEIGHTED,
    },
    CommandSpec {
        name: "hk.addat",
        callback: callback!(argv add_at),
        flags: "write deny-oom fast",
        arity: -4,
        keys: &[KeySpec::one(KeySpec::UPDATE, 1)],
        acl: "write fast",
        summary: "Counts one arrival of each item at a given time (fading sketches).",
        complexity: "O(depth) per item, O(log k) when an item moves in the top-k",
        since: "1.0.0",
        args: TIMED_ITEMS,
    },
    CommandSpec {
        name: "hk.incrbyat",
        callback: callback!(argv incrby_at),
        flags: "write deny-oom fast",
        arity: -5,
        keys: &[KeySpec::one(KeySpec::UPDATE, 1)],
        acl: "write fast",
        summary: "Counts weighted arrivals at a given time (fading sketches).",
        complexity: "O(depth) per item, O(log k) when an item moves in the top-k",
        since: "1.0.0",
        args: TIMED_WEIGHTED,
    },
];
