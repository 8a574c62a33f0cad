//! Bad input gets a clear error with a standard prefix, changes nothing, and
//! never takes the server down.

use test_harness as common;

use common::{cli, config_set, digest, error, error_bytes, query, value, words, Server};
use redis::Value;

#[test]
fn wrong_arity_uses_the_standard_message() {
    let (_server, mut con) = Server::start().with_client();
    value(&mut con, &["HK.RESERVE", "k", "3"]);
    let cases: &[&[&str]] = &[
        &["HK.RESERVE"],
        &["HK.RESERVE", "k"],
        &["HK.RESERVE", "x", "3", "WIDTH"],
        &["HK.ADD", "k"],
        &["HK.INCRBY", "k", "a"],
        &["HK.INCRBY", "k", "a", "1", "b"],
        &["HK.ADDAT", "k", "1"],
        &["HK.INCRBYAT", "k", "1", "a"],
        &["HK.QUERY", "k"],
        &["HK.COUNT", "k"],
        &["HK.RATE", "k"],
        &["HK.LIST"],
        &words("HK.LIST k WITHCOUNT WITHRATE AT 1 COUNT 2 extra"),
        &["HK.LIST", "k", "AT"],
        &["HK.INFO"],
        &["HK.INFO", "k", "extra"],
        &["HK.LOADSTATE", "k"],
        &["HK.MERGE", "k"],
    ];
    for case in cases {
        let e = error(&mut con, case);
        let name = case[0].to_lowercase();
        assert_eq!(
            e,
            format!("ERR wrong number of arguments for '{name}' command"),
            "{case:?}"
        );
    }
}

#[test]
fn another_type_is_wrongtype_and_a_missing_key_is_err() {
    let (_server, mut con) = Server::start().with_client();
    value(&mut con, &["SET", "str", "v"]);
    let wrongtype = "WRONGTYPE Operation against a key holding the wrong kind of value";
    for cmd in [
        vec!["HK.ADD", "str", "a"],
        vec!["HK.INCRBY", "str", "a", "2"],
        vec!["HK.ADDAT", "str", "1000", "a"],
        vec!["HK.QUERY", "str", "a"],
        vec!["HK.COUNT", "str", "a"],
        vec!["HK.RATE", "str", "a"],
        vec!["HK.LIST", "str"],
        vec!["HK.INFO", "str"],
    ] {
        assert_eq!(error(&mut con, &cmd), wrongtype, "{cmd:?}");
        let mut missing = cmd.clone();
        missing[1] = "missing";
        assert_eq!(error(&mut con, &missing), "ERR no such key", "{missing:?}");
    }
    // Other types' commands refuse a sketch the same way.
    value(&mut con, &["HK.RESERVE", "hk", "2"]);
    assert_eq!(error(&mut con, &["GET", "hk"]), wrongtype);
    assert_eq!(error(&mut con, &["LPUSH", "hk", "x"]), wrongtype);
}

#[test]
fn reserve_refuses_existing_keys_and_bad_parameters() {
    let (_server, mut con) = Server::start().with_client();
    value(&mut con, &["SET", "str", "v"]);
    value(&mut con, &["HK.RESERVE", "hk", "2"]);
    for key in ["str", "hk"] {
        let e = error(&mut con, &["HK.RESERVE", key, "2"]);
        assert_eq!(e, "ERR key already exists", "{key}");
    }
    let alpha_and_halflife = "ERR unknown or repeated option 'ALPHA': expected WIDTH, DEPTH, DECAY, SEED, HALFLIFE or ALPHA, CREATED, TIES";
    // `HK.RESERVE n` with these arguments, and how its error starts.
    let bad = [
        ("0", "ERR k must be"),
        ("-1", "ERR k must be"),
        ("ten", "ERR k must be"),
        ("99999999999", "ERR k must be"),
        ("5 WIDTH 0", "ERR WIDTH must be"),
        ("5 DEPTH 17", "ERR DEPTH must be"),
        ("5 DECAY 0", "ERR DECAY must be"),
        ("5 DECAY 1.01", "ERR DECAY must be"),
        ("5 DECAY nan", "ERR DECAY must be"),
        ("5 SEED -3", "ERR SEED must be"),
        ("5 HALFLIFE 0", "ERR HALFLIFE must be"),
        ("5 ALPHA 1", "ERR ALPHA must be"),
        ("5 HALFLIFE 10 ALPHA 0.1", alpha_and_halflife),
        (
            "5 WIDTH 10 WIDTH 20",
            "ERR unknown or repeated option 'WIDTH'",
        ),
        ("5 COLOUR blue", "ERR unknown or repeated option 'COLOUR'"),
        ("5 WIDTH 1073741824 DEPTH 16", "ERR sketch would take"),
    ];
    for (args, prefix) in bad {
        let e = error(&mut con, &words(&format!("HK.RESERVE n {args}")));
        assert!(e.starts_with(prefix), "{args}: {e}");
    }
    let exists: i64 = query(&mut con, &["EXISTS", "n"]);
    assert_eq!(exists, 0, "a failed RESERVE created nothing");
}

