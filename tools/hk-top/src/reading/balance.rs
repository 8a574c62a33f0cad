//! How the tracked traffic spreads over the nodes (a cluster's balance):
//! each node's traffic as its tracker counts it (every counted access, from
//! `INFO heavykeeper`), or where a node does not say, its hot keys summed;
//! and its share of all nodes'. A node
//! that did not answer is listed with its error and no share, never left
//! out: a node down is what an operator most needs to see.

use crate::connection::nodes::Node;
use crate::reading::hot_keys::Snapshot;
use crate::reading::metric::Rates;

#[derive(Clone, Debug, PartialEq)]
pub struct NodeLoad {
    pub node: Node,
    /// Why it did not answer; `None` if it did.
    pub error: Option<String>,
    /// Keys its tracker listed.
    pub keys: usize,
    /// Its listed keys' rates, summed.
    pub rates: Rates,
    /// Its whole traffic as its tracker counts it, if it said.
    pub tracked: Option<Rates>,
    /// Its part of all answering nodes' total, 0 to 1 (`None` when it did
    /// not answer, or when no node reports any traffic).
    pub share: Option<f64>,
}

/// One entry per node of the snapshot, in the snapshot's node order.
pub fn node_loads(snapshot: &Snapshot) -> Vec<NodeLoad> {
    let mut loads: Vec<NodeLoad> = snapshot
        .nodes
        .iter()
        .map(|node| NodeLoad {
            node: node.clone(),
            error: snapshot.error_of(&node.address).map(str::to_string),
            keys: 0,
            rates: Rates::default(),
            tracked: (snapshot.totals.iter())
                .find(|(a, _)| *a == node.address)
                .map(|(_, r)| *r),
            share: None,
        })
        .collect();
    for (id, rates) in &snapshot.keys {
        if let Some(load) = loads.iter_mut().find(|l| l.node.address == id.node) {
            load.keys += 1;
            load.rates.add_all(rates);
        }
    }
    // The trackers' totals where every answering node gave them (shares
    // of one kind of figure only), else the listed keys'.
    let answering = || loads.iter().filter(|l| l.error.is_none());
    let by_tracker = answering().all(|l| l.tracked.is_some());
    let load_of = |l: &NodeLoad| match (&l.tracked, by_tracker) {
        (Some(tracked), true) => tracked.total(),
        _ => l.rates.total(),
    };
    let all: f64 = answering().map(load_of).sum();
    let shares: Vec<Option<f64>> = (loads.iter())
        .map(|l| (l.error.is_none() && all > 0.0).then(|| load_of(l) / all))
        .collect();
    for (load, share) in loads.iter_mut().zip(shares) {
        load.share = share;
    }
    loads
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{key_id, node};
    use crate::reading::metric::Metric;

    #[test]
    fn shares_add_up_and_silent_nodes_stay_listed() {
        let id = |node: &str, key: &str| key_id(node, 0, key.as_bytes());
        let snapshot = Snapshot {
            nodes: vec![node("a:1"), node("a:2"), node("a:3")],
            keys: vec![
                (id("a:1", "x"), Rates::only(Metric::Reads, 30.0)),
                (id("a:1", "y"), Rates::only(Metric::Writes, 30.0)),
                (id("a:2", "z"), Rates::only(Metric::Reads, 20.0)),
            ],
            errors: vec![("a:3".into(), "connection refused".into())],
            ..Snapshot::default()
        };
        let loads = node_loads(&snapshot);
        assert_eq!(loads.len(), 3);
        assert_eq!((loads[0].keys, loads[0].share), (2, Some(0.75)));
        assert_eq!((loads[1].keys, loads[1].share), (1, Some(0.25)));
        assert_eq!(loads[2].share, None);
        assert_eq!(loads[2].error.as_deref(), Some("connection refused"));
    }

    #[test]
    fn the_trackers_totals_make_the_shares_when_every_node_gives_them() {
        let id = |node: &str| key_id(node, 0, b"k");
        let mut snapshot = Snapshot {
            nodes: vec![node("a:1"), node("a:2")],
            keys: vec![
                (id("a:1"), Rates::only(Metric::Reads, 10.0)),
                (id("a:2"), Rates::only(Metric::Reads, 10.0)),
            ],
            // a:1 serves many keys too cool to be listed.
            totals: vec![
                ("a:1".into(), Rates::only(Metric::Reads, 600.0)),
                ("a:2".into(), Rates::only(Metric::Writes, 200.0)),
            ],
            ..Snapshot::default()
        };
        let shares: Vec<Option<f64>> = node_loads(&snapshot).iter().map(|l| l.share).collect();
        assert_eq!(shares, [Some(0.75), Some(0.25)]);
        // One node silent on its totals: the listed keys for all.
        snapshot.totals.pop();
        let shares: Vec<Option<f64>> = node_loads(&snapshot).iter().map(|l| l.share).collect();
        assert_eq!(shares, [Some(0.5), Some(0.5)]);
    }
}
