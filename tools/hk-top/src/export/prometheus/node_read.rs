//! What one node answers at one scrape: its `INFO heavykeeper`, its hottest
//! keys of each kind, prefixes and slots (each cut to `--count`: the bound
//! on series), and the load of every slot it serves; where it names
//! clients, its hottest clients and who drives its hottest few keys
//! ([`crate::reading::senders`]: at most 10 + 5 × 3 series). Read before anything
//! is registered, so that the nodes can be asked at once and the shares
//! worked out from all of them.

use crate::connection::nodes::Node;
use crate::connection::settings::ConnectionSettings;
use crate::reading::hot_keys::{hottest, node_hot_keys, node_hot_prefixes, totals_of, KeyId, Row};
use crate::reading::hot_slots::{node_hot_slots, SlotRow};
use crate::reading::metric::Rates;
use crate::reading::senders::{self, Sender, KEYS_WITH_SENDERS};

/// One node's answers; `None` for a node that could not be reached.
pub struct NodeRead {
    pub(super) node: Node,
    pub(super) answer: Option<Answer>,
}

#[derive(Default)]
pub struct Answer {
    /// Queries that failed (an ACL that allows some, a node that went away
    /// between two).
    pub(super) failed: u32,
    pub(super) info: Option<String>,
    pub(super) keys: Vec<(KeyId, Rates)>,
    pub(super) prefixes: Vec<Row>,
    /// The `--count` hottest slots, with their bounds.
    pub(super) hot_slots: Vec<SlotRow>,
    /// Every slot with load (a cluster node only).
    pub(super) all_slots: Vec<SlotRow>,
    /// Who drives the hottest few keys, and the hottest clients.
    pub(super) key_senders: Vec<(KeyId, Vec<Sender>)>,
    pub(super) hot_clients: Vec<Sender>,
}

impl Answer {
    /// The node's reads and writes per second as its tracker counts them.
    pub(super) fn totals(&self) -> Option<Rates> {
        self.info.as_deref().and_then(totals_of)
    }
}

impl NodeRead {
    pub fn read(connection: &ConnectionSettings, node: &Node, count: usize) -> NodeRead {
        let answer = connection
            .connect(&node.address)
            .ok()
            .map(|mut con| ask(&mut con, node, count));
        NodeRead {
            node: node.clone(),
            answer,
        }
    }

    #[cfg(test)]
    pub fn answered(node: Node, answer: Answer) -> NodeRead {
        NodeRead {
            node,
            answer: Some(answer),
        }
    }

    pub fn unreached(node: &Node) -> NodeRead {
        NodeRead {
            node: node.clone(),
            answer: None,
        }
    }
}

fn ask(con: &mut redis::Connection, node: &Node, count: usize) -> Answer {
    let info = redis::cmd("INFO").arg("heavykeeper").query::<String>(con);
    // A node that does not count misses answers without them, one that
    // does not count prefixes without prefixes: neither is a failure.
    let keys = node_hot_keys(con, &node.address, Some(count));
    let prefixes = node_hot_prefixes(con, count);
    // Outside a cluster there are no slots to ask for.
    let (hot_slots, all_slots) = if node.cluster {
        (
            node_hot_slots(con, Some(count), true),
            node_hot_slots(con, None, false),
        )
    } else {
        (Ok(None), Ok(None))
    };
    let answered = [
        info.is_ok(),
        keys.is_ok(),
        prefixes.is_ok(),
        hot_slots.is_ok(),
        all_slots.is_ok(),
    ];
    let keys = keys.map(|k| k.rows).unwrap_or_default();
    let hot_clients = senders::of_node(con);
    let key_senders = match hot_clients {
        // A node that names no clients is not asked of each key.
        Some(_) => (hottest(&keys, KEYS_WITH_SENDERS).into_iter())
            .filter_map(|id| Some((senders::of_key(con, id.db, &id.key)?, id)))
            .map(|(senders, id)| (id, senders))
            .collect(),
        None => Vec::new(),
    };
    Answer {
        failed: answered.iter().filter(|ok| !**ok).count() as u32,
        info: info.ok(),
        keys,
        key_senders,
        hot_clients: hot_clients.unwrap_or_default(),
        prefixes: prefixes.ok().flatten().unwrap_or_default(),
        hot_slots: hot_slots.ok().flatten().unwrap_or_default(),
        all_slots: all_slots.ok().flatten().unwrap_or_default(),
    }
}
