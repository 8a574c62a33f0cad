//! The keys table's columns, and how they share the terminal's width.
//!
//! Rate columns come from the metrics shown (every [`Metric`] some node
//! counts), so a new metric is a new column (and sort key) without a change
//! here, and misses take no room where no node counts them. The numbers, the database and the
//! node address take what they need (an address is never cut while the key
//! column can still give room); the key column takes what the longest key
//! needs; the sparkline gets the rest, and is the first to go on a narrow
//! terminal, then the key's room, and only then the node addresses' (both
//! shortened by [`crate::live::elide`], never cut).

use crate::reading::metric::Metric;
use crate::reading::sort::SortKey;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Column {
    Key,
    Db,
    Node,
    Rate(Metric),
    Total,
    /// The total's error bar (`±12%`), where the nodes give bounds.
    Bound,
    /// The sparkline of the key's total rate, one refresh per character.
    Trend,
}

impl Column {
    /// Every column, left to right, with a rate column for each of
    /// `metrics`.
    pub fn shown(metrics: &[Metric]) -> Vec<Column> {
        let mut all = vec![Column::Key, Column::Db, Column::Node];
        all.extend(metrics.iter().copied().map(Column::Rate));
        all.extend([Column::Total, Column::Bound, Column::Trend]);
        all
    }

    pub fn title(self) -> &'static str {
        match self {
            Column::Key => "KEY",
            Column::Db => "DB",
            Column::Node => "NODE",
            Column::Rate(metric) => metric.title(),
            Column::Total => "TOTAL/S",
            Column::Bound => "±95%",
            Column::Trend => "TREND",
        }
    }

    /// The sort key that orders by this column.
    pub fn sort_key(self) -> Option<SortKey> {
        match self {
            Column::Key => Some(SortKey::Key),
            Column::Node => Some(SortKey::Node),
            Column::Rate(metric) => Some(SortKey::Rate(metric)),
            Column::Total => Some(SortKey::Total),
            Column::Db | Column::Bound | Column::Trend => None,
        }
    }
}

/// The key column shrinks to this before node addresses do.
const KEY_MIN: usize = 16;
/// Below this the key column keeps its room and the sparkline goes.
const KEY_COMFORT: usize = 24;
const TREND_MIN: usize = 10;
/// A node address is never shortened below this.
const NODE_MIN: usize = 9;
/// The widest [`rate_text`], and room for the sort mark after a title.
pub const RATE_WIDTH: usize = 7;
/// The error bar: `±>999%`, and a space.
const BOUND_WIDTH: usize = 7;

/// What the columns would like.
pub struct Wants {
    /// The longest key listed, in columns.
    pub key: usize,
    /// The longest node address.
    pub node: usize,
    /// The widest database number.
    pub db: usize,
    /// The metrics shown, each a column (and the total and its error bar
    /// two more).
    pub metrics: usize,
}

/// How wide each column is; `trend` 0 leaves the sparkline out, `bound`
/// 0 the error bar.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Widths {
    pub key: usize,
    pub db: usize,
    pub node: usize,
    pub rate: usize,
    pub bound: usize,
    pub trend: usize,
}

impl Widths {
    pub fn of(&self, column: Column) -> usize {
        match column {
            Column::Key => self.key,
            Column::Db => self.db,
            Column::Node => self.node,
            Column::Rate(_) | Column::Total => self.rate,
            Column::Bound => self.bound,
            Column::Trend => self.trend,
        }
    }
}

/// The widths for a table `width` columns wide (one space between columns).
pub fn share_width(width: usize, wants: &Wants) -> Widths {
    let rates = wants.metrics + 1;
    let titles = Metric::ALL.iter().map(|m| m.title().len());
    let widest = titles.chain(["TOTAL/S".len(), RATE_WIDTH]).max();
    let rate = widest.unwrap_or(RATE_WIDTH) + 1;
    let db = wants.db.max("DB".len());
    let node_want = wants.node.max("NODE".len());
    // Key, database, node and the rates, with a space after all but the last.
    let fixed = db + rate * rates + (2 + rates);
    let left = width.saturating_sub(fixed + node_want);
    let mut w = Widths {
        key: left,
        db,
        node: node_want,
        rate,
        bound: 0,
        trend: 0,
    };
    // The error bar has its room once the key has what it needs or is
    // comfortable: after the key, before the sparkline.
    let key_fits = wants.key.max("KEY".len());
    if left >= key_fits.min(KEY_COMFORT) + 1 + BOUND_WIDTH {
        w.bound = BOUND_WIDTH;
    }
    let left = left - if w.bound > 0 { BOUND_WIDTH + 1 } else { 0 };
    w.key = left;
    if left >= wants.key + 1 + TREND_MIN {
        w.key = wants.key.max("KEY".len());
        w.trend = left - w.key - 1;
    } else if left >= KEY_COMFORT + 1 + TREND_MIN {
        w.trend = TREND_MIN;
        w.key = left - 1 - TREND_MIN;
    } else if left < KEY_MIN {
        let short = (KEY_MIN - left).min(node_want.saturating_sub(NODE_MIN));
        w.node = node_want - short;
        w.key = left + short;
    }
    w
}

