//! Counts that fade with a half-life: rates, take-over, emptying, and the
//! same sketch through every persistence path. Time is driven by explicit
//! timestamps a day ahead of the server clock, so nothing sleeps and reads
//! happen at the latest arrival.

use test_harness as common;

use common::{
    cli, digest, hk_info, list_with_count, list_with_count_at, query, restore, value, words, Server,
};
use redis::{Connection, Value};

const DAY_MS: i64 = 86_400_000;

/// A server that accepts simulated timelines: timestamps days ahead of its
/// clock are refused by default (`heavykeeper.max-future-ms`).
fn simulation_server(extra: &[&str]) -> Server {
    Server::start_configured(&["max-future-ms", "253402300799999"], extra)
}

/// A simulated clock starting a day after the server's.
fn simulated_start() -> i64 {
    common::now_ms() + DAY_MS
}

fn rate(con: &mut Connection, key: &str, item: &str) -> f64 {
    let rates: Vec<f64> = query(con, &["HK.RATE", key, item]);
    rates[0]
}

#[test]
fn a_steady_item_reports_its_rate() {
    let (_server, mut con) = simulation_server(&[]).with_client();
    value(&mut con, &["HK.RESERVE", "api", "10", "HALFLIFE", "1"]);
    let start = simulated_start();
    // 200 requests per second for 10 half-lives, beside a noisy neighbour.
    let mut pipe = redis::pipe();
    for i in 0..2_000i64 {
        pipe.cmd("HK.ADDAT")
            .arg(("api", start + i * 5, "GET /steady"))
            .ignore();
        if i % 4 == 0 {
            pipe.cmd("HK.ADDAT")
                .arg(("api", start + i * 5, format!("noise:{}", i % 97)))
                .ignore();
        }
    }
    pipe.query::<()>(&mut con).unwrap();
    let r = rate(&mut con, "api", "GET /steady");
    assert!((r - 200.0).abs() <= 20.0, "rate {r}");

    // WITHRATE lists the same rate next to the count.
    let flat: Vec<Value> = query(&mut con, &["HK.LIST", "api", "WITHCOUNT", "WITHRATE"]);
    assert_eq!(flat[0], Value::BulkString(b"GET /steady".to_vec()));
    let count: i64 = redis::from_redis_value(&flat[1]).unwrap();
    let listed_rate: f64 = redis::from_redis_value(&flat[2]).unwrap();
    assert!((listed_rate - r).abs() < 1e-6 * r);
    // A steady rate r converges to a count of r / lambda = r * H / ln 2.
    assert!(
        (count as f64 - 200.0 / std::f64::consts::LN_2).abs() <= 30.0,
        "count {count}"
    );
}

#[test]
fn rates_without_a_half_life_average_since_creation() {
    let (_server, mut con) = simulation_server(&[]).with_client();
    let created = simulated_start() - DAY_MS - 10_000;
    cli(&mut con, &format!("HK.RESERVE plain 5 CREATED {created}"));
    value(&mut con, &["HK.INCRBY", "plain", "x", "1000"]);
    // About 10 seconds old: about 100 per second.
    let r = rate(&mut con, "plain", "x");
    assert!(r > 80.0 && r <= 100.0, "rate {r}");
}

#[test]
fn an_old_hot_set_fades_out_and_a_new_one_takes_over() {
    let (_server, mut con) = simulation_server(&[]).with_client();
    value(&mut con, &["HK.RESERVE", "cdn", "5", "HALFLIFE", "2"]);
    let start = simulated_start();
    let mut t = start;
    for set in ["old", "new"] {
        let mut pipe = redis::pipe();
        for i in 0..4_000 {
            t += 5;
            pipe.cmd("HK.ADDAT")
                .arg(("cdn", t, format!("{set}:{}", i % 5)))
                .ignore();
        }
        pipe.query::<()>(&mut con).unwrap();
    }
    let listed: Vec<String> = query(&mut con, &["HK.LIST", "cdn"]);
    assert_eq!(listed.len(), 5);
    assert!(listed.iter().all(|i| i.starts_with("new:")), "{listed:?}");

    // After traffic stops, everything leaves within log2(count) half-lives.
    let counts = list_with_count(&mut con, "cdn");
    let top = counts[0].1 as f64;
    let gone_by = t + ((top.log2().ceil() + 1.0) * 2_000.0) as i64;
    let later: Vec<String> = query(&mut con, &["HK.LIST", "cdn", "AT", &gone_by.to_string()]);
    assert!(later.is_empty(), "{later:?}");
    let halfway: Vec<String> = query(&mut con, &words(&format!("HK.LIST cdn AT {}", t + 2_000)));
    assert_eq!(halfway.len(), 5);

    // A freed slot is taken by the next arrival.
    cli(&mut con, &format!("HK.ADDAT cdn {gone_by} fresh"));
    let now: Vec<String> = query(&mut con, &["HK.LIST", "cdn"]);
    assert_eq!(now, vec!["fresh"]);
}

