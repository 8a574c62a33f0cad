//! Replicas and independent servers fed the same commands hold identical
//! sketches: all randomness lives in the sketch and the primary fixes seeds.

use test_harness as common;

use common::{cli, config_set, digest, info_field, list_with_count, query, value, Server};
use redis::{Connection, Value};
use test_streams::zipf_stream;

/// `primary` and a replica of it loaded with `module_args`, once linked,
/// with a client of each.
fn with_replica(primary: Server, module_args: &[&str]) -> (Server, Server, Connection, Connection) {
    let replica = Server::replica_of(&primary, module_args);
    let (p, r) = (primary.client(), replica.client());
    (primary, replica, p, r)
}

/// Blocks until every replica has acknowledged everything written so far.
fn sync(primary: &mut Connection) {
    let acked: i64 = query(primary, &["WAIT", "1", "30000"]);
    assert_eq!(acked, 1, "the replica did not acknowledge in time");
}

/// 100,000 Zipf arrivals in batches, mixed with weighted increments.
fn zipf_traffic(con: &mut Connection, key: &str, fading: bool) {
    let stream = zipf_stream(1.0, 20_000, 100_000, 77);
    for (i, batch) in stream.chunks(500).enumerate() {
        let mut pipe = redis::pipe();
        let mut add = redis::cmd("HK.ADD");
        add.arg(key);
        for item in batch {
            add.arg(item.as_slice());
        }
        pipe.add_command(add).ignore();
        pipe.cmd("HK.INCRBY")
            .arg(key)
            .arg(format!("item:{}", i % 50 + 1))
            .arg(1 + (i * 7919) % 5000)
            .arg(format!("burst:{i}"))
            .arg(3)
            .ignore();
        if fading {
            // Sprinkle explicit timestamps in too, older and newer.
            pipe.cmd("HK.ADDAT")
                .arg((key, 1_000_000 + i, "backfill"))
                .ignore();
        }
        pipe.query::<()>(con).unwrap();
    }
}

#[test]
fn a_replica_ends_identical_to_its_primary() {
    let (_primary, _replica, mut p, mut r) = with_replica(Server::start(), &[]);
    // No SEED: the primary picks one and replicates it.
    value(&mut p, &["HK.RESERVE", "hot", "100"]);
    zipf_traffic(&mut p, "hot", false);
    sync(&mut p);
    assert_eq!(digest(&mut p, "hot"), digest(&mut r, "hot"));
    let listed = list_with_count(&mut p, "hot");
    assert_eq!(listed.len(), 100);
    assert_eq!(list_with_count(&mut r, "hot"), listed);
    let dump_p: Vec<u8> = query(&mut p, &["DUMP", "hot"]);
    let dump_r: Vec<u8> = query(&mut r, &["DUMP", "hot"]);
    assert_eq!(dump_p, dump_r);
}

#[test]
fn a_fading_replica_applies_the_primarys_timestamps() {
    let (_primary, _replica, mut p, mut r) = with_replica(Server::start(), &[]);
    value(&mut p, &["HK.RESERVE", "recent", "50", "HALFLIFE", "0.05"]);
    zipf_traffic(&mut p, "recent", true);
    sync(&mut p);
    assert_eq!(digest(&mut p, "recent"), digest(&mut r, "recent"));
    // Read both as of the same moment (each server's own clock differs).
    let Value::Int(clock) = common::hk_info(&mut p, "recent")["clock"] else {
        panic!("a fading sketch has a clock");
    };
    let listed = common::list_with_count_at(&mut p, "recent", Some(clock));
    assert!(!listed.is_empty());
    assert_eq!(
        common::list_with_count_at(&mut r, "recent", Some(clock)),
        listed
    );
}

#[test]
fn two_servers_fed_the_same_commands_hold_byte_identical_sketches() {
    let a = Server::start();
    let b = Server::start();
    let mut dumps = Vec::new();
    for server in [&a, &b] {
        let mut con = server.client();
        // The seed and creation time are the two inputs a server would
        // otherwise choose itself (replicas and the AOF get them explicitly).
        cli(&mut con, "HK.RESERVE s 100 SEED 2024 CREATED 1700000000000");
        zipf_traffic(&mut con, "s", false);
        dumps.push(query::<Vec<u8>>(&mut con, &["DUMP", "s"]));
    }
    assert_eq!(dumps[0], dumps[1]);
}

#[test]
fn a_failed_command_replicates_nothing() {
    // No pings to replicas during the test: only commands move the offset.
    let primary = Server::start_with(&["--repl-ping-replica-period", "3600"]);
    let _replica = Server::replica_of(&primary, &[]);
    let mut p = primary.client();
    value(&mut p, &["HK.RESERVE", "k", "5", "SEED", "1"]);
    sync(&mut p);
    let offset = |p: &mut Connection| info_field(p, "replication", "master_repl_offset").unwrap();
    let before = offset(&mut p);
    for bad in [
        vec!["HK.INCRBY", "k", "a", "1", "b", "0"],
        vec!["HK.RESERVE", "k", "5"],
        vec!["HK.RESERVE", "n", "0"],
        vec!["HK.ADD", "missing", "a"],
    ] {
        common::error(&mut p, &bad);
    }
    assert_eq!(offset(&mut p), before);
    // The measure can tell: one successful write moves it.
    value(&mut p, &["HK.ADD", "k", "a"]);
    assert_ne!(offset(&mut p), before);
}

