//! Everything the live view waits for, on one channel: keys and resizes
//! (a thread reading the terminal), snapshots (the poller), and the
//! signals that end it (SIGTERM, SIGHUP, SIGINT, SIGQUIT, through
//! signal-hook, so that hk-top restores the terminal before it exits
//! instead of dying in raw mode).
//!
//! The poller is the live view's I/O: a thread that reads every node each
//! interval and hands the snapshot over; now and then it asks the cluster
//! for its nodes again, so that a promoted replica or a new primary joins
//! the view (a node that left stays, and shows as not answering).

use crate::connection::nodes::{discover, merge, Node};
use crate::connection::settings::ConnectionSettings;
use crate::reading::hot_keys::{snapshot, Snapshot};
use crossterm::event::{self, Event, KeyEvent, KeyEventKind};
use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};
use signal_hook::iterator::Signals;
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

pub enum Input {
    Key(KeyEvent),
    /// The terminal changed size: draw again.
    Resize,
    Snapshot(Snapshot),
    Signal(i32),
    /// The terminal cannot be read any more.
    TerminalLost(std::io::Error),
}

/// Keys and resizes, until the terminal fails or the view is gone.
pub fn read_terminal(inputs: Sender<Input>) {
    std::thread::spawn(move || loop {
        let input = match event::read() {
            Ok(Event::Key(key)) if key.kind != KeyEventKind::Release => Input::Key(key),
            Ok(Event::Resize(..)) => Input::Resize,
            Ok(_) => continue,
            Err(e) => {
                let _ = inputs.send(Input::TerminalLost(e));
                return;
            }
        };
        if inputs.send(input).is_err() {
            return;
        }
    });
}

/// The ending signals, caught from now on (before the terminal is taken,
/// so that none can leave it in raw mode).
pub fn catch_signals(inputs: Sender<Input>) -> std::io::Result<()> {
    let mut signals = Signals::new([SIGTERM, SIGHUP, SIGINT, SIGQUIT])?;
    std::thread::spawn(move || {
        for signal in signals.forever() {
            if inputs.send(Input::Signal(signal)).is_err() {
                return;
            }
        }
    });
    Ok(())
}

/// Ask for the cluster's nodes again every this many refreshes.
const REDISCOVER_EVERY: u64 = 10;

pub struct Poller {
    pub connection: ConnectionSettings,
    /// The address given on the command line.
    pub address: String,
    pub replicas: bool,
    pub nodes: Vec<Node>,
    pub interval: Duration,
}

impl Poller {
    pub fn spawn(mut self, inputs: Sender<Input>) {
        std::thread::spawn(move || {
            for refresh in 1.. {
                let started = Instant::now();
                if refresh % REDISCOVER_EVERY == 0 {
                    self.rediscover();
                }
                let snapshot = snapshot(&self.connection, &self.nodes);
                crate::fault::panic_if_asked("poller");
                if inputs.send(Input::Snapshot(snapshot)).is_err() {
                    return;
                }
                std::thread::sleep(self.interval.saturating_sub(started.elapsed()));
            }
        });
    }

    /// The nodes as the first node that answers lists them.
    fn rediscover(&mut self) {
        let addresses = std::iter::once(self.address.clone())
            .chain(self.nodes.iter().map(|n| n.address.clone()));
        for address in addresses.collect::<Vec<_>>() {
            if let Ok(found) = discover(&self.connection, &address, self.replicas) {
                merge(&mut self.nodes, found);
                return;
            }
        }
    }
}
