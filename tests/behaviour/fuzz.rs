//! A hostile client: every command the module registers, fed random mixes of
//! bytes no well-behaved client sends (non-ASCII, NUL, CR/LF, huge, negative
//! and non-finite numbers, empty strings, keywords in the wrong place), on
//! key and channel names that are any bytes. Watches are set on those
//! names, the watch timer and the tracker's notifications run between
//! batches, and the keys are reloaded, renamed, moved and swapped. The
//! server must answer every command (an error is fine), answer PING after
//! every batch, and still save and load everything at the end.

use test_harness as common;

use common::{cli, query, value, words, Server};
use rand::{Rng, SeedableRng};
use redis::{Connection, Value};

const BATCHES: usize = 24;
const COMMANDS_PER_BATCH: usize = 250;

const KEYS: &[&[u8]] = &[
    b"s",
    b"f",
    b"str",
    b"missing",
    b"",
    "Ā".as_bytes(),
    b"\x00",
    b"a\x00b",
    b"f\x00\xff",
];

/// Channel names for watches: binary, empty, pattern characters, long.
const CHANNELS: &[&[u8]] = &[
    b"events",
    b"c\x00h",
    b"\xff\xfe",
    b"",
    b"*",
    b"\r\n",
    "Ā".as_bytes(),
];

const ATOMS: &[&[u8]] = &[
    b"",
    b"0",
    b"1",
    b"2",
    b"-1",
    b"3",
    b"10",
    b"0.5",
    b"1.5",
    b"1e308",
    b"-1e308",
    b"nan",
    b"inf",
    b"-inf",
    b"9007199254740992",
    b"9007199254740993",
    b"18446744073709551615",
    b"18446744073709551616",
    b"9223372036854775807",
    b"-9223372036854775808",
    b"253402300799999",
    b"1700000000000",
    b"4102444800000",
    b"0x10",
    b"1 2",
    b"WITHCOUNT",
    b"WITHRATE",
    b"AT",
    b"WIDTH",
    b"DEPTH",
    b"DECAY",
    b"SEED",
    b"HALFLIFE",
    b"ALPHA",
    b"CREATED",
    b"withcount",
    b"\x00",
    b"a\x00b",
    b"\r\n",
    b"\xff\xfe",
    b"\xc4\x80",
    "\u{4e00}".as_bytes(),
    b"\\",
    b"%s%n",
];

fn module_commands(con: &mut Connection) -> Vec<String> {
    let names: Vec<String> = query(con, &words("COMMAND LIST FILTERBY MODULE heavykeeper"));
    // Every command the module registers, the TOPK.* drop-in included.
    let expected = "hk.watch hk.unwatch hk.hotkeys hk.hotslots hk.hotclients hk.loadstate topk.list topk.count";
    for expected in words(expected) {
        assert!(names.iter().any(|n| n == expected), "{expected}: {names:?}");
    }
    assert_eq!(names.len(), 24, "{names:?}");
    names
}

fn random_arg(rng: &mut impl Rng) -> Vec<u8> {
    match rng.random_range(0..10) {
        0..=5 => ATOMS[rng.random_range(0..ATOMS.len())].to_vec(),
        6 => KEYS[rng.random_range(0..KEYS.len())].to_vec(),
        7 => (0..rng.random_range(0..24)).map(|_| rng.random()).collect(),
        8 => rng.random::<u64>().to_string().into_bytes(),
        _ => format!("item:{}", rng.random_range(0..20)).into_bytes(),
    }
}

fn random_command(rng: &mut impl Rng, names: &[String]) -> Vec<Vec<u8>> {
    if rng.random_bool(0.1) {
        return random_watch(rng);
    }
    if rng.random_bool(0.05) {
        return random_key_move(rng);
    }
    let mut parts = vec![names[rng.random_range(0..names.len())].clone().into_bytes()];
    if rng.random_bool(0.95) {
        parts.push(KEYS[rng.random_range(0..KEYS.len())].to_vec());
    }
    for _ in 0..rng.random_range(0..7) {
        parts.push(random_arg(rng));
    }
    parts
}

/// A well-formed `HK.WATCH` (most of the time) on a random key and channel,
/// so that the timer has binary names to visit.
fn random_watch(rng: &mut impl Rng) -> Vec<Vec<u8>> {
    let mut parts = vec![
        b"HK.WATCH".to_vec(),
        KEYS[rng.random_range(0..KEYS.len())].to_vec(),
        CHANNELS[rng.random_range(0..CHANNELS.len())].to_vec(),
    ];
    if rng.random_bool(0.7) {
        parts.push(b"MEMBERS".to_vec());
    }
    if rng.random_bool(0.7) {
        parts.push(b"ABOVE".to_vec());
        parts.push(random_arg(rng));
    }
    parts
}

