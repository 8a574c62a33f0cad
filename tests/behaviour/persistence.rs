//! Sketches survive every persistence path unchanged, and damaged payloads
//! are refused without crashing the server.

use test_harness as common;

use common::{
    cli, config_set, digest, error, hk_info, list_with_count, listed, query, restore, run, value,
    Server,
};
use heavykeeper_sketch::ENCODING_VERSION;
use redis::{Connection, Value};

/// A sketch with members, weighted arrivals, binary items and a random
/// default seed (so replay must carry the seed the primary chose).
fn fill(con: &mut Connection, key: &str) {
    value(con, &["HK.RESERVE", key, "20", "WIDTH", "64", "DEPTH", "3"]);
    for round in 0..30 {
        let mut cmd = redis::cmd("HK.ADD");
        cmd.arg(key);
        for i in 0..40 {
            cmd.arg(format!("item:{}", (i * i + round) % 97));
        }
        let _: Value = cmd.query(con).unwrap();
        value(con, &["HK.INCRBY", key, &format!("heavy:{round}"), "12345"]);
    }
    run::<Value>(con, &[b"HK.ADD", key.as_bytes(), b"bin\0\r\n"]).unwrap();
}

/// What must be equal before and after: digest, listing and info.
type Snapshot = (String, Vec<(Vec<u8>, i64)>, Vec<Value>);

fn snapshot(con: &mut Connection, key: &str) -> Snapshot {
    let info: Vec<Value> = query(con, &["HK.INFO", key]);
    let info = info
        .chunks(2)
        .filter(|p| p[0] != Value::BulkString(b"memory".to_vec()))
        .flat_map(|p| p.to_vec())
        .collect();
    (digest(con, key), list_with_count(con, key), info)
}

#[test]
fn debug_reload_gives_back_the_same_sketch() {
    let (_server, mut con) = Server::start().with_client();
    fill(&mut con, "s");
    let before = snapshot(&mut con, "s");
    let dump_before: Vec<u8> = query(&mut con, &["DUMP", "s"]);
    value(&mut con, &["DEBUG", "RELOAD"]);
    assert_eq!(snapshot(&mut con, "s"), before);
    let dump_after: Vec<u8> = query(&mut con, &["DUMP", "s"]);
    assert_eq!(dump_after, dump_before);
    // The random state survived too: the next arrivals play out the same.
    value(&mut con, &["COPY", "s", "t"]);
    for key in ["s", "t"] {
        fill_more(&mut con, key);
    }
    assert_eq!(digest(&mut con, "s"), digest(&mut con, "t"));
}

fn fill_more(con: &mut Connection, key: &str) {
    for i in 0..500 {
        value(con, &["HK.ADD", key, &format!("late:{}", i % 37)]);
    }
}

#[test]
fn a_restart_from_rdb_gives_back_the_same_sketch() {
    let (mut server, mut con) = Server::start().with_client();
    fill(&mut con, "s");
    let before = snapshot(&mut con, "s");
    value(&mut con, &["SAVE"]);
    let mut con = server.restart();
    assert_eq!(snapshot(&mut con, "s"), before);
}

#[test]
fn an_aof_replay_without_preamble_gives_back_the_same_sketch() {
    let (mut server, mut con) = Server::start_with(common::AOF_OF_COMMANDS).with_client();
    fill(&mut con, "replayed");
    let replayed = snapshot(&mut con, "replayed");

    // A rewritten AOF rebuilds the key from its state, then replays the tail.
    fill(&mut con, "rewritten");
    let _: String = query(&mut con, &["BGREWRITEAOF"]);
    common::wait_for_aof_rewrite(&mut con);
    fill_more(&mut con, "rewritten");
    let rewritten = snapshot(&mut con, "rewritten");

    let mut con = server.restart();
    assert_eq!(snapshot(&mut con, "replayed"), replayed);
    assert_eq!(snapshot(&mut con, "rewritten"), rewritten);
}

#[test]
fn dump_and_restore_round_trip() {
    let (_server, mut con) = Server::start().with_client();
    fill(&mut con, "s");
    let dump: Vec<u8> = query(&mut con, &["DUMP", "s"]);
    restore(&mut con, "r", &dump).unwrap();
    assert_eq!(digest(&mut con, "r"), digest(&mut con, "s"));
}

/// The parts of a `DUMP` payload: body, RDB version, CRC-64 of both.
pub(crate) struct Dump {
    pub(crate) body: Vec<u8>,
    rdb_version: [u8; 2],
}

