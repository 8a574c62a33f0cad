//! `hk-top`: the hottest keys of a Redis/Valkey server, or of every node of
//! its cluster, refreshed every second, from the heavykeeper module's key
//! tracker (`heavykeeper.track yes`); or, with `--prometheus`, the same
//! figures and the module's `INFO` fields served to Prometheus.
//!
//! The live view sorts (`--sort`), filters (`--match`, `--node`, `--db`),
//! shows a key's details and the nodes' balance; `--once` and `--json` take
//! the same sorting and filters. See tools/hk-top/README.md.
//!
//! Connects as `redis-cli` does: `-h`/`-p` or `-u redis://user:pass@host:port`
//! (`rediss://` for TLS), `--user`, `--pass` (or `REDISCLI_AUTH`), `--tls`
//! with `--cacert`/`--cert`/`--key`. Every node found in a cluster is
//! reached with the same login and TLS settings.

mod access;
mod balance;
mod columns;
mod console;
mod draw;
mod elide;
mod events;
mod fault;
mod filter;
mod history;
mod hot_keys;
mod hot_prefixes;
mod hot_slots;
mod info_fields;
mod info_metric;
mod keymap;
mod live;
mod metric;
mod nodes;
mod pattern;
mod poller;
mod prometheus;
mod rebalance;
mod render;
mod slot_ranges;
mod sort;
mod terminal;

#[cfg(test)]
mod fixtures;

use access::{Access, Tls};
use clap::builder::PossibleValuesParser;
use clap::{ArgAction, Parser};
use filter::Filter;
use sort::{Order, SortKey};
use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(
    name = "hk-top",
    version,
    about = "The hottest keys of a Redis/Valkey server or cluster, from the heavykeeper module's tracker",
    // -h is the host, as in redis-cli.
    disable_help_flag = true
)]
pub struct Cli {
    /// Print help
    #[arg(long, action = ArgAction::Help)]
    help: Option<bool>,
    /// Server host
    #[arg(
        short = 'h',
        long,
        default_value = "127.0.0.1",
        conflicts_with = "url",
        global = true
    )]
    host: String,
    /// Server port
    #[arg(
        short = 'p',
        long,
        default_value_t = 6379,
        conflicts_with = "url",
        global = true
    )]
    port: u16,
    /// Server URL: redis://[user[:password]@]host:port, rediss:// for TLS
    #[arg(short = 'u', long, global = true)]
    url: Option<String>,
    /// ACL user to log in as
    #[arg(long, global = true)]
    user: Option<String>,
    /// Password (or the ACL user's)
    #[arg(
        short = 'a',
        long = "pass",
        env = "REDISCLI_AUTH",
        hide_env_values = true,
        global = true
    )]
    password: Option<String>,
    /// Connect with TLS
    #[arg(long, global = true)]
    tls: bool,
    /// CA certificate (PEM) to verify the server with, instead of the system's roots
    #[arg(long, value_name = "FILE", global = true)]
    cacert: Option<PathBuf>,
    /// Client certificate (PEM), for servers that ask for one
    #[arg(long, value_name = "FILE", requires = "key", global = true)]
    cert: Option<PathBuf>,
    /// Client private key (PEM)
    #[arg(long, value_name = "FILE", requires = "cert", global = true)]
    key: Option<PathBuf>,
    /// Accept any server certificate (TLS without verification)
    #[arg(long, global = true)]
    insecure: bool,
    /// In a cluster, read replicas too
    #[arg(long)]
    replicas: bool,
    /// Keys to show [--once, --json and --prometheus (per node and kind): 20; the live view: every key tracked]
    #[arg(short = 'n', long, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    count: Option<u64>,
    /// Sort by this (the live view: < and >)
    #[arg(long, value_name = "KEY", default_value = "total", value_parser = PossibleValuesParser::new(sort_key_names()), conflicts_with = "prometheus")]
    sort: String,
    /// Only keys matching this pattern, as SCAN MATCH takes it (user:*, {tag}*, [a-c]?); matched on the key's bytes
    #[arg(long = "match", value_name = "PATTERN", value_parser = clap::value_parser!(OsString), conflicts_with = "prometheus")]
    key_pattern: Option<OsString>,
    /// Only keys of this node: its address (host:port) or a pattern of addresses (*:7001)
    #[arg(long, value_name = "ADDRESS", conflicts_with = "prometheus")]
    node: Option<String>,
    /// Only keys of this database
    #[arg(long, value_name = "N", conflicts_with = "prometheus")]
    db: Option<i64>,
    /// Refresh interval of the live view
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(100..))]
    interval_ms: u64,
    /// Print one table and exit
    #[arg(long)]
    once: bool,
    /// Print one snapshot as JSON and exit
    #[arg(long, conflicts_with = "once")]
    json: bool,
    /// Serve /metrics for Prometheus on this address (e.g. 127.0.0.1:9187) instead of the live view
    #[arg(long, value_name = "ADDRESS", conflicts_with_all = ["once", "json"])]
    prometheus: Option<SocketAddr>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(clap::Subcommand, Debug)]
