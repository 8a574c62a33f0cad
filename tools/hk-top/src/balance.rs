//! How the tracked traffic spreads over the nodes (a cluster's balance):
//! each node's hot keys summed, and its share of all nodes' sums. A node
//! that did not answer is listed with its error and no share, never left
//! out: a node down is what an operator most needs to see.

use crate::hot_keys::Snapshot;
use crate::metric::Rates;
use crate::nodes::Node;

#[derive(Clone, Debug, PartialEq)]
pub struct NodeLoad {
    pub node: Node,
    /// Why it did not answer; `None` if it did.
    pub error: Option<String>,
    /// Keys its tracker listed.
    pub keys: usize,
    /// Its listed keys' rates, summed.
    pub rates: Rates,
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
            share: None,
        })
        .collect();
    for (id, rates) in &snapshot.keys {
        if let Some(load) = loads.iter_mut().find(|l| l.node.address == id.node) {
            load.keys += 1;
            load.rates.add_all(rates);
        }
    }
    let all: f64 = loads.iter().map(|l| l.rates.total()).sum();
    for load in loads.iter_mut().filter(|l| l.error.is_none()) {
        load.share = (all > 0.0).then(|| load.rates.total() / all);
    }
    loads
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hot_keys::KeyId;
    use crate::metric::Metric;

    fn node(address: &str) -> Node {
        Node {
            address: address.into(),
            primary: true,
            cluster: true,
        }
    }

    #[test]
    fn shares_add_up_and_silent_nodes_stay_listed() {
        let id = |node: &str, key: &str| KeyId {
            node: node.into(),
            db: 0,
            key: key.as_bytes().to_vec(),
        };
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
}
