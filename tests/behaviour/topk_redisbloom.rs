//! RedisBloom's own TopK flow tests (`tests/flow/test_topk.py`,
//! `test_topk_restore_corrupt_rdb.py` and the TopK cases of `test_resp3.py`,
//! `test_acl.py` and `test_docs_help.py`), told as the story of a client
//! written against RedisBloom that is pointed at this module with
//! `topk-compat yes`. Each test keeps RedisBloom's name and its checks,
//! reply shapes included: items come back as simple strings, as there.

use test_harness as common;

use crate::persistence::Dump;
use crate::{as_map, as_text, command_docs};
use common::{cli, error, error_bytes, query, run, value, words, Server};
use redis::{Connection, Value};

fn bloom_server() -> Server {
    Server::start_configured(&["topk-compat", "yes"], &[])
}

fn ok(con: &mut Connection, parts: &[&str]) {
    assert_eq!(value(con, parts), Value::Okay, "{parts:?}");
}

/// An item as RedisBloom answers it.
fn item(text: &str) -> Value {
    Value::SimpleString(text.into())
}

fn items(texts: &[&str]) -> Value {
    Value::Array(texts.iter().map(|t| item(t)).collect())
}

/// `TOPK.LIST ... WITHCOUNT` as RedisBloom answers it: item, count, ...
pub(crate) fn counted(pairs: &[(&str, i64)]) -> Value {
    let flat = pairs.iter().flat_map(|&(i, n)| [item(i), Value::Int(n)]);
    Value::Array(flat.collect())
}

fn ints(values: &[i64]) -> Value {
    Value::Array(values.iter().map(|&v| Value::Int(v)).collect())
}

fn nils(n: usize) -> Value {
    Value::Array(vec![Value::Nil; n])
}

/// `TOPK.INFO` on RESP2 up to the decay's value: k, width, depth, "decay".
fn info_head(k: i64, width: i64, depth: i64) -> Vec<Value> {
    let [k, width, depth] = [k, width, depth].map(Value::Int);
    vec![
        item("k"),
        k,
        item("width"),
        width,
        item("depth"),
        depth,
        item("decay"),
    ]
}

#[test]
fn test_simple() {
    let (_server, mut con) = bloom_server().with_client();
    ok(&mut con, &["TOPK.RESERVE", "topk", "20", "50", "5", "0.9"]);
    assert_eq!(value(&mut con, &["TOPK.ADD", "topk", "a"]), nils(1));
    assert_eq!(value(&mut con, &["TOPK.ADD", "topk", "a", "b"]), nils(2));
    assert_eq!(value(&mut con, &["TOPK.QUERY", "topk", "a"]), ints(&[1]));
    assert_eq!(value(&mut con, &["TOPK.QUERY", "topk", "c"]), ints(&[0]));
}

#[test]
fn test_validation() {
    let (_server, mut con) = bloom_server().with_client();
    let reserves: [&[&str]; 14] = [
        &[],
        &["foo"],
        &["foo", "bar"],
        &["foo", "bar", "baz"],
        &["foo", "bar", "baz", "Qux"],
        &["foo", "bar", "baz", "Qux", "Quux", "xyzzy"],
        &["foo", "bar", "50", "5", "0.9"],
        &["foo", "20", "bar", "5", "0.9"],
        &["foo", "20", "50", "bar", "0.9"],
        &["foo", "20", "50", "5", "bar"],
        &["foo", "0.9", "50", "5", "0.9"],
        &["foo", "20", "0.9", "5", "0.9"],
        &["foo", "20", "50", "0.9", "0.9"],
        &["foo", "20", "50", "5", "42"],
    ];
    for args in reserves {
        error(&mut con, &[&["TOPK.RESERVE"][..], args].concat());
    }
    for args in ["", " test"] {
        for cmd in words("TOPK.ADD TOPK.QUERY TOPK.COUNT TOPK.LIST TOPK.INFO") {
            error(&mut con, &words(&format!("{cmd}{args}")));
        }
    }
    for cmd in ["TOPK.ADD", "TOPK.QUERY", "TOPK.COUNT"] {
        error(&mut con, &[cmd, "topk"]);
    }
    ok(&mut con, &["SET", "king", "kong"]);
    assert!(error(&mut con, &["TOPK.ADD", "king", "kong"]).starts_with("WRONGTYPE"));
    assert_eq!(
        error(&mut con, &["TOPK.ADD", "kong", "kong"]),
        "TopK: key does not exist"
    );
}

