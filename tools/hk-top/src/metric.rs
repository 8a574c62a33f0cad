//! The rates the tracker reports per key, one `HK.HOTKEYS <KIND>` list each.
//!
//! Everything that shows or sorts by a rate walks [`Metric::ALL`]: the
//! console's columns and sort keys, `--once`, `--json`, the Prometheus
//! export. A kind the tracker grows is one more variant here and its names
//! below.

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Metric {
    Reads,
    Writes,
    /// Reads of a key that does not exist (`HK.HOTKEYS MISSES`): cache
    /// penetration, each such read falling through to what the cache is for.
    Misses,
}

impl Metric {
    pub const ALL: [Metric; 3] = [Metric::Reads, Metric::Writes, Metric::Misses];
    pub const COUNT: usize = Self::ALL.len();

    /// Its place in [`Rates`].
    fn index(self) -> usize {
        self as usize
    }

    /// The `HK.HOTKEYS` option that lists keys by this rate.
    pub fn hotkeys_kind(self) -> &'static str {
        match self {
            Metric::Reads => "READS",
            Metric::Writes => "WRITES",
            Metric::Misses => "MISSES",
        }
    }

    /// The column title in tables.
    pub fn title(self) -> &'static str {
        match self {
            Metric::Reads => "READS/S",
            Metric::Writes => "WRITES/S",
            Metric::Misses => "MISSES/S",
        }
    }

    /// The field name in `--json`.
    pub fn json_name(self) -> &'static str {
        match self {
            Metric::Reads => "reads_per_second",
            Metric::Writes => "writes_per_second",
            Metric::Misses => "misses_per_second",
        }
    }

    /// What `--sort` and the console call it.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Reads => "reads",
            Metric::Writes => "writes",
            Metric::Misses => "misses",
        }
    }

    /// Is it part of a key's total traffic? Reads and writes are; a miss is
    /// a read already counted.
    pub fn in_total(self) -> bool {
        match self {
            Metric::Reads | Metric::Writes => true,
            Metric::Misses => false,
        }
    }

    /// How `HK.HOTKEYS` starts its error on a node that tracks keys but not
    /// this metric (misses need `track-misses yes`, off by default); `None`
    /// for the metrics every tracking node counts. Such a node's figure is
    /// unknown, not zero, and asking it is not a failure.
    pub fn off_error(self) -> Option<&'static str> {
        match self {
            Metric::Reads | Metric::Writes => None,
            Metric::Misses => Some("miss tracking is off"),
        }
    }

    /// The `HELP` of its Prometheus metric.
    pub fn prometheus_help(self) -> &'static str {
        match self {
            Metric::Reads => "Reads per second of one of the node's hottest keys (HK.HOTKEYS READS)",
            Metric::Writes => {
                "Writes per second of one of the node's hottest keys (HK.HOTKEYS WRITES)"
            }
            Metric::Misses => {
                "Reads per second of one of the node's hottest keys that do not exist (HK.HOTKEYS MISSES)"
            }
        }
    }
}

/// A key's requests per second, one figure per [`Metric`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Rates([f64; Metric::COUNT]);

impl Rates {
    pub fn get(&self, metric: Metric) -> f64 {
        self.0[metric.index()]
    }

    pub fn add(&mut self, metric: Metric, per_second: f64) {
        self.0[metric.index()] += per_second;
    }

    /// One metric's rate, the others zero.
    pub fn only(metric: Metric, per_second: f64) -> Self {
        let mut rates = Rates::default();
        rates.add(metric, per_second);
        rates
    }

    /// Every metric of `other` added to this one.
    pub fn add_all(&mut self, other: &Rates) {
        for metric in Metric::ALL {
            self.add(metric, other.get(metric));
        }
    }

    /// The key's whole traffic: the metrics [`Metric::in_total`] says.
    pub fn total(&self) -> f64 {
        Metric::ALL
            .iter()
            .filter(|m| m.in_total())
            .map(|&m| self.get(m))
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_add_up_per_metric_and_in_total() {
        let mut rates = Rates::only(Metric::Reads, 2.5);
        rates.add_all(&Rates::only(Metric::Writes, 1.0));
        rates.add(Metric::Reads, 0.5);
        assert_eq!(rates.get(Metric::Reads), 3.0);
        assert_eq!(rates.get(Metric::Writes), 1.0);
        assert_eq!(rates.total(), 4.0);
    }

    #[test]
    fn a_miss_is_a_read_already_in_the_total() {
        let mut rates = Rates::only(Metric::Reads, 5.0);
        rates.add(Metric::Misses, 5.0);
        assert_eq!(rates.get(Metric::Misses), 5.0);
        assert_eq!(rates.total(), 5.0);
        let optional: Vec<Metric> = Metric::ALL
            .into_iter()
            .filter(|m| m.off_error().is_some())
            .collect();
        assert_eq!(optional, [Metric::Misses]);
    }
}
