//! Which servers to ask: the one given, or every node of its cluster.

use crate::connection::settings::ConnectionSettings;
use redis::RedisResult;

/// One server whose tracker is read.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Node {
    pub address: String,
    pub primary: bool,
    /// A member of a cluster (its keys have hash slots).
    pub cluster: bool,
}

impl Node {
    /// A server on its own, outside any cluster, as a primary.
    pub fn alone(address: &str) -> Node {
        Node {
            address: address.to_string(),
            primary: true,
            cluster: false,
        }
    }
}

/// The node at `address`, or, in a cluster, every primary (and every
/// replica with `replicas`), as `CLUSTER NODES` lists them. A user whose
/// ACL allows `HK.HOTKEYS` but not `INFO` gets the one node it named.
pub fn discover(
    connection: &ConnectionSettings,
    address: &str,
    replicas: bool,
) -> RedisResult<Vec<Node>> {
    let mut con = connection.connect(address)?;
    let only_this = || vec![Node::alone(address)];
    let cluster: String = match redis::cmd("INFO").arg("cluster").query(&mut con) {
        Ok(text) => text,
        Err(e) if e.code() == Some("NOPERM") => return Ok(only_this()),
        Err(e) => return Err(e),
    };
    if !cluster.lines().any(|l| l.trim() == "cluster_enabled:1") {
        return Ok(only_this());
    }
    let listing: String = redis::cmd("CLUSTER").arg("NODES").query(&mut con)?;
    let listed = listing
        .lines()
        .filter_map(|line| parse_cluster_node(line, address));
    let mut nodes: Vec<Node> = listed.filter(|node| node.primary || replicas).collect();
    nodes.sort();
    Ok(nodes)
}

/// `<id> <ip:port@cport[,hostname]> <flags> ...`: the address and role.
fn parse_cluster_node(line: &str, asked: &str) -> Option<Node> {
    let mut fields = line.split_whitespace();
    let _id = fields.next()?;
    let endpoint = fields.next()?;
    let flags = fields.next()?;
    if flags.contains("fail") || flags.contains("noaddr") || flags.contains("handshake") {
        return None;
    }
    Some(Node {
        address: listed_address(endpoint, asked)?,
        primary: flags.contains("master"),
        cluster: true,
    })
}

/// `read` of every node, the nodes asked at once (one slow node delays
/// the answers by its own time, not by the sum of every node's); a reader
/// that panicked is a node that did not answer: `panicked` of it.
pub fn ask_each<T: Send>(
    nodes: &[Node],
    read: impl Fn(&Node) -> T + Sync,
    panicked: impl Fn(&Node) -> T,
) -> Vec<T> {
    std::thread::scope(|scope| {
        let asking: Vec<_> = (nodes.iter())
            .map(|node| (node, scope.spawn(|| read(node))))
            .collect();
        (asking.into_iter())
            .map(|(node, asked)| asked.join().unwrap_or_else(|_| panicked(node)))
            .collect()
    })
}

/// A `CLUSTER NODES` line's `ip:port@cport[,hostname]` as `ip:port`; a
/// node that does not know its own IP yet says `:port`, on the host
/// `asked` (the node that listed it).
pub fn listed_address(endpoint: &str, asked: &str) -> Option<String> {
    let address = endpoint.split(['@', ',']).next()?;
    if address.starts_with(':') {
        let host = asked.rsplit_once(':').map_or("127.0.0.1", |(h, _)| h);
        return Some(format!("{host}{address}"));
    }
    Some(address.to_string())
}

/// `found` added to `known`: new nodes (a replica promoted, a node added)
/// join; a node that left the listing (failed, or removed) stays, so that
/// a node down is shown as not answering rather than dropped.
pub fn merge(known: &mut Vec<Node>, found: Vec<Node>) {
    for node in found {
        match known.iter_mut().find(|k| k.address == node.address) {
            Some(old) => *old = node,
            None => known.push(node),
        }
    }
    known.sort();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cluster node at `address`, a primary or a replica.
    fn node(address: &str, primary: bool) -> Node {
        Node {
            primary,
            ..crate::fixtures::node(address)
        }
    }

    #[test]
    fn cluster_nodes_lines_give_addresses_and_roles() {
        let line = "07c3 127.0.0.1:30001@40001 myself,master - 0 0 1 connected 0-5460";
        let parsed = parse_cluster_node(line, "127.0.0.1:30001");
        assert_eq!(parsed, Some(node("127.0.0.1:30001", true)));
        let replica = "9a1f 10.0.0.2:6380@16380,host slave 07c3 0 0 1 connected";
        let parsed = parse_cluster_node(replica, "x:1");
        assert_eq!(parsed, Some(node("10.0.0.2:6380", false)));
        let failed = "ab 1.2.3.4:5@6 master,fail - 0 0 1 disconnected";
        assert_eq!(parse_cluster_node(failed, ""), None);
        let unknown = "cd :7000@17000 myself,master - 0 0 0 connected";
        assert_eq!(
            parse_cluster_node(unknown, "127.0.0.1:7000").map(|n| n.address),
            Some("127.0.0.1:7000".into())
        );
    }

    #[test]
    fn merging_keeps_nodes_that_left_and_adds_new_ones() {
        let mut known = vec![node("a:1", true), node("a:2", false)];
        // a:1 failed and is no longer listed; its replica a:2 took over.
        merge(&mut known, vec![node("a:2", true), node("a:3", true)]);
        assert_eq!(
            known,
            vec![node("a:1", true), node("a:2", true), node("a:3", true)]
        );
    }
}
