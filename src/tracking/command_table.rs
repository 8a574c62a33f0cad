//! The server's command table, read once when tracking starts: `COMMAND`'s
//! reply handed to the tracker crate's [`CommandTable`] as a plain
//! [`Reply`] (the key specs, names and effects are worked out there).

use heavykeeper_tracker::server::command_reply::Reply;
use heavykeeper_tracker::server::command_table::CommandTable;
use redis_module::{Context, RedisValue};

/// Reads `COMMAND` through `ctx`; an empty table if that fails (every key
/// then counts as a write).
pub fn load(ctx: &Context) -> CommandTable {
    match ctx.call("COMMAND", &[] as &[&str]) {
        Ok(RedisValue::Array(commands)) => {
            let commands: Vec<Reply> = commands.iter().map(reply).collect();
            CommandTable::from_reply(&commands)
        }
        _ => CommandTable::default(),
    }
}

/// A reply of the server's as the tracker reads it.
fn reply(value: &RedisValue) -> Reply {
    match value {
        RedisValue::Integer(i) => Reply::Integer(*i),
        RedisValue::SimpleStringStatic(s) => Reply::Bytes(s.as_bytes().to_vec()),
        RedisValue::SimpleString(s) | RedisValue::BulkString(s) => {
            Reply::Bytes(s.as_bytes().to_vec())
        }
        RedisValue::StringBuffer(b) => Reply::Bytes(b.clone()),
        RedisValue::BulkRedisString(s) => Reply::Bytes(s.as_slice().to_vec()),
        RedisValue::Array(items) => Reply::Array(items.iter().map(reply).collect()),
        _ => Reply::Other,
    }
}
