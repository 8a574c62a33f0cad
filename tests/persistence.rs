//! Sketches survive every persistence path unchanged, and damaged payloads
//! are refused without crashing the server.

mod common;

use common::{digest, error, info_field, list_with_count, value, wait_until, Server};
use redis::{Connection, Value};
use std::time::Duration;

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
    let _: Value = redis::cmd("HK.ADD")
        .arg(key)
        .arg(&b"bin\0\r\n"[..])
        .query(con)
        .unwrap();
}

/// What must be equal before and after: digest, listing and info.
type Snapshot = (String, Vec<(Vec<u8>, i64)>, Vec<Value>);

fn snapshot(con: &mut Connection, key: &str) -> Snapshot {
    let info: Vec<Value> = redis::cmd("HK.INFO").arg(key).query(con).unwrap();
    let info = info
        .chunks(2)
        .filter(|p| p[0] != Value::BulkString(b"memory".to_vec()))
        .flat_map(|p| p.to_vec())
        .collect();
    (digest(con, key), list_with_count(con, key), info)
}

#[test]
fn debug_reload_gives_back_the_same_sketch() {
    let server = Server::start();
    let mut con = server.client();
    fill(&mut con, "s");
    let before = snapshot(&mut con, "s");
    let dump_before: Vec<u8> = redis::cmd("DUMP").arg("s").query(&mut con).unwrap();
    let _: () = redis::cmd("DEBUG").arg("RELOAD").query(&mut con).unwrap();
    assert_eq!(snapshot(&mut con, "s"), before);
    let dump_after: Vec<u8> = redis::cmd("DUMP").arg("s").query(&mut con).unwrap();
    assert_eq!(dump_after, dump_before);
    // The random state survived too: the next arrivals play out the same.
    let _: () = redis::cmd("COPY")
        .arg("s")
        .arg("t")
        .query(&mut con)
        .unwrap();
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
    let mut server = Server::start();
    let mut con = server.client();
    fill(&mut con, "s");
    let before = snapshot(&mut con, "s");
    let _: () = redis::cmd("SAVE").query(&mut con).unwrap();
    server.restart();
    let mut con = server.client();
    assert_eq!(snapshot(&mut con, "s"), before);
}

#[test]
fn an_aof_replay_without_preamble_gives_back_the_same_sketch() {
    let mut server = Server::start_with(&["--appendonly", "yes", "--aof-use-rdb-preamble", "no"]);
    let mut con = server.client();
    fill(&mut con, "replayed");
    let replayed = snapshot(&mut con, "replayed");

    // A rewritten AOF rebuilds the key from its state, then replays the tail.
    fill(&mut con, "rewritten");
    let _: String = redis::cmd("BGREWRITEAOF").query(&mut con).unwrap();
    wait_until("the AOF rewrite", Duration::from_secs(30), || {
        info_field(&mut con, "persistence", "aof_rewrite_in_progress").as_deref() == Some("0")
            && info_field(&mut con, "persistence", "aof_rewrite_scheduled").as_deref() == Some("0")
    });
    fill_more(&mut con, "rewritten");
    let rewritten = snapshot(&mut con, "rewritten");

    server.restart();
    let mut con = server.client();
    assert_eq!(snapshot(&mut con, "replayed"), replayed);
    assert_eq!(snapshot(&mut con, "rewritten"), rewritten);
}

#[test]
fn dump_and_restore_round_trip() {
    let server = Server::start();
    let mut con = server.client();
    fill(&mut con, "s");
    let dump: Vec<u8> = redis::cmd("DUMP").arg("s").query(&mut con).unwrap();
    let _: () = redis::cmd("RESTORE")
        .arg("r")
        .arg(0)
        .arg(&dump)
        .query(&mut con)
        .unwrap();
    assert_eq!(digest(&mut con, "r"), digest(&mut con, "s"));
}

/// The parts of a `DUMP` payload: body, RDB version, CRC-64 of both.
struct Dump {
    body: Vec<u8>,
    rdb_version: [u8; 2],
}

impl Dump {
    fn parse(payload: &[u8]) -> Self {
        let n = payload.len();
        Dump {
            body: payload[..n - 10].to_vec(),
            rdb_version: [payload[n - 10], payload[n - 9]],
        }
    }