impl Dump {
    pub(crate) fn parse(payload: &[u8]) -> Self {
        let n = payload.len();
        Dump {
            body: payload[..n - 10].to_vec(),
            rdb_version: [payload[n - 10], payload[n - 9]],
        }
    }

    /// A payload of `body` (this one's or another) with this one's RDB
    /// version, whose checksum is valid whatever the body holds.
    pub(crate) fn payload(&self, body: &[u8]) -> Vec<u8> {
        let mut out = body.to_vec();
        out.extend_from_slice(&self.rdb_version);
        let crc = crc::Crc::<u64>::new(&crc::CRC_64_REDIS).checksum(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }
}

/// Restores `payload` as key `t`; if the server accepts it, the sketch must
/// work, and is deleted again.
fn try_restore(con: &mut Connection, payload: &[u8]) -> bool {
    if restore(con, "t", payload).is_err() {
        return false;
    }
    value(con, &["HK.ADD", "t", "x", "y"]);
    let _ = list_with_count(con, "t");
    value(con, &["DEL", "t"]);
    true
}

#[test]
fn damaged_restore_payloads_are_refused_without_a_crash() {
    for compression in ["no", "yes"] {
        let (mut server, mut con) =
            Server::start_with(&["--rdbcompression", compression]).with_client();
        cli(&mut con, "HK.RESERVE s 8 WIDTH 16 DEPTH 2 SEED 3");
        for i in 0..200 {
            value(&mut con, &["HK.ADD", "s", &format!("i{}", i % 23)]);
        }
        let dump = Dump::parse(&query::<Vec<u8>>(&mut con, &["DUMP", "s"]));

        // Every truncation of the body. The server reads its own 10-byte
        // footer as data when the body runs short, so a cut in the last few
        // bytes can still parse into a (different) valid sketch: that one
        // must then be fully usable. Anything else must be refused.
        let mut accepted_cuts = 0;
        for len in 1..dump.body.len() {
            if try_restore(&mut con, &dump.payload(&dump.body[..len])) {
                assert!(len + 12 >= dump.body.len(), "a cut at {len} was accepted");
                accepted_cuts += 1;
            }
        }
        assert!(accepted_cuts <= 2);
        // Byte flips everywhere after the type byte, with a valid checksum.
        // Some (a fingerprint, a count still in heap order) leave a valid
        // sketch, which must then work; flips of the fields that fix the
        // payload's layout (version, width, depth, fading flag) never do.
        // (Compressed, the blob cannot be found: flips there are checked
        // for crashes only.)
        let blob = dump
            .body
            .windows(13)
            .position(|w| w == [ENCODING_VERSION, 8, 0, 0, 0, 16, 0, 0, 0, 2, 0, 0, 0]);
        assert!(blob.is_some() || compression == "yes");
        let layout_fields: Vec<usize> = blob
            .map(|b| vec![b, b + 5, b + 9, b + 30])
            .unwrap_or_default();
        let mut refused_layout_flips = 0;
        for at in 1..dump.body.len() {
            for flip in [0x01u8, 0x80, 0xFF] {
                let mut bad = dump.body.clone();
                bad[at] ^= flip;
                let accepted = try_restore(&mut con, &dump.payload(&bad));
                if layout_fields.contains(&at) {
                    assert!(!accepted, "a flip {flip:#x} at {at} was accepted");
                    refused_layout_flips += 1;
                }
            }
        }
        assert_eq!(refused_layout_flips, layout_fields.len() * 3);
        assert!(
            server.is_alive(),
            "compression {compression}\n{}",
            server.log()
        );
        let exists: i64 = query(&mut con, &["EXISTS", "t"]);
        assert_eq!(exists, 0, "no half-built key");
    }
}

#[test]
fn a_payload_from_a_newer_encoding_is_refused() {
    let (server, mut con) = Server::start_with(&["--rdbcompression", "no"]).with_client();
    cli(&mut con, "HK.RESERVE s 3 WIDTH 8 DEPTH 1");
    let dump = Dump::parse(&query::<Vec<u8>>(&mut con, &["DUMP", "s"]));
    // Body: type 7 (module, v2), 0x81 + 8-byte big-endian module id whose low
    // 10 bits are the encoding version.
    assert_eq!(&dump.body[..2], &[7, 0x81]);
    let mut id = u64::from_be_bytes(dump.body[2..10].try_into().unwrap());
    assert_eq!(id & 1023, u64::from(ENCODING_VERSION));
    id = (id & !1023) | u64::from(ENCODING_VERSION + 1);
    let mut newer = dump.body.clone();
    newer[2..10].copy_from_slice(&id.to_be_bytes());
    let e = common::error_bytes(&mut con, &[b"RESTORE", b"t", b"0", &dump.payload(&newer)]);
    assert!(e.starts_with("ERR Bad data format"), "{e}");

    // The same inside the blob: its first byte is the encoding version too.
    // The version, k = 3, width = 8, depth = 1, all little-endian.
    let header = [ENCODING_VERSION, 3, 0, 0, 0, 8, 0, 0, 0, 1, 0, 0, 0];
    let blob_at = dump
        .body
        .windows(header.len())
        .position(|w| w == header)
        .unwrap();
    let mut newer_blob = dump.body.clone();
    newer_blob[blob_at] = ENCODING_VERSION + 1;
    assert!(restore(&mut con, "t", &dump.payload(&newer_blob)).is_err());
    assert!(server.log().contains("newer than this module supports"));
}

/// The commands behind every `vN-sketch.dump.hex` fixture.
fn fixture_commands(con: &mut Connection, key: &str) {
    cli(
        con,
        &format!("HK.RESERVE {key} 5 WIDTH 32 DEPTH 2 SEED 1 CREATED 1700000000000"),
    );
    for i in 0..300 {
        let item = format!("k{}", (i * 7) % 13 % (1 + i % 5));
        value(con, &["HK.ADD", key, &item]);
    }
    value(con, &["HK.INCRBY", key, "weighted", "1000"]);
}

fn fixture_path(version: u8) -> std::path::PathBuf {
    crate::root().join(format!("tests/fixtures/v{version}-sketch.dump.hex"))
}

/// `HK_WRITE_FIXTURES=1` records the current encoding's fixture (never an
/// older one's: those are history).
fn write_current_fixture(con: &mut Connection) {
    fixture_commands(con, "fixture");
    let dump: Vec<u8> = query(con, &["DUMP", "fixture"]);
    let hex: String = dump.iter().map(|b| format!("{b:02x}")).collect();
    std::fs::write(fixture_path(ENCODING_VERSION), hex + "\n").unwrap();
    value(con, &["DEL", "fixture"]);
}

/// Sketches saved by every encoding version this module ever wrote must
/// load in every later one, with the same counts.
#[test]
fn every_saved_encoding_version_still_loads() {
    let (_server, mut con) = Server::start().with_client();
    if std::env::var("HK_WRITE_FIXTURES").is_ok() {
        write_current_fixture(&mut con);
    }
    // Every version recorded the same counts for the same commands.
    let recorded = listed(&[
        ("weighted", 1000),
        ("k0", 147),
        ("k1", 75),
        ("k2", 47),
        ("k3", 22),
    ]);
    for version in 1..=ENCODING_VERSION {
        let key = format!("v{version}");
        let hex = std::fs::read_to_string(fixture_path(version)).unwrap();
        let bytes: Vec<u8> = (0..hex.trim().len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect();
        restore(&mut con, &key, &bytes).unwrap();
        assert_eq!(
            list_with_count(&mut con, &key),
            recorded,
            "version {version}"
        );
        assert_eq!(
            hk_info(&mut con, &key)["created"],
            Value::Int(1_700_000_000_000)
        );
        // It keeps counting, and saves in the current version.
        value(&mut con, &["HK.ADD", &key, "k3"]);
        assert_eq!(list_with_count(&mut con, &key)[4], (b"k3".to_vec(), 23));
        assert!(error(&mut con, &["HK.RESERVE", &key, "5"]).starts_with("ERR key already exists"));
    }
    value(&mut con, &["DEBUG", "RELOAD"]);
    assert_eq!(list_with_count(&mut con, "v1").len(), 5);
}

/// The encoded sketch inside an uncompressed DUMP body: where it starts.
fn blob_offset(body: &[u8], blob: &[u8]) -> usize {
    body.windows(blob.len())
        .position(|w| w == blob)
        .expect("the encoded sketch inside the dump")
}

/// A fading sketch built the same way on the server and here, so that the
/// test knows its exact bytes.
fn fading_pair(con: &mut Connection) -> (Vec<u8>, Dump) {
    use heavykeeper_sketch::Params;
    let created = 1_700_000_000_000i64;
    cli(
        con,
        &format!("HK.RESERVE f 3 WIDTH 4 DEPTH 1 SEED 5 HALFLIFE 10 CREATED {created}"),
    );
    let params = Params {
        width: 4,
        depth: 1,
        half_life_ms: Some(10_000.0),
        ..Params::for_k(3, 5)
    };
    let local = common::empty_sketch_payload(params, created);
    let dump = Dump::parse(&query::<Vec<u8>>(con, &["DUMP", "f"]));
    (local, dump)
}

#[test]
fn a_crafted_payload_with_an_impossible_clock_is_refused_and_cannot_freeze_the_server() {
    let (mut server, mut con) = Server::start_with(&["--rdbcompression", "no"]).with_client();
    let (blob, dump) = fading_pair(&mut con);
    let at = blob_offset(&dump.body, &blob);
    // Field offsets in the encoding: epoch at 39, clock at 47, created at 55.
    let crafted = [
        (39, i64::MIN),
        (39, i64::MAX),
        (39, 0),
        (47, i64::MIN),
        (47, 253_402_300_800_000),
        (55, -1),
        (55, i64::MAX),
    ];
    for (field, number) in crafted {
        let mut bad_blob = blob.clone();
        bad_blob[field..field + 8].copy_from_slice(&number.to_le_bytes());
        let e = common::error_bytes(&mut con, &[b"HK.LOADSTATE", b"x", &bad_blob]);
        assert!(
            e.starts_with("ERR corrupt sketch payload"),
            "{field}/{number}: {e}"
        );
        let mut bad = dump.body.clone();
        bad[at + field..at + field + 8].copy_from_slice(&number.to_le_bytes());
        assert!(
            restore(&mut con, "x", &dump.payload(&bad)).is_err(),
            "{field}/{number}"
        );
    }
    // The untouched payload loads and takes the largest increment at once.
    run::<Value>(&mut con, &[b"HK.LOADSTATE", b"x", &blob]).unwrap();
    cli(
        &mut con,
        "HK.INCRBY x a 9007199254740992 b 9007199254740992",
    );
    value(&mut con, &["HK.INCRBY", "x", "c", "9007199254740992"]);
    assert!(server.is_alive());
    value(&mut con, &["DEBUG", "RELOAD"]);
    assert!(list_with_count(&mut con, "x").len() >= 2);
}

#[test]
fn a_valid_payload_over_the_cap_is_too_large_not_corrupt() {
    let (_server, mut con) = Server::start().with_client();
    value(&mut con, &["HK.RESERVE", "big", "10", "WIDTH", "2000"]);
    let blob = common::empty_sketch_payload(
        heavykeeper_sketch::Params {
            width: 2000,
            ..heavykeeper_sketch::Params::for_k(10, 1)
        },
        1_700_000_000_000,
    );
    config_set(&mut con, "heavykeeper.max-sketch-bytes", "4096");
    let e = common::error_bytes(&mut con, &[b"HK.LOADSTATE", b"copy", &blob]);
    assert!(e.starts_with("ERR sketch would take"), "{e}");
    assert!(e.contains("heavykeeper.max-sketch-bytes"), "{e}");
    assert!(!e.contains("corrupt"), "{e}");
}

#[test]
fn merges_that_double_counts_saturate_and_the_server_still_restarts() {
    let (mut server, mut con) = Server::start().with_client();
    value(&mut con, &["SET", "bystander", "still here"]);
    for key in ["a", "b"] {
        value(&mut con, &["HK.RESERVE", key, "3", "SEED", "1"]);
        value(&mut con, &["HK.INCRBY", key, "x", "1000", "y", "10"]);
    }
    // A cycle: each merges the other into itself, doubling every time.
    for _ in 0..1_100 {
        value(&mut con, &["HK.MERGE", "a", "a", "b"]);
        value(&mut con, &["HK.MERGE", "b", "b", "a"]);
        value(&mut con, &["HK.MERGE", "o", "a"]);
    }
    let max = 9_007_199_254_740_992i64;
    assert_eq!(list_with_count(&mut con, "a")[0], (b"x".to_vec(), max));
    value(&mut con, &["DEBUG", "RELOAD"]);
    value(&mut con, &["SAVE"]);
    let mut con = server.restart_configured(&[], &["--save", "", "--dbfilename", "dump.rdb"]);
    assert_eq!(list_with_count(&mut con, "b")[0], (b"x".to_vec(), max));
    assert_eq!(list_with_count(&mut con, "o")[0], (b"x".to_vec(), max));
    let bystander: String = query(&mut con, &["GET", "bystander"]);
    assert_eq!(bystander, "still here");
}

#[test]
fn a_sketch_that_fails_to_encode_is_saved_empty_and_nothing_else_is_lost() {
    needs_fault_hooks!();
    let (server, mut con) = Server::start().with_client();
    value(&mut con, &["SET", "before", "1"]);
    value(&mut con, &["HK.RESERVE", "poisoned", "4", "WIDTH", "64"]);
    value(
        &mut con,
        &["HK.ADD", "poisoned", "heavykeeper:fault:panic-on-encode"],
    );
    value(&mut con, &["SET", "after", "2"]);
    value(&mut con, &["DEBUG", "RELOAD"]);
    let keys: Vec<Option<String>> = query(&mut con, &["MGET", "before", "after"]);
    assert_eq!(keys, vec![Some("1".into()), Some("2".into())]);
    let info = hk_info(&mut con, "poisoned");
    assert_eq!(info["width"], Value::Int(64));
    assert!(list_with_count(&mut con, "poisoned").is_empty());
    assert!(
        server.log().contains("could not be encoded"),
        "{}",
        server.log()
    );
}

/// The same commands on any host give the same bytes: the DUMP body (all
/// but the server's RDB-version footer) is recorded in a fixture. Fading,
/// ALPHA, a fractional DECAY and weighted arrivals exercise every
/// floating-point function that shapes the state.
#[test]
fn a_fixed_command_sequence_gives_the_recorded_dump_on_every_host() {
    let (_server, mut con) = Server::start_configured(
        &["max-future-ms", "253402300799999"],
        &["--rdbcompression", "no"],
    )
    .with_client();
    let t0 = 1_700_000_000_000i64;
    cli(
        &mut con,
        &format!("HK.RESERVE g 20 WIDTH 64 DEPTH 3 DECAY 0.925 ALPHA 0.05 SEED 42 CREATED {t0}"),
    );
    // The watch is part of what is saved (encoding version 3).
    cli(&mut con, "HK.WATCH g golden MEMBERS ABOVE 0.5");
    for i in 0..2_000i64 {
        let item = format!("k{}", (i * i) % 97 % (1 + i % 13));
        let time = (t0 + i * 37 + if i >= 1_000 { 86_400_000 } else { 0 }).to_string();
        cli(
            &mut con,
            &format!("HK.INCRBYAT g {time} {item} {}", 1 + i % 4 * 50),
        );
    }
    let dump = Dump::parse(&query::<Vec<u8>>(&mut con, &["DUMP", "g"]));
    let hex: String = dump.body.iter().map(|b| format!("{b:02x}")).collect();
    let path = crate::root().join("tests/fixtures/golden-dump.hex");
    if std::env::var("HK_WRITE_FIXTURES").is_ok() {
        std::fs::write(&path, format!("{hex}\n")).unwrap();
    }
    let recorded = std::fs::read_to_string(&path).unwrap();
    assert!(
        recorded.trim() == hex,
        "the DUMP of the golden sequence changed"
    );
}

/// A big sketch through the AOF, then a restart with a lower cap: the
/// server's own log is applied verbatim, never refused.
fn big_sketch_survives_restart(raise_by_config_set: bool) {
    let aof = common::AOF_OF_COMMANDS;
    let module_args: &[&str] = if raise_by_config_set {
        &["max-sketch-bytes", "4096"]
    } else {
        &[]
    };
    let (mut server, mut con) = Server::start_configured(module_args, aof).with_client();
    if raise_by_config_set {
        // Raised at run time, never written to the config file.
        config_set(&mut con, "heavykeeper.max-sketch-bytes", "10485760");
    }
    value(&mut con, &["HK.RESERVE", "big", "100", "WIDTH", "20000"]);
    value(&mut con, &["HK.ADD", "big", "a", "b", "a"]);
    let before = digest(&mut con, "big");
    let mut con = server.restart_configured(&["max-sketch-bytes", "4096"], aof);
    assert_eq!(digest(&mut con, "big"), before, "{}", server.log());
    // The same after the AOF is rewritten (HK.LOADSTATE per key).
    config_set(&mut con, "aof-use-rdb-preamble", "no");
    value(&mut con, &["BGREWRITEAOF"]);
    common::wait_for_aof_rewrite(&mut con);
    let mut con = server.restart_configured(&["max-sketch-bytes", "4096"], aof);
    assert_eq!(digest(&mut con, "big"), before, "{}", server.log());
    assert_eq!(list_with_count(&mut con, "big")[0], (b"a".to_vec(), 2));
}

#[test]
fn an_aof_restart_with_a_lower_size_cap_keeps_the_sketch() {
    big_sketch_survives_restart(false);
}

#[test]
fn a_cap_raised_at_run_time_and_not_rewritten_loses_nothing_at_restart() {
    big_sketch_survives_restart(true);
}

/// A DBA summing query time in microseconds passes 2^32 within the hour: a
/// bucket's own 32-bit word cannot hold that, and nothing may be lost.
#[test]
fn counts_past_four_billion_stay_exact_through_a_restart() {
    let (mut server, mut con) = Server::start().with_client();
    value(&mut con, &["HK.RESERVE", "sql", "10"]);
    value(&mut con, &["HK.INCRBY", "sql", "SELECT ?", "5000000000"]);
    // Weighted arrivals in one step: nothing expelled.
    let reply = value(
        &mut con,
        &["HK.INCRBY", "sql", "SELECT ?", "1", "UPDATE ?", "7"],
    );
    assert_eq!(reply, Value::Array(vec![Value::Nil, Value::Nil]));
    let expect = listed(&[("SELECT ?", 5_000_000_001), ("UPDATE ?", 7)]);
    assert_eq!(list_with_count(&mut con, "sql"), expect);
    let _: String = query(&mut con, &["SAVE"]);
    let mut con = server.restart();
    assert_eq!(list_with_count(&mut con, "sql"), expect);
    value(&mut con, &["HK.INCRBY", "sql", "SELECT ?", "2"]);
    let count: Vec<i64> = run(&mut con, &[b"HK.COUNT", b"sql", b"SELECT ?"]).unwrap();
    assert_eq!(count, vec![5_000_000_003]);
}

/// `HK.RESERVE key k` leaves the shape to the module's defaults; what it
/// writes to the AOF (and to replicas) spells the shape out, so a later
/// version with other defaults replays the same sketch.
#[test]
fn the_aof_spells_out_the_default_shape() {
    let (mut server, mut con) =
        Server::start_with(&["--appendonly", "yes", "--aof-use-rdb-preamble", "no"]).with_client();
    value(&mut con, &["HK.RESERVE", "hot", "100"]);
    let info = hk_info(&mut con, "hot");
    let _: String = query(&mut con, &["SET", "flush", "1"]);
    let mut log = Vec::new();
    for entry in crate::files_under(server.dir()) {
        if entry.extension().is_some_and(|e| e == "aof") {
            log.extend(std::fs::read(&entry).unwrap());
        }
    }
    let log = String::from_utf8_lossy(&log);
    for (name, field) in [("WIDTH", "width"), ("DEPTH", "depth"), ("DECAY", "decay")] {
        let shown = match &info[field] {
            Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
            Value::Int(n) => n.to_string(),
            other => panic!("{field}: {other:?}"),
        };
        assert!(
            log.contains(&format!("{name}\r\n${}\r\n{shown}\r\n", shown.len())),
            "{name} {shown} not in the AOF:\n{log}"
        );
    }
    let mut con = server.restart();
    assert_eq!(hk_info(&mut con, "hot"), info);
}

/// `RESTORE` is a client's command: a sketch larger than `HK.RESERVE` would
/// make under `max-sketch-bytes` is refused (a crafted k of 10,000,000 once
/// restored, and `HK.MERGE` of it then asked for 420 MB). What the server
/// wrote itself still loads whatever the cap: a restart, `DEBUG RELOAD`.
#[test]
fn restore_keeps_to_the_size_cap_and_a_reload_does_not() {
    let (_server, mut con) = Server::start_with(&["--enable-debug-command", "yes"]).with_client();
    value(&mut con, &["HK.RESERVE", "s", "100"]);
    value(&mut con, &["HK.ADD", "s", "a", "b"]);
    let dump: Vec<u8> = query(&mut con, &["DUMP", "s"]);
    // Under the default cap it restores.
    restore(&mut con, "copy", &dump).unwrap();
    config_set(&mut con, "heavykeeper.max-sketch-bytes", "1024");
    let refused = error(&mut con, &["HK.RESERVE", "x", "100"]);
    assert!(refused.contains("max-sketch-bytes"), "{refused}");
    assert!(
        restore(&mut con, "r", &dump).is_err(),
        "restored past the cap"
    );
    assert_eq!(value(&mut con, &["EXISTS", "r"]), Value::Int(0));
    // The server's own data loads as it was.
    value(&mut con, &["DEBUG", "RELOAD"]);
    assert_eq!(digest(&mut con, "s"), digest(&mut con, "copy"));
}
