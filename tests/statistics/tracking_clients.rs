//! Who drives a hot key, beside a flood, at the default (sampled)
//! settings: four hosts (127.0.0.2-5) read each of four hot keys at shares
//! of 60/25/10/5%, each key in another order; `HK.HOTKEYS CLIENTS key BY
//! HOST WITHBOUNDS` must say how much each host sent within its bounds.

use test_harness as common;

use common::{filter_names_clients, CountBounds, HostClient, Server};
use redis::{Connection, Value};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Shares of a key's reads, in hundredths.
const SHARES: [usize; 4] = [60, 25, 10, 5];
const KEYS: usize = 4;

/// `GET`s at saturation until killed (from 127.0.0.1).
fn flood(server: &Server) -> std::process::Child {
    std::process::Command::new("redis-benchmark")
        .args(["-p", &server.port.to_string(), "-q", "-t", "get"])
        .args(["-n", "100000000", "-P", "16", "-c", "8", "-r", "100000"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("redis-benchmark")
}

/// Host `h` (127.0.0.`h + 2`) reads key `k` this many times in a hundred.
fn share(h: usize, k: usize) -> usize {
    SHARES[(h + k) % SHARES.len()]
}

/// Each host, in a thread of its own, sends its share of 20 reads of each
/// key every 10 ms for `run`; what each sent of each key.
fn read_from_four_hosts(server: &Server, run: Duration) -> HashMap<(usize, usize), usize> {
    let threads: Vec<_> = (0..SHARES.len())
        .map(|h| {
            let port = server.port;
            std::thread::spawn(move || {
                let mut client = HostClient::connect(port, h as u8 + 2);
                let keys: Vec<String> = (0..KEYS).map(|k| format!("hot:{k}")).collect();
                let mut sent = vec![0; KEYS];
                let start = Instant::now();
                let mut tick = 0;
                while start.elapsed() < run {
                    let gets: Vec<[&str; 2]> = (0..KEYS)
                        .flat_map(|k| std::iter::repeat_n(["GET", &keys[k]], share(h, k) / 5))
                        .collect();
                    client.pipeline(gets.iter().map(|g| &g[..]));
                    for (k, n) in sent.iter_mut().enumerate() {
                        *n += share(h, k) / 5;
                    }
                    tick += 1;
                    let due = start + Duration::from_millis(10 * tick);
                    std::thread::sleep(due.saturating_duration_since(Instant::now()));
                }
                sent
            })
        })
        .collect();
    let mut sent = HashMap::new();
    for (h, thread) in threads.into_iter().enumerate() {
        for (k, n) in thread.join().unwrap().into_iter().enumerate() {
            sent.insert((h, k), n);
        }
    }
    sent
}

/// `HK.HOTKEYS CLIENTS key BY HOST WITHBOUNDS`: each host's count and its
/// bounds (the rates' turned into the counts').
fn hosts_of(con: &mut Connection, key: &str) -> HashMap<String, CountBounds> {
    let flat: Vec<Value> = redis::cmd("HK.HOTKEYS")
        .arg(&["CLIENTS", key, "BY", "HOST", "WITHBOUNDS"])
        .query(con)
        .unwrap();
    (flat.chunks(5))
        .map(|row| {
            let host: String = redis::from_redis_value(&row[0]).unwrap();
            let f = |i: usize| -> f64 { redis::from_redis_value(&row[i]).unwrap() };
            let (rate, count) = (f(1), f(2));
            let per = if rate > 0.0 { count / rate } else { 0.0 };
            let bounds = CountBounds {
                rate,
                count,
                low: f(3) * per,
                high: f(4) * per,
            };
            (host, bounds)
        })
        .collect()
}

#[test]
fn beside_a_flood_each_hosts_share_of_a_hot_key_holds_within_its_bounds() {
    let args = ["track", "yes", "track-halflife", "86400"];
    let server = Server::start_configured(&args, &[]);
    let mut con = server.client();
    if !filter_names_clients(&mut con) {
        return; // Redis 7.0 cannot say (tests/behaviour/clients.rs).
    }
    let mut flood = flood(&server);
    let sent = read_from_four_hosts(&server, Duration::from_secs(6));
    let readings: Vec<_> = (0..KEYS)
        .map(|k| (k, hosts_of(&mut con, &format!("hot:{k}"))))
        .collect();
    let _ = flood.kill();
    let _ = flood.wait();
    let (mut within, mut rows) = (0, 0);
    for (k, hosts) in &readings {
        for h in 0..SHARES.len() {
            let truth = sent[&(h, *k)] as f64;
            let state = format!("host {h} key {k}: sent {truth}, {readings:?}");
            let b = hosts.get(&format!("127.0.0.{}", h + 2)).expect(&state);
            assert!(b.holds(truth), "{state}");
            rows += 1;
            within += usize::from(b.low <= truth && truth <= b.high);
        }
    }
    assert!(
        within * 10 >= rows * 9,
        "{within} of {rows} within: {readings:?} {sent:?}"
    );
}
