//! The cluster as each of its nodes sees it (`CLUSTER NODES`): who serves
//! which slots, which nodes are failing, and the slots a node is migrating
//! or importing (only the node itself lists those, on its `myself` line).

use super::link::Link;
use crate::connection::nodes::listed_address;
use redis::RedisResult;
use std::collections::BTreeMap;

pub const SLOTS: usize = 16384;

/// What a slot no primary serves may mean.
const DROPPED_SLOT: &str = "Redis 7.0.13-7.0.15 and 7.2.0-7.2.3 can drop a slot (deleting its keys) that was moved back onto a primary it had left, redis/redis#12564; see where its keys are (CLUSTER COUNTKEYSINSLOT) before giving it to a primary with CLUSTER SETSLOT <slot> NODE";

/// One line of `CLUSTER NODES`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterNode {
    pub id: String,
    pub address: String,
    flags: Vec<String>,
    /// The primary it replicates (a replica's), by id.
    pub replicates: Option<String>,
    connected: bool,
    /// The slots it serves, as `(first, last)` ranges.
    pub slots: Vec<(u16, u16)>,
    /// `[slot->-id]`: slots this node is handing to `id`.
    pub migrating: Vec<(u16, String)>,
    /// `[slot-<-id]`: slots this node is taking from `id`.
    pub importing: Vec<(u16, String)>,
}

impl ClusterNode {
    pub fn is_primary(&self) -> bool {
        self.flags.iter().any(|f| f == "master")
    }

    pub fn is_myself(&self) -> bool {
        self.flags.iter().any(|f| f == "myself")
    }

    /// Failing, suspected of failing, not yet joined, or without address:
    /// a cluster with such a node is no place to move slots.
    pub fn trouble(&self) -> Option<String> {
        let bad = ["fail", "fail?", "pfail", "handshake", "noaddr"];
        let flagged: Vec<&str> = (self.flags.iter())
            .map(String::as_str)
            .filter(|f| bad.contains(f))
            .collect();
        if !flagged.is_empty() {
            return Some(format!("flagged {}", flagged.join(",")));
        }
        (!self.connected).then(|| "its link is disconnected".to_string())
    }

    pub fn owns(&self, slot: u16) -> bool {
        self.slots.iter().any(|&(lo, hi)| (lo..=hi).contains(&slot))
    }
}

/// `CLUSTER NODES` as lines; a line it cannot read is left out (odd
/// replies never panic), `asked` fills in a node that does not know its
/// own IP yet (`:port`).
pub fn parse_nodes(listing: &str, asked: &str) -> Vec<ClusterNode> {
    let lines = listing.lines();
    lines.filter_map(|line| parse_line(line, asked)).collect()
}

fn parse_line(line: &str, asked: &str) -> Option<ClusterNode> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    // id, address, flags, primary, ping sent, pong received, epoch, link
    // state, then the slots.
    let [id, address, flags, primary, _, _, _, link, slots @ ..] = fields.as_slice() else {
        return None;
    };
    let mut node = ClusterNode {
        id: id.to_string(),
        address: listed_address(address, asked)?,
        flags: flags.split(',').map(str::to_string).collect(),
        replicates: (*primary != "-").then(|| primary.to_string()),
        connected: *link == "connected",
        slots: Vec::new(),
        migrating: Vec::new(),
        importing: Vec::new(),
    };
    for entry in slots {
        read_slot_entry(entry, &mut node);
    }
    Some(node)
}

/// `lo-hi`, `n`, `[n->-id]` or `[n-<-id]`.
fn read_slot_entry(entry: &str, node: &mut ClusterNode) {
    if let Some(inner) = entry.strip_prefix('[').and_then(|e| e.strip_suffix(']')) {
        if let Some((slot, id)) = inner.split_once("->-") {
            if let Ok(slot) = slot.parse() {
                node.migrating.push((slot, id.to_string()));
            }
        } else if let Some((slot, id)) = inner.split_once("-<-") {
            if let Ok(slot) = slot.parse() {
                node.importing.push((slot, id.to_string()));
            }
        }
        return;
    }
    let (lo, hi) = entry.split_once('-').unwrap_or((entry, entry));
    if let (Ok(lo), Ok(hi)) = (lo.parse::<u16>(), hi.parse::<u16>()) {
        if lo <= hi && (hi as usize) < SLOTS {
            node.slots.push((lo, hi));
        }
    }
}

/// What every node said, each as its own `CLUSTER NODES` and `CLUSTER
/// INFO`'s `cluster_state`.
#[derive(Clone, Debug, Default)]
pub struct Views {
    /// Per node address asked: its listing, or why it did not answer.
    views: BTreeMap<String, Result<View, String>>,
}

#[derive(Clone, Debug)]
pub struct View {
    pub nodes: Vec<ClusterNode>,
    pub state_ok: bool,
}

impl View {
    pub fn myself(&self) -> Option<&ClusterNode> {
        self.nodes.iter().find(|n| n.is_myself())
    }

    /// Who serves each slot, as this node sees it (node id per slot).
    pub fn slot_map(&self) -> Vec<Option<&str>> {
        let mut map = vec![None; SLOTS];
        for node in self.nodes.iter().filter(|n| n.is_primary()) {
            for &(lo, hi) in &node.slots {
                // In range: parsing keeps only `lo <= hi < SLOTS`.
                if let Some(owned) = map.get_mut(usize::from(lo)..=usize::from(hi)) {
                    owned.fill(Some(node.id.as_str()));
                }
            }
        }
        map
    }
}

