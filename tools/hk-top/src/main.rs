//! `hk-top`: the hottest keys of a Redis/Valkey server, or of every node of
//! its cluster, refreshed every second, from the heavykeeper module's key
//! tracker (`heavykeeper.track yes`); or, with `--prometheus`, the same
//! figures and the module's `INFO` fields served to Prometheus.
//!
//! Connects as `redis-cli` does: `-h`/`-p` or `-u redis://user:pass@host:port`
//! (`rediss://` for TLS), `--user`, `--pass` (or `REDISCLI_AUTH`), `--tls`
//! with `--cacert`/`--cert`/`--key`. Every node found in a cluster is
//! reached with the same login and TLS settings.

mod access;
mod hot_keys;
mod live;
mod nodes;
mod prometheus;
mod render;

use access::{Access, Tls};
use clap::{ArgAction, Parser};
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
    #[arg(short = 'h', long, default_value = "127.0.0.1", conflicts_with = "url")]
    host: String,
    /// Server port
    #[arg(short = 'p', long, default_value_t = 6379, conflicts_with = "url")]
    port: u16,
    /// Server URL: redis://[user[:password]@]host:port, rediss:// for TLS
    #[arg(short = 'u', long)]
    url: Option<String>,
    /// ACL user to log in as
    #[arg(long)]
    user: Option<String>,
    /// Password (or the ACL user's)
    #[arg(
        short = 'a',
        long = "pass",
        env = "REDISCLI_AUTH",
        hide_env_values = true
    )]
    password: Option<String>,
    /// Connect with TLS
    #[arg(long)]
    tls: bool,
    /// CA certificate (PEM) to verify the server with, instead of the system's roots
    #[arg(long, value_name = "FILE")]
    cacert: Option<PathBuf>,
    /// Client certificate (PEM), for servers that ask for one
    #[arg(long, value_name = "FILE", requires = "key")]
    cert: Option<PathBuf>,
    /// Client private key (PEM)
    #[arg(long, value_name = "FILE", requires = "cert")]
    key: Option<PathBuf>,
    /// Accept any server certificate (TLS without verification)
    #[arg(long)]
    insecure: bool,
    /// In a cluster, read replicas too
    #[arg(long)]
    replicas: bool,
    /// Keys to show (and, with --prometheus, per node and kind)
    #[arg(short = 'n', long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    count: u64,
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
}

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
            count: self.count as usize,
            interval_ms: self.interval_ms,
        })
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
        let snapshot = hot_keys::snapshot(&o.access, &nodes, o.count);
        let text = if cli.json {
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
