//! Bad input gets a clear error with a standard prefix, changes nothing, and
//! never takes the server down.

mod common;

use common::{digest, error, value, Server};
use redis::Value;

#[test]
fn wrong_arity_uses_the_standard_message() {
    let server = Server::start();
    let mut con = server.client();
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
        &["HK.LIST", "k", "WITHCOUNT", "WITHRATE", "AT", "1", "extra"],
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
    let server = Server::start();
    let mut con = server.client();
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
    let server = Server::start();
    let mut con = server.client();
    value(&mut con, &["SET", "str", "v"]);
    value(&mut con, &["HK.RESERVE", "hk", "2"]);
    assert_eq!(
        error(&mut con, &["HK.RESERVE", "str", "2"]),
        "ERR key already exists"
    );
    assert_eq!(
        error(&mut con, &["HK.RESERVE", "hk", "2"]),
        "ERR key already exists"
    );
    let bad: &[(&[&str], &str)] = &[
        (&["HK.RESERVE", "n", "0"], "ERR k must be"),
        (&["HK.RESERVE", "n", "-1"], "ERR k must be"),
        (&["HK.RESERVE", "n", "ten"], "ERR k must be"),
        (&["HK.RESERVE", "n", "99999999999"], "ERR k must be"),
        (&["HK.RESERVE", "n", "5", "WIDTH", "0"], "ERR WIDTH must be"),
        (
            &["HK.RESERVE", "n", "5", "DEPTH", "17"],
            "ERR DEPTH must be",
        ),
        (&["HK.RESERVE", "n", "5", "DECAY", "0"], "ERR DECAY must be"),
        (
            &["HK.RESERVE", "n", "5", "DECAY", "1.01"],
            "ERR DECAY must be",
        ),
        (
            &["HK.RESERVE", "n", "5", "DECAY", "nan"],
            "ERR DECAY must be",
        ),
        (&["HK.RESERVE", "n", "5", "SEED", "-3"], "ERR SEED must be"),
        (
            &["HK.RESERVE", "n", "5", "HALFLIFE", "0"],
            "ERR HALFLIFE must be",
        ),
        (&["HK.RESERVE", "n", "5", "ALPHA", "1"], "ERR ALPHA must be"),
        (
            &["HK.RESERVE", "n", "5", "HALFLIFE", "10", "ALPHA", "0.1"],
            "ERR give HALFLIFE or ALPHA",
        ),
        (
            &["HK.RESERVE", "n", "5", "WIDTH", "10", "WIDTH", "20"],
            "ERR option WIDTH given twice",
        ),
        (
            &["HK.RESERVE", "n", "5", "COLOUR", "blue"],
            "ERR unknown option",
        ),
        (
            &["HK.RESERVE", "n", "5", "WIDTH", "1073741824", "DEPTH", "16"],
            "ERR sketch would take",
        ),
    ];
    for (cmd, prefix) in bad {
        let e = error(&mut con, cmd);
        assert!(e.starts_with(prefix), "{cmd:?}: {e}");
    }
    let exists: i64 = redis::cmd("EXISTS").arg("n").query(&mut con).unwrap();
    assert_eq!(exists, 0, "a failed RESERVE created nothing");
}

#[test]
fn a_failing_incrby_applies_nothing() {
    let server = Server::start();
    let mut con = server.client();
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

#[test]
fn list_options_are_checked() {
    let server = Server::start();
    let mut con = server.client();
    value(&mut con, &["HK.RESERVE", "k", "5"]);
    for bad in [
        vec!["HK.LIST", "k", "WITHCOUNTS"],
        vec!["HK.LIST", "k", "WITHCOUNT", "withcount"],
    ] {
        assert!(error(&mut con, &bad).starts_with("ERR unknown or repeated option"));
    }
    assert_eq!(
        value(&mut con, &["HK.LIST", "k", "withcount"]),
        Value::Array(vec![])
    );
}

#[test]
fn load_state_refuses_garbage_and_existing_keys() {
    let mut server = Server::start();
    let mut con = server.client();
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
