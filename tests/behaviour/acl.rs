//! An operator locks users down with ACLs as for any Redis command set: key
//! permissions follow each command's key specs, categories follow what the
//! command does, and the server knows every command's arity and flags.

use test_harness as common;

use common::{cli, error, query, value, words, Server};
use redis::{Connection, Value};

/// A user with these ACL rules (password `pw`), connected.
fn user(server: &Server, name: &str, rules: &[&str]) -> Connection {
    let setuser = format!("ACL SETUSER {name} on >pw resetkeys {}", rules.join(" "));
    assert_eq!(cli(&mut server.client(), &setuser), Value::Okay);
    let url = format!("redis://{name}:pw@127.0.0.1:{}/", server.port);
    redis::Client::open(url)
        .and_then(|c| c.get_connection())
        .expect("connect as the user")
}

fn sample_sketch(server: &Server) {
    let mut admin = server.client();
    value(&mut admin, &["HK.RESERVE", "hot", "10", "SEED", "1"]);
    value(&mut admin, &["HK.RESERVE", "other", "10", "SEED", "1"]);
    value(&mut admin, &["HK.ADD", "hot", "a", "b", "a"]);
}

/// Does this server set module ACL categories (Redis 7.2+, Valkey)?
fn has_module_acl_categories(server: &Server) -> bool {
    let mut con = server.client();
    let categories: Vec<String> = redis::cmd("COMMAND")
        .arg("INFO")
        .arg("hk.add")
        .query::<Vec<Vec<Value>>>(&mut con)
        .ok()
        .and_then(|mut info| info.pop())
        .and_then(|entry| entry.get(6).cloned())
        .and_then(|v| redis::from_redis_value(&v).ok())
        .unwrap_or_default();
    !categories.is_empty()
}

#[test]
fn a_user_with_read_only_keys_reads_but_cannot_write() {
    let server = Server::start();
    sample_sketch(&server);
    let mut reader = user(&server, "reader", &["%R~*", "+@all"]);
    for read in [
        &["HK.LIST", "hot", "WITHCOUNT"][..],
        &["HK.COUNT", "hot", "a"],
        &["HK.QUERY", "hot", "a"],
        &["HK.RATE", "hot", "a"],
        &["HK.INFO", "hot"],
    ] {
        value(&mut reader, read);
    }
    for write in [
        &["HK.ADD", "hot", "c"][..],
        &["HK.INCRBY", "hot", "c", "2"],
        &["HK.RESERVE", "new", "5"],
        &["HK.MERGE", "new", "hot"],
        &["HK.WATCH", "hot", "ch"],
    ] {
        let e = error(&mut reader, write);
        assert!(e.starts_with("NOPERM"), "{write:?}: {e}");
    }
}

#[test]
fn a_user_limited_to_a_key_pattern_reaches_only_those_sketches() {
    let server = Server::start();
    let mut admin = server.client();
    value(&mut admin, &["HK.RESERVE", "app:hot", "5"]);
    value(&mut admin, &["HK.RESERVE", "other:hot", "5"]);
    cli(&mut admin, "ACL SETUSER app on >secret ~app:* +@all");
    let mut con = server.client();
    value(&mut con, &["AUTH", "app", "secret"]);
    assert_eq!(
        value(&mut con, &["HK.ADD", "app:hot", "k"]),
        Value::Array(vec![Value::Nil])
    );
    let e = error(&mut con, &["HK.ADD", "other:hot", "k"]);
    assert!(e.starts_with("NOPERM"), "{e}");
    let e = error(&mut con, &["HK.LIST", "other:hot"]);
    assert!(e.starts_with("NOPERM"), "{e}");
}

#[test]
fn a_merge_only_reads_its_sources() {
    let server = Server::start();
    sample_sketch(&server);
    // May write `merged`, may only read the others.
    let mut merger = user(&server, "merger", &["%R~*", "%RW~merged", "+@all"]);
    value(&mut merger, &["HK.MERGE", "merged", "hot", "other"]);
    let e = error(&mut merger, &["HK.MERGE", "other", "hot"]);
    assert!(e.starts_with("NOPERM"), "{e}");

    let mut con = server.client();
    let keys: Vec<String> = query(&mut con, &words("COMMAND GETKEYS HK.MERGE dest s1 s2"));
    assert_eq!(keys, ["dest", "s1", "s2"]);
    let flags: Vec<(String, Vec<String>)> =
        query(&mut con, &words("COMMAND GETKEYSANDFLAGS HK.MERGE dest s1"));
    assert!(flags[0].1.contains(&"OW".to_string()), "{flags:?}");
    assert_eq!(flags[1].1, ["RO", "access"], "{flags:?}");
}

