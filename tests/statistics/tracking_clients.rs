//! Who drives a hot key, beside a flood, at the default (sampled)
//! settings: four hosts (127.0.0.2-5) read each of four hot keys at shares
//! of 60/25/10/5%, each key in another order; `HK.HOTKEYS CLIENTS key BY
//! HOST WITHBOUNDS` must say how much each host sent within its bounds.

use test_harness as common;

use common::{filter_names_clients, steady_reads_from_hosts, CountBounds, Server};
use redis::{Connection, Value};
use std::collections::HashMap;
use std::time::Duration;

/// Shares of a key's reads, in hundredths.
const SHARES: [usize; 4] = [60, 25, 10, 5];
const KEYS: usize = 4;

/// Host `h` (127.0.0.`h + 2`) reads key `k` this many times in a hundred.
fn share(h: usize, k: usize) -> usize {
    SHARES[(h + k) % SHARES.len()]
}

/// Each host sends its share of 20 reads of each key every 10 ms for `run`;
/// what each sent of each key.
fn read_from_four_hosts(server: &Server, run: Duration) -> HashMap<(usize, usize), usize> {
    let keys: Vec<String> = (0..KEYS).map(|k| format!("hot:{k}")).collect();
    let reads = |h, k| share(h, k) / 5;
    let sent = steady_reads_from_hosts(server.port, SHARES.len(), &keys, reads, run);
    let by_host = sent.into_iter().enumerate();
    (by_host.flat_map(|(h, keys)| keys.into_iter().enumerate().map(move |(k, n)| ((h, k), n))))
        .collect()
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
            (host, CountBounds::from_rates(f(1), f(2), f(3), f(4)))
        })
        .collect()
}

#[test]
fn beside_a_flood_each_hosts_share_of_a_hot_key_holds_within_its_bounds() {
    let args = ["track", "yes", "track-halflife", "86400"];
    let (server, mut con) = Server::start_configured(&args, &[]).with_client();
    if !filter_names_clients(&mut con) {
        return; // Redis 7.0 cannot say (tests/behaviour/clients.rs).
    }
    let mut flood = crate::tracking_accuracy::flood(&server);
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
