//! Following watched sketches wherever a key goes, so that the timer finds
//! them: every server keeps the schedule (a replica too, ready for its
//! promotion), through every path a key can take.
//!
//! | path | how the schedule hears of it |
//! |---|---|
//! | `HK.WATCH`, `HK.LOADSTATE` (clients, AOF replay, replication) | the command |
//! | RDB load, replica sync, `RESTORE`, `DEBUG RELOAD` | the type's `rdb_load` |
//! | `DEL`, `UNLINK`, expiry, eviction, overwrite, the source of `RENAME`/`MOVE` | the type's `unlink2` |
//! | `RENAME`, `MOVE`, `COPY`, `RESTORE` (with `REPLACE` too) | the `rename_to`, `move_to`, `copy_to`, `restore` keyspace events |
//!
//! The events come after the value is in place: a `COPY` or `RESTORE` that
//! replaces a watched key first unlinks the old value (which unfollows the
//! name), then the event follows the new one.
//! | `SWAPDB` | the swap-db server event |
//! | `FLUSHDB`, `FLUSHALL` | the flush server event |

use super::schedule::Db;
use super::{follow, selected_db, with_schedule};
use crate::data_type::sketch_key::Quiet;
use crate::host::{events, fault, module_string};
use redis_module::Context;

/// Subscribes to the events above (at load). Returns what the server refused.
pub fn subscribe(ctx: &Context) -> Result<(), String> {
    events::on_key_event(ctx, key_event)?;
    events::on_flush_and_swap(ctx, flushed, swapped)
}

/// `rename_to`, `move_to`, `copy_to` and `restore` name the key where a
/// value now is, in the database the context has selected; an old place
/// already left the schedule (`unlink2`).
fn key_event(ctx: &Context, event: &[u8], key: &[u8]) {
    if !matches!(event, b"rename_to" | b"move_to" | b"copy_to" | b"restore") {
        return;
    }
    fault::on_event(key);
    let name = module_string::of(ctx, key);
    let watched = Quiet::open(ctx, &name).is_some_and(|s| s.watch().is_some());
    if watched {
        follow(selected_db(ctx), name.as_slice());
    }
}

fn flushed(db: Option<Db>) {
    with_schedule(|s| {
        trip_on_fault_key(s);
        s.flush(db);
    });
}

fn swapped(a: Db, b: Db) {
    with_schedule(|s| {
        trip_on_fault_key(s);
        s.swap_dbs(a, b);
    });
}

/// Debug builds: a server event with the fault key among the watched ones
/// panics, to prove the handler's guard.
fn trip_on_fault_key(s: &super::schedule::Schedule) {
    if cfg!(debug_assertions) {
        for (_, key) in s.keys() {
            fault::on_event(key);
        }
    }
}
