//! The rows that say who drives a count: its senders grouped (by host,
//! name, ...), each group's share of the count with its 95% bounds.

use crate::counting::client_shares::{share_bounds, ClientPart, ClientShares};
use hashbrown::HashMap;

/// One group of senders and its share of a count.
#[derive(Clone, Debug, PartialEq)]
pub struct SenderRow {
    pub label: Vec<u8>,
    pub share: f64,
    pub low: f64,
    pub high: f64,
}

/// Who sent a count: each sender's part, and the bins' threshold (see
/// [`crate::counting::client_shares::ClientShares::threshold`]).
#[derive(Clone, Debug, Default)]
pub struct Senders {
    pub parts: Vec<ClientPart>,
    pub threshold: f64,
}

impl Senders {
    /// The senders of one count at `now_ms`.
    pub fn of(shares: &ClientShares, now_ms: i64) -> Self {
        Self {
            parts: shares.parts(now_ms),
            threshold: shares.threshold(now_ms),
        }
    }

    /// The senders grouped by `label`, largest share first.
    pub fn grouped(&self, mut label: impl FnMut(u64) -> Vec<u8>) -> Vec<SenderRow> {
        let whole = (self.parts.iter()).fold((0.0, 0.0), |a, p| (a.0 + p.count, a.1 + p.variance));
        let mut groups: HashMap<Vec<u8>, (f64, f64)> = HashMap::new();
        for part in &self.parts {
            let group = groups.entry(label(part.client)).or_default();
            group.0 += part.count;
            group.1 += part.variance;
        }
        let mut rows: Vec<SenderRow> = (groups.into_iter())
            .map(|(label, group)| {
                let (share, low, high) = share_bounds(group, whole, self.threshold);
                SenderRow {
                    label,
                    share,
                    low,
                    high,
                }
            })
            .collect();
        rows.sort_by(|a, b| {
            b.share
                .total_cmp(&a.share)
                .then_with(|| a.label.cmp(&b.label))
        });
        rows
    }

    /// Each sender's count as it is, with its 95% bounds (for the node's
    /// senders, counted from the start).
    pub fn counts(&self) -> Vec<(u64, f64, f64, f64)> {
        (self.parts.iter())
            .map(|p| {
                let variance = p.variance + self.threshold * (p.count + self.threshold);
                let half = 1.96 * variance.sqrt();
                (p.client, p.count, (p.count - half).max(0.0), p.count + half)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_of_one_host_make_one_row() {
        let part = |client, count| ClientPart {
            client,
            count,
            variance: 0.0,
        };
        let senders = Senders {
            parts: vec![part(1, 30.0), part(2, 30.0), part(3, 25.0), part(4, 15.0)],
            threshold: 0.0,
        };
        let rows = senders.grouped(|id| {
            if id <= 2 {
                b"a".to_vec()
            } else {
                b"b".to_vec()
            }
        });
        assert_eq!(rows[0].label, b"a");
        assert_eq!((rows[0].share, rows[0].low, rows[0].high), (0.6, 0.6, 0.6));
        assert_eq!(rows[1].share, 0.4);
        assert_eq!(senders.counts()[0], (1, 30.0, 30.0, 30.0));
    }
}
