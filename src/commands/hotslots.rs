//! `HK.HOTSLOTS [READS | WRITES] [COUNT n] [WITHBOUNDS]`: in a cluster, the
//! hash slots of this node that take the most requests now, hottest first,
//! as `slot, reads per second, writes per second` rows (ranked by both
//! together unless one is named), each followed with `WITHBOUNDS` by the
//! 95% bounds of both rates (`reads low, reads high, writes low, writes
//! high`). Every key access counted by the tracker is in its hash slot's
//! load, hot key or not, so the rows add up to the node's load (`INFO`:
//! `tracker_reads_per_second`): what a load-aware rebalance moves. With a
//! `COUNT` under the slots with load the list picks: a slot the other
//! slots' noise could have made is left out (`WITHNOISE`: listed, its row
//! ending with `1`, others with `0`), and each row is bounded as picked.

use crate::callback;
use crate::host::args::{err, integer};
use crate::host::command_spec::{Arg, CommandSpec};
use crate::host::options::Options;
use crate::host::reply;
use crate::tracking;
use heavykeeper_tracker::hash_slot::SLOTS;
use heavykeeper_tracker::{Access, Picked};
use redis_module::{Context, RedisError, RedisResult, RedisString, RedisValue};

const OFF: &str = "key tracking is off: CONFIG SET heavykeeper.track yes";
const NOT_CLUSTER: &str = "HK.HOTSLOTS needs cluster mode: it lists the slots this node serves";

pub fn hotslots(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let query = parse(args.get(1..).unwrap_or_default())?;
    let slots = tracking::hottest_hash_slots(query.by, query.count, query.with_noise)
        .ok_or_else(|| err(OFF))?
        .ok_or_else(|| err(NOT_CLUSTER))?;
    let rows = slots
        .into_iter()
        .map(|Picked { row: slot, noise }| {
            let mut row = vec![
                RedisValue::Integer(i64::from(slot.slot)),
                RedisValue::Float(slot.reads.per_second),
                RedisValue::Float(slot.writes.per_second),
            ];
            if query.with_bounds {
                for tally in [slot.reads, slot.writes] {
                    let bounds = tally.bounds();
                    row.push(RedisValue::Float(bounds.low));
                    row.push(RedisValue::Float(bounds.high));
                }
            }
            if query.with_noise {
                row.push(RedisValue::Integer(i64::from(noise)));
            }
            row
        })
        .collect();
    Ok(reply::rows(ctx, rows))
}

/// What `HK.HOTSLOTS` was asked for.
struct Query {
    by: Option<Access>,
    count: usize,
    with_bounds: bool,
    with_noise: bool,
}

fn parse(args: &[RedisString]) -> Result<Query, RedisError> {
    let mut query = Query {
        by: None,
        count: SLOTS,
        with_bounds: false,
        with_noise: false,
    };
    let mut options = Options::new(
        args,
        &["READS|WRITES", "COUNT", "WITHBOUNDS", "WITHNOISE"],
        "READS or WRITES, COUNT n, WITHBOUNDS, WITHNOISE",
    );
    while let Some(option) = options.next_option()? {
        match option {
            "READS" => query.by = Some(Access::Read),
            "WRITES" => query.by = Some(Access::Write),
            "WITHBOUNDS" => query.with_bounds = true,
            "WITHNOISE" => query.with_noise = true,
            _ => query.count = integer(options.value()?, "COUNT", 1, SLOTS as u64)? as usize,
        }
    }
    Ok(query)
}

pub static SPEC: CommandSpec = CommandSpec {
    name: "hk.hotslots",
    callback: callback!(hotslots),
    flags: "readonly",
    arity: -1,
    keys: &[],
    acl: "read slow",
    summary: "Lists this cluster node's slots by the load they take now (needs heavykeeper.track): what to move in a rebalance.",
    complexity: "O(16384)",
    since: "1.0.0",
    args: &[
        Arg::one_of(
            "access",
            &[Arg::flag("reads", "READS"), Arg::flag("writes", "WRITES")],
        )
        .optional(),
        Arg::integer("n").token("COUNT").optional(),
        Arg::flag("withbounds", "WITHBOUNDS").optional(),
        Arg::flag("withnoise", "WITHNOISE").optional(),
    ],
};
