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

mod connection;
mod export;
mod fault;
mod live;
mod options;
mod reading;
mod rebalance;

#[cfg(test)]
mod fixtures;

use clap::Parser;
use options::{Action, Cli, Options};
use std::process::ExitCode;

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
    match cli.action() {
        Action::Rebalance(args) => {
            let cluster = rebalance::Cluster {
                address: &o.address,
                connection: &o.connection,
            };
            rebalance::run(args, &cluster)
        }
        Action::Prometheus(listen) => serve(listen, &o),
        Action::Snapshot { json } => snapshot(&cli, &o, json),
        Action::Live => live_view(&cli, &o),
    }
}

/// The cluster's nodes (or the one server); `None` once it said why not.
fn nodes(o: &Options) -> Option<Vec<connection::nodes::Node>> {
    let found = connection::nodes::discover(&o.connection, &o.address, o.replicas);
    found
        .inspect_err(|e| eprintln!("hk-top: cannot reach {}: {e}", o.address))
        .ok()
}

/// `--once`, `--json`: one table or JSON snapshot; a failure if no node
/// answered.
fn snapshot(cli: &Cli, o: &Options, json: bool) -> ExitCode {
    let Some(nodes) = nodes(o) else {
        return ExitCode::FAILURE;
    };
    let snapshot = reading::hot_keys::snapshot(&o.connection, &nodes);
    let mut keys = cli.filter().select(&snapshot.keys, cli.order());
    keys.truncate(o.count);
    let text = if json {
        export::snapshot::json(&keys, &snapshot)
    } else {
        export::snapshot::table(&keys, &snapshot)
    };
    println!("{text}");
    if snapshot.errors.len() == nodes.len() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// The live view, until `q` or a signal.
fn live_view(cli: &Cli, o: &Options) -> ExitCode {
    let Some(nodes) = nodes(o) else {
        return ExitCode::FAILURE;
    };
    let settings = live::console::Settings {
        order: cli.order(),
        filter: cli.filter(),
        limit: cli.live_limit(),
        interval_ms: o.interval_ms,
    };
    match live::run(o, settings, nodes) {
        Ok(live::Ending::Quit) => ExitCode::SUCCESS,
        // As a shell reports a process ended by a signal: 128 + its number.
        Ok(live::Ending::Signal(signal)) => ExitCode::from(128 + signal as u8),
        Err(e) => {
            eprintln!("hk-top: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `--prometheus`: serves /metrics until killed.
fn serve(listen: std::net::SocketAddr, o: &Options) -> ExitCode {
    match export::prometheus::serve(listen, o) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hk-top: cannot serve /metrics on {listen}: {e}");
            ExitCode::FAILURE
        }
    }
}
