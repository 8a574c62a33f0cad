//! Who drives a hot row, and who sends the most:
//!
//! - `HK.HOTKEYS CLIENTS key [DB n] [READS | WRITES | MISSES | PREFIXES]
//!   [BY HOST | CONNECTION | NAME | LIB | USER] [COUNT n] [WITHBOUNDS]`: the
//!   clients whose commands made the count of a row `HK.HOTKEYS` lists
//!   (`PREFIXES`: `key` is the row's pattern, `tenant:7:*`, or the prefix
//!   itself), hottest first, as `who, rate, count` rows, each followed with
//!   `WITHBOUNDS` by the rate's 95% bounds. `BY HOST` (the default: a
//!   service opens many connections) groups by the address without its
//!   port; `CONNECTION` names each connection (`id=7 10.0.0.5:41234`),
//!   `NAME` its `CLIENT SETNAME`, `LIB` its `CLIENT SETINFO LIB-NAME`, `USER`
//!   its ACL user. A row's clients are counted from when it became one of
//!   the tracker's members; its rates are shares of the row's rate.
//! - `HK.HOTCLIENTS [SLOT slot] [BY ...] [COUNT n] [WITHBOUNDS]`: the node's hottest
//!   clients, by the key accesses they send whatever the keys, so that one
//!   caller spread over many cool keys is found too; with `SLOT`, who
//!   drives one of a cluster node's hottest hash slots (its 32 hottest are
//!   watched, chosen again each second; another slot answers no rows).
//!   (Under `HK.HOTCLIENTS`, not `HK.HOTSLOTS`: it names clients, so it
//!   takes `HK.HOTCLIENTS`'s ACL categories, `@dangerous` among them.)
//!
//! Both need a server whose command filter says which client sent a
//! command: Redis 7.2 or later, or Valkey. A client gone keeps the name it
//! had when it disconnected while its accesses are in a row (the last
//! 4,096 gone; older ones show as `id=N (gone)`).

use crate::callback;
use crate::host::args::{err, integer};
use crate::host::command_spec::{Arg, CommandSpec};
use crate::host::options::Options;
use crate::host::reply;
use crate::tracking::who::{who_drives, Unanswered, WhoRow, Whose};
use heavykeeper_tracker::counting::prefixes::from_pattern;
use heavykeeper_tracker::hash_slot::SLOTS;
use heavykeeper_tracker::server::client_names::GroupBy;
use heavykeeper_tracker::Ranking;
use redis_module::{Context, RedisError, RedisResult, RedisString, RedisValue};

const OFF: &str = "key tracking is off: CONFIG SET heavykeeper.track yes";
const NOT_CLUSTER: &str = "SLOT needs cluster mode: a node outside a cluster serves no hash slots";
const NO_CLIENT_IDS: &str = "naming clients needs Redis 7.2 or later, or Valkey: this server's \
    command filter does not say which client sent a command";

/// `HK.HOTKEYS CLIENTS ...` (`args` from the key on).
pub fn of_row(ctx: &Context, args: &[RedisString]) -> RedisResult {
    let (key, options) = args.split_first().ok_or(RedisError::WrongArity)?;
    let query = parse(options, true)?;
    let key = match query.ranking {
        Ranking::Prefixes => from_pattern(key.as_slice()),
        _ => key.as_slice().to_vec(),
    };
    let asked = Whose::Row {
        ranking: query.ranking,
        db: query.db,
        key,
    };
    answer(ctx, &asked, &query)
}

/// `HK.HOTCLIENTS ...`.
pub fn hotclients(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let query = parse(args.get(1..).unwrap_or_default(), false)?;
    let whose = match query.slot {
        Some(slot) => Whose::HashSlot(slot),
        None => Whose::Node,
    };
    answer(ctx, &whose, &query)
}

fn answer(ctx: &Context, asked: &Whose, query: &Query) -> RedisResult {
    let rows = who_drives(ctx, asked, query.by, query.count).map_err(|e| match e {
        Unanswered::Off => err(OFF),
        Unanswered::NoClientIds => err(NO_CLIENT_IDS),
        Unanswered::NotCluster => err(NOT_CLUSTER),
    })?;
    let rows = rows
        .into_iter()
        .map(|row| reply_row(row, query.with_bounds));
    Ok(reply::rows(ctx, rows.collect()))
}