#[test]
fn categories_grant_and_deny_where_the_server_has_them() {
    let server = Server::start();
    sample_sketch(&server);
    if !has_module_acl_categories(&server) {
        // Redis 7.0: no module categories; the module said so once, at load.
        let log = server.log();
        assert_eq!(
            log.matches("has no module ACL categories").count(),
            1,
            "{log}"
        );
        return;
    }
    let mut reader = user(&server, "reader", &["~*", "+@read"]);
    value(&mut reader, &["HK.LIST", "hot"]);
    value(&mut reader, &["HK.COUNT", "hot", "a"]);
    assert!(error(&mut reader, &["HK.ADD", "hot", "a"]).starts_with("NOPERM"));

    let mut no_writes = user(&server, "nowrites", &["~*", "+@all", "-@write"]);
    value(&mut no_writes, &["HK.INFO", "hot"]);
    for write in [
        &["HK.ADD", "hot", "a"][..],
        &["HK.RESERVE", "x", "3"],
        &["HK.LOADSTATE", "y", "z"],
    ] {
        assert!(
            error(&mut no_writes, write).starts_with("NOPERM"),
            "{write:?}"
        );
    }

    let mut careful = user(&server, "careful", &["~*", "+@all", "-@dangerous"]);
    value(&mut careful, &["HK.ADD", "hot", "a"]);
    assert!(error(&mut careful, &["HK.LOADSTATE", "y", "z"]).starts_with("NOPERM"));
    assert!(error(&mut careful, &["HK.HOTKEYS"]).starts_with("NOPERM"));

    let mut fast_only = user(&server, "fast", &["~*", "+@fast"]);
    value(&mut fast_only, &["HK.ADD", "hot", "a"]);
    assert!(error(&mut fast_only, &["HK.LIST", "hot"]).starts_with("NOPERM"));

    // The module's own category, where the server can add one.
    let mut con = server.client();
    let categories: Vec<String> = query(&mut con, &["ACL", "CAT"]);
    if categories.iter().any(|c| c == "heavykeeper") {
        let mut hk_only = user(&server, "hk", &["~*", "+@heavykeeper"]);
        value(&mut hk_only, &["HK.ADD", "hot", "a"]);
        value(&mut hk_only, &["HK.LIST", "hot"]);
        assert!(error(&mut hk_only, &["GET", "hot"]).starts_with("NOPERM"));
    }
}

/// A command as `COMMAND INFO` describes it: name, arity, flags, first key,
/// last key, step.
type CommandRow = (&'static str, i64, &'static [&'static str], i64, i64, i64);

#[test]
fn command_info_shows_arity_flags_and_key_specs() {
    let (_server, mut con) = Server::start().with_client();
    let expected: &[CommandRow] = &[
        ("hk.reserve", -3, &["write", "denyoom"], 1, 1, 1),
        ("hk.add", -3, &["write", "denyoom", "fast"], 1, 1, 1),
        ("hk.incrby", -4, &["write", "denyoom", "fast"], 1, 1, 1),
        ("hk.addat", -4, &["write", "denyoom", "fast"], 1, 1, 1),
        ("hk.incrbyat", -5, &["write", "denyoom", "fast"], 1, 1, 1),
        ("hk.query", -3, &["readonly", "fast"], 1, 1, 1),
        ("hk.count", -3, &["readonly", "fast"], 1, 1, 1),
        ("hk.rate", -3, &["readonly", "fast"], 1, 1, 1),
        ("hk.list", -2, &["readonly"], 1, 1, 1),
        ("hk.info", 2, &["readonly", "fast"], 1, 1, 1),
        ("hk.merge", -3, &["write", "denyoom"], 1, -1, 1),
        ("hk.loadstate", 3, &["write", "denyoom"], 1, 1, 1),
        ("hk.hotkeys", -1, &["readonly"], 0, 0, 0),
        ("hk.watch", -3, &["write"], 1, 1, 1),
        ("hk.unwatch", 2, &["write"], 1, 1, 1),
    ];
    for &(name, arity, flags, first, last, step) in expected {
        let info: Vec<Vec<Value>> = query(&mut con, &["COMMAND", "INFO", name]);
        let entry = &info[0];
        let int = |i: usize| -> i64 { redis::from_redis_value(&entry[i]).unwrap() };
        let got_flags: Vec<String> = redis::from_redis_value(&entry[2]).unwrap();
        assert_eq!(int(1), arity, "{name}");
        for flag in flags {
            assert!(got_flags.iter().any(|f| f == flag), "{name}: {got_flags:?}");
        }
        assert_eq!((int(3), int(4), int(5)), (first, last, step), "{name}");
        let has_specs = matches!(&entry[8], Value::Array(specs) if !specs.is_empty());
        assert_eq!(has_specs, first > 0, "{name}: key specs {:?}", entry[8]);
    }
    let keys: Vec<String> = query(&mut con, &["COMMAND", "GETKEYS", "HK.ADD", "mykey", "a"]);
    assert_eq!(keys, vec!["mykey"]);
}
