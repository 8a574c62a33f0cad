//! Test data shared by the console's and the drawing's tests: six nodes on
//! one host (addresses that differ only in their port), keys with long
//! common prefixes, a key that is not UTF-8, and hot misses on half of the
//! nodes; and the replies the readers' tests parse.

use crate::connection::nodes::Node;
use crate::live::console::{Console, Settings};
use crate::reading::hot_keys::{KeyId, Snapshot};
use crate::reading::metric::{Metric, Rates};
use crate::reading::sort::Order;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

pub const NODES: usize = 6;

/// `10.20.30.40:30001` to `:30006`: one host, six ports.
pub fn node_address(n: usize) -> String {
    format!("10.20.30.40:3000{}", n + 1)
}

/// A cluster's primary at `address`.
pub fn node(address: &str) -> Node {
    Node {
        address: address.into(),
        primary: true,
        cluster: true,
    }
}

pub fn six_nodes() -> Vec<Node> {
    (0..NODES).map(|n| node(&node_address(n))).collect()
}

/// A key name 59 bytes long, the same but for its last six digits.
pub fn long_key(i: usize) -> String {
    format!("tenant:42:session:some:much:longer:key:name:for:user:{i:06}")
}

pub const BINARY_KEY: &[u8] = b"bin:\xff\xfe:raw";

pub fn rates(reads: f64, writes: f64) -> Rates {
    let mut rates = Rates::only(Metric::Reads, reads);
    rates.add(Metric::Writes, writes);
    rates
}

pub fn key_id(node: &str, db: i64, key: &[u8]) -> KeyId {
    KeyId {
        node: node.into(),
        db,
        key: key.to_vec(),
    }
}

/// Key `key` of database 0 on node `n` of the six.
pub fn id(n: usize, key: &[u8]) -> KeyId {
    key_id(&node_address(n), 0, key)
}

/// Twelve long keys spread over the six nodes (reads falling with `i`,
/// writes rising), a binary key, and `counter:hot` with the most writes.
pub fn busy_snapshot() -> Snapshot {
    let mut keys: Vec<(KeyId, Rates)> = (0..12)
        .map(|i| {
            let key = long_key(i);
            (
                id(i % NODES, key.as_bytes()),
                rates(1000.0 - 50.0 * i as f64, i as f64),
            )
        })
        .collect();
    keys.push((id(2, BINARY_KEY), rates(420.0, 0.0)));
    keys.push((id(5, b"counter:hot"), rates(0.0, 5000.0)));
    Snapshot {
        nodes: six_nodes(),
        keys,
        ..Snapshot::default()
    }
}

/// A key read this often, every read a miss.
pub fn missed(per_second: f64) -> Rates {
    let mut rates = rates(per_second, 0.0);
    rates.add(Metric::Misses, per_second);
    rates
}

/// A key hammered while it does not exist, the hottest of the misses.
pub const MISSING_KEY: &[u8] = b"absent:user:404";
/// Another missing key, not UTF-8.
pub const MISSING_BINARY_KEY: &[u8] = b"gone:\xff";

/// The busy snapshot where nodes 0 to 2 count misses (`track-misses yes`)
/// and 3 to 5 do not; two keys missed on nodes that count them.
pub fn misses_snapshot() -> Snapshot {
    let mut snapshot = busy_snapshot();
    snapshot.optional_counted = (0..3).map(|n| (node_address(n), Metric::Misses)).collect();
    snapshot.keys.push((id(1, MISSING_KEY), missed(600.0)));
    snapshot
        .keys
        .push((id(0, MISSING_BINARY_KEY), missed(30.0)));
    snapshot
}

pub fn console() -> Console {
    console_of(None)
}

/// The console once it has shown [`busy_snapshot`].
pub fn busy_console() -> Console {
    let mut c = console();
    c.apply(busy_snapshot());
    c
}

/// The console once it has shown [`misses_snapshot`].
pub fn misses_console() -> Console {
    let mut c = console();
    c.apply(misses_snapshot());
    c
}

/// A console over the six nodes, listing at most `limit` keys.
pub fn console_of(limit: Option<usize>) -> Console {
    let settings = Settings {
        order: Order::default(),
        filter: Default::default(),
        limit,
        interval_ms: 1000,
    };
    Console::new(six_nodes(), settings)
}

/// A reply's bulk string.
pub fn bulk(text: &str) -> redis::Value {
    redis::Value::BulkString(text.as_bytes().to_vec())
}

pub fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

/// Presses each key in turn.
pub fn press(console: &mut Console, codes: &[KeyCode]) {
    for &code in codes {
        console.press(&key(code));
    }
}

/// Presses each character of `text` in turn.
pub fn type_text(console: &mut Console, text: &str) {
    for c in text.chars() {
        console.press(&key(KeyCode::Char(c)));
    }
}