fn reply_row(row: WhoRow, with_bounds: bool) -> Vec<RedisValue> {
    let mut reply = vec![
        RedisValue::StringBuffer(row.label),
        RedisValue::Float(row.per_second),
        reply::count(row.count),
    ];
    if with_bounds {
        reply.push(RedisValue::Float(row.low));
        reply.push(RedisValue::Float(row.high));
    }
    reply
}

/// What was asked for.
struct Query {
    ranking: Ranking,
    db: u16,
    /// `HK.HOTCLIENTS SLOT n`.
    slot: Option<u16>,
    by: GroupBy,
    count: usize,
    with_bounds: bool,
}

fn parse(args: &[RedisString], of_row: bool) -> Result<Query, RedisError> {
    let mut query = Query {
        ranking: Ranking::Total,
        db: 0,
        slot: None,
        by: GroupBy::Host,
        count: 10,
        with_bounds: false,
    };
    let (names, expected): (&'static [&'static str], _) = if of_row {
        (
            &[
                "DB",
                "READS|WRITES|MISSES|PREFIXES",
                "BY",
                "COUNT",
                "WITHBOUNDS",
            ],
            "DB n, READS, WRITES, MISSES or PREFIXES, BY how, COUNT n, WITHBOUNDS",
        )
    } else {
        (
            &["SLOT", "BY", "COUNT", "WITHBOUNDS"],
            "SLOT n, BY how, COUNT n, WITHBOUNDS",
        )
    };
    let mut options = Options::new(args, names, expected);
    while let Some(option) = options.next_option()? {
        match option {
            "DB" => query.db = integer(options.value()?, "DB", 0, u64::from(u16::MAX))? as u16,
            "READS" => query.ranking = Ranking::Reads,
            "WRITES" => query.ranking = Ranking::Writes,
            "MISSES" => query.ranking = Ranking::Misses,
            "PREFIXES" => query.ranking = Ranking::Prefixes,
            "BY" => query.by = group_by(options.value()?)?,
            "SLOT" => {
                let slot = integer(options.value()?, "SLOT", 0, SLOTS as u64 - 1)?;
                query.slot = Some(slot as u16);
            }
            "WITHBOUNDS" => query.with_bounds = true,
            _ => query.count = integer(options.value()?, "COUNT", 1, 1_000)? as usize,
        }
    }
    Ok(query)
}

fn group_by(arg: &RedisString) -> Result<GroupBy, RedisError> {
    let given = arg.as_slice();
    (GroupBy::NAMES.iter())
        .find(|(name, _)| given.eq_ignore_ascii_case(name.as_bytes()))
        .map(|&(_, by)| by)
        .ok_or_else(|| err("BY takes HOST, CONNECTION, NAME, LIB or USER"))
}

/// The ways to group, for the command docs.
pub const BY: &[Arg] = &[
    Arg::flag("host", "HOST"),
    Arg::flag("connection", "CONNECTION"),
    Arg::flag("name", "NAME"),
    Arg::flag("lib", "LIB"),
    Arg::flag("user", "USER"),
];

pub static SPEC: CommandSpec = CommandSpec {
    name: "hk.hotclients",
    callback: callback!(hotclients),
    flags: "readonly",
    arity: -1,
    keys: &[],
    // It names other clients' addresses and users: as HK.HOTKEYS CLIENTS
    // (dangerous: not for ordinary users).
    acl: "read slow dangerous",
    summary: "Lists the clients that send the most key accesses now (SLOT: to one of a cluster node's hottest hash slots), grouped by host, connection, name, library or user (needs heavykeeper.track, and Redis 7.2+ or Valkey).",
    complexity: "O(clients named)",
    since: "1.1.0",
    args: &[
        Arg::integer("slot").token("SLOT").optional(),
        Arg::one_of("by", BY).token("BY").optional(),
        Arg::integer("n").token("COUNT").optional(),
        Arg::flag("withbounds", "WITHBOUNDS").optional(),
    ],
};
