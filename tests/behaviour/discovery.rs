//! An operator or a developer finds out what the module offers the way they
//! would for a built-in: `COMMAND DOCS`, `INFO`, and typed replies.

use test_harness as common;

use common::{cli, info_field, info_number, query, value, wait_for_lazy_frees, words, Server};
use redis::Value;
use std::collections::HashMap;

use crate::{as_text, command_docs};

#[test]
fn every_command_is_documented() {
    let (_server, mut con) = Server::start().with_client();
    let names: Vec<String> = query(&mut con, &words("COMMAND LIST FILTERBY MODULE heavykeeper"));
    assert_eq!(names.len(), 17, "{names:?}");
    for name in &names {
        let d = command_docs(&mut con, name);
        for field in ["summary", "since", "complexity", "group"] {
            let v = d.get(field).map(as_text).unwrap_or_default();
            assert!(!v.is_empty(), "{name}: no {field}");
        }
        assert_eq!(as_text(&d["group"]), "module", "{name}");
        if name != "hk.hotkeys" {
            let Some(Value::Array(args)) = d.get("arguments") else {
                panic!("{name}: no arguments");
            };
            assert!(!args.is_empty(), "{name}");
        }
    }
    // The arguments a client shows as hints.
    let list = command_docs(&mut con, "hk.list");
    let rendered = format!("{:?}", list["arguments"]);
    for token in ["WITHCOUNT", "WITHRATE", "AT", "COUNT"] {
        assert!(rendered.contains(token), "{token} in {rendered}");
    }
}

#[test]
fn info_heavykeeper_reports_sketches_memory_arrivals_and_refusals() {
    let (_server, mut con) = Server::start().with_client();
    let field = |con: &mut redis::Connection, f: &str| -> i64 {
        info_number(con, "heavykeeper", &format!("heavykeeper_{f}"))
    };
    assert_eq!(field(&mut con, "sketches"), 0);
    value(&mut con, &["HK.RESERVE", "a", "100"]);
    value(&mut con, &["HK.RESERVE", "b", "10"]);
    value(&mut con, &["HK.ADD", "a", "x", "y", "x"]);
    cli(&mut con, "HK.INCRBY b long-item-name-of-some-length 40");
    assert_eq!(field(&mut con, "sketches"), 2);
    assert_eq!(field(&mut con, "arrivals_counted"), 43);
    let usage =
        |con: &mut redis::Connection, key: &str| -> i64 { query(con, &["MEMORY", "USAGE", key]) };
    let memory = field(&mut con, "sketch_memory_bytes");
    let both = usage(&mut con, "a") + usage(&mut con, "b");
    // MEMORY USAGE adds the key's own overhead (name, object) to the sketch.
    assert!(memory <= both && memory > both - 200, "{memory} vs {both}");

    // Copies, restores, deletes and reloads keep the figures right.
    value(&mut con, &["COPY", "a", "c"]);
    assert_eq!(field(&mut con, "sketches"), 3);
    value(&mut con, &["DEL", "a"]);
    value(&mut con, &["DEBUG", "RELOAD"]);
    wait_for_lazy_frees(&mut con);
    assert_eq!(field(&mut con, "sketches"), 2);
    let memory = field(&mut con, "sketch_memory_bytes");
    let both = usage(&mut con, "b") + usage(&mut con, "c");
    assert!(memory <= both && memory > both - 200, "{memory} vs {both}");

    let refused_before = field(&mut con, "commands_refused_by_limits");
    common::error(&mut con, &words("HK.RESERVE huge 10000000 WIDTH 268435456"));
    let tomorrow = (common::now_ms() + 86_400_000).to_string();
    common::error(&mut con, &["HK.ADDAT", "b", &tomorrow, "x"]);
    assert_eq!(
        field(&mut con, "commands_refused_by_limits"),
        refused_before + 2
    );
    // The tracker's and watchers' sections are there too.
    assert!(info_field(&mut con, "heavykeeper", "heavykeeper_watched_keys").is_some());
    assert!(info_field(&mut con, "heavykeeper", "heavykeeper_tracker_commands_seen").is_some());
}

#[test]
fn hk_info_answers_numbers_on_resp3_and_strings_on_resp2() {
    let server = Server::start();
    let mut con = server.client_resp3();
    cli(
        &mut con,
        "HK.RESERVE f 10 DECAY 0.925 HALFLIFE 30 SEED 18446744073709551615",
    );
    // Two arrivals: one alone fades below one arrival (and leaves the list)
    // a millisecond later, and HK.INFO may read in the next millisecond.
    value(&mut con, &["HK.INCRBY", "f", "a", "2"]);
    let Value::Map(pairs) = value(&mut con, &["HK.INFO", "f"]) else {
        panic!("HK.INFO is a map on RESP3");
    };
    let info: HashMap<String, Value> = pairs
        .into_iter()
        .map(|(k, v)| (redis::from_redis_value(&k).unwrap(), v))
        .collect();
    assert_eq!(info["decay"], Value::Double(0.925));
    assert_eq!(info["halflife"], Value::Double(30.0));
    assert!(
        matches!(info["lambda"], Value::Double(_)),
        "{:?}",
        info["lambda"]
    );
    assert_eq!(info["k"], Value::Int(10));
    assert_eq!(info["arrivals"], Value::Int(2));
    assert_eq!(info["members"], Value::Int(1));
    // Beyond a signed 64-bit integer: a big number.
    assert!(
        matches!(info["seed"], Value::BigNumber(_)),
        "{:?}",
        info["seed"]
    );

    let mut resp2 = server.client();
    let flat = common::hk_info(&mut resp2, "f");
    assert_eq!(as_text(&flat["decay"]), "0.925");
    assert_eq!(as_text(&flat["halflife"]), "30");
    assert_eq!(as_text(&flat["seed"]), "18446744073709551615");
    assert_eq!(flat["k"], Value::Int(10));
}