#[test]
fn test_add_query_count() {
    let (mut server, mut con) = bloom_server().with_client();
    ok(&mut con, &["TOPK.RESERVE", "topk", "20", "50", "5", "0.9"]);
    // RedisBloom restarts the server here: the empty sketch survives it.
    value(&mut con, &["SAVE"]);
    let mut con = server.restart();
    value(&mut con, &["TOPK.ADD", "topk", "bar", "baz", "42"]);
    assert_eq!(value(&mut con, &["TOPK.QUERY", "topk", "bar"]), ints(&[1]));
    assert_eq!(value(&mut con, &["TOPK.QUERY", "topk", "foo"]), ints(&[0]));
    assert_eq!(
        value(&mut con, &["TOPK.QUERY", "topk", "foo", "bar", "baz"]),
        ints(&[0, 1, 1])
    );
    assert_eq!(value(&mut con, &["TOPK.COUNT", "topk", "bar"]), ints(&[1]));
    assert_eq!(value(&mut con, &["TOPK.COUNT", "topk", "foo"]), ints(&[0]));
    assert_eq!(
        value(&mut con, &["TOPK.COUNT", "topk", "foo", "bar", "baz"]),
        ints(&[0, 1, 1])
    );
    value(&mut con, &["TOPK.ADD", "topk", "bar", "baz"]);
    assert_eq!(
        value(&mut con, &["TOPK.COUNT", "topk", "foo", "bar", "baz", "42"]),
        ints(&[0, 2, 2, 1])
    );
    assert_eq!(value(&mut con, &["TOPK.ADD", "topk", "foo"]), nils(1));
    assert_eq!(value(&mut con, &["TOPK.QUERY", "topk", "foo"]), ints(&[1]));
    assert_eq!(cli(&mut con, "TOPK.QUERY topk xyxxy"), ints(&[0]));
    assert_eq!(cli(&mut con, "TOPK.ADD topk foo 1 bar 1"), nils(4));
}

#[test]
fn test_incrby() {
    let (server, mut con) = bloom_server().with_client();
    ok(&mut con, &["TOPK.RESERVE", "topk", "3", "10", "3", "1"]);
    assert_eq!(cli(&mut con, "TOPK.INCRBY topk bar 3 baz 6 42 2"), nils(3));
    assert_eq!(
        value(&mut con, &["TOPK.INCRBY", "topk", "42", "8", "xyzzy", "4"]),
        Value::Array(vec![Value::Nil, item("bar")])
    );
    assert_eq!(
        cli(&mut con, "TOPK.COUNT topk bar baz 42 xyzzy 4"),
        ints(&[3, 6, 10, 4, 0])
    );
    error(&mut con, &["TOPK.INCRBY"]);
    // A bad increment is an error inside the array, in its pair's place,
    // in RedisBloom's words (its C line continuation's spaces included).
    let bad = format!("-TopK: increment must be an integer greater or equal to 0{}and smaller or equal to 100,000\r\n", " ".repeat(28));
    for increment in ["-5", "123456"] {
        assert_eq!(
            raw_reply(&server, &["TOPK.INCRBY", "topk", "foo", increment]),
            format!("*1\r\n{bad}")
        );
    }
    // Nothing is counted when any pair is bad; the good pairs say so.
    assert_eq!(
        raw_reply(&server, &["TOPK.INCRBY", "topk", "foo", "1", "bar", "x"]),
        format!("*2\r\n-TopK: not counted: another increment in this command is invalid\r\n{bad}")
    );
    assert_eq!(value(&mut con, &["TOPK.COUNT", "topk", "foo"]), ints(&[0]));
}

