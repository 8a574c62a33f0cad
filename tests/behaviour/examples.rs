//! The examples a team copies (`examples/`, Python with redis-py) run
//! against a real server and do what their README sections promise.

use test_harness as common;

use common::Server;
use std::process::Command;

fn run_example(script: &str, server: &Server, extra: &[&str]) -> String {
    let path = crate::root().join("examples").join(script);
    let out = Command::new("python3")
        .arg(path)
        .args(["--port", &server.port.to_string(), "--seconds", "3"])
        .args(extra)
        .output()
        .expect("python3 (make test installs redis-py)");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{script} failed:\n{stdout}\n{stderr}");
    assert!(stderr.trim().is_empty(), "{script} wrote errors:\n{stderr}");
    stdout
}

/// The figures of the JSON line a script ends with, by name.
fn figures(out: &str) -> impl Fn(&str) -> u64 + '_ {
    let last = out.lines().last().unwrap_or_default();
    let stats: serde_json::Value =
        serde_json::from_str(last).unwrap_or_else(|e| panic!("{e}: {out}"));
    move |name| {
        stats[name]
            .as_u64()
            .unwrap_or_else(|| panic!("{name}: {out}"))
    }
}

/// The number after `label` in `text`.
fn number_after(text: &str, label: &str) -> f64 {
    let rest = text
        .split(label)
        .nth(1)
        .unwrap_or_else(|| panic!("{label:?} in {text}"));
    rest.trim_start()
        .split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("a number after {label:?} in {text}"))
}

/// The storefront with a writer changing the front-page products all the
/// time: more than half of all reads served from the process's memory, not
/// one of them stale, and the two hot products admitted once each, not once
/// per half-life.
#[test]
fn the_near_cache_serves_hot_reads_locally_and_never_stale() {
    let server = Server::start();
    let out = run_example("near_cache.py", &server, &["--configure", "--seconds", "6"]);
    let figure = figures(&out);
    assert_eq!(figure("stale_reads"), 0, "{out}");
    assert!(figure("served_locally") * 2 > figure("reads"), "{out}");
    assert!((1..=4).contains(&figure("admissions")), "{out}");
    assert_eq!(figure("evictions"), 0, "{out}");
}

#[test]
fn the_gateway_answers_429_to_the_scraper_only() {
    let server = Server::start();
    let out = run_example("gateway_limiter.py", &server, &[]);
    let scraper_limited = number_after(&out, "served,");
    let ordinary_limited = number_after(out.lines().nth(1).unwrap(), "served,");
    assert!(scraper_limited > 0.0, "{out}");
    assert_eq!(ordinary_limited, 0.0, "{out}");
}

/// A product read as fast as two threads can, then a few times a second,
/// while a writer changes it: split into copies on the tracker's `hot`,
/// read from the copies while hot, never a value older than a write
/// already acknowledged, merged back (copies deleted) once it cools.
#[test]
fn a_split_key_is_split_when_hot_and_merged_back_when_it_cools() {
    let server = Server::start();
    let out = run_example("split_key.py", &server, &["--configure", "--seconds", "12"]);
    let figure = figures(&out);
    assert_eq!(figure("stale_reads"), 0, "{out}");
    assert_eq!(figure("missing_reads"), 0, "{out}");
    assert_eq!(figure("splits"), 1, "{out}");
    assert_eq!(figure("merges"), 1, "{out}");
    assert!(figure("reads_on_copies") * 2 > figure("reads"), "{out}");
    assert_eq!(figure("copies_left"), 0, "{out}");
}