impl Views {
    /// Asks the first of `addresses` that answers, then every node it
    /// lists.
    pub fn read_any(link: &mut dyn Link, addresses: &[String]) -> RedisResult<Views> {
        let mut seed = Err(redis::RedisError::from((
            redis::ErrorKind::IoError,
            "no node to ask",
        )));
        for address in addresses {
            seed = read_view(link, address);
            if seed.is_ok() {
                break;
            }
        }
        let mut views = BTreeMap::new();
        for node in seed?.nodes {
            let view = read_view(link, &node.address).map_err(|e| e.to_string());
            views.insert(node.address.clone(), view);
        }
        Ok(Views { views })
    }

    /// Every node address the views name.
    pub fn addresses(&self) -> Vec<String> {
        self.views.keys().cloned().collect()
    }

    pub fn all(&self) -> impl Iterator<Item = (&str, &Result<View, String>)> {
        self.views.iter().map(|(a, v)| (a.as_str(), v))
    }

    /// The nodes' own lines (each as it sees itself), of those that answered.
    pub fn selves(&self) -> Vec<&ClusterNode> {
        let answered = self.views.values().filter_map(|v| v.as_ref().ok());
        answered.filter_map(View::myself).collect()
    }

    pub fn primaries(&self) -> Vec<&ClusterNode> {
        let selves = self.selves().into_iter();
        selves.filter(|n| n.is_primary()).collect()
    }

    pub fn by_id(&self, id: &str) -> Option<&ClusterNode> {
        self.selves().into_iter().find(|n| n.id == id)
    }

    pub fn by_address(&self, address: &str) -> Option<&ClusterNode> {
        self.selves().into_iter().find(|n| n.address == address)
    }

    /// The primary that serves `slot`, as it says itself.
    pub fn owner_of(&self, slot: u16) -> Option<&ClusterNode> {
        self.primaries().into_iter().find(|n| n.owns(slot))
    }

    /// Where `node`'s part went if it failed over: the node itself while
    /// it is a primary, else the primary it now replicates.
    pub fn successor(&self, node: &ClusterNode) -> Option<&ClusterNode> {
        let now = self.by_id(&node.id)?;
        if now.is_primary() {
            return Some(now);
        }
        self.by_id(now.replicates.as_deref()?)
            .filter(|p| p.is_primary())
    }

    /// A node id as its address, where a node answered for it.
    fn name(&self, id: Option<&str>) -> String {
        match id {
            None => "nobody".to_string(),
            Some(id) => self
                .by_id(id)
                .map_or_else(|| id.to_string(), |n| n.address.clone()),
        }
    }

    /// The slot map the primaries agree on (per slot, the owner's id), if
    /// they do, ignoring `except` (slots whose move is under way).
    pub fn agreed_map(&self, except: &[u16]) -> Result<Vec<Option<String>>, String> {
        let mut agreed: Option<(String, Vec<Option<String>>)> = None;
        for (address, view) in &self.views {
            let Ok(view) = view else { continue };
            if !view.myself().is_some_and(ClusterNode::is_primary) {
                continue;
            }
            let map = view.slot_map().into_iter().map(|o| o.map(str::to_string));
            let map: Vec<Option<String>> = map.collect();
            match &agreed {
                None => agreed = Some((address.clone(), map)),
                Some((first, seen)) => {
                    let differs = (seen.iter().zip(&map).enumerate())
                        .find(|&(s, (a, b))| a != b && !except.contains(&(s as u16)));
                    if let Some((slot, (a, b))) = differs {
                        let claimed: Vec<&str> = (self.primaries().into_iter())
                            .filter(|n| n.owns(slot as u16))
                            .map(|n| n.address.as_str())
                            .collect();
                        let served = if claimed.is_empty() {
                            format!("no primary says it serves it: {DROPPED_SLOT}")
                        } else {
                            format!("served by {}, as they say", claimed.join(" and "))
                        };
                        return Err(format!(
                            "{first} and {address} disagree on who serves slot {slot} ({} and {}; {served})",
                            self.name(a.as_deref()),
                            self.name(b.as_deref()),
                        ));
                    }
                }
            }
        }
        agreed
            .map(|(_, map)| map)
            .ok_or_else(|| "no primary answered".to_string())
    }
}

fn read_view(link: &mut dyn Link, address: &str) -> RedisResult<View> {
    let ask = |link: &mut dyn Link, what: &str| -> RedisResult<String> {
        redis::from_redis_value(&link.ask(address, redis::cmd("CLUSTER").arg(what))?)
    };
    let listing = ask(link, "NODES")?;
    let info = ask(link, "INFO")?;
    Ok(View {
        nodes: parse_nodes(&listing, address),
        state_ok: info.lines().any(|l| l.trim() == "cluster_state:ok"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_give_slots_migrations_and_trouble() {
        let listing = "\
a1 127.0.0.1:30001@40001 myself,master - 0 0 1 connected 0-5460 [7->-b2] [9-<-c3]
b2 127.0.0.1:30002@40002 master - 0 0 2 connected 5461-10922 12000
c3 127.0.0.1:30003@40003 master,fail - 0 0 3 disconnected
junk line
";
        let nodes = parse_nodes(listing, "127.0.0.1:30001");
        assert_eq!(nodes.len(), 3);
        assert!(nodes[0].is_myself() && nodes[0].is_primary());
        assert_eq!(nodes[0].slots, [(0, 5460)]);
        assert_eq!(nodes[0].migrating, [(7, "b2".to_string())]);
        assert_eq!(nodes[0].importing, [(9, "c3".to_string())]);
        assert!(nodes[1].owns(12000) && !nodes[1].owns(11000));
        assert_eq!(nodes[0].trouble(), None);
        assert_eq!(nodes[2].trouble().as_deref(), Some("flagged fail"));
    }
}