/// The bytes of a reply exactly as the server wrote them (RESP2): the
/// client library would turn an error inside an array into a failure.
fn raw_reply(server: &Server, parts: &[&str]) -> String {
    use std::io::{Read, Write};
    let mut socket = std::net::TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    let mut request = format!("*{}\r\n", parts.len());
    for part in parts {
        request += &format!("${}\r\n{part}\r\n", part.len());
    }
    // A PING after the command marks where its reply ends.
    request += "*1\r\n$4\r\nPING\r\n";
    socket.write_all(request.as_bytes()).unwrap();
    let mut reply = Vec::new();
    let mut chunk = [0u8; 4096];
    while !reply.ends_with(b"+PONG\r\n") {
        let n = socket.read(&mut chunk).unwrap();
        assert!(n > 0, "connection closed after {reply:?}");
        reply.extend_from_slice(&chunk[..n]);
    }
    reply.truncate(reply.len() - b"+PONG\r\n".len());
    String::from_utf8(reply).unwrap()
}

#[test]
fn test_lookup_table() {
    let (_server, mut con) = bloom_server().with_client();
    ok(&mut con, &["TOPK.RESERVE", "topk", "1", "3", "3", ".9"]);
    cli(&mut con, "TOPK.INCRBY topk bar 300 baz 600 42 200");
    cli(&mut con, "TOPK.INCRBY topk 42 80 xyzzy 400");
    assert_eq!(value(&mut con, &["TOPK.LIST", "topk"]), items(&["baz"]));
}

/// The arrivals `test_list_info` and `test_resp3` send: foo and baz end at
/// 6 each, bar at 3, 42 at 2.
fn list_info_stream(con: &mut Connection) {
    cli(con, "TOPK.ADD topk foo bar baz 42 foo bar baz");
    value(con, &["TOPK.ADD", "topk", "foo", "baz", "42", "foo", "baz"]);
    cli(con, "TOPK.ADD topk foo bar baz foo baz");
}

#[test]
fn test_list_info() {
    let (_server, mut con) = bloom_server().with_client();
    ok(&mut con, &["TOPK.RESERVE", "topk", "2", "50", "5", "0.9"]);
    error(&mut con, &["TOPK.RESERVE", "topk", "2", "50", "5", "0.9"]);
    list_info_stream(&mut con);
    // foo and baz both count 6: RedisBloom's heap order lists foo first.
    assert_eq!(
        value(&mut con, &["TOPK.LIST", "topk"]),
        items(&["foo", "baz"])
    );
    // bar reaches 6, the minimum, at its third arrival and expels the root.
    assert_eq!(
        cli(&mut con, "TOPK.ADD topk bar bar bar bar bar"),
        Value::Array(vec![
            Value::Nil,
            Value::Nil,
            item("foo"),
            Value::Nil,
            Value::Nil
        ])
    );
    assert_eq!(
        value(&mut con, &["TOPK.LIST", "topk"]),
        items(&["bar", "baz"])
    );
    assert_eq!(
        error(&mut con, &["TOPK.LIST", "topk", "_topk_"]),
        "WITHCOUNT keyword expected"
    );
    let Value::Array(info) = value(&mut con, &["TOPK.INFO", "topk"]) else {
        panic!("an array on RESP2")
    };
    assert_eq!(info[..7], info_head(2, 50, 5));
    let decay: f64 = redis::from_redis_value(&info[7]).unwrap();
    assert!((decay - 0.9).abs() < 0.1);
    error(&mut con, &["TOPK.INFO", "topk", "_topk_"]);
}

