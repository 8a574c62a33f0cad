//! A sketch is a Redis key like any other: it has a type, expires, renames,
//! copies deeply and tells keyspace subscribers when it is written.

use test_harness as common;

use common::{config_set, digest, error, list_with_count, query, value, Server};
use redis::Commands;

#[test]
fn a_sketch_has_its_type_and_expires_and_renames_like_any_key() {
    let (_server, mut con) = Server::start().with_client();
    value(&mut con, &["HK.RESERVE", "typed", "5"]);
    let kind: String = query(&mut con, &["TYPE", "typed"]);
    assert_eq!(kind, "heavykeep");
    let _: () = con.expire("typed", 100).unwrap();
    let ttl: i64 = con.ttl("typed").unwrap();
    assert!(ttl > 0);
    let _: () = con.rename("typed", "renamed").unwrap();
    assert_eq!(list_with_count(&mut con, "renamed").len(), 0);
    assert_eq!(error(&mut con, &["HK.LIST", "typed"]), "ERR no such key");
}

#[test]
fn copy_makes_an_independent_deep_copy() {
    let (_server, mut con) = Server::start().with_client();
    value(&mut con, &["HK.RESERVE", "src", "5"]);
    value(&mut con, &["HK.ADD", "src", "a", "a", "b"]);
    let copied: i64 = query(&mut con, &["COPY", "src", "dst"]);
    assert_eq!(copied, 1);
    assert_eq!(digest(&mut con, "src"), digest(&mut con, "dst"));
    value(&mut con, &["HK.ADD", "dst", "c"]);
    assert_ne!(digest(&mut con, "src"), digest(&mut con, "dst"));
    assert_eq!(list_with_count(&mut con, "src").len(), 2);
    assert_eq!(list_with_count(&mut con, "dst").len(), 3);
    let _: () = con.del("src").unwrap();
    assert_eq!(list_with_count(&mut con, "dst").len(), 3);
}

#[test]
fn writes_notify_keyspace_subscribers() {
    let (server, mut con) = Server::start().with_client();
    config_set(&mut con, "notify-keyspace-events", "Ed");
    let mut listener = server.client();
    let mut pubsub = listener.as_pubsub();
    pubsub.subscribe("__keyevent@0__:hk.add").unwrap();
    pubsub.subscribe("__keyevent@0__:hk.reserve").unwrap();
    pubsub
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    value(&mut con, &["HK.RESERVE", "watched", "5"]);
    value(&mut con, &["HK.INCRBY", "watched", "a", "3"]);
    let events: Vec<String> = (0..2)
        .map(|_| {
            let msg = pubsub.get_message().expect("a keyspace event");
            let key: String = msg.get_payload().unwrap();
            format!("{} {key}", msg.get_channel_name())
        })
        .collect();
    let expected = ["hk.reserve watched", "hk.add watched"].map(|e| format!("__keyevent@0__:{e}"));
    assert_eq!(events, expected);
}
