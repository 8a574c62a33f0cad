//! What the server tells of a client by its id: its database and address
//! (asked once per client by the tracker), and everything `CLIENT LIST`
//! says (when a reply names clients, and when one disconnects, to be
//! remembered).

use heavykeeper_tracker::server::client_names::ClientInfo;
use redis_module::{raw, Context, RedisValue};
use std::ffi::{c_int, CStr};

/// The server's word on client `id`: its database (`None`: no connection,
/// such as a script's client) and its address without the port; `None`
/// if the server cannot say. Costly (a `getpeername` and a `printf`).
pub fn database_and_host(id: u64) -> Option<(Option<u16>, Vec<u8>)> {
    let info_by_id = crate::server_api!(RedisModule_GetClientInfoById)?;
    // SAFETY: a plain C structure; zero is a valid value of each field.
    let mut info: raw::RedisModuleClientInfo = unsafe { std::mem::zeroed() };
    info.version = 1;
    // SAFETY: `info` is a version-1 structure, as the API requires.
    let found = unsafe { info_by_id((&mut info as *mut raw::RedisModuleClientInfo).cast(), id) };
    if found != raw::REDISMODULE_OK as c_int {
        return Some((None, Vec::new()));
    }
    // SAFETY: the server writes a NUL-terminated address into the array
    // (zeroed before, so a NUL is there in any case).
    let addr = unsafe { CStr::from_ptr(info.addr.as_ptr()) };
    Some((Some(info.db), addr.to_bytes().to_vec()))
}

/// Every live client of `ids`, as `CLIENT LIST ID` tells it.
pub fn list(ctx: &Context, ids: &[u64]) -> Vec<(u64, ClientInfo)> {
    if ids.is_empty() {
        return Vec::new();
    }
    let ids: Vec<String> = ids.iter().map(u64::to_string).collect();
    let mut args = vec!["LIST", "ID"];
    args.extend(ids.iter().map(String::as_str));
    let text = match ctx.call("CLIENT", args.as_slice()) {
        Ok(RedisValue::SimpleString(s) | RedisValue::BulkString(s)) => s.into_bytes(),
        Ok(RedisValue::StringBuffer(b) | RedisValue::VerbatimString((_, b))) => b,
        Ok(RedisValue::BulkRedisString(s)) => s.as_slice().to_vec(),
        _ => return Vec::new(),
    };
    (text.split(|&b| b == b'\n'))
        .filter_map(|line| ClientInfo::from_client_list(line.strip_suffix(b"\r").unwrap_or(line)))
        .collect()
}