#[test]
fn test_time() {
    let (_server, mut con) = bloom_server().with_client();
    ok(&mut con, &words("TOPK.RESERVE topk 100 1000 5 0.9"));
    let mut add_all = |ids: &mut dyn Iterator<Item = u32>| {
        let mut pipe = redis::pipe();
        for id in ids {
            pipe.cmd("TOPK.ADD").arg(("topk", id.to_string())).ignore();
        }
        pipe.query::<()>(&mut con).unwrap();
    };
    for _ in 0..10 {
        add_all(&mut (0..50).map(|i| i * 100));
    }
    for _ in 0..5 {
        add_all(&mut (0..5000));
    }
    for _ in 0..5 {
        add_all(&mut (0..100).map(|i| i * 50));
    }
    let listed: Vec<String> = query(&mut con, &["TOPK.LIST", "topk"]);
    assert_eq!(listed.len(), 100);
    let hundreds = listed
        .iter()
        .filter(|i| i.parse::<u32>().unwrap() % 100 == 0)
        .count();
    assert!(hundreds > 45, "{hundreds} multiples of 100 in {listed:?}");
}

#[test]
fn test_no_init_params() {
    let (_server, mut con) = bloom_server().with_client();
    ok(&mut con, &["TOPK.RESERVE", "topk", "3"]);
    cli(
        &mut con,
        "TOPK.ADD topk foo bar baz 42 foo bar baz foo foo foo foo",
    );
    cli(
        &mut con,
        "TOPK.ADD topk foo baz 42 foo baz foo foo foo foo foo",
    );
    cli(&mut con, "TOPK.ADD topk foo bar baz foo baz baz baz baz");
    assert_eq!(
        value(&mut con, &["TOPK.LIST", "topk"]),
        items(&["foo", "baz", "bar"])
    );
    let Value::Array(info) = value(&mut con, &["TOPK.INFO", "topk"]) else {
        panic!("an array on RESP2")
    };
    assert_eq!(info[..7], info_head(3, 8, 7));
    // RESP2 carries the double as text, written by the server (Redis 7.0:
    // "0.90000000000000002", Valkey: "0.9"): the same double either way.
    let decay: f64 = redis::from_redis_value(&info[7]).unwrap();
    assert_eq!(decay, 0.9);
}

#[test]
fn test_list_with_count() {
    let (_server, mut con) = bloom_server().with_client();
    ok(&mut con, &["TOPK.RESERVE", "topk", "3"]);
    cli(&mut con, "TOPK.ADD topk foo bar baz 42 foo bar baz");
    value(&mut con, &["TOPK.ADD", "topk", "foo", "baz", "42", "foo"]);
    value(&mut con, &["TOPK.ADD", "topk", "foo", "bar", "baz", "foo"]);
    assert_eq!(
        value(&mut con, &["TOPK.LIST", "topk", "WITHCOUNT"]),
        counted(&[("foo", 6), ("baz", 4), ("bar", 3)])
    );
}

#[test]
fn test_list_no_duplicates() {
    let (_server, mut con) = bloom_server().with_client();
    ok(&mut con, &["TOPK.RESERVE", "topk", "10", "8", "7", "1"]);
    cli(
        &mut con,
        "TOPK.ADD topk j h d j h h j g e g i f g f a j c i a d",
    );
    let listed: Vec<String> = query(&mut con, &["TOPK.LIST", "topk"]);
    let distinct: std::collections::HashSet<&String> = listed.iter().collect();
    assert_eq!(distinct.len(), listed.len(), "{listed:?}");
}

#[test]
fn test_cstring() {
    let (_server, mut con) = bloom_server().with_client();
    ok(&mut con, &["TOPK.RESERVE", "topk", "3"]);
    value(&mut con, &["TOPK.ADD", "topk", "Lets\nCrash"]);
    // A simple string cannot hold a line break: this one comes as a bulk string.
    assert_eq!(
        value(&mut con, &["TOPK.LIST", "topk"]),
        Value::Array(vec![Value::BulkString(b"Lets\nCrash".to_vec())])
    );
}

