//! A RedisBloom user points their `TOPK.*` client at this module (with
//! `topk-compat yes`) and it works unchanged: replies, errors and defaults
//! as RedisBloom's, checked with redis-py's own `topk()` client.

use test_harness as common;

use common::{cli, error, query, restore, value, Server};
use redis::{Connection, Value};
use std::path::Path;
use std::process::Command;

fn redis_py_topk(server: &Server, protocol: &str) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/redis_py_topk.py");
    let out = Command::new("python3")
        .arg(script)
        .args(["--port", &server.port.to_string(), "--protocol", protocol])
        .output()
        .expect("python3 (make test installs redis-py)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "RESP{protocol}: {stdout}\n{stderr}");
    assert_eq!(stdout.trim(), "ok");
}

#[test]
fn redis_py_topk_client_works_unchanged_on_resp2_and_resp3() {
    let server = Server::start_configured(&["topk-compat", "yes"], &[]);
    redis_py_topk(&server, "2");
    redis_py_topk(&server, "3");
}

#[test]
fn topk_and_hk_commands_share_the_data_type() {
    let (_server, mut con) = Server::start_configured(&["topk-compat", "yes"], &[]).with_client();
    value(&mut con, &["TOPK.RESERVE", "t", "2", "100", "3", "0.9"]);
    value(&mut con, &["HK.ADD", "t", "x", "x", "y"]);
    assert_eq!(
        value(&mut con, &["TOPK.LIST", "t", "WITHCOUNT"]),
        crate::topk_redisbloom::counted(&[("x", 2), ("y", 1)])
    );
    value(&mut con, &["HK.RESERVE", "h", "5"]);
    value(&mut con, &["TOPK.ADD", "h", "z"]);
    assert_eq!(
        value(&mut con, &["HK.COUNT", "h", "z"]),
        Value::Array(vec![Value::Int(1)])
    );
    // Binary items stay whole.
    value(&mut con, &["TOPK.ADD", "h", "a\r\nb\0c"]);
    let listed: Vec<Value> = query(&mut con, &["TOPK.LIST", "h"]);
    assert!(
        listed.contains(&Value::BulkString(b"a\r\nb\0c".to_vec())),
        "{listed:?}"
    );
    // A command with a bad increment counts nothing.
    let e = error(&mut con, &["TOPK.INCRBY", "h", "q", "1", "r", "-1"]);
    assert!(e.starts_with("TopK: not counted"), "{e}");
    assert_eq!(
        value(&mut con, &["HK.COUNT", "h", "q"]),
        Value::Array(vec![Value::Int(0)])
    );
}

#[test]
fn topk_names_exist_only_when_asked_for() {
    let (_server, mut con) = Server::start().with_client();
    let e = error(&mut con, &["TOPK.RESERVE", "t", "3"]);
    assert!(e.starts_with("ERR unknown command"), "{e}");
}

#[test]
fn with_redisbloom_loaded_the_load_fails_saying_why() {
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("fake_redisbloom.so");
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/fake_redisbloom.c");
    let built = Command::new("cc")
        .args(["-shared", "-fPIC", "-O1", "-o"])
        .arg(&fake)
        .arg(&source)
        .status()
        .expect("cc (the Rust toolchain's linker)");
    assert!(built.success());
    let fake = fake.to_string_lossy().to_string();
    let log = Server::refused_load_after(&["--loadmodule", &fake], &["topk-compat", "yes"], &[]);
    let line = crate::configuration::refusal(&log);
    assert!(line.contains("topk-compat"), "{line}");
    assert!(line.contains("RedisBloom"), "{line}");
    // Without topk-compat, both load side by side: TOPK.* is RedisBloom's.
    let (_server, mut con) = Server::start_after(&["--loadmodule", &fake], &[], &[]).with_client();
    value(&mut con, &["HK.RESERVE", "h", "3"]);
    value(&mut con, &["TOPK.RESERVE", "t", "3"]);
    let e = error(&mut con, &["HK.ADD", "t", "x"]);
    assert_eq!(e, "ERR no such key", "the fake keeps no keys: {e}");
}

/// The tie rule is part of the sketch: a copy made by `DUMP`/`RESTORE` (the
/// same bytes as RDB and replication) keeps RedisBloom's heap, empty slots
/// included, and from then on expels and lists exactly as the original.
#[test]
fn redisbloom_ties_survive_a_restore() {
    let (_server, mut con) = Server::start_configured(&["topk-compat", "yes"], &[]).with_client();
    cli(
        &mut con,
        "HK.RESERVE a 4 WIDTH 64 DEPTH 3 SEED 7 TIES redisbloom",
    );
    assert_eq!(
        common::hk_info(&mut con, "a")["ties"],
        Value::SimpleString("redisbloom".into())
    );
    // Two members, two empty slots, a tie.
    value(&mut con, &["TOPK.ADD", "a", "x", "y", "x", "y"]);
    let dump: Vec<u8> = query(&mut con, &["DUMP", "a"]);
    restore(&mut con, "b", &dump).unwrap();
    for round in 0..40 {
        let items: String = (0..3)
            .map(|i| format!(" i{}", (round * 7 + i) % 6))
            .collect();
        let add = |con: &mut Connection, key: &str| cli(con, &format!("TOPK.ADD {key}{items}"));
        // What each expelled.
        assert_eq!(add(&mut con, "a"), add(&mut con, "b"), "round {round}");
        assert_eq!(
            value(&mut con, &["TOPK.LIST", "a", "WITHCOUNT"]),
            value(&mut con, &["TOPK.LIST", "b", "WITHCOUNT"]),
            "round {round}"
        );
    }
    assert_eq!(common::digest(&mut con, "a"), common::digest(&mut con, "b"));
}

/// `HK.RESERVE ... TIES` takes the two rules by name, and `HK.*` sketches
/// keep settling ties by item bytes.
#[test]
fn hk_sketches_settle_ties_by_item_unless_asked() {
    let (_server, mut con) = Server::start().with_client();
    value(&mut con, &["HK.RESERVE", "h", "2"]);
    assert_eq!(
        common::hk_info(&mut con, "h")["ties"],
        Value::SimpleString("item".into())
    );
    value(&mut con, &["HK.ADD", "h", "b", "a", "c"]);
    let listed: Vec<Value> = query(&mut con, &["HK.LIST", "h"]);
    assert_eq!(listed.len(), 2, "c only ties the minimum: it stays out");
    let e = error(&mut con, &["HK.RESERVE", "t", "2", "TIES", "random"]);
    assert_eq!(e, "ERR TIES must be ITEM or REDISBLOOM");
}
