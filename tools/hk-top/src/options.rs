//! The command line: hk-top's flags (as `redis-cli` takes the connection's),
//! and what the views need of them ([`Options`], the filter, the order).

use crate::connection::settings::{self, ConnectionSettings};
use crate::reading::filter::Filter;
use crate::reading::sort::{Order, SortKey};
use clap::builder::PossibleValuesParser;
use clap::{ArgAction, Parser};
use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::PathBuf;

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
    #[arg(long, value_name = "KEY", default_value = "total", value_parser = PossibleValuesParser::new(SortKey::all().into_iter().map(SortKey::name)), conflicts_with = "prometheus")]
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
pub enum Command {
    /// Plan (and with --apply carry out) slot moves so that no primary serves much more than its share (docs/rebalance.md)
    Rebalance(crate::rebalance::Args),
}

/// What hk-top is asked to do, from its flags.
pub enum Action<'a> {
    Rebalance(&'a crate::rebalance::Args),
    /// Serve /metrics on this address.
    Prometheus(SocketAddr),
    /// One table (or JSON) and exit.
    Snapshot {
        json: bool,
    },
    Live,
}

/// Keys that --once, --json and --prometheus show when --count is not given.
const DEFAULT_COUNT: usize = 20;

/// What the views need from the command line.
pub struct Options {
    pub address: String,
    pub connection: ConnectionSettings,
    pub replicas: bool,
    pub count: usize,
    pub interval_ms: u64,
}

fn read_pem(path: &PathBuf) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))
}

impl Cli {
    pub fn options(&self) -> Result<Options, String> {
        let (address, mut connection) = match &self.url {
            Some(url) => settings::from_url(url).map_err(|e| format!("--url: {e}"))?,
            None => (
                format!("{}:{}", self.host, self.port),
                ConnectionSettings::default(),
            ),
        };
        connection.username = self.user.clone().or(connection.username);
        connection.password = self.password.clone().or(connection.password);
        let wants_tls = self.tls || self.cacert.is_some() || self.cert.is_some() || self.insecure;
        if wants_tls || connection.tls.is_some() {
            let mut tls = connection.tls.take().unwrap_or_default();
            tls.insecure |= self.insecure;
            tls.ca = self.cacert.as_ref().map(read_pem).transpose()?;
            tls.client = match (&self.cert, &self.key) {
                (Some(cert), Some(key)) => Some((read_pem(cert)?, read_pem(key)?)),
                _ => None,
            };
            connection.tls = Some(tls);
        }
        Ok(Options {
            address,
            connection,
            replicas: self.replicas,
            count: self.count.map_or(DEFAULT_COUNT, |n| n as usize),
            interval_ms: self.interval_ms,
        })
    }

    pub fn filter(&self) -> Filter {
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

    pub fn action(&self) -> Action<'_> {
        match (&self.command, self.prometheus) {
            (Some(Command::Rebalance(args)), _) => Action::Rebalance(args),
            (None, Some(listen)) => Action::Prometheus(listen),
            (None, None) if self.once || self.json => Action::Snapshot { json: self.json },
            (None, None) => Action::Live,
        }
    }

    /// The live view's row limit (`None`: every key tracked).
    pub fn live_limit(&self) -> Option<usize> {
        self.count.map(|n| n as usize)
    }

    pub fn order(&self) -> Order {
        Order {
            key: SortKey::parse(&self.sort).unwrap_or(SortKey::Total),
            reversed: false,
        }
    }
}