#[test]
fn a_failing_incrby_applies_nothing() {
    let (_server, mut con) = Server::start().with_client();
    value(&mut con, &["HK.RESERVE", "k", "5"]);
    value(&mut con, &["HK.INCRBY", "k", "a", "3"]);
    let before = digest(&mut con, "k");
    for bad in ["0", "-1", "1.5", "x", "9007199254740993", ""] {
        let e = error(&mut con, &["HK.INCRBY", "k", "a", "10", "b", bad]);
        assert!(e.starts_with("ERR increment must be"), "{bad}: {e}");
        let e = error(&mut con, &["HK.INCRBYAT", "k", "1000", "a", "10", "b", bad]);
        assert!(e.starts_with("ERR increment must be"), "{bad}: {e}");
    }
    for bad in ["-1", "soon", "253402300800000"] {
        let e = error(&mut con, &["HK.ADDAT", "k", bad, "a"]);
        assert!(e.starts_with("ERR timestamp"), "{bad}: {e}");
    }
    assert_eq!(digest(&mut con, "k"), before);
}

/// A decay between 0.999 and 1 is taken, with each increment capped at
/// 100,000 (RedisBloom's cap): every unit of weight can cost a coin per row,
/// and the cap keeps one arrival's work bounded. Past it nothing applies.
#[test]
fn a_decay_close_to_one_caps_each_increment() {
    let (_server, mut con) = Server::start().with_client();
    value(&mut con, &["HK.RESERVE", "c", "5", "DECAY", "0.99999"]);
    value(&mut con, &["HK.INCRBY", "c", "a", "100000"]);
    let before = digest(&mut con, "c");
    let e = error(&mut con, &["HK.INCRBY", "c", "b", "1", "a", "100001"]);
    assert!(e.starts_with("ERR increment above 100000"), "{e}");
    let e = error(&mut con, &["HK.INCRBYAT", "c", "1000", "a", "100001"]);
    assert!(e.starts_with("ERR increment above 100000"), "{e}");
    assert_eq!(digest(&mut con, "c"), before);
    // A decay of 0.999 or 1 keeps the full range.
    for decay in ["0.999", "1"] {
        value(&mut con, &["HK.RESERVE", decay, "5", "DECAY", decay]);
        value(&mut con, &["HK.INCRBY", decay, "a", "9007199254740992"]);
    }
}

#[test]
fn list_options_are_checked() {
    let (_server, mut con) = Server::start().with_client();
    value(&mut con, &["HK.RESERVE", "k", "5"]);
    for bad in [
        vec!["HK.LIST", "k", "WITHCOUNTS"],
        vec!["HK.LIST", "k", "WITHCOUNT", "withcount"],
    ] {
        assert!(error(&mut con, &bad).starts_with("ERR unknown or repeated option"));
    }
    assert_eq!(cli(&mut con, "HK.LIST k withcount"), Value::Array(vec![]));
}

#[test]
fn load_state_refuses_garbage_and_existing_keys() {
    let (mut server, mut con) = Server::start().with_client();
    value(&mut con, &["HK.RESERVE", "k", "5"]);
    for garbage in ["", "\u{1}", "junk that is not a sketch", "\u{9}newer"] {
        let e = error(&mut con, &["HK.LOADSTATE", "new", garbage]);
        assert!(
            e.starts_with("ERR corrupt sketch payload") || e.starts_with("ERR encoding version"),
            "{e}"
        );
    }
    assert!(error(&mut con, &["HK.LOADSTATE", "k", "x"]).starts_with("ERR key already exists"));
    assert!(server.is_alive());
}

