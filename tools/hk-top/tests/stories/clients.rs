//! Who drives a hot key, where an operator looks: two hosts read
//! `product:42` (three reads in four from 127.0.0.2), and hk-top's `--json`
//! names them behind the key and among the node's hottest clients, and the
//! exporter carries both as series with a `client` label. On Valkey (the
//! binary `VALKEY_SERVER` names: `make test` sets it), whose command filter
//! says which client sent a command.

use crate::promkit::Exporter;
use crate::support::common::{wait_until, HostClient, Server};
use crate::support::*;
use std::time::Duration;

/// `gets` reads of `key` from 127.0.0.`host`.
fn read_from(server: &Server, host: u8, key: &str, gets: usize) {
    let get: &[&str] = &["GET", key];
    HostClient::connect(server.port, host).pipeline(std::iter::repeat_n(get, gets));
}

#[test]
fn hk_top_and_the_exporter_name_the_hosts_behind_a_hot_key() {
    // A day's half-life: the two hosts' reads may fall on either side of a
    // tick's hand-over, a few milliseconds apart, and fade by that.
    let args = [
        "track",
        "yes",
        "track-sample",
        "1",
        "track-halflife",
        "86400",
    ];
    let server = Server::start_binary(&valkey(), &args, &[]);
    let mut con = server.client();
    // Listed first: from then on the key's senders are counted.
    read_from(&server, 1, "product:42", 20);
    wait_until("product:42 listed", Duration::from_secs(10), || {
        let listed: Vec<redis::Value> = redis::cmd("HK.HOTKEYS").query(&mut con).unwrap();
        !listed.is_empty()
    });
    read_from(&server, 2, "product:42", 300);
    read_from(&server, 3, "product:42", 100);
    let port = server.port.to_string();
    let snapshot: serde_json::Value =
        serde_json::from_str(&hk_top_ok(&["--port", &port, "--json"])).unwrap();
    let clients = &snapshot["keys"][0]["clients"];
    assert_eq!(clients[0]["client"], "127.0.0.2", "{snapshot}");
    assert_eq!(clients[1]["client"], "127.0.0.3", "{snapshot}");
    // Every command counted: the shares are exact (the warm-up's reads
    // came before the key was a member).
    let rate = |c: &serde_json::Value| c["rate"].as_f64().unwrap();
    let share = rate(&clients[0]) / (rate(&clients[0]) + rate(&clients[1]));
    assert!((share - 0.75).abs() < 1e-4, "{snapshot}");
    let node = &snapshot["clients"][0];
    assert_eq!(node["clients"][0]["client"], "127.0.0.2", "{snapshot}");
    let metrics = Exporter::start(server.port, &[]).metrics();
    for series in [
        "heavykeeper_hotkey_client_requests_per_second{",
        "heavykeeper_hotclient_key_accesses_per_second{",
    ] {
        let line = metrics
            .lines()
            .find(|l| l.starts_with(series) && l.contains("client=\"127.0.0.2\""));
        assert!(line.is_some(), "{series}: {metrics}");
    }
    assert!(
        metrics.contains("key=\"product:42\",client=\"127.0.0.2\""),
        "{metrics}"
    );
}