#[test]
fn test_empty_string() {
    let (_server, mut con) = bloom_server().with_client();
    ok(&mut con, &["TOPK.RESERVE", "topk", "3"]);
    value(&mut con, &["TOPK.ADD", "topk", ""]);
    assert_eq!(value(&mut con, &["TOPK.LIST", "topk"]), items(&[""]));
    assert_eq!(
        value(&mut con, &["TOPK.LIST", "topk", "withcount"]),
        counted(&[("", 1)])
    );
    assert_eq!(value(&mut con, &["TOPK.QUERY", "topk", ""]), ints(&[1]));
    assert_eq!(value(&mut con, &["TOPK.COUNT", "topk", ""]), ints(&[1]));
    value(&mut con, &["TOPK.INCRBY", "topk", "", "100"]);
    assert_eq!(
        value(&mut con, &["TOPK.LIST", "topk", "withcount"]),
        counted(&[("", 101)])
    );
    value(&mut con, &["TOPK.ADD", "topk", "foo", "bar", "baz"]);
    value(&mut con, &["TOPK.ADD", "topk", "foo", "bar", "baz", ""]);
    value(&mut con, &["TOPK.ADD", "topk", "foo", "bar", ""]);
    value(&mut con, &["TOPK.ADD", "topk", "foo", ""]);
    assert_eq!(
        value(&mut con, &["TOPK.LIST", "topk", "WITHCOUNT"]),
        counted(&[("", 104), ("foo", 4), ("bar", 3)])
    );
    assert_eq!(
        value(&mut con, &["TOPK.QUERY", "topk", "bla", "foo", ""]),
        ints(&[0, 1, 1])
    );
    cli(&mut con, "TOPK.INCRBY topk foo 500 bar 500 baz 500");
    assert_eq!(
        value(&mut con, &["TOPK.LIST", "topk", "WITHCOUNT"]),
        counted(&[("foo", 504), ("bar", 503), ("baz", 502)])
    );
}

#[test]
fn test_results_after_rdb_reload() {
    let (_server, mut con) = bloom_server().with_client();
    let mut results = Vec::new();
    for with_reload in [true, false] {
        ok(&mut con, &["FLUSHALL"]);
        // A decay this close to 1 is taken: TOPK increments are capped, so
        // each arrival's coins are too.
        ok(&mut con, &words("TOPK.RESERVE topkmyk1 1 1 1 0.99999"));
        for i in 0..2 {
            if with_reload {
                ok(&mut con, &["DEBUG", "RELOAD"]);
            }
            value(&mut con, &["TOPK.ADD", "topkmyk1", &i.to_string()]);
        }
        results.push(value(&mut con, &["TOPK.LIST", "topkmyk1"]));
    }
    assert_eq!(results[0], results[1]);
}

#[test]
fn test_reload_after_incrby_zero() {
    let (_server, mut con) = bloom_server().with_client();
    ok(&mut con, &["TOPK.RESERVE", "topk_zero", "3"]);
    value(&mut con, &["TOPK.INCRBY", "topk_zero", "myitem", "0"]);
    ok(&mut con, &["DEBUG", "RELOAD"]);
    assert_eq!(value(&mut con, &["EXISTS", "topk_zero"]), Value::Int(1));
    assert_eq!(cli(&mut con, "TOPK.INCRBY topk_zero myitem 1"), nils(1));
}