    /// A payload whose checksum is valid, whatever the body holds.
    fn payload(&self) -> Vec<u8> {
        let mut out = self.body.clone();
        out.extend_from_slice(&self.rdb_version);
        let crc = crc::Crc::<u64>::new(&crc::CRC_64_REDIS).checksum(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }
}

fn restore(con: &mut Connection, key: &str, payload: &[u8]) -> redis::RedisResult<()> {
    redis::cmd("RESTORE")
        .arg(key)
        .arg(0)
        .arg(payload)
        .query(con)
}

/// Restores `payload` as key `t`; if the server accepts it, the sketch must
/// work, and is deleted again.
fn try_restore(con: &mut Connection, payload: &[u8]) -> bool {
    if restore(con, "t", payload).is_err() {
        return false;
    }
    value(con, &["HK.ADD", "t", "x", "y"]);
    let _ = list_with_count(con, "t");
    let _: () = redis::cmd("DEL").arg("t").query(con).unwrap();
    true
}

#[test]
fn damaged_restore_payloads_are_refused_without_a_crash() {
    for compression in ["no", "yes"] {
        let mut server = Server::start_with(&["--rdbcompression", compression]);
        let mut con = server.client();
        value(
            &mut con,
            &[
                "HK.RESERVE",
                "s",
                "8",
                "WIDTH",
                "16",
                "DEPTH",
                "2",
                "SEED",
                "3",
            ],
        );
        for i in 0..200 {
            value(&mut con, &["HK.ADD", "s", &format!("i{}", i % 23)]);
        }
        let dump = Dump::parse(
            &redis::cmd("DUMP")
                .arg("s")
                .query::<Vec<u8>>(&mut con)
                .unwrap(),
        );

        // Every truncation of the body. The server reads its own 10-byte
        // footer as data when the body runs short, so a cut in the last few
        // bytes can still parse into a (different) valid sketch: that one
        // must then be fully usable. Anything else must be refused.
        let mut accepted_cuts = 0;
        for len in 1..dump.body.len() {
            let cut = Dump {
                body: dump.body[..len].to_vec(),
                rdb_version: dump.rdb_version,
            };
            if try_restore(&mut con, &cut.payload()) {
                assert!(len + 12 >= dump.body.len(), "a cut at {len} was accepted");
                accepted_cuts += 1;
            }
        }
        assert!(accepted_cuts <= 2);
        // Byte flips everywhere after the type byte, with a valid checksum.
        // Some (a fingerprint, a count still in heap order) leave a valid sketch.
        let mut accepted = 0;
        for at in 1..dump.body.len() {
            for flip in [0x01u8, 0x80, 0xFF] {
                let mut bad = Dump {
                    body: dump.body.clone(),
                    rdb_version: dump.rdb_version,
                };
                bad.body[at] ^= flip;
                accepted += usize::from(try_restore(&mut con, &bad.payload()));
            }
        }
        assert!(
            server.is_alive(),
            "compression {compression}\n{}",
            server.log()
        );
        let exists: i64 = redis::cmd("EXISTS").arg("t").query(&mut con).unwrap();
        assert_eq!(exists, 0, "no half-built key");
        assert!(accepted < dump.body.len() * 3);
    }
}

#[test]
fn a_payload_from_a_newer_encoding_is_refused() {
    let server = Server::start_with(&["--rdbcompression", "no"]);
    let mut con = server.client();
    value(
        &mut con,
        &["HK.RESERVE", "s", "3", "WIDTH", "8", "DEPTH", "1"],
    );
    let dump = Dump::parse(
        &redis::cmd("DUMP")
            .arg("s")
            .query::<Vec<u8>>(&mut con)
            .unwrap(),
    );
    // Body: type 7 (module, v2), 0x81 + 8-byte big-endian module id whose low
    // 10 bits are the encoding version.
    assert_eq!(&dump.body[..2], &[7, 0x81]);
    let mut id = u64::from_be_bytes(dump.body[2..10].try_into().unwrap());
    assert_eq!(id & 1023, 1);
    id = (id & !1023) | 2;
    let mut newer = Dump {
        body: dump.body.clone(),
        rdb_version: dump.rdb_version,
    };
    newer.body[2..10].copy_from_slice(&id.to_be_bytes());
    let e = restore(&mut con, "t", &newer.payload()).unwrap_err();
    assert!(
        common::server_error_text(&e).starts_with("ERR Bad data format"),
        "{e}"
    );

    // The same inside the blob: its first byte is the encoding version too.
    // Version 1, k = 3, width = 8, depth = 1, all little-endian.
    let header = [1, 3, 0, 0, 0, 8, 0, 0, 0, 1, 0, 0, 0];
    let blob_at = dump
        .body
        .windows(header.len())
        .position(|w| w == header)
        .unwrap();
    let mut newer_blob = Dump {
        body: dump.body.clone(),
        rdb_version: dump.rdb_version,
    };
    newer_blob.body[blob_at] = 2;
    assert!(restore(&mut con, "t", &newer_blob.payload()).is_err());
    assert!(server.log().contains("newer than this module supports"));
}

/// Version-1 sketches saved by this module must load in every later one.
#[test]
fn a_version_1_dump_still_loads() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/v1-sketch.dump.hex"
    );
    let server = Server::start();
    let mut con = server.client();
    if std::env::var("HK_WRITE_FIXTURES").is_ok() {
        value(
            &mut con,
            &[
                "HK.RESERVE",
                "v1",
                "5",
                "WIDTH",
                "32",
                "DEPTH",
                "2",
                "SEED",
                "1",
                "CREATED",
                "1700000000000",
            ],
        );
        for i in 0..300 {
            value(
                &mut con,
                &["HK.ADD", "v1", &format!("k{}", (i * 7) % 13 % (1 + i % 5))],
            );
        }
        value(&mut con, &["HK.INCRBY", "v1", "weighted", "1000"]);
        let dump: Vec<u8> = redis::cmd("DUMP").arg("v1").query(&mut con).unwrap();
        let hex: String = dump.iter().map(|b| format!("{b:02x}")).collect();
        std::fs::write(path, hex + "\n").unwrap();
        let _: () = redis::cmd("DEL").arg("v1").query(&mut con).unwrap();
    }
    let hex = std::fs::read_to_string(path).unwrap();
    let bytes: Vec<u8> = (0..hex.trim().len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect();
    restore(&mut con, "v1", &bytes).unwrap();
    assert_eq!(
        list_with_count(&mut con, "v1"),
        vec![
            (b"weighted".to_vec(), 1000),
            (b"k0".to_vec(), 147),
            (b"k1".to_vec(), 75),
            (b"k2".to_vec(), 47),
            (b"k3".to_vec(), 22),
        ]
    );
    assert_eq!(
        common::hk_info(&mut con, "v1")["created"],
        Value::Int(1_700_000_000_000)
    );
    assert!(error(&mut con, &["HK.RESERVE", "v1", "5"]).starts_with("ERR key already exists"));
}
