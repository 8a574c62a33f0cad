//! An operator runs `hk-top --prometheus` beside a server and a real
//! Prometheus (Debian's `prometheus` package) scraping it every second; a
//! workload makes a key hot; the key, its rate and the module's own figures
//! are then read back through Prometheus's HTTP query API. A second exporter
//! points at a server that is not there: Prometheus scrapes it fine and
//! records `heavykeeper_up 0`.

#[path = "../../../tests/common/mod.rs"]
mod common;

use common::{free_port, value, wait_until, Server, TRACK_EVERY_COMMAND};
use serde_json::Value as Json;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A child process killed when the test ends, pass or fail.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn exporter(server_port: u16, listen: u16) -> Running {
    Running(
        Command::new(env!("CARGO_BIN_EXE_hk-top"))
            .args(["--port", &server_port.to_string(), "--count", "5"])
            .args(["--prometheus", &format!("127.0.0.1:{listen}")])
            .stderr(Stdio::null())
            .spawn()
            .expect("run hk-top"),
    )
}

/// The body of `GET path` on 127.0.0.1:`port` (HTTP/1.0: the server closes).
fn http_get(port: u16, path: &str) -> Option<String> {
    let mut socket = TcpStream::connect(("127.0.0.1", port)).ok()?;
    socket.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(socket, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut reply = String::new();
    socket.read_to_string(&mut reply).ok()?;
    reply
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_string())
}

/// Percent-encodes a PromQL query for a URL.
fn encoded(query: &str) -> String {
    query
        .bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'-' | b'.' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The result vector of an instant query.
fn query(prometheus: u16, promql: &str) -> Vec<Json> {
    let body = http_get(
        prometheus,
        &format!("/api/v1/query?query={}", encoded(promql)),
    );
    let parsed: Json = body
        .and_then(|b| serde_json::from_str(&b).ok())
        .unwrap_or(Json::Null);
    parsed["data"]["result"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn sample_value(series: &Json) -> f64 {
    series["value"][1].as_str().unwrap().parse().unwrap()
}

#[test]
fn prometheus_scrapes_the_hot_keys_and_the_module_figures() {
    let server = Server::start_configured(TRACK_EVERY_COMMAND, &[]);
    let mut con = server.client();
    let (live, dead) = (free_port(), free_port());
    let _exporter = exporter(server.port, live);
    let missing_server = free_port();
    let _dead_exporter = exporter(missing_server, dead);
    wait_until("the exporter", Duration::from_secs(10), || {
        http_get(live, "/metrics").is_some()
    });
    // What Prometheus will read, straight from the exporter.
    for _ in 0..50 {
        value(&mut con, &["GET", "product:1"]);
    }
    value(&mut con, &["SET", "cart:\"quoted\"\n", "x"]);
    value(&mut con, &["SET", "cart:\"quoted\"\n", "y"]);
    let metrics = http_get(live, "/metrics").unwrap();
    assert!(
        metrics.contains("# TYPE heavykeeper_hotkey_reads_per_second gauge"),
        "{metrics}"
    );
    assert!(metrics.contains("key=\"product:1\""), "{metrics}");
    // Label values are escaped as the format says.
    assert!(
        metrics.contains("key=\"cart:\\\"quoted\\\"\\n\""),
        "{metrics}"
    );
    assert!(
        metrics.contains("heavykeeper_tracker_memory_bytes{"),
        "{metrics}"
    );
    assert!(
        metrics.contains("heavykeeper_tracker_commands_seen_total{"),
        "{metrics}"
    );
    assert!(metrics.trim_end().ends_with("# EOF"), "{metrics}");

    let prometheus_port = free_port();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: heavykeeper\n    static_configs:\n      - targets: ['127.0.0.1:{live}', '127.0.0.1:{dead}']\n"
        ),
    )
    .unwrap();
    let _prometheus = Running(
        Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{prometheus_port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("prometheus (make deps installs Debian's package)"),
    );
    let hot = "heavykeeper_hotkey_reads_per_second{key=\"product:1\"}";
    wait_until(
        "Prometheus to have scraped the hot key",
        Duration::from_secs(90),
        || {
            // Keep the key hot while Prometheus starts.
            value(&mut con, &["GET", "product:1"]);
            !query(prometheus_port, hot).is_empty()
        },
    );
    let series = &query(prometheus_port, hot)[0];
    assert_eq!(
        series["metric"]["node"],
        format!("127.0.0.1:{}", server.port)
    );
    assert_eq!(series["metric"]["db"], "0");
    assert!(sample_value(series) > 0.0, "{series}");
    // The top-10 query the README gives.
    let top = query(
        prometheus_port,
        "topk(10, max_over_time(heavykeeper_hotkey_reads_per_second[1h]))",
    );
    assert_eq!(top[0]["metric"]["key"], "product:1", "{top:?}");
    // The module's figures, with Prometheus's names.
    let seen = query(prometheus_port, "heavykeeper_tracker_commands_seen_total");
    assert!(sample_value(&seen[0]) > 50.0, "{seen:?}");
    let enabled = query(prometheus_port, "heavykeeper_tracker_enabled");
    assert_eq!(sample_value(&enabled[0]), 1.0);
    // A server that is not there: its exporter is scraped all right (up 1)
    // and says heavykeeper_up 0.
    let missing = format!("heavykeeper_up{{node=\"127.0.0.1:{missing_server}\"}}");
    wait_until(
        "the missing node's heavykeeper_up",
        Duration::from_secs(30),
        || !query(prometheus_port, &missing).is_empty(),
    );
    assert_eq!(sample_value(&query(prometheus_port, &missing)[0]), 0.0);
    let scraped = query(
        prometheus_port,
        &format!("up{{instance=\"127.0.0.1:{dead}\"}}"),
    );
    assert_eq!(sample_value(&scraped[0]), 1.0, "{scraped:?}");
    let present = format!("heavykeeper_up{{node=\"127.0.0.1:{}\"}}", server.port);
    assert_eq!(sample_value(&query(prometheus_port, &present)[0]), 1.0);
}
