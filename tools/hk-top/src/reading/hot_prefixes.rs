//! A node's hottest key prefixes (`HK.HOTKEYS PREFIXES`): the tenants. A
//! tenant spread over thousands of keys, none of them hot, can take a third
//! of a node's load and never be listed among its keys; its prefix is.
//! Each row's key is a `SCAN MATCH` pattern (`tenant:7:*`), its rate the
//! reads and writes of every key under it.

use crate::reading::hot_keys::{is_without_bounds, list, parse_rows, Row};
use redis::RedisResult;

/// The node's `count` hottest prefixes, with their bounds where the module
/// gives them; `None` where the node does not count prefixes
/// (`track-prefix-depths 0`): nothing to show, not a failure.
pub fn node_hot_prefixes(
    con: &mut redis::Connection,
    count: usize,
) -> RedisResult<Option<Vec<Row>>> {
    let answer = match list(con, "PREFIXES", Some(count), true) {
        Ok(flat) => parse_rows(&flat, true),
        // A module from before WITHBOUNDS: the rates alone.
        Err(e) if is_without_bounds(&e) => {
            parse_rows(&list(con, "PREFIXES", Some(count), false)?, false)
        }
        Err(e) => Err(e),
    };
    match answer {
        Ok(rows) => Ok(Some(rows)),
        Err(e) if is_off(&e) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Is `e` the node saying it counts no prefixes (or, from a module older
/// than prefixes, that it knows no such kind)?
fn is_off(e: &redis::RedisError) -> bool {
    let detail = e.detail().unwrap_or_default();
    detail.starts_with("prefix tracking is off")
        || detail.contains("'PREFIXES'")
        || detail.contains("'prefixes'")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn off_is_told_apart_from_a_failure() {
        let off = redis::RedisError::from((
            redis::ErrorKind::ResponseError,
            "An error was signalled by the server",
            "prefix tracking is off: CONFIG SET heavykeeper.track-prefix-depths 2".to_string(),
        ));
        assert!(is_off(&off));
        let other = redis::RedisError::from((
            redis::ErrorKind::ResponseError,
            "An error was signalled by the server",
            "key tracking is off: CONFIG SET heavykeeper.track yes".to_string(),
        ));
        assert!(!is_off(&other));
    }
}