/// A key taken somewhere else, as an application's own commands would.
fn random_key_move(rng: &mut impl Rng) -> Vec<Vec<u8>> {
    let key = |rng: &mut dyn rand::RngCore| KEYS[rng.random_range(0..KEYS.len())].to_vec();
    match rng.random_range(0..5) {
        0 => vec![b"RENAME".to_vec(), key(rng), key(rng)],
        1 => vec![b"COPY".to_vec(), key(rng), key(rng), b"REPLACE".to_vec()],
        2 => vec![b"MOVE".to_vec(), key(rng), b"1".to_vec()],
        3 => vec![b"SWAPDB".to_vec(), b"0".to_vec(), b"1".to_vec()],
        _ => vec![b"PEXPIRE".to_vec(), key(rng), b"50".to_vec()],
    }
}

fn seed_keys(con: &mut Connection) {
    value(con, &["FLUSHALL"]);
    value(con, &["HK.RESERVE", "s", "5", "WIDTH", "16", "DEPTH", "2"]);
    cli(con, "HK.RESERVE f 5 WIDTH 16 HALFLIFE 1");
    value(con, &["SET", "str", "v"]);
    // A fading sketch watched under binary names: the timer visits it.
    let binary: &[&[u8]] = &[b"HK.RESERVE", b"f\x00\xff", b"5", b"HALFLIFE", b"0.05"];
    common::run::<Value>(con, binary).expect("a binary-named sketch");
    let watch: &[&[u8]] = &[
        b"HK.WATCH",
        b"f\x00\xff",
        b"c\x00h",
        b"MEMBERS",
        b"ABOVE",
        b"1",
    ];
    common::run::<Value>(con, watch).expect("a binary-named watch");
}

#[test]
fn random_bytes_to_every_command_never_take_the_server_down() {
    // Key tracking on, counting every command (no windows): its command
    // filter sees every hostile command first. TOPK.* registered: they are
    // fuzzed too.
    let (mut server, mut con) = Server::start_configured(
        &words(
            "track yes track-sample 1 topk-compat yes watch-interval-ms 10 track-notify-above 1",
        ),
        &[],
    )
    .with_client();
    let mut resp3 = server.client_resp3();
    let names = module_commands(&mut con);
    // The tracker's notifications go to a binary channel too.
    let channel: &[&[u8]] = &[
        b"CONFIG",
        b"SET",
        b"heavykeeper.track-channel",
        b"t\x00\xff",
    ];
    common::run::<Value>(&mut con, channel).expect("a binary track-channel");
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x5eed);
    seed_keys(&mut con);
    let mut errors = 0;
    for batch in 0..BATCHES {
        let target = if batch % 2 == 0 { &mut con } else { &mut resp3 };
        for _ in 0..COMMANDS_PER_BATCH {
            let parts = random_command(&mut rng, &names);
            let refs: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
            match common::run::<Value>(target, &refs) {
                Ok(_) => {}
                Err(e) if e.is_io_error() || e.is_connection_dropped() => {
                    panic!("{parts:?} broke the connection: {e}\n{}", server.log())
                }
                Err(e) => {
                    let text = common::server_error_text(&e);
                    assert!(
                        text.bytes().all(|b| (0x20..=0x7e).contains(&b)),
                        "{parts:?}: {text:?}"
                    );
                    errors += 1;
                }
            }
        }
        // The watch timer and the tracker's notifications run in between.
        std::thread::sleep(std::time::Duration::from_millis(60));
        assert!(server.is_alive(), "batch {batch}\n{}", server.log());
        common::assert_pong(&mut con);
        if batch % 8 == 7 {
            // Whatever the commands left behind saves and loads.
            value(&mut con, &["DEBUG", "RELOAD"]);
            seed_keys(&mut con);
        }
    }
    assert!(errors > 0, "the fuzz never hit an error: it tests nothing");
    let seen = common::module_figure(&mut con, "tracker_commands_seen");
    assert!(seen >= (BATCHES * COMMANDS_PER_BATCH) as i64, "{seen}");
    value(&mut con, &["DEBUG", "RELOAD"]);
    assert!(server.is_alive());
}