#[test]
fn client_bytes_in_errors_are_escaped_and_never_crash_the_server() {
    let (mut server, mut con) = Server::start().with_client();
    value(&mut con, &["HK.RESERVE", "a", "10"]);
    value(&mut con, &["HK.RESERVE", "b", "10"]);
    let cases: &[(&[&[u8]], &str)] = &[
        (&[b"HK.LIST", b"a", "Ā".as_bytes()], "'\\xc4\\x80'"),
        (&[b"HK.LIST", b"a", b"x\x00\r\n"], "'x\\x00\\x0d\\x0a'"),
        (
            &[b"HK.RESERVE", b"n", b"5", "Ā\u{4e00}".as_bytes(), b"1"],
            "'\\xc4\\x80\\xe4\\xb8\\x80'",
        ),
        (
            &[b"HK.RESERVE", b"n", b"5", b"wid\xffth", b"1"],
            "'wid\\xffth'",
        ),
        (
            &[b"HK.MERGE", b"d", "Ā".as_bytes(), "Ā".as_bytes()],
            "'\\xc4\\x80'",
        ),
    ];
    for (cmd, quoted) in cases {
        let e = error_bytes(&mut con, cmd);
        assert!(e.starts_with("ERR "), "{e}");
        // Printable ASCII only.
        assert!(e.bytes().all(|b| (0x20..=0x7e).contains(&b)), "{e:?}");
        assert!(e.contains(quoted), "{e} should quote {quoted}");
    }
    let long = vec![0xffu8; 70_000];
    let e = error_bytes(&mut con, &[b"HK.LIST", b"a", &long]);
    assert!(e.len() < 400 && e.contains("..."), "{}", e.len());
    assert!(server.is_alive(), "{}", server.log());
    common::assert_pong(&mut con);
}

#[test]
fn timestamps_far_ahead_of_the_clock_are_refused_from_clients() {
    let (_server, mut con) = Server::start().with_client();
    value(&mut con, &["HK.RESERVE", "f", "5", "HALFLIFE", "10"]);
    let now = common::now_ms();
    let year_2100 = "4102444800000";
    let tomorrow = (now + 86_400_000).to_string();
    let before = digest(&mut con, "f");
    for cmd in [
        vec!["HK.ADDAT", "f", year_2100, "x"],
        vec!["HK.INCRBYAT", "f", &tomorrow, "x", "3"],
        words(&format!("HK.RESERVE g 5 HALFLIFE 10 CREATED {year_2100}")),
    ] {
        let e = error(&mut con, &cmd);
        assert!(e.contains("ahead of the server clock"), "{cmd:?}: {e}");
        assert!(e.contains("heavykeeper.max-future-ms allows 60000"), "{e}");
    }
    assert_eq!(digest(&mut con, "f"), before);
    // Within the window (a client whose clock runs a little fast): fine.
    cli(&mut con, &format!("HK.ADDAT f {} x", now + 5_000));
    // The window is a config.
    config_set(&mut con, "heavykeeper.max-future-ms", "172800000");
    value(&mut con, &["HK.ADDAT", "f", &tomorrow, "x"]);
    let listed = common::list_with_count_at(&mut con, "f", Some(now + 86_400_000));
    assert_eq!(listed[0].0, b"x");
}

#[test]
fn a_panic_in_the_middle_of_add_is_one_error_and_the_connection_stays_in_step() {
    needs_fault_hooks!();
    let (mut server, mut con) = Server::start().with_client();
    value(&mut con, &["HK.RESERVE", "k", "5", "SEED", "1"]);
    let panic_item = "heavykeeper:fault:panic-on-add";
    for resp3 in [false, true] {
        let mut con = if resp3 {
            server.client_resp3()
        } else {
            server.client()
        };
        let e = error(&mut con, &["HK.ADD", "k", "a", "b", panic_item, "c"]);
        assert_eq!(
            e,
            "ERR internal error in the heavykeeper module after 2 of 4 arrivals (those were applied)"
        );
        // The very next reply on this connection is the next command's.
        assert_eq!(
            value(&mut con, &["ECHO", "in step"]),
            Value::BulkString(b"in step".to_vec())
        );
    }
    assert!(server.is_alive());
    let counted = common::list_with_count(&mut con, "k");
    assert_eq!(counted, common::listed(&[("a", 2), ("b", 2)]));
}
