//! Which keys to show: a key pattern (as `SCAN MATCH` takes it), a node
//! (its address, or a pattern of addresses) and a database; each one left
//! out selects everything.

use crate::reading::hot_keys::KeyId;
use crate::reading::metric::Rates;
use crate::reading::pattern::KeyPattern;
use crate::reading::sort::Order;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filter {
    key: Option<KeyPattern>,
    node: Option<String>,
    db: Option<i64>,
}

impl Filter {
    pub fn matches(&self, id: &KeyId) -> bool {
        self.key.as_ref().is_none_or(|p| p.matches(&id.key))
            && self.selects_node(&id.node)
            && self.db.is_none_or(|db| db == id.db)
    }

    /// The keys this filter selects, in `order`.
    pub fn select(&self, keys: &[(KeyId, Rates)], order: Order) -> Vec<(KeyId, Rates)> {
        let selected = keys.iter().filter(|(id, _)| self.matches(id));
        let mut rows: Vec<(KeyId, Rates)> = selected.cloned().collect();
        order.sort(&mut rows);
        rows
    }

    /// Does the node filter select `address`? (The nodes view dims the
    /// others.)
    pub fn selects_node(&self, address: &str) -> bool {
        // The address itself (an IPv6 `[::1]:7000` has brackets a pattern
        // would read as a class), or a pattern such as `*:7001`.
        let matches = |n: &str| n == address || KeyPattern::new(n).matches(address.as_bytes());
        self.node.as_deref().is_none_or(matches)
    }

    /// An empty pattern selects every key again.
    pub fn set_key_pattern(&mut self, pattern: &[u8]) {
        self.key = (!pattern.is_empty()).then(|| KeyPattern::new(pattern));
    }

    pub fn set_node(&mut self, node: &str) {
        self.node = (!node.is_empty()).then(|| node.to_string());
    }

    pub fn set_db(&mut self, db: Option<i64>) {
        self.db = db;
    }

    pub fn key_pattern(&self) -> Option<&[u8]> {
        self.key.as_ref().map(KeyPattern::as_bytes)
    }

    pub fn node(&self) -> Option<&str> {
        self.node.as_deref()
    }

    pub fn db(&self) -> Option<i64> {
        self.db
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::key_id as id;

    #[test]
    fn every_part_must_match() {
        let mut filter = Filter::default();
        assert!(filter.matches(&id("a:1", 3, b"\xff")));
        filter.set_key_pattern(b"user:*");
        filter.set_node("*:7001");
        filter.set_db(Some(2));
        assert!(filter.matches(&id("10.0.0.1:7001", 2, b"user:9")));
        assert!(!filter.matches(&id("10.0.0.1:7002", 2, b"user:9")));
        assert!(!filter.matches(&id("10.0.0.1:7001", 0, b"user:9")));
        assert!(!filter.matches(&id("10.0.0.1:7001", 2, b"cart:9")));
        filter.set_key_pattern(b"");
        filter.set_node("");
        filter.set_db(None);
        assert_eq!(filter, Filter::default());
    }

    #[test]
    fn a_node_by_its_whole_address_even_with_brackets() {
        let mut filter = Filter::default();
        filter.set_node("[::1]:7000");
        assert!(filter.selects_node("[::1]:7000"));
        assert!(!filter.selects_node("[::1]:7001"));
        filter.set_node("127.0.0.1:3000");
        assert!(
            !filter.selects_node("127.0.0.1:30001"),
            "an address, not a prefix"
        );
    }
}
