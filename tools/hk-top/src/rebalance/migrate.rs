//! The standard migration of one slot, as `redis-cli --cluster reshard`
//! does it: the target `IMPORTING`, the source `MIGRATING`, the keys moved
//! in batches (`GETKEYSINSLOT` + `MIGRATE ... KEYS`), then the slot given
//! to the target on the target, the source and every other primary. While
//! it runs, clients of a key already moved are sent on with `ASK`; once
//! done, with `MOVED`. Every step can be run again: a slot left half-way
//! (an interrupted run) is finished by running them all again; rolling it
//! back is finishing it, then moving the slot back the same way.

use super::error::Error;
use super::link::Link;
use crate::connection::settings::host_and_port;
use redis::{Cmd, ErrorKind, Value};

/// A primary as the migration addresses it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    pub id: String,
    pub address: String,
}

/// How `MIGRATE` logs in to the target (`AUTH` / `AUTH2`).
#[derive(Clone, Debug, Default)]
pub struct Login {
    pub username: Option<String>,
    pub password: Option<String>,
}

/// Keys per `GETKEYSINSLOT` / `MIGRATE` round.
const BATCH: usize = 100;
/// `MIGRATE`'s own timeout for a batch, in milliseconds.
const MIGRATE_TIMEOUT_MS: u64 = 10_000;

/// What a slot's migration did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Moved {
    pub keys: u64,
    /// Batches the target already held a key of (a batch an interrupted
    /// run copied but did not delete): sent again with `REPLACE`, the
    /// source's copy being the one clients wrote to.
    pub replaced_batches: u64,
}

/// Moves `slot` from `source` to `target`, telling `others` at the end;
/// `progress` hears the keys moved so far.
pub fn migrate_slot(
    link: &mut dyn Link,
    slot: u16,
    source: &Endpoint,
    target: &Endpoint,
    others: &[Endpoint],
    login: &Login,
    progress: &mut dyn FnMut(u64),
) -> Result<Moved, Error> {
    let mut moved = Moved::default();
    let importing = setslot(link, &target.address, slot, "IMPORTING", Some(&source.id));
    match importing {
        Ok(()) => {}
        // The target has it already: an earlier run got as far as giving
        // it the slot; what is left is telling the others.
        Err(e) if owns_already(&e) => {
            return finish(link, slot, source, target, others).map(|()| moved)
        }
        Err(e) => return Err(Error::node(&target.address, "SETSLOT IMPORTING", e)),
    }
    crate::fault::stop_if_asked("importing");
    setslot(link, &source.address, slot, "MIGRATING", Some(&target.id))
        .map_err(|e| Error::node(&source.address, "SETSLOT MIGRATING", e))?;
    crate::fault::stop_if_asked("migrating");
    loop {
        let keys = keys_in_slot(link, &source.address, slot)?;
        if keys.is_empty() {
            break;
        }
        if migrate_keys(link, source, target, &keys, login, false)? {
            migrate_keys(link, source, target, &keys, login, true)?;
            moved.replaced_batches += 1;
        }
        moved.keys += keys.len() as u64;
        progress(moved.keys);
        crate::fault::stop_if_asked("keys");
    }
    finish(link, slot, source, target, others)?;
    Ok(moved)
}

/// The slot given to `target`: on the target first (so that it answers
/// for the slot before the source stops doing so), then the source, then
/// the rest, who would learn it from gossip anyway.
fn finish(
    link: &mut dyn Link,
    slot: u16,
    source: &Endpoint,
    target: &Endpoint,
    others: &[Endpoint],
) -> Result<(), Error> {
    for node in [target, source] {
        setslot(link, &node.address, slot, "NODE", Some(&target.id))
            .map_err(|e| Error::node(&node.address, "SETSLOT NODE", e))?;
        crate::fault::stop_if_asked("given");
    }
    for node in others {
        // A primary that misses this learns it by gossip: not a failure.
        let _ = setslot(link, &node.address, slot, "NODE", Some(&target.id));
    }
    Ok(())
}

/// `SETSLOT IMPORTING` on a target that serves the slot already: an
/// earlier run gave it the slot.
fn owns_already(e: &redis::RedisError) -> bool {
    e.kind() == ErrorKind::ResponseError && e.to_string().contains("already the owner")
}

fn setslot(
    link: &mut dyn Link,
    address: &str,
    slot: u16,
    state: &str,
    node: Option<&str>,
) -> Result<(), redis::RedisError> {
    let mut cmd = redis::cmd("CLUSTER");
    cmd.arg("SETSLOT").arg(slot).arg(state);
    if let Some(node) = node {
        cmd.arg(node);
    }
    link.run(address, &cmd).map(drop)
}

