//! The order of the keys: by one rate, the total, the node or the name;
//! hottest (or first) at the top unless reversed. Every ordering ends on
//! the key's identity, so that rows never swap places between refreshes.

use crate::reading::hot_keys::KeyId;
use crate::reading::metric::{Metric, Rates};
use std::cmp::Ordering;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SortKey {
    #[default]
    Total,
    Rate(Metric),
    /// Grouped by node (its address), hottest first within each.
    Node,
    /// By name, as bytes.
    Key,
}

impl SortKey {
    /// In the order `<` and `>` step through them: the columns' order.
    pub fn all() -> Vec<SortKey> {
        let mut all = vec![SortKey::Key, SortKey::Node];
        all.extend(Metric::ALL.map(SortKey::Rate));
        all.push(SortKey::Total);
        all
    }

    pub fn name(self) -> &'static str {
        match self {
            SortKey::Total => "total",
            SortKey::Rate(metric) => metric.name(),
            SortKey::Node => "node",
            SortKey::Key => "key",
        }
    }

    pub fn parse(name: &str) -> Option<SortKey> {
        Self::all().into_iter().find(|k| k.name() == name)
    }

    /// The next sort key to the right (`>`), or to the left (`<`), wrapping,
    /// over the columns shown: rates of the metrics in `shown` only (no
    /// stop at a misses column that is not there). From a rate not shown
    /// (`--sort misses` with misses off) it steps to that rate's neighbour.
    pub fn step(self, right: bool, shown: &[Metric]) -> SortKey {
        let all = Self::all();
        let n = all.len();
        let at = all.iter().position(|&k| k == self).unwrap_or(0);
        // Once round the ring from the key after (or before) `at`, ending on
        // `at` itself: `self` when nothing else is shown.
        let rightwards = all.iter().cycle().skip(at + 1).take(n);
        let leftwards = all.iter().rev().cycle().skip(n - at).take(n);
        let stop = |k: &SortKey| match k {
            SortKey::Rate(metric) => shown.contains(metric) || *k == self,
            _ => true,
        };
        let next = if right {
            rightwards.copied().find(stop)
        } else {
            leftwards.copied().find(stop)
        };
        next.unwrap_or(self)
    }

    /// `a` before `b`?: rates high to low, names and nodes A to Z.
    fn compare(self, a: &(KeyId, Rates), b: &(KeyId, Rates)) -> Ordering {
        let hotter = |x: f64, y: f64| y.total_cmp(&x);
        let first = match self {
            SortKey::Total => Ordering::Equal,
            SortKey::Rate(metric) => hotter(a.1.get(metric), b.1.get(metric)),
            SortKey::Node => a.0.node.cmp(&b.0.node),
            SortKey::Key => a.0.key.cmp(&b.0.key),
        };
        first
            .then_with(|| hotter(a.1.total(), b.1.total()))
            .then_with(|| a.0.cmp(&b.0))
    }
}

/// A sort key and a direction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Order {
    pub key: SortKey,
    pub reversed: bool,
}

impl Order {
    pub fn sort(&self, rows: &mut [(KeyId, Rates)]) {
        rows.sort_by(|a, b| self.key.compare(a, b));
        if self.reversed {
            rows.reverse();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{key_id, rates};

    fn row(node: &str, key: &str, reads: f64, writes: f64) -> (KeyId, Rates) {
        (key_id(node, 0, key.as_bytes()), rates(reads, writes))
    }

    fn keys_in(order: Order, rows: &[(KeyId, Rates)]) -> Vec<String> {
        let mut rows = rows.to_vec();
        order.sort(&mut rows);
        rows.iter()
            .map(|(id, _)| String::from_utf8_lossy(&id.key).into_owned())
            .collect()
    }

    #[test]
    fn each_sort_key_orders_as_it_says() {
        let rows = [
            row("n:2", "b", 1.0, 9.0),
            row("n:1", "c", 5.0, 0.0),
            row("n:2", "a", 3.0, 4.0),
        ];
        for (key, reversed, order) in [
            (SortKey::Total, false, ["b", "a", "c"]),
            (SortKey::Rate(Metric::Reads), false, ["c", "a", "b"]),
            (SortKey::Rate(Metric::Writes), false, ["b", "a", "c"]),
            (SortKey::Node, false, ["c", "b", "a"]),
            (SortKey::Key, false, ["a", "b", "c"]),
            (SortKey::Rate(Metric::Reads), true, ["b", "a", "c"]),
        ] {
            let by = Order { key, reversed };
            assert_eq!(keys_in(by, &rows), order, "{by:?}");
        }
    }

    #[test]
    fn sort_keys_step_through_the_columns_and_wrap() {
        let (all, misses) = (Metric::ALL, SortKey::Rate(Metric::Misses));
        assert_eq!(SortKey::Total.step(true, &all), SortKey::Key);
        assert_eq!(SortKey::Key.step(false, &all), SortKey::Total);
        assert_eq!(SortKey::Node.step(true, &all), SortKey::Rate(Metric::Reads));
        assert_eq!(SortKey::Total.step(false, &all), misses);
        for key in SortKey::all() {
            assert_eq!(SortKey::parse(key.name()), Some(key));
            assert_eq!(key.step(true, &all).step(false, &all), key);
        }
        assert_eq!(SortKey::parse("misses"), Some(misses));
        assert_eq!(SortKey::parse("misses-ish"), None);
    }

    #[test]
    fn a_misses_column_not_shown_is_stepped_over() {
        let shown = [Metric::Reads, Metric::Writes];
        let misses = SortKey::Rate(Metric::Misses);
        let writes = SortKey::Rate(Metric::Writes);
        assert_eq!(SortKey::Total.step(false, &shown), writes);
        assert_eq!(writes.step(true, &shown), SortKey::Total);
        // Sorted by misses from the command line, with no misses column.
        assert_eq!(misses.step(true, &shown), SortKey::Total);
        assert_eq!(misses.step(false, &shown), writes);
    }

    #[test]
    fn by_misses_the_keys_missed_most_come_first() {
        let mut rows = [
            row("n:1", "hit", 9.0, 0.0),
            row("n:1", "gone", 2.0, 0.0),
            row("n:1", "absent", 4.0, 0.0),
        ];
        rows[1].1.add(Metric::Misses, 2.0);
        rows[2].1.add(Metric::Misses, 4.0);
        let by_misses = Order {
            key: SortKey::Rate(Metric::Misses),
            ..Order::default()
        };
        // No misses at all is last; ties end on the total.
        assert_eq!(keys_in(by_misses, &rows), ["absent", "gone", "hit"]);
    }
}