#[test]
fn days_of_simulated_time_neither_overflow_nor_drift() {
    let (_server, mut con) = simulation_server(&[]).with_client();
    value(&mut con, &["HK.RESERVE", "days", "3", "HALFLIFE", "60"]);
    let start = simulated_start();
    // One request a second for five days, sent as one weighted batch a minute.
    let minutes = 5 * 24 * 60;
    let mut pipe = redis::pipe();
    for m in 1..=minutes {
        pipe.cmd("HK.INCRBYAT")
            .arg(("days", start + m * 60_000, "heartbeat", 60))
            .ignore();
    }
    pipe.query::<()>(&mut con).unwrap();
    let r = rate(&mut con, "days", "heartbeat");
    // Batching a minute's arrivals at its end makes the fading count saw-tooth
    // between 60 * 2^-1 / (1 - 1/2) and 60 / (1 - 1/2): at a batch, 120 -> rate 1.39.
    assert!(r.is_finite() && (1.0..=1.5).contains(&r), "rate {r}");
    let info = hk_info(&mut con, "days");
    assert_eq!(info["clock"], Value::Int(start + minutes * 60_000));
    let counts: Vec<i64> = query(&mut con, &["HK.COUNT", "days", "heartbeat"]);
    assert_eq!(counts, vec![120]);
}

/// A fading sketch with a server-clock tail, for the persistence identities.
fn fill_fading(con: &mut Connection, key: &str) {
    value(con, &["HK.RESERVE", key, "20", "HALFLIFE", "30"]);
    let start = simulated_start();
    let mut pipe = redis::pipe();
    for i in 0..3_000i64 {
        pipe.cmd("HK.ADDAT")
            .arg((key, start + i * 20, format!("k{}", (i * i) % 53)))
            .ignore();
    }
    pipe.query::<()>(con).unwrap();
    // Plain HK.ADD on a fading sketch takes the server clock (a day earlier:
    // these weigh almost nothing, but they are replicated with that time).
    for i in 0..100 {
        value(con, &["HK.ADD", key, &format!("now{}", i % 7)]);
    }
}

fn snapshot_at(con: &mut Connection, key: &str, at: i64) -> (String, Vec<Value>) {
    let list: Vec<Value> = query(
        con,
        &words(&format!("HK.LIST {key} WITHCOUNT WITHRATE AT {at}")),
    );
    (digest(con, key), list)
}

#[test]
fn a_fading_sketch_survives_reload_restart_and_aof_replay() {
    let (mut server, mut con) = simulation_server(common::AOF_OF_COMMANDS).with_client();
    fill_fading(&mut con, "f");
    let at = simulated_start() + 120_000;
    let before = snapshot_at(&mut con, "f", at);

    value(&mut con, &["DEBUG", "RELOAD"]);
    assert_eq!(snapshot_at(&mut con, "f", at), before);

    let mut con = server.restart(); // replays the AOF, commands with their timestamps
    assert_eq!(snapshot_at(&mut con, "f", at), before);

    let _: String = query(&mut con, &["BGREWRITEAOF"]);
    common::wait_for_aof_rewrite(&mut con);
    let mut con = server.restart(); // loads the rewritten state
    assert_eq!(snapshot_at(&mut con, "f", at), before);
}

#[test]
fn a_sketch_loaded_later_has_faded_by_exactly_that_time() {
    let (_server, mut con) = simulation_server(&[]).with_client();
    value(&mut con, &["HK.RESERVE", "f", "5", "HALFLIFE", "60"]);
    let t = simulated_start();
    let _: Value = query(&mut con, &["HK.INCRBYAT", "f", &t.to_string(), "x", "4096"]);
    value(&mut con, &["DEBUG", "RELOAD"]);
    // Ten minutes = ten half-lives: 4096 -> 4.
    let ten_minutes_later = list_with_count_at(&mut con, "f", Some(t + 600_000));
    assert_eq!(ten_minutes_later, vec![(b"x".to_vec(), 4)]);
    let dump: Vec<u8> = query(&mut con, &["DUMP", "f"]);
    restore(&mut con, "g", &dump).unwrap();
    assert_eq!(
        list_with_count_at(&mut con, "g", Some(t + 600_000)),
        ten_minutes_later
    );
}

#[test]
fn info_explains_the_fading_numbers() {
    let (_server, mut con) = simulation_server(&[]).with_client();
    value(&mut con, &["HK.RESERVE", "a", "5", "ALPHA", "0.05"]);
    let info = hk_info(&mut con, "a");
    let field = |name: &str| -> String { redis::from_redis_value(&info[name]).unwrap() };
    // alpha 0.05 per second is a half-life of ln 2 / -ln 0.95 = 13.51 s.
    let h: f64 = field("halflife").parse().unwrap();
    assert!((h - 13.513).abs() < 0.001, "{h}");
    let lambda: f64 = field("lambda").parse().unwrap();
    assert!((lambda - -(0.95f64.ln())).abs() < 1e-9);
    assert!(field("clock").parse::<i64>().is_ok());
}

#[test]
fn an_item_holding_a_bucket_enters_once_the_minimum_has_faded() {
    let (_server, mut con) = Server::start().with_client();
    let now = common::now_ms();
    let t0 = (now - 60_000).to_string();
    cli(&mut con, &format!("HK.RESERVE f 1 HALFLIFE 1 CREATED {t0}"));
    value(&mut con, &["HK.INCRBYAT", "f", &t0, "old", "100"]);
    value(&mut con, &["HK.ADDAT", "f", &t0, "new"]);
    // Twenty half-lives later "old" has faded below one arrival.
    let later = (now - 40_000).to_string();
    for _ in 0..3 {
        value(&mut con, &["HK.ADDAT", "f", &later, "new"]);
    }
    let listed = list_with_count_at(&mut con, "f", Some(now - 40_000));
    assert_eq!(listed, vec![(b"new".to_vec(), 3)]);
}
