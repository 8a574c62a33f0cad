//! The live view's I/O: a thread that reads every node each interval and
//! hands the snapshot over; now and then it asks the cluster for its nodes
//! again, so that a promoted replica or a new primary joins the view (a
//! node that left stays, and shows as not answering).

use crate::connection::nodes::{discover, merge, Node};
use crate::connection::settings::ConnectionSettings;
use crate::live::events::Input;
use crate::reading::hot_keys::snapshot;
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

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
