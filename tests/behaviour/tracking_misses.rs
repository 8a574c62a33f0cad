//! Hot misses: the keys clients hammer that do not exist (cache
//! penetration: every such read falls through to the database behind the
//! cache), from the server's own key-miss events.

use test_harness as common;

use common::{config_set, error, query, repeat, run, value, words, Server};
use redis::{Connection, Value};

const MISSES_ON: &str = "track yes track-halflife 3600 track-misses yes";

/// `HK.HOTKEYS MISSES` as (key, db, count) rows.
fn misses(con: &mut Connection) -> Vec<(String, i64, i64)> {
    let rows: Vec<(String, i64, Value, i64)> = query(con, &["HK.HOTKEYS", "MISSES", "COUNT", "50"]);
    rows.into_iter()
        .map(|(key, db, _, n)| (key, db, n))
        .collect()
}

#[test]
fn the_keys_hammered_while_missing_are_listed_and_existing_keys_never() {
    let (_server, mut con) = Server::start_configured(&words(MISSES_ON), &[]).with_client();
    value(&mut con, &["SET", "present", "v"]);
    repeat(&mut con, 300, &["GET", "user:404"]);
    repeat(&mut con, 1_000, &["GET", "present"]);
    repeat(&mut con, 100, &["GET", "product:gone"]);
    let expected: [(&str, i64, i64); 2] = [("user:404", 0, 300), ("product:gone", 0, 100)];
    assert_eq!(
        misses(&mut con),
        expected.map(|(key, db, n)| (key.to_string(), db, n)),
        "hottest first; a key that exists is never a miss"
    );
    // Every read counts as a read too, hit or miss.
    let reads: Vec<Value> = query(&mut con, &["HK.HOTKEYS", "READS"]);
    assert_eq!(reads.len() / 4, 3);
}

#[test]
fn a_missing_key_that_comes_into_being_leaves_the_list() {
    let (_server, mut con) = Server::start_configured(&words(MISSES_ON), &[]).with_client();
    repeat(&mut con, 500, &["GET", "soon"]);
    repeat(&mut con, 50, &["GET", "never"]);
    assert_eq!(misses(&mut con).len(), 2);
    value(&mut con, &["SET", "soon", "filled"]);
    let listed = misses(&mut con);
    assert_eq!(
        listed.iter().map(|(k, ..)| k.as_str()).collect::<Vec<_>>(),
        ["never"]
    );
}

#[test]
fn misses_are_per_database_and_binary_safe() {
    let (server, mut con) = Server::start_configured(&words(MISSES_ON), &[]).with_client();
    value(&mut con, &["SELECT", "3"]);
    let key = b"bin\x00\xff:key";
    let mut pipe = redis::pipe();
    for _ in 0..40 {
        pipe.cmd("MGET").arg(&key[..]).arg("other:missing");
    }
    let _: Vec<Value> = pipe.query(&mut con).unwrap();
    // Present in database 5, missing in 3: missed in 3 only.
    let mut five = server.client();
    value(&mut five, &["SELECT", "5"]);
    run::<()>(&mut five, &[b"SET", &key[..], b"v"]).unwrap();
    let mut zero = server.client();
    // (key, db) of each row.
    let rows_of = |con: &mut Connection, args: &[&str]| -> Vec<(Vec<u8>, i64)> {
        let rows: Vec<(Vec<u8>, i64, Value, Value)> = query(con, args);
        rows.into_iter().map(|(key, db, ..)| (key, db)).collect()
    };
    let rows = rows_of(&mut zero, &["HK.HOTKEYS", "MISSES"]);
    // Counted in the client's database where the filter names clients
    // (7.2+, Valkey); on Redis 7.0, in database 0 as the reads of the same
    // key are: one key, one database in every row.
    let db = if common::filter_names_clients(&mut zero) {
        3
    } else {
        0
    };
    assert!(rows.contains(&(key.to_vec(), db)), "{rows:?}");
    assert!(rows.contains(&(b"other:missing".to_vec(), db)), "{rows:?}");
    let read_rows = rows_of(&mut zero, &["HK.HOTKEYS"]);
    assert!(read_rows.contains(&(key.to_vec(), db)), "{read_rows:?}");
    // Under RESP3, one array per row.
    let mut resp3 = server.client_resp3();
    let nested: Vec<Value> = query(&mut resp3, &["HK.HOTKEYS", "MISSES"]);
    assert!(
        nested
            .iter()
            .all(|row| matches!(row, Value::Array(fields) if fields.len() == 4)),
        "{nested:?}"
    );
}

#[test]
fn misses_are_counted_only_when_asked_for() {
    let (_server, mut con) =
        Server::start_configured(&["track", "yes", "track-halflife", "3600"], &[]).with_client();
    repeat(&mut con, 100, &["GET", "missing"]);
    let e = error(&mut con, &["HK.HOTKEYS", "MISSES"]);
    assert!(e.contains("track-misses"), "{e}");
    config_set(&mut con, "heavykeeper.track-misses", "yes");
    assert_eq!(common::module_figure(&mut con, "tracker_misses"), 1);
    repeat(&mut con, 70, &["GET", "missing"]);
    assert_eq!(misses(&mut con), [("missing".to_string(), 0, 70)]);
    // Off again: the list stops growing (and says it is off).
    config_set(&mut con, "heavykeeper.track-misses", "no");
    repeat(&mut con, 70, &["GET", "missing"]);
    assert!(error(&mut con, &["HK.HOTKEYS", "MISSES"]).contains("track-misses"));
    // Tracking off altogether: the usual error.
    config_set(&mut con, "heavykeeper.track", "no");
    assert!(error(&mut con, &["HK.HOTKEYS", "MISSES"]).contains("heavykeeper.track yes"));
}

#[test]
fn a_script_and_a_transaction_miss_like_any_client() {
    let (_server, mut con) = Server::start_configured(&words(MISSES_ON), &[]).with_client();
    for _ in 0..30 {
        let _: Value = query(
            &mut con,
            &[
                "EVAL",
                "return redis.call('GET', KEYS[1])",
                "1",
                "scripted:missing",
            ],
        );
    }
    let listed = misses(&mut con);
    assert_eq!(listed, [("scripted:missing".to_string(), 0, 30)]);
}