#[test]
fn a_replica_with_a_lower_size_cap_still_applies_what_the_primary_accepted() {
    let (_primary, _replica, mut p, mut r) =
        with_replica(Server::start(), &["max-sketch-bytes", "1024"]);
    value(&mut p, &["HK.RESERVE", "big", "100", "WIDTH", "20000"]);
    value(&mut p, &["HK.ADD", "big", "a", "b", "a"]);
    let blob = common::empty_sketch_payload(
        heavykeeper_sketch::Params {
            width: 20000,
            ..heavykeeper_sketch::Params::for_k(100, 1)
        },
        1_700_000_000_000,
    );
    common::run::<Value>(&mut p, &[b"HK.LOADSTATE", b"loaded", &blob]).unwrap();
    sync(&mut p);
    for key in ["big", "loaded"] {
        assert_eq!(digest(&mut p, key), digest(&mut r, key), "{key}");
    }
    assert_eq!(list_with_count(&mut r, "big")[0], (b"a".to_vec(), 2));
    // A client of the replica is still held to the replica's cap.
    config_set(&mut r, "replica-read-only", "no");
    let e = common::error(&mut r, &["HK.RESERVE", "mine", "100", "WIDTH", "20000"]);
    assert!(e.starts_with("ERR sketch would take"), "{e}");
}

#[test]
fn a_replica_applies_the_primarys_timestamps_whatever_its_own_window() {
    let (_primary, _replica, mut p, mut r) = with_replica(
        Server::start_configured(&["max-future-ms", "253402300799999"], &[]),
        &[],
    );
    let year_2100 = "4102444800000";
    cli(
        &mut p,
        &format!("HK.RESERVE f 5 HALFLIFE 10 CREATED {year_2100}"),
    );
    value(&mut p, &["HK.ADDAT", "f", year_2100, "x"]);
    sync(&mut p);
    assert_eq!(digest(&mut p, "f"), digest(&mut r, "f"));
}

#[test]
fn a_panic_mid_command_replicates_exactly_what_was_applied() {
    needs_fault_hooks!();
    let (primary, _replica, mut p, mut r) = with_replica(Server::start(), &[]);
    value(&mut p, &["HK.RESERVE", "k", "5", "SEED", "1"]);
    cli(&mut p, "HK.RESERVE f 5 SEED 1 HALFLIFE 60");
    let poison = "heavykeeper:fault:panic-on-add";
    for key in ["k", "f"] {
        common::error(&mut p, &["HK.INCRBY", key, "a", "3", poison, "1", "c", "5"]);
    }
    sync(&mut p);
    for key in ["k", "f"] {
        assert_eq!(digest(&mut p, key), digest(&mut r, key), "{key}");
    }
    assert_eq!(list_with_count(&mut r, "k"), vec![(b"a".to_vec(), 3)]);
    assert!(primary.log().contains("an arrival panicked"));
}

#[test]
fn a_merge_replicates_to_an_identical_result() {
    let (_primary, _replica, mut p, mut r) = with_replica(Server::start(), &[]);
    for key in ["all", "east", "west"] {
        value(&mut p, &["HK.RESERVE", key, "50", "SEED", "99"]);
    }
    zipf_traffic(&mut p, "east", false);
    zipf_traffic(&mut p, "west", false);
    value(&mut p, &["HK.MERGE", "all", "east", "west"]);
    sync(&mut p);
    assert_eq!(digest(&mut p, "all"), digest(&mut r, "all"));
    assert_eq!(
        list_with_count(&mut p, "all"),
        list_with_count(&mut r, "all")
    );
}

#[test]
fn topk_writes_reach_a_replica_without_topk_compat_as_hk_commands() {
    let primary = Server::start_configured(&["topk-compat", "yes"], &[]);
    let replica = Server::replica_of(&primary, &[]);
    let mut con = primary.client();
    value(&mut con, &["TOPK.RESERVE", "t", "5", "64", "4", "0.925"]);
    value(&mut con, &["TOPK.RESERVE", "d", "3"]);
    for i in 0..200 {
        let item = format!("i{}", i % 17 % (1 + i % 5));
        value(&mut con, &["TOPK.ADD", "t", &item, "x", &item]);
        cli(&mut con, &format!("TOPK.INCRBY d {item} {} zero 0", i % 4));
    }
    sync(&mut con);
    let mut on_replica = replica.client();
    for key in ["t", "d"] {
        assert_eq!(digest(&mut con, key), digest(&mut on_replica, key), "{key}");
        // The tie rule travels with TOPK.RESERVE's replicated HK.RESERVE.
        assert_eq!(
            common::hk_info(&mut on_replica, key)["ties"],
            Value::SimpleString("redisbloom".into())
        );
        assert_eq!(
            value(&mut con, &["HK.LIST", key, "WITHCOUNT"]),
            value(&mut on_replica, &["HK.LIST", key, "WITHCOUNT"])
        );
    }
    // `zero` only ever arrived with weight 0: it was never counted.
    assert_eq!(
        value(&mut on_replica, &["HK.COUNT", "d", "zero"]),
        Value::Array(vec![Value::Int(0)])
    );
}
