//! `HK.HOTSLOTS [READS | WRITES] [COUNT n]`: in a cluster, the slots of
//! this node that take the most requests now, hottest first, as
//! `slot, reads per second, writes per second` rows (ranked by both
//! together unless one is named). Every key access counted by the tracker
//! is in its slot's load, hot key or not, so the rows add up to the node's
//! load (`INFO`: `tracker_reads_per_second`): what a load-aware rebalance
//! moves.

use crate::callback;
use crate::host::args::{err, integer};
use crate::host::command_spec::{Arg, CommandSpec};
use crate::host::options::Options;
use crate::host::reply;
use crate::tracking;
use heavykeeper_tracker::hash_slot::SLOTS;
use heavykeeper_tracker::Access;
use redis_module::{Context, RedisError, RedisResult, RedisString, RedisValue};

const OFF: &str = "key tracking is off: CONFIG SET heavykeeper.track yes";
const NOT_CLUSTER: &str = "HK.HOTSLOTS needs cluster mode: it lists the slots this node serves";

pub fn hotslots(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let (by, count) = parse(args.get(1..).unwrap_or_default())?;
    let slots = tracking::hottest_slots(by, count)
        .ok_or_else(|| err(OFF))?
        .ok_or_else(|| err(NOT_CLUSTER))?;
    let rows = slots
        .into_iter()
        .map(|slot| {
            vec![
                RedisValue::Integer(i64::from(slot.slot)),
                RedisValue::Float(slot.reads_per_second),
                RedisValue::Float(slot.writes_per_second),
            ]
        })
        .collect();
    Ok(reply::rows(ctx, rows))
}

fn parse(args: &[RedisString]) -> Result<(Option<Access>, usize), RedisError> {
    let (mut by, mut count) = (None, None);
    let mut options = Options::new(args, &["READS|WRITES", "COUNT"], "READS or WRITES, COUNT n");
    while let Some(option) = options.next_option()? {
        match option {
            "READS" => by = Some(Access::Read),
            "WRITES" => by = Some(Access::Write),
            _ => count = Some(integer(options.value()?, "COUNT", 1, SLOTS as u64)? as usize),
        }
    }
    Ok((by, count.unwrap_or(SLOTS)))
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
    ],
};
