//! Reply shapes that differ between RESP2 and RESP3.

use redis_module::{raw, Context, ContextFlags, RedisValue};
use std::os::raw::{c_char, c_long};

pub fn is_resp3(ctx: &Context) -> bool {
    ctx.get_flags().contains(ContextFlags::FLAGS_RESP3)
}

/// Rows of `[item, field, ...]`: one flat array on RESP2 (like `ZRANGE ...
/// WITHSCORES`), an array of arrays on RESP3. A row of one element stays a
/// plain element either way.
pub fn rows(ctx: &Context, rows: Vec<Vec<RedisValue>>) -> RedisValue {
    let nested = is_resp3(ctx);
    let mut out = Vec::with_capacity(rows.iter().map(Vec::len).sum());
    for mut row in rows {
        if nested && row.len() > 1 {
            out.push(RedisValue::Array(row));
        } else {
            out.append(&mut row);
        }
    }
    RedisValue::Array(out)
}

pub fn bytes(item: &[u8]) -> RedisValue {
    RedisValue::StringBuffer(item.to_vec())
}

/// An item as RedisBloom answers it (`TOPK.*`): a simple string where one
/// can hold it, else (CR, LF, NUL, not UTF-8) a bulk string.
pub fn redisbloom_item(item: &[u8]) -> RedisValue {
    match std::str::from_utf8(item) {
        Ok(text) if !text.contains(['\r', '\n', '\0']) => RedisValue::SimpleString(text.into()),
        _ => bytes(item),
    }
}

/// An array of items or nulls (what each arrival expelled), written
/// straight to the client: a `RedisValue` per arrival would allocate on the
/// busiest path of all. The handler then returns `RedisValue::NoReply`.
pub fn items_or_nulls(ctx: &Context, items: &[Option<Box<[u8]>>]) {
    raw::reply_with_array(ctx.ctx, items.len() as c_long);
    for item in items {
        match item {
            Some(item) => {
                raw::reply_with_string_buffer(ctx.ctx, item.as_ptr().cast::<c_char>(), item.len())
            }
            None => raw::reply_with_null(ctx.ctx),
        };
    }
}

/// A count as the integer users read. Without fading counts are exact
/// integers; a faded count is a real number, shown to the nearest integer
/// (119.9999999 is 120, not 119).
pub fn count(count: f64) -> RedisValue {
    RedisValue::Integer(count.round() as i64)
}

/// A value of [`ordered_map`].
#[derive(Clone, Copy, Debug)]
pub enum Field {
    Integer(i64),
    Double(f64),
}

/// A map whose fields come in the order given (some clients read them by
/// place): a map on RESP3, an array of pairs on RESP2. Written straight
/// to the client: the handler returns what this returns.
pub fn ordered_map(ctx: &Context, fields: &[(&std::ffi::CStr, Field)]) -> RedisValue {
    let c = ctx.ctx;
    let pairs = fields.len() as std::os::raw::c_long;
    match (
        crate::server_api!(RedisModule_ReplyWithMap),
        crate::server_api!(RedisModule_ReplyWithArray),
    ) {
        // SAFETY: the command's own context; the pairs follow the header.
        (Some(map), _) => unsafe { map(c, pairs) },
        // SAFETY: as above.
        (None, Some(array)) => unsafe { array(c, 2 * pairs) },
        (None, None) => return RedisValue::SimpleStringStatic("OK"),
    };
    for (name, value) in fields {
        redis_module::raw::reply_with_simple_string(c, name.as_ptr());
        match *value {
            Field::Integer(v) => redis_module::raw::reply_with_long_long(c, v),
            Field::Double(v) => redis_module::raw::reply_with_double(c, v),
        };
    }
    RedisValue::NoReply
}
