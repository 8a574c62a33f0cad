//! `hk-top`: the hottest keys of a Redis/Valkey server, or of every node of
//! its cluster, refreshed every second, from the heavykeeper module's key
//! tracker (`heavykeeper.track yes`).
//!
//! ```text
//! hk-top [--host H] [--port P] [--url redis://...] [--replicas] [--count N]
//!        [--interval-ms MS] [--once] [--json]
//! ```

mod hot_keys;
mod live;
mod nodes;
mod render;

use std::process::ExitCode;

pub struct Options {
    pub address: String,
    pub replicas: bool,
    pub count: usize,
    pub interval_ms: u64,
    pub once: bool,
    pub json: bool,
}

const USAGE: &str = "usage: hk-top [--host H] [--port P] [--url redis://H:P] [--replicas] [--count N] [--interval-ms MS] [--once] [--json]";

fn options() -> Result<Options, String> {
    let (mut host, mut port, mut url) = ("127.0.0.1".to_string(), 6379u16, None);
    let mut o = Options {
        address: String::new(),
        replicas: false,
        count: 20,
        interval_ms: 1000,
        once: false,
        json: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "--host" | "-h" => host = value("--host")?,
            "--port" | "-p" => port = value("--port")?.parse().map_err(|_| "--port: a number")?,
            "--url" | "-u" => url = Some(value("--url")?),
            "--count" | "-n" => {
                o.count = value("--count")?.parse().map_err(|_| "--count: a number")?
            }
            "--interval-ms" => {
                o.interval_ms = value("--interval-ms")?
                    .parse()
                    .map_err(|_| "--interval-ms: a number")?
            }
            "--replicas" => o.replicas = true,
            "--once" => o.once = true,
            "--json" => o.json = true,
            "--help" => return Err(USAGE.to_string()),
            other => return Err(format!("unknown argument {other}\n{USAGE}")),
        }
    }
    o.address = url.unwrap_or(format!("{host}:{port}"));
    o.count = o.count.max(1);
    o.interval_ms = o.interval_ms.max(100);
    Ok(o)
}

fn main() -> ExitCode {
    let o = match options() {
        Ok(o) => o,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    };
    let nodes = match nodes::discover(&o.address, o.replicas) {
        Ok(nodes) => nodes,
        Err(e) => {
            eprintln!("hk-top: cannot reach {}: {e}", o.address);
            return ExitCode::FAILURE;
        }
    };
    if o.once || o.json {
        let snapshot = hot_keys::snapshot(&nodes, o.count);
        let text = if o.json {
            render::json(&snapshot)
        } else {
            render::table(&snapshot)
        };
        println!("{text}");
        return if snapshot.errors.len() == nodes.len() {
            ExitCode::FAILURE
        } else {
            ExitCode::SUCCESS
        };
    }
    match live::run(&o, &nodes) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hk-top: {e}");
            ExitCode::FAILURE
        }
    }
}
