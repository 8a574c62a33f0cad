//! `--match`, `--node`, `--db` and `--sort` against a real server: a
//! pattern selects exactly the keys the server's own `SCAN ... MATCH`
//! selects (binary keys, hash tags, classes, escapes and the matcher's
//! corner cases included), and the other flags narrow and order `--once`
//! and `--json` as they say.

use test_harness as common;

use crate::support::{hk_top, hk_top_ok, key_bytes, text};
use common::{repeat, run, Cluster, Server, TRACK_EVERY_COMMAND};
use serde_json::Value as Json;
use std::collections::BTreeSet;
use std::os::unix::ffi::OsStrExt;
use std::process::Command;

/// `hk-top --json` with `args`: the keys it lists, as bytes, in order.
fn listed(args: &[&[u8]]) -> Vec<Vec<u8>> {
    let out = Command::new(env!("CARGO_BIN_EXE_hk-top"))
        .args(args.iter().map(|a| std::ffi::OsStr::from_bytes(a)))
        .args(["--json", "--count", "1000"])
        .output()
        .expect("run hk-top");
    assert!(out.status.success(), "{}", text(&out));
    let parsed: Json = serde_json::from_slice(&out.stdout).expect("JSON");
    let keys = parsed["keys"].as_array().unwrap();
    keys.iter().map(key_bytes).collect()
}

/// Every key `SCAN 0 MATCH pattern` finds, following the cursor.
fn scan(con: &mut redis::Connection, pattern: &[u8]) -> BTreeSet<Vec<u8>> {
    let mut found = BTreeSet::new();
    let mut cursor = b"0".to_vec();
    loop {
        let (next, keys): (Vec<u8>, Vec<Vec<u8>>) = run(
            con,
            &[b"SCAN", &cursor, b"MATCH", pattern, b"COUNT", b"1000"],
        )
        .expect("SCAN");
        found.extend(keys);
        if next == b"0" {
            return found;
        }
        cursor = next;
    }
}

const KEYS: &[&[u8]] = &[
    b"user:1",
    b"user:10",
    b"user:2",
    b"users:1",
    b"{user42}:cart",
    b"user42:cart",
    b"a*b",
    b"axb",
    b"h!llo",
    b"hallo",
    b"hello",
    b"x]",
    b"x\\",
    b"x-",
    b"]",
    b"^x",
    b"-",
    b"bin:\xff\x00",
    b"bin:\xfe",
    b"\xc3\xa9:1",
    b"tenant:42:cart:items",
    b"tenant:43:cart:items",
    b"",
];

const PATTERNS: &[&[u8]] = &[
    b"*",
    b"**",
    b"user:*",
    b"user:?",
    b"user:??",
    b"*:cart",
    b"{user42}*",
    b"{user42,user43}*",
    b"h[ae]llo",
    b"h[^e]llo",
    b"h[!a]llo",
    b"h[a-e]llo",
    b"h[e-a]llo",
    b"[]]",
    b"[]",
    b"x[",
    b"x[\\]]",
    b"x[ab",
    b"x[a-]",
    b"x\\",
    b"x\\\\",
    b"a\\*b",
    b"a*b",
    b"[\\^]x",
    b"[-]",
    b"bin:*",
    b"bin:?",
    b"bin:\xff*",
    b"?:1",
    b"??:1",
    b"tenant:4[2]:*",
    b"tenant:*:cart:*",
    b"*[0-9]",
    b"*x*",
    b"",
];

#[test]
fn match_selects_what_scan_match_selects() {
    let server = Server::start_configured(TRACK_EVERY_COMMAND, &[]);
    let mut con = server.client();
    for key in KEYS {
        run::<()>(&mut con, &[b"SET", key, b"v"]).unwrap();
        for _ in 0..3 {
            run::<Option<Vec<u8>>>(&mut con, &[b"GET", key]).unwrap();
        }
    }
    let port = server.port.to_string();
    let everything: BTreeSet<Vec<u8>> = listed(&[b"-p", port.as_bytes()]).into_iter().collect();
    let all_keys: BTreeSet<Vec<u8>> = KEYS.iter().map(|k| k.to_vec()).collect();
    assert_eq!(everything, all_keys, "the tracker lists every key");
    for pattern in PATTERNS {
        let by_server = scan(&mut con, pattern);
        let by_hk_top: BTreeSet<Vec<u8>> = listed(&[b"-p", port.as_bytes(), b"--match", pattern])
            .into_iter()
            .collect();
        // An empty --match is no filter; SCAN MATCH "" matches nothing.
        if pattern.is_empty() {
            assert_eq!(by_hk_top, all_keys);
            continue;
        }
        assert_eq!(
            by_hk_top,
            by_server,
            "pattern {:?}",
            String::from_utf8_lossy(pattern)
        );
    }
}

#[test]
fn db_node_and_sort_narrow_and_order_once() {
    let cluster = Cluster::start(TRACK_EVERY_COMMAND);
    // Each key on its own node (hash tags chosen by slot), reads and
    // writes in different orders.
    let keys = ["{a}:k", "{b}:k", "{c}:k"];
    for (i, key) in keys.iter().enumerate() {
        let mut con = cluster.owner_of(key).client();
        repeat(&mut con, 3 + 3 * i, &["GET", key]);
        repeat(&mut con, 9 - 3 * i, &["SET", key, "v"]);
    }
    let port = cluster.nodes[0].port.to_string();
    let p = port.as_bytes();
    let names = |args: &[&[u8]]| -> Vec<String> {
        listed(args)
            .into_iter()
            .map(|k| String::from_utf8(k).unwrap())
            .collect()
    };
    for (sort, order) in [
        ("reads", ["{c}:k", "{b}:k", "{a}:k"]),
        ("writes", ["{a}:k", "{b}:k", "{c}:k"]),
        ("key", ["{a}:k", "{b}:k", "{c}:k"]),
    ] {
        assert_eq!(
            names(&[b"-p", p, b"--sort", sort.as_bytes()]),
            order,
            "{sort}"
        );
    }
    let owner = cluster.owner_of("{b}:k").address();
    let on_owner = names(&[b"-p", p, b"--node", owner.as_bytes()]);
    assert!(on_owner.contains(&"{b}:k".to_string()), "{on_owner:?}");
    for key in &on_owner {
        assert_eq!(cluster.owner_of(key).address(), owner);
    }
    let by_port = format!("*:{}", cluster.owner_of("{b}:k").port);
    assert_eq!(names(&[b"-p", p, b"--node", by_port.as_bytes()]), on_owner);
    // Database 0 has them all, database 1 none (a cluster has only 0).
    assert_eq!(names(&[b"-p", p, b"--db", b"0"]).len(), 3);
    assert!(names(&[b"-p", p, b"--db", b"1"]).is_empty());
    // The table takes the same flags.
    let table = hk_top_ok(&["-p", &port, "--once", "--match", "{c}*"]);
    let rows: Vec<&str> = table.lines().skip(1).collect();
    assert_eq!(rows.len(), 1, "{table}");
    assert!(rows[0].starts_with("{c}:k "), "{table}");
    // A sort key that does not exist is refused, with the ones that do.
    let out = hk_top(&["-p", &port, "--once", "--sort", "hotness"], &[]);
    assert_eq!(out.status.code(), Some(2));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("total") && e.contains("writes"), "{e}");
}
