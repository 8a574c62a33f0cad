//! A RedisBloom user points their `TOPK.*` client at this module (with
//! `topk-compat yes`) and it works unchanged: replies, errors and defaults
//! as RedisBloom's, checked with redis-py's own `topk()` client.

mod common;

use common::{error, value, Server};
use redis::Value;
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
    let server = Server::start_configured(&["topk-compat", "yes"], &[]);
    let mut con = server.client();
    value(&mut con, &["TOPK.RESERVE", "t", "2", "100", "3", "0.9"]);
    value(&mut con, &["HK.ADD", "t", "x", "x", "y"]);
    assert_eq!(
        value(&mut con, &["TOPK.LIST", "t", "WITHCOUNT"]),
        Value::Array(vec![
            Value::BulkString(b"x".to_vec()),
            Value::Int(2),
            Value::BulkString(b"y".to_vec()),
            Value::Int(1),
        ])
    );
    value(&mut con, &["HK.RESERVE", "h", "5"]);
    value(&mut con, &["TOPK.ADD", "h", "z"]);
    assert_eq!(
        value(&mut con, &["HK.COUNT", "h", "z"]),
        Value::Array(vec![Value::Int(1)])
    );
    // Binary items stay whole.
    value(&mut con, &["TOPK.ADD", "h", "a\r\nb\0c"]);
    let Value::Array(listed) = value(&mut con, &["TOPK.LIST", "h"]) else {
        panic!()
    };
    assert!(
        listed.contains(&Value::BulkString(b"a\r\nb\0c".to_vec())),
        "{listed:?}"
    );
    // A command that fails changes nothing.
    let e = error(&mut con, &["TOPK.INCRBY", "h", "q", "1", "r", "-1"]);
    assert!(e.starts_with("TopK: increment"), "{e}");
    assert_eq!(
        value(&mut con, &["HK.COUNT", "h", "q"]),
        Value::Array(vec![Value::Int(0)])
    );
}

#[test]
fn topk_names_exist_only_when_asked_for() {
    let server = Server::start();
    let mut con = server.client();
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
    let line = log
        .lines()
        .find(|l| l.contains("refusing to load"))
        .unwrap_or_else(|| panic!("no refusal in:\n{log}"));
    assert!(line.contains("topk-compat"), "{line}");
    assert!(line.contains("RedisBloom"), "{line}");
    // Without topk-compat, both load side by side: TOPK.* is RedisBloom's.
    let server = Server::start_after(&["--loadmodule", &fake], &[], &[]);
    let mut con = server.client();
    value(&mut con, &["HK.RESERVE", "h", "3"]);
    value(&mut con, &["TOPK.RESERVE", "t", "3"]);
    let e = error(&mut con, &["HK.ADD", "t", "x"]);
    assert_eq!(e, "ERR no such key", "the fake keeps no keys: {e}");
}