fn keys_in_slot(link: &mut dyn Link, address: &str, slot: u16) -> Result<Vec<Vec<u8>>, Error> {
    let mut cmd = redis::cmd("CLUSTER");
    cmd.arg("GETKEYSINSLOT").arg(slot).arg(BATCH);
    let step = || format!("GETKEYSINSLOT {slot}");
    let reply = (link.run(address, &cmd)).map_err(|e| Error::node(address, step(), e))?;
    redis::from_redis_value::<Vec<Vec<u8>>>(&reply).map_err(|e| Error::node(address, step(), e))
}

/// `MIGRATE host port "" 0 timeout [REPLACE] [AUTH..] KEYS k..`; true if the
/// target held one of the keys already (`BUSYKEY`) and nothing was replaced.
fn migrate_keys(
    link: &mut dyn Link,
    from: &Endpoint,
    to: &Endpoint,
    keys: &[Vec<u8>],
    login: &Login,
    replace: bool,
) -> Result<bool, Error> {
    let (host, port) = host_and_port(&to.address);
    let mut cmd = redis::cmd("MIGRATE");
    cmd.arg(host)
        .arg(port)
        .arg("")
        .arg(0)
        .arg(MIGRATE_TIMEOUT_MS);
    if replace {
        cmd.arg("REPLACE");
    }
    add_login(&mut cmd, login);
    cmd.arg("KEYS");
    for key in keys {
        cmd.arg(key.as_slice());
    }
    match link.run(&from.address, &cmd) {
        Ok(Value::Okay) | Ok(Value::SimpleString(_)) | Ok(_) => Ok(false),
        Err(e) if !replace && is_busy_key(&e) => Ok(true),
        Err(e) => Err(Error::node(
            &from.address,
            format!("MIGRATE to {}", to.address),
            e,
        )),
    }
}

fn is_busy_key(e: &redis::RedisError) -> bool {
    e.code() == Some("BUSYKEY") || e.to_string().contains("BUSYKEY")
}

fn add_login(cmd: &mut Cmd, login: &Login) {
    match (&login.username, &login.password) {
        (Some(user), Some(password)) => {
            cmd.arg("AUTH2").arg(user).arg(password);
        }
        (None, Some(password)) => {
            cmd.arg("AUTH").arg(password);
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::bulk;
    use crate::rebalance::fake_cluster::words;
    use redis::RedisResult;
    use std::collections::VecDeque;

    /// Records what is sent; answers from a script, then OK.
    struct Script {
        sent: Vec<(String, String)>,
        replies: VecDeque<RedisResult<Value>>,
    }

    impl Link for Script {
        fn run(&mut self, address: &str, cmd: &Cmd) -> RedisResult<Value> {
            self.sent.push((address.to_string(), words(cmd).join(" ")));
            self.replies.pop_front().unwrap_or(Ok(Value::Okay))
        }
    }

    fn node(id: &str, address: &str) -> Endpoint {
        Endpoint {
            id: id.into(),
            address: address.into(),
        }
    }

    fn keys(names: &[&str]) -> RedisResult<Value> {
        Ok(Value::Array(names.iter().map(|k| bulk(k)).collect()))
    }

    #[test]
    fn a_slot_moves_in_the_standard_order_and_a_busy_key_is_replaced() {
        let busy = redis::RedisError::from((
            redis::ErrorKind::ExtensionError,
            "BUSYKEY",
            "Target key name already exists.".to_string(),
        ));
        let mut link = Script {
            sent: Vec::new(),
            replies: VecDeque::from([
                Ok(Value::Okay),
                Ok(Value::Okay),
                keys(&["a", "b\u{0}x"]),
                Err(busy),
                Ok(Value::Okay),
                keys(&[]),
            ]),
        };
        let (s, t, o) = (node("S", "h:1"), node("T", "h:2"), node("O", "h:3"));
        let mut seen = Vec::new();
        let login = Login {
            password: Some("pw".into()),
            ..Login::default()
        };
        let moved = migrate_slot(&mut link, 7, &s, &t, &[o], &login, &mut |n| seen.push(n));
        assert_eq!(moved.map(|m| (m.keys, m.replaced_batches)), Ok((2, 1)));
        assert_eq!(seen, [2]);
        let sent: Vec<String> = link.sent.iter().map(|(a, c)| format!("{a} {c}")).collect();
        assert_eq!(
            sent,
            [
                "h:2 CLUSTER SETSLOT 7 IMPORTING S",
                "h:1 CLUSTER SETSLOT 7 MIGRATING T",
                "h:1 CLUSTER GETKEYSINSLOT 7 100",
                "h:1 MIGRATE h 2  0 10000 AUTH pw KEYS a b\u{0}x",
                "h:1 MIGRATE h 2  0 10000 REPLACE AUTH pw KEYS a b\u{0}x",
                "h:1 CLUSTER GETKEYSINSLOT 7 100",
                "h:2 CLUSTER SETSLOT 7 NODE T",
                "h:1 CLUSTER SETSLOT 7 NODE T",
                "h:3 CLUSTER SETSLOT 7 NODE T",
            ]
        );
    }
}