#[test]
fn test_reload_keeps_empty_string_item() {
    let (_server, mut con) = bloom_server().with_client();
    ok(&mut con, &["TOPK.RESERVE", "topk_es", "3"]);
    value(&mut con, &["TOPK.ADD", "topk_es", ""]);
    let listed = counted(&[("", 1)]);
    assert_eq!(cli(&mut con, "TOPK.LIST topk_es withcount"), listed);
    ok(&mut con, &["DEBUG", "RELOAD"]);
    assert_eq!(cli(&mut con, "TOPK.LIST topk_es withcount"), listed);
    assert_eq!(value(&mut con, &["TOPK.QUERY", "topk_es", ""]), ints(&[1]));
}

#[test]
fn test_insufficient_memory() {
    let (_server, mut con) = bloom_server().with_client();
    let e = error(&mut con, &words("TOPK.RESERVE x 3 2000000000 200000000 1"));
    assert!(
        e.contains("Insufficient memory to create topk data structure"),
        "{e}"
    );
    let e = error(&mut con, &words("TOPK.RESERVE x 3 900000000000 1 1"));
    assert!(e.contains("TopK: invalid width"), "{e}");
    let e = error(&mut con, &words("TOPK.RESERVE x 3 1 900000000000 1"));
    assert!(e.contains("TopK: invalid depth"), "{e}");
}

#[test]
fn test_overflow_k_width_depth() {
    let (_server, mut con) = bloom_server().with_client();
    for (args, expected) in [
        (["4294967296", "1", "1"], "TopK: invalid k"),
        (["1", "4294967296", "1"], "TopK: invalid width"),
        (["1", "1", "4294967296"], "TopK: invalid depth"),
    ] {
        let e = error(
            &mut con,
            &["TOPK.RESERVE", "poc", args[0], args[1], args[2], "0.1"],
        );
        assert!(e.contains(expected), "{e}");
    }
}

/// RedisBloom's own damaged DUMP of its TopK type (RedisBloom's layout,
/// written by an RDB version newer than 7.0's): the server refuses it
/// before any module sees it, as "Bad data format" where it reads that RDB
/// version and by version elsewhere, and stays up.
#[test]
fn test_rdb_load_overflow() {
    let (_server, mut con) = bloom_server().with_client();
    let rdb: &[u8] = b"\x07\x81N\x8aJ\xf96\x0f\x10\x00\x02\x00\x02\x80\x80\x00\x00\x00\x02\x80@\x00\x00\x00\x04\x00\x00\x00\x00\x00\x00\x00\x00\x05\x00\x05\x00\x00\xff\x0c\x00AuG7\xae3\xbe\xab";
    let e = error_bytes(
        &mut con,
        &[b"RESTORE", b"corrupt-filter", b"0", rdb, b"REPLACE"],
    );
    assert!(
        e.contains("Bad data format") || e.contains("payload version or checksum are wrong"),
        "{e}"
    );
    common::assert_pong(&mut con);
}

/// `test_topk_restore_corrupt_rdb.py` patches RedisBloom's heap blob; the
/// same story on this module's own payload: every byte of a one-item
/// sketch's DUMP changed in turn (checksum fixed), and whatever `RESTORE`
/// accepts answers `TOPK.QUERY`, `TOPK.COUNT` and `TOPK.ADD` with the
/// server alive.
#[test]
fn test_restore_topk_inflated_itemlen_is_safe() {
    let (_server, mut con) = bloom_server().with_client();
    ok(&mut con, &words("TOPK.RESERVE topk_il{topk} 1 1 1 0.9"));
    value(&mut con, &["TOPK.ADD", "topk_il{topk}", "a"]);
    let dump = Dump::parse(&query::<Vec<u8>>(&mut con, &["DUMP", "topk_il{topk}"]));
    let (key, probe) = (b"topk_il_corrupt{topk}", [b'A'; 200]);
    let mut accepted = 0;
    for at in 0..dump.body.len() {
        for value_at in [0xffu8, 0xc8] {
            let mut patched = dump.body.clone();
            patched[at] = value_at;
            let patched = dump.payload(&patched);
            if run::<()>(&mut con, &[b"RESTORE", key, b"0", &patched, b"REPLACE"]).is_ok() {
                accepted += 1;
                for cmd in ["TOPK.QUERY", "TOPK.COUNT", "TOPK.ADD"] {
                    let _ = run::<Value>(&mut con, &[cmd.as_bytes(), key, &probe]);
                }
            }
            common::assert_pong(&mut con);
        }
    }
    // Bytes of the counts and the random state load; the rest is refused.
    assert!(accepted > 0 && accepted < 2 * dump.body.len(), "{accepted}");
}

