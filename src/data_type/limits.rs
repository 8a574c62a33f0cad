//! Client-facing limits, and who they apply to.
//!
//! A limit protects the server from a client. It must never apply to what
//! the primary already accepted (the replication stream) or what the server
//! itself wrote (AOF and RDB loading): a replica or a restart with a lower
//! limit would otherwise drop a key the primary holds, and every later write
//! to it would fail. Those commands are applied verbatim.

use crate::data_type::stats;
use crate::host::args::{err, integer, ArgBytes};
use crate::host::clock;
use crate::host::config::Setting;
use heavykeeper_sketch::HeavyKeeper;
use redis_module::{Context, ContextFlags, RedisError};
use std::sync::atomic::{AtomicI64, Ordering};

/// Largest fixed footprint (buckets plus top-k slots) one `HK.RESERVE` may allocate.
static MAX_SKETCH_BYTES: AtomicI64 = AtomicI64::new(DEFAULT_MAX_SKETCH_BYTES);
pub const DEFAULT_MAX_SKETCH_BYTES: i64 = 64 * 1024 * 1024;
const MIN_MAX_SKETCH_BYTES: i64 = 1024;
const MAX_MAX_SKETCH_BYTES: i64 = 1 << 40;

/// How far ahead of the server clock a client's timestamp may be.
static MAX_FUTURE_MS: AtomicI64 = AtomicI64::new(DEFAULT_MAX_FUTURE_MS);
const DEFAULT_MAX_FUTURE_MS: i64 = 60_000;
const MAX_MAX_FUTURE_MS: i64 = heavykeeper_sketch::MAX_TIMESTAMP_MS;

/// `heavykeeper.max-sketch-bytes` and `heavykeeper.max-future-ms`.
pub static SETTINGS: [Setting; 2] = [
    Setting::Integer {
        name: "max-sketch-bytes",
        variable: &MAX_SKETCH_BYTES,
        default: DEFAULT_MAX_SKETCH_BYTES,
        min: MIN_MAX_SKETCH_BYTES,
        max: MAX_MAX_SKETCH_BYTES,
        memory: true,
        on_change: None,
    },
    Setting::integer(
        "max-future-ms",
        &MAX_FUTURE_MS,
        (DEFAULT_MAX_FUTURE_MS, 0, MAX_MAX_FUTURE_MS),
        None,
    ),
];

/// Does this command come from a client (not the primary, not a load)?
pub fn apply_to(ctx: &Context) -> bool {
    !ctx.get_flags()
        .intersects(ContextFlags::REPLICATED | ContextFlags::LOADING)
}

/// The size cap for a sketch loaded from an RDB payload: none while the
/// server loads (a restart, a replica's sync, `DEBUG RELOAD`: what it wrote
/// itself) or on a replica (what its primary accepted), else the cap a
/// client's `HK.RESERVE` has, so that `RESTORE` of a crafted payload cannot
/// hold a sketch `HK.RESERVE` would refuse (and that `HK.MERGE` would then
/// need far more room for). A `MIGRATE` between primaries restores under the
/// target's cap: nodes of one cluster share it.
pub fn max_restore_bytes() -> u64 {
    let exempt = crate::host::module_context::get().is_none_or(|ctx| {
        let flags = ctx.get_flags();
        flags.contains(ContextFlags::LOADING) || !flags.contains(ContextFlags::MASTER)
    });
    if exempt {
        u64::MAX
    } else {
        MAX_SKETCH_BYTES.load(Ordering::Relaxed).max(0) as u64
    }
}

/// The size cap for a sketch this command creates.
pub fn max_sketch_bytes(ctx: &Context) -> u64 {
    if apply_to(ctx) {
        MAX_SKETCH_BYTES.load(Ordering::Relaxed).max(0) as u64
    } else {
        u64::MAX
    }
}

/// A timestamp in milliseconds since the Unix epoch, up to the latest a
/// sketch takes (the end of the year 9999).
pub fn timestamp(arg: &(impl ArgBytes + ?Sized)) -> Result<i64, RedisError> {
    let max = heavykeeper_sketch::MAX_TIMESTAMP_MS as u64;
    integer(arg, "timestamp (milliseconds since the Unix epoch)", 0, max).map(|t| t as i64)
}

/// Refuses a client's timestamp too far ahead of the server clock: one
/// arrival dated in 2100 would make every real arrival weigh nothing until
/// then.
pub fn check_not_in_future(ctx: &Context, what: &str, time_ms: i64) -> Result<(), RedisError> {
    if !apply_to(ctx) {
        return Ok(());
    }
    let window = MAX_FUTURE_MS.load(Ordering::Relaxed).max(0);
    let ahead = time_ms.saturating_sub(clock::now_ms());
    if ahead > window {
        return Err(refused(err(format!(
            "{what} is {ahead} ms ahead of the server clock; heavykeeper.max-future-ms allows {window}"
        ))));
    }
    Ok(())
}

/// Refuses a new sketch of `bytes` that would take the server past
/// `maxmemory`, or past the machine's memory when there is no `maxmemory`
/// (or it is larger): `deny-oom` only stops commands once memory is already
/// over, one RESERVE can ask for gigabytes, and under the kernel's
/// overcommit an allocation larger than the machine can succeed and then
/// have the server killed while the sketch is filled in.
pub fn check_fits_in_memory(ctx: &Context, bytes: u64) -> Result<(), RedisError> {
    if !apply_to(ctx) {
        return Ok(());
    }
    let info = ctx.server_info("memory");
    let field = |name: &str| -> u64 {
        info.field(name)
            .and_then(|v| v.try_as_str().ok().and_then(|s| s.parse().ok()))
            .unwrap_or(0)
    };
    let used = field("used_memory");
    let limits = [
        (field("maxmemory"), "maxmemory"),
        (field("total_system_memory"), "the machine's memory"),
    ];
    for (limit, what) in limits {
        if limit > 0 && used.saturating_add(bytes) > limit {
            return Err(refused(RedisError::String(format!(
                "OOM a sketch of {bytes} bytes does not fit under {what} ({used} of {limit} bytes in use)"
            ))));
        }
    }
    Ok(())
}

/// Counts a refusal for `INFO heavykeeper` and passes the error on.
pub fn refused(error: RedisError) -> RedisError {
    stats::refused_by_limits();
    error
}

/// A watch's channel and state count toward the sketch's size, so the size
/// cap covers them: a sketch may not grow past it by a watch on `channel`
/// (at its largest: both announced sets full).
pub fn check_watch_fits(
    ctx: &Context,
    sketch: &HeavyKeeper,
    channel: &[u8],
) -> Result<(), RedisError> {
    let cap = max_sketch_bytes(ctx);
    let without_watch = sketch.memory_bytes().saturating_sub(sketch.watch_bytes());
    let bytes = without_watch.saturating_add(sketch.watch_bytes_bound(channel)) as u64;
    if bytes > cap {
        return Err(refused(err(format!(
            "with its watch the sketch could take {bytes} bytes; heavykeeper.max-sketch-bytes allows {cap}"
        ))));
    }
    Ok(())
}
