//! What the exporter's stories share: hk-top's exporter run as an operator
//! runs it, a real Prometheus (Debian's package) scraping it every second,
//! Prometheus's HTTP query API, and `/metrics` read as series.

use serde_json::Value as Json;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use test_harness::{free_port, wait_until};

/// A child process killed when the test ends, pass or fail.
pub struct Running(pub Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `hk-top --prometheus` for the node at `server_port`, with `args`.
pub struct Exporter {
    pub port: u16,
    _child: Running,
}

impl Exporter {
    pub fn start(server_port: u16, args: &[&str]) -> Exporter {
        let port = free_port();
        let child = Command::new(env!("CARGO_BIN_EXE_hk-top"))
            .args(["--port", &server_port.to_string()])
            .args(args)
            .args(["--prometheus", &format!("127.0.0.1:{port}")])
            .stderr(Stdio::null())
            .spawn()
            .expect("run hk-top");
        let exporter = Exporter {
            port,
            _child: Running(child),
        };
        wait_until("the exporter", Duration::from_secs(30), || {
            http_get(port, "/").is_some()
        });
        exporter
    }

    /// One scrape's text.
    pub fn metrics(&self) -> String {
        http_get(self.port, "/metrics").expect("the exporter answers")
    }
}

/// The body of `GET path` on 127.0.0.1:`port` (HTTP/1.0: the server closes).
pub fn http_get(port: u16, path: &str) -> Option<String> {
    let mut socket = TcpStream::connect(("127.0.0.1", port)).ok()?;
    socket
        .set_read_timeout(Some(Duration::from_secs(60)))
        .ok()?;
    write!(socket, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut reply = String::new();
    socket.read_to_string(&mut reply).ok()?;
    reply
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_string())
}

/// Percent-encodes a query parameter.
pub fn encoded(query: &str) -> String {
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

/// A real Prometheus scraping `targets` every second, its data in a
/// temporary directory.
pub struct Prometheus {
    pub port: u16,
    _child: Running,
    _dir: tempfile::TempDir,
    /// When it started: range queries begin here at the earliest.
    pub started: f64,
}

impl Prometheus {
    pub fn start(targets: &[u16], rules: Option<&Path>) -> Prometheus {
        let port = free_port();
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("prometheus.yml");
        let targets: Vec<String> = targets.iter().map(|p| format!("'127.0.0.1:{p}'")).collect();
        let rule_files = rules
            .map(|r| format!("rule_files: ['{}']\n", r.display()))
            .unwrap_or_default();
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n{rule_files}scrape_configs:\n  - job_name: heavykeeper\n    static_configs:\n      - targets: [{}]\n",
                targets.join(", ")
            ),
        )
        .unwrap();
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("prometheus (make testdeps installs Debian's package)");
        let prometheus = Prometheus {
            port,
            _child: Running(child),
            _dir: dir,
            started: now(),
        };
        wait_until("Prometheus", Duration::from_secs(90), || {
            http_get(port, "/-/ready").is_some_and(|b| b.contains("Ready"))
        });
        prometheus
    }

    fn api(&self, path: &str) -> Json {
        http_get(self.port, path)
            .and_then(|b| serde_json::from_str(&b).ok())
            .unwrap_or(Json::Null)
    }

    /// The `data.result` of a query's answer (none where it failed).
    fn result(&self, path: &str) -> Vec<Json> {
        let found = self.api(path)["data"]["result"].as_array().cloned();
        found.unwrap_or_default()
    }

    /// The result vector of an instant query now.
    pub fn query(&self, promql: &str) -> Vec<Json> {
        self.result(&format!("/api/v1/query?query={}", encoded(promql)))
    }

    /// The result matrix of a range query from `start` to now, one point
    /// every `step` seconds.
    pub fn query_range(&self, promql: &str, start: f64, step: f64) -> Vec<Json> {
        self.result(&format!(
            "/api/v1/query_range?query={}&start={start:.3}&end={:.3}&step={step}",
            encoded(promql),
            now()
        ))
    }

    /// `/api/v1/label/<label>/values?match[]=<selector>`.
    pub fn label_values(&self, label: &str, selector: &str) -> Vec<String> {
        let found = self.api(&format!(
            "/api/v1/label/{label}/values?match[]={}",
            encoded(selector)
        ));
        (found["data"].as_array().cloned().unwrap_or_default())
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect()
    }

    /// Every rule loaded, as `/api/v1/rules` gives them.
    pub fn rules(&self) -> Vec<Json> {
        let groups = self.api("/api/v1/rules")["data"]["groups"]
            .as_array()
            .cloned();
        let groups = groups.unwrap_or_default();
        let rules = groups.iter().flat_map(|g| g["rules"].as_array().cloned());
        rules.flatten().collect()
    }
}

/// Seconds since the epoch.
pub fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

pub fn sample_value(series: &Json) -> f64 {
    let text = series["value"][1].as_str();
    text.and_then(|v| v.parse().ok()).unwrap_or(f64::NAN)
}

/// Every value of a range query's series.
pub fn range_values(series: &Json) -> Vec<(f64, f64)> {
    (series["values"].as_array().cloned().unwrap_or_default())
        .iter()
        .filter_map(|p| Some((p[0].as_f64()?, p[1].as_str()?.parse().ok()?)))
        .collect()
}

/// One sample line of the text format: its series name and labels.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Sample {
    pub name: String,
    pub labels: BTreeMap<String, String>,
}

/// The samples of one scrape (comment lines left out), label values
/// unescaped (the format's escapes, `\\`, `\"` and `\n`, are JSON's).
pub fn samples(text: &str) -> Vec<Sample> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|line| {
            let (name, rest) = match line.split_once('{') {
                Some((name, rest)) => (name, rest.rsplit_once('}')?.0),
                None => (line.split_once(' ')?.0, ""),
            };
            Some(Sample {
                name: name.to_string(),
                labels: labels(rest),
            })
        })
        .collect()
}

/// `a="x",b="y\"z"` as a map.
fn labels(mut rest: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    while let Some((name, after)) = rest.split_once('=') {
        let mut value = serde_json::Deserializer::from_str(after).into_iter::<String>();
        let Some(Ok(text)) = value.next() else { break };
        out.insert(name.trim_start_matches(',').to_string(), text);
        rest = &after[value.byte_offset()..];
    }
    out
}