#[test]
fn test_topk_resp3() {
    let server = bloom_server();
    let mut con = server.client_resp3();
    value(&mut con, &["TOPK.RESERVE", "topk", "2", "50", "5", "0.9"]);
    list_info_stream(&mut con);
    assert_eq!(
        value(&mut con, &["TOPK.INFO", "topk"]),
        Value::Map(vec![
            (item("k"), Value::Int(2)),
            (item("width"), Value::Int(50)),
            (item("depth"), Value::Int(5)),
            (item("decay"), Value::Double(0.9)),
        ])
    );
    assert_eq!(
        cli(&mut con, "TOPK.QUERY topk foo bar baz dan"),
        Value::Array([true, false, true, false].map(Value::Boolean).to_vec())
    );
}

const TOPK_COMMANDS: &str =
    "topk.add topk.count topk.incrby topk.info topk.list topk.query topk.reserve";

fn acl_categories(con: &mut Connection) -> Vec<String> {
    query(con, &["ACL", "CAT"])
}

/// Servers that take module ACL categories (Redis 7.4+, Valkey) have the
/// `topk` category, with exactly the seven commands RedisBloom puts there.
#[test]
fn test_acl_category() {
    let (_server, mut con) = bloom_server().with_client();
    let categories = acl_categories(&mut con);
    if !categories.iter().any(|c| c == "heavykeeper") {
        // Redis 7.0: no module categories at all, RedisBloom's test skips too.
        assert!(!categories.iter().any(|c| c == "topk"));
        return;
    }
    assert!(categories.iter().any(|c| c == "topk"), "{categories:?}");
    let mut listed: Vec<String> = query(&mut con, &["ACL", "CAT", "topk"]);
    listed.sort();
    assert_eq!(listed, words(TOPK_COMMANDS));
    let read: Vec<String> = query(&mut con, &["ACL", "CAT", "read"]);
    assert!(read.iter().any(|c| c == "topk.query"));
}

/// A user granted `+@read` runs the reading TOPK commands and not the
/// writing ones; `+@topk` runs all seven and no `HK.*`.
#[test]
fn test_acl_non_default_user() {
    let (server, mut con) = bloom_server().with_client();
    if !acl_categories(&mut con).iter().any(|c| c == "topk") {
        return; // no module categories on this server (Redis 7.0)
    }
    ok(&mut con, &words("ACL SETUSER testusr on >123 ~* &* +auth"));
    ok(&mut con, &words("ACL SETUSER topkusr on >123 ~* &* +@topk"));
    let mut user = server.client();
    ok(&mut user, &["AUTH", "testusr", "123"]);
    let e = error(&mut user, &["TOPK.QUERY", "t", "x"]);
    assert!(
        e.contains("has no permissions to run the 'topk.query' command"),
        "{e}"
    );
    ok(&mut con, &["ACL", "SETUSER", "testusr", "+@read"]);
    for read in ["TOPK.QUERY", "TOPK.COUNT", "TOPK.LIST", "TOPK.INFO"] {
        let e = error(&mut user, &[read, "missing", "x"]);
        assert!(!e.contains("no permissions"), "{read}: {e}");
    }
    let e = error(&mut user, &["TOPK.RESERVE", "t", "3"]);
    assert!(
        e.contains("has no permissions to run the 'topk.reserve' command"),
        "{e}"
    );
    let mut topk_user = server.client();
    ok(&mut topk_user, &["AUTH", "topkusr", "123"]);
    ok(&mut topk_user, &["TOPK.RESERVE", "t", "3"]);
    assert_eq!(value(&mut topk_user, &["TOPK.ADD", "t", "foo"]), nils(1));
    assert_eq!(cli(&mut topk_user, "TOPK.QUERY t foo"), ints(&[1]));
    let e = error(&mut topk_user, &["HK.ADD", "t", "foo"]);
    assert!(e.contains("no permissions"), "{e}");
}

