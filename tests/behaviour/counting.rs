//! An app team counts what its users touch: reserve a sketch, add items one at
//! a time or weighted, and ask which are in the top k and how often they came.

use test_harness as common;

use common::{cli, list_with_count, listed, query, run, value, Server};
use redis::Value;

#[test]
fn an_app_team_finds_its_hottest_keys() {
    let (_server, mut con) = Server::start().with_client();
    assert_eq!(value(&mut con, &["HK.RESERVE", "hot", "3"]), Value::Okay);
    for _ in 0..50 {
        value(&mut con, &["HK.ADD", "hot", "user:1", "user:2", "user:1"]);
    }
    cli(&mut con, "HK.ADD hot cart:9 cart:9 cart:9 tiny");

    assert_eq!(
        list_with_count(&mut con, "hot"),
        listed(&[("user:1", 100), ("user:2", 50), ("cart:9", 3)])
    );
    let listed: Vec<String> = query(&mut con, &["HK.LIST", "hot"]);
    assert_eq!(listed, vec!["user:1", "user:2", "cart:9"]);
    let present: Vec<i64> = query(&mut con, &["HK.QUERY", "hot", "user:1", "tiny", "never"]);
    assert_eq!(present, vec![1, 0, 0]);
    let counts: Vec<i64> = query(&mut con, &["HK.COUNT", "hot", "user:1", "cart:9", "never"]);
    assert_eq!(counts, vec![100, 3, 0]);
}

#[test]
fn add_reports_what_each_arrival_expelled() {
    let (_server, mut con) = Server::start().with_client();
    value(&mut con, &["HK.RESERVE", "k", "2", "SEED", "1"]);
    value(&mut con, &["HK.ADD", "k", "a", "a", "b"]);
    // "c" reaches nmin + 1 = 2 only on its second arrival and pushes out "b".
    let reply = value(&mut con, &["HK.ADD", "k", "c", "c"]);
    assert_eq!(
        reply,
        Value::Array(vec![Value::Nil, Value::BulkString(b"b".to_vec())])
    );
}

#[test]
fn items_are_binary_safe_through_every_command() {
    let (_server, mut con) = Server::start().with_client();
    value(&mut con, &["HK.RESERVE", "bin", "5"]);
    let big = vec![0xAB_u8; 1 << 20];
    let odd: Vec<Vec<u8>> = vec![
        b"".to_vec(),
        b"nul\0inside".to_vec(),
        b"crlf\r\n".to_vec(),
        big,
    ];
    for item in &odd {
        run::<Value>(&mut con, &[b"HK.INCRBY", b"bin", item, b"3"]).unwrap();
    }
    let mut expected = odd.clone();
    expected.sort();
    for reload in [false, true] {
        if reload {
            value(&mut con, &["DEBUG", "RELOAD"]);
        }
        let mut listed: Vec<Vec<u8>> = query(&mut con, &["HK.LIST", "bin"]);
        listed.sort();
        assert_eq!(listed, expected, "after reload: {reload}");
    }
    for item in &odd {
        let counts: Vec<i64> = run(&mut con, &[b"HK.COUNT", b"bin", item]).unwrap();
        assert_eq!(counts, vec![3]);
    }
}

#[test]
fn counts_stop_at_two_to_the_53_through_every_command() {
    let (_server, mut con) = Server::start().with_client();
    for key in ["k", "k2"] {
        value(&mut con, &["HK.RESERVE", key, "3", "SEED", "1"]);
    }
    value(&mut con, &["HK.INCRBY", "k", "x", "9007199254740992"]);
    cli(&mut con, "HK.INCRBY k x 3 x 9007199254740992");
    value(&mut con, &["HK.INCRBY", "k2", "x", "10"]);
    value(&mut con, &["HK.MERGE", "k", "k", "k2"]);
    let counts: Vec<i64> = query(&mut con, &["HK.COUNT", "k", "x"]);
    assert_eq!(counts, vec![9_007_199_254_740_992]);
}
