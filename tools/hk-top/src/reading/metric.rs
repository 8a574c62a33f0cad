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

/// Each metric's names, in [`Metric::ALL`]'s order: the `HK.HOTKEYS`
/// option, the column title, the `--json` field, the `--sort` key.
const NAMES: [(&str, &str, &str, &str); Metric::COUNT] = [
    ("READS", "READS/S", "reads_per_second", "reads"),
    ("WRITES", "WRITES/S", "writes_per_second", "writes"),
    ("MISSES", "MISSES/S", "misses_per_second", "misses"),
];

impl Metric {
    pub const ALL: [Metric; 3] = [Metric::Reads, Metric::Writes, Metric::Misses];
    pub const COUNT: usize = Self::ALL.len();

    /// Its own entry of a per-metric array (in [`Metric::ALL`]'s order),
    /// picked by a match rather than an index, so never out of range.
    fn of<T>(self, per_metric: &[T; Metric::COUNT]) -> &T {
        let [reads, writes, misses] = per_metric;
        match self {
            Metric::Reads => reads,
            Metric::Writes => writes,
            Metric::Misses => misses,
        }
    }

    /// [`Metric::of`], to change the entry.
    fn of_mut<T>(self, per_metric: &mut [T; Metric::COUNT]) -> &mut T {
        let [reads, writes, misses] = per_metric;
        match self {
            Metric::Reads => reads,
            Metric::Writes => writes,
            Metric::Misses => misses,
        }
    }

    /// The `HK.HOTKEYS` option that lists keys by this rate.
    pub fn hotkeys_kind(self) -> &'static str {
        self.of(&NAMES).0
    }

    /// The column title in tables.
    pub fn title(self) -> &'static str {
        self.of(&NAMES).1
    }

    /// The field name in `--json`.
    pub fn json_name(self) -> &'static str {
        self.of(&NAMES).2
    }

    /// What `--sort` and the console call it.
    pub fn name(self) -> &'static str {
        self.of(&NAMES).3
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

/// A rate's 95% bounds as the tracker gives them (`WITHBOUNDS`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Bounds {
    pub low: f64,
    pub high: f64,
}

/// A key's requests per second, one figure per [`Metric`], each with its
/// bounds where the node gave them.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Rates {
    rates: [f64; Metric::COUNT],
    bounds: [Option<Bounds>; Metric::COUNT],
}

impl Rates {
    pub fn get(&self, metric: Metric) -> f64 {
        *metric.of(&self.rates)
    }

    pub fn add(&mut self, metric: Metric, per_second: f64) {
        *metric.of_mut(&mut self.rates) += per_second;
    }

    /// One metric's rate, the others zero.
    pub fn only(metric: Metric, per_second: f64) -> Self {
        let mut rates = Rates::default();
        rates.add(metric, per_second);
        rates
    }

    /// One metric's rate with its bounds where given, the others zero.
    pub fn bounded(metric: Metric, per_second: f64, bounds: Option<Bounds>) -> Self {
        let mut rates = Rates::only(metric, per_second);
        *metric.of_mut(&mut rates.bounds) = bounds;
        rates
    }

    /// The rate's bounds, if the node gave them.
    pub fn bounds(&self, metric: Metric) -> Option<Bounds> {
        *metric.of(&self.bounds)
    }

    /// Every metric of `other` added to this one (bounds add up too: the
    /// estimates are of disjoint traffic).
    pub fn add_all(&mut self, other: &Rates) {
        for metric in Metric::ALL {
            self.add(metric, other.get(metric));
            let bounds = metric.of_mut(&mut self.bounds);
            *bounds = match (*bounds, other.bounds(metric)) {
                (Some(a), Some(b)) => Some(Bounds {
                    low: a.low + b.low,
                    high: a.high + b.high,
                }),
                (a, b) => a.or(b),
            };
        }
    }

    /// The key's whole traffic: the metrics [`Metric::in_total`] says.
    pub fn total(&self) -> f64 {
        let parts = Metric::ALL.iter().filter(|m| m.in_total());
        parts.map(|&m| self.get(m)).sum()
    }

    /// The bounds of [`Self::total`] (the sum of its parts' bounds; a part
    /// without bounds counts as exact), if any part has them.
    pub fn total_bounds(&self) -> Option<Bounds> {
        let parts = Metric::ALL.iter().filter(|m| m.in_total());
        if parts.clone().all(|&m| self.bounds(m).is_none()) {
            return None;
        }
        Some(parts.fold(Bounds::default(), |sum, &m| {
            let b = self.bounds(m).unwrap_or(Bounds {
                low: self.get(m),
                high: self.get(m),
            });
            Bounds {
                low: sum.low + b.low,
                high: sum.high + b.high,
            }
        }))
    }
}

/// `±12%`: the farther of a rate's bounds from it, as a share of it
/// (`None` without bounds, or for a rate of 0).
pub fn error_bar(per_second: f64, bounds: Option<Bounds>) -> Option<String> {
    let b = bounds?;
    if per_second <= 0.0 {
        return None;
    }
    let off = (per_second - b.low).max(b.high - per_second).max(0.0) / per_second;
    Some(if off >= 9.995 {
        "±>999%".to_string()
    } else {
        format!("±{:.0}%", 100.0 * off)
    })
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
    fn bounds_add_up_and_read_as_the_farther_side() {
        let b = |low, high| Bounds { low, high };
        let mut rates = Rates::bounded(Metric::Reads, 100.0, Some(b(90.0, 112.0)));
        assert_eq!(
            error_bar(100.0, rates.bounds(Metric::Reads)).as_deref(),
            Some("±12%")
        );
        rates.add_all(&Rates::only(Metric::Writes, 50.0));
        assert_eq!(rates.total_bounds(), Some(b(140.0, 162.0)));
        assert_eq!(Rates::only(Metric::Reads, 1.0).total_bounds(), None);
        assert_eq!(error_bar(5.0, Some(b(5.0, 5.0))).as_deref(), Some("±0%"));
        assert_eq!(
            error_bar(1.0, Some(b(0.0, 20.0))).as_deref(),
            Some("±>999%")
        );
        assert_eq!(error_bar(0.0, Some(b(0.0, 1.0))), None);
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