/// name, summary, complexity, arity, (argument name, type).
type Docs = (
    &'static str,
    &'static str,
    &'static str,
    i64,
    &'static [(&'static str, &'static str)],
);

/// The docs RedisBloom's `test_docs_help.py` reads: summary, complexity,
/// arity, since, and argument names and types.
#[test]
fn test_command_docs_topk() {
    let server = bloom_server();
    let mut con = server.client_resp3();
    let expected: [Docs; 7] = [
        (
            "topk.add",
            "Adds an item to a Top-k sketch. Multiple items can be added at the same time. If an item enters the Top-K sketch, the item that is expelled (if any) is returned",
            "O(n * k) where n is the number of items and k is the depth",
            -3,
            &[("key", "key"), ("item", "string")],
        ),
        (
            "topk.count",
            "Return the count for one or more items are in a sketch",
            "O(n) where n is the number of items",
            -3,
            &[("key", "key"), ("item", "string")],
        ),
        (
            "topk.incrby",
            "Increases the count of one or more items by increment",
            "O(n * k * incr) where n is the number of items, k is the depth and incr is the increment",
            -4,
            &[("key", "key"), ("item_increment", "block")],
        ),
        (
            "topk.info",
            "Returns number of required items (k), width, depth, and decay values of a given sketch",
            "O(1)",
            2,
            &[("key", "key")],
        ),
        (
            "topk.list",
            "Return the full list of items in Top-K sketch",
            "O(k*log(k)) where k is the value of top-k",
            -2,
            &[("key", "key"), ("withcount", "pure-token")],
        ),
        (
            "topk.query",
            "Checks whether one or more items are one of the Top-K items",
            "O(n) where n is the number of items",
            -3,
            &[("key", "key"), ("item", "string")],
        ),
        (
            "topk.reserve",
            "Initializes a Top-K sketch with specified parameters",
            "O(1)",
            -3,
            &[("key", "key"), ("topk", "integer"), ("params", "block")],
        ),
    ];
    for (name, summary, complexity, arity, args) in expected {
        let docs = command_docs(&mut con, name);
        assert_eq!(docs.get("summary"), Some(&text(summary)), "{name}");
        assert_eq!(docs.get("complexity"), Some(&text(complexity)), "{name}");
        assert_eq!(docs.get("since"), Some(&text("2.0.0")), "{name}");
        assert_eq!(docs.get("group"), Some(&text("module")), "{name}");
        let Some(Value::Array(arguments)) = docs.get("arguments") else {
            panic!("{name}: no arguments in {docs:?}")
        };
        let got: Vec<(String, String)> = arguments
            .iter()
            .map(|a| {
                let a = as_map(a);
                (as_text(&a["name"]), as_text(&a["type"]))
            })
            .collect();
        let want: Vec<(String, String)> = args
            .iter()
            .map(|(n, t)| (n.to_string(), t.to_string()))
            .collect();
        assert_eq!(got, want, "{name}");
        let info: Vec<Value> = query(&mut con, &["COMMAND", "INFO", name]);
        let Value::Array(entry) = &info[0] else {
            panic!("{info:?}")
        };
        assert_eq!(entry[1], Value::Int(arity), "{name}");
    }
}

fn text(s: &str) -> Value {
    Value::BulkString(s.as_bytes().to_vec())
}