enum Command {
    /// Plan (and with --apply carry out) slot moves so that no primary serves much more than its share (docs/rebalance.md)
    Rebalance(rebalance::Args),
}

fn sort_key_names() -> Vec<&'static str> {
    SortKey::all().into_iter().map(SortKey::name).collect()
}

/// Keys that --once, --json and --prometheus show when --count is not given.
const DEFAULT_COUNT: usize = 20;

/// What the views need from the command line.
pub struct Options {
    pub address: String,
    pub access: Access,
    pub replicas: bool,
    pub count: usize,
    pub interval_ms: u64,
}

fn read_pem(path: &PathBuf) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))
}

impl Cli {
    fn options(&self) -> Result<Options, String> {
        let (address, mut access) = match &self.url {
            Some(url) => access::from_url(url).map_err(|e| format!("--url: {e}"))?,
            None => (format!("{}:{}", self.host, self.port), Access::default()),
        };
        if self.user.is_some() {
            access.username = self.user.clone();
        }
        if self.password.is_some() {
            access.password = self.password.clone();
        }
        let wants_tls = self.tls || self.cacert.is_some() || self.cert.is_some() || self.insecure;
        if wants_tls || access.tls.is_some() {
            let mut tls = access.tls.take().unwrap_or_default();
            tls.insecure |= self.insecure;
            tls.ca = self.cacert.as_ref().map(read_pem).transpose()?;
            tls.client = match (&self.cert, &self.key) {
                (Some(cert), Some(key)) => Some((read_pem(cert)?, read_pem(key)?)),
                _ => None,
            };
            access.tls = Some(Tls { ..tls });
        }
        Ok(Options {
            address,
            access,
            replicas: self.replicas,
            count: self.count.map_or(DEFAULT_COUNT, |n| n as usize),
            interval_ms: self.interval_ms,
        })
    }

    fn filter(&self) -> Filter {
        let mut filter = Filter::default();
        if let Some(pattern) = &self.key_pattern {
            filter.set_key_pattern(&pattern.clone().into_encoded_bytes());
        }
        if let Some(node) = &self.node {
            filter.set_node(node);
        }
        filter.set_db(self.db);
        filter
    }

    fn order(&self) -> Order {
        Order {
            key: SortKey::parse(&self.sort).unwrap_or(SortKey::Total),
            reversed: false,
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // rustls needs its crypto chosen once per process; a second call only
    // says one is there already.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let o = match cli.options() {
        Ok(o) => o,
        Err(message) => {
            eprintln!("hk-top: {message}");
            return ExitCode::from(2);
        }
    };
    if let Some(Command::Rebalance(args)) = &cli.command {
        return rebalance::run(args, &o);
    }
    if let Some(listen) = cli.prometheus {
        return match prometheus::serve(listen, &o) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("hk-top: cannot serve /metrics on {listen}: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let nodes = match nodes::discover(&o.access, &o.address, o.replicas) {
        Ok(nodes) => nodes,
        Err(e) => {
            eprintln!("hk-top: cannot reach {}: {e}", o.address);
            return ExitCode::FAILURE;
        }
    };
    if cli.once || cli.json {
        let snapshot = hot_keys::snapshot(&o.access, &nodes);
        let mut keys = cli.filter().select(&snapshot.keys, cli.order());
        keys.truncate(o.count);
        let text = if cli.json {
            render::json(&keys, &snapshot)
        } else {
            render::table(&keys, &snapshot)
        };
        println!("{text}");
        return if snapshot.errors.len() == nodes.len() {
            ExitCode::FAILURE
        } else {
            ExitCode::SUCCESS
        };
    }
    let settings = console::Settings {
        order: cli.order(),
        filter: cli.filter(),
        limit: cli.count.map(|n| n as usize),
        interval_ms: o.interval_ms,
    };
    match live::run(&o, settings, nodes) {
        Ok(live::Ending::Quit) => ExitCode::SUCCESS,
        // As a shell reports a process ended by a signal: 128 + its number.
        Ok(live::Ending::Signal(signal)) => ExitCode::from(128 + signal as u8),
        Err(e) => {
            eprintln!("hk-top: {e}");
            ExitCode::FAILURE
        }
    }
}