/// A rate in at most [`RATE_WIDTH`] characters: two decimals below 10,
/// one below 1,000, whole numbers below 100,000, then k and M; a rate too
/// small for two decimals in scientific notation, so that it never reads
/// as zero.
pub fn rate_text(per_second: f64) -> String {
    match per_second {
        r if r <= 0.0 => "0".to_string(),
        r if r < 0.01 => format!("{r:.1e}"),
        r if r < 10.0 => format!("{r:.2}"),
        r if r < 1_000.0 => format!("{r:.1}"),
        r if r < 100_000.0 => format!("{r:.0}"),
        r if r < 1e6 => format!("{:.1}k", r / 1e3),
        r if r < 1e9 => format!("{:.1}M", r / 1e6),
        r => format!("{:.0}G", r / 1e9),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn total(w: &Widths, metrics: &[Metric]) -> usize {
        let columns =
            Column::shown(metrics).len() - usize::from(w.trend == 0) - usize::from(w.bound == 0);
        w.key + w.db + w.node + w.rate * (metrics.len() + 1) + w.bound + w.trend + columns - 1
    }

    const READS_AND_WRITES: [Metric; 2] = [Metric::Reads, Metric::Writes];

    /// The longest key and node address, one-digit databases, `metrics`
    /// rate columns.
    fn wants(key: usize, node: usize, metrics: usize) -> Wants {
        Wants {
            key,
            node,
            db: 1,
            metrics,
        }
    }

    #[test]
    fn the_columns_fill_the_width_and_keys_get_what_they_need() {
        let wants = wants(47, 15, 2);
        let total = |w: &Widths| total(w, &READS_AND_WRITES);
        let wide = share_width(200, &wants);
        assert_eq!((wide.key, wide.node), (47, 15));
        assert_eq!(total(&wide), 200, "{wide:?}");
        let narrow = share_width(80, &wants);
        assert_eq!(narrow.node, 15, "addresses are whole at 80 columns");
        assert_eq!(narrow.trend, 0, "the sparkline goes first");
        assert_eq!(total(&narrow), 80, "{narrow:?}");
        assert!(narrow.key >= KEY_COMFORT, "{narrow:?}");
        let medium = share_width(120, &wants);
        assert_eq!(total(&medium), 120, "{medium:?}");
        assert!(medium.trend >= TREND_MIN, "{medium:?}");
        assert!(medium.key >= KEY_COMFORT, "{medium:?}");
    }

    #[test]
    fn on_a_very_narrow_terminal_long_addresses_give_way_last() {
        let w = share_width(80, &wants(40, 44, 2));
        assert_eq!(w.key, KEY_MIN);
        assert!(w.node < 44 && w.node >= NODE_MIN, "{w:?}");
        assert_eq!(total(&w, &READS_AND_WRITES), 80, "{w:?}");
    }

    #[test]
    fn a_misses_column_takes_its_room_from_the_key_and_the_sparkline() {
        let wants = |metrics| wants(47, 15, metrics);
        let (without, with) = (share_width(80, &wants(2)), share_width(80, &wants(3)));
        assert_eq!(total(&with, &Metric::ALL), 80, "{with:?}");
        assert_eq!(with.key + with.rate + 1, without.key, "{with:?}");
        assert_eq!(with.node, 15, "addresses still whole at 80 columns");
        let wide = share_width(200, &wants(3));
        assert_eq!(total(&wide, &Metric::ALL), 200, "{wide:?}");
        assert_eq!(wide.key, 47);
    }

    #[test]
    fn rates_fit_their_column() {
        for (rate, text) in [
            (0.0, "0"),
            (0.0038507, "3.9e-3"),
            (4.256, "4.26"),
            (2327.46, "2327"),
            (57495.4, "57495"),
            (123456.0, "123.5k"),
            (98765432.0, "98.8M"),
        ] {
            assert_eq!(rate_text(rate), text);
            assert!(text.len() <= RATE_WIDTH);
        }
    }
}
