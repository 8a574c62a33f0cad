//! What the planner is given: each primary's slots with their measured
//! rates (and, where the measurement gives them, their 95% bounds) and key
//! counts, and the hottest keys. The rates come from the heavykeeper
//! tracker (reads and writes a second, `HK.HOTSLOTS`) or, on a cluster
//! without the module, from the server's own slot statistics (CPU and
//! network a second, `CLUSTER SLOT-STATS`).

/// A cluster hash slot, 0 to 16,383.
pub type Slot = u16;

/// Which rate counts as load.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Measure {
    /// Reads plus writes per second (the tracker's).
    #[default]
    Total,
    Reads,
    Writes,
    /// CPU microseconds per second the server spent on the slot's commands
    /// (`CLUSTER SLOT-STATS` `cpu-usec`).
    Cpu,
    /// Bytes per second in and out for the slot's commands (`CLUSTER
    /// SLOT-STATS` `network-bytes-in` plus `network-bytes-out`).
    Network,
}

impl Measure {
    /// The load of tracked `reads` and `writes` (none for a measure of the
    /// server's slot statistics).
    pub fn of(self, reads: f64, writes: f64) -> f64 {
        match self {
            Measure::Total => reads + writes,
            Measure::Reads => reads,
            Measure::Writes => writes,
            Measure::Cpu | Measure::Network => 0.0,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Measure::Total => "total",
            Measure::Reads => "reads",
            Measure::Writes => "writes",
            Measure::Cpu => "cpu",
            Measure::Network => "network",
        }
    }

    /// The unit of its rates, for people.
    pub fn unit(self) -> &'static str {
        match self {
            Measure::Total | Measure::Reads | Measure::Writes => "commands/s",
            Measure::Cpu => "CPU µs/s",
            Measure::Network => "bytes/s",
        }
    }

    /// Is it one of the server's slot statistics (not the tracker's)?
    pub fn is_slot_stats(self) -> bool {
        matches!(self, Measure::Cpu | Measure::Network)
    }
}

/// What the server's own slot statistics measure of a slot, per second.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SlotStats {
    pub cpu_usec: f64,
    pub network_bytes: f64,
}

impl SlotStats {
    fn of(&self, measure: Measure) -> Option<f64> {
        match measure {
            Measure::Cpu => Some(self.cpu_usec),
            Measure::Network => Some(self.network_bytes),
            _ => None,
        }
    }
}

/// A measured rate's 95% bounds (the tracker's `WITHBOUNDS`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Bounds {
    pub low: f64,
    pub high: f64,
}

/// The bounds of a load's reads and of its writes.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LoadBounds {
    pub reads: Bounds,
    pub writes: Bounds,
}

impl LoadBounds {
    /// The bounds of `measure` (of reads plus writes, their sum: on the
    /// safe side, whatever the two estimates share).
    pub fn of(&self, measure: Measure) -> Bounds {
        Bounds {
            low: measure.of(self.reads.low, self.writes.low),
            high: measure.of(self.reads.high, self.writes.high),
        }
    }
}

/// One slot as its primary serves it now.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SlotLoad {
    pub slot: Slot,
    pub reads_per_second: f64,
    pub writes_per_second: f64,
    /// Keys in the slot (`CLUSTER COUNTKEYSINSLOT`): what moving it copies.
    pub keys: u64,
    /// The rates' bounds, where the measurement gives them (`None`: taken
    /// as exact).
    pub bounds: Option<LoadBounds>,
    /// The server's own statistics of the slot, where they were measured.
    pub stats: SlotStats,
    /// The same statistics over an earlier window that shares no sample
    /// with `stats`, where measured: the planner ranks slots by it and
    /// accounts by `stats`. Ranking and accounting by one noisy reading
    /// picks the slots whose noise ran high, and the moves then carry less
    /// than planned (the winner's curse).
    pub earlier: Option<SlotStats>,
}

impl SlotLoad {
    pub fn load(&self, measure: Measure) -> f64 {
        (self.stats.of(measure))
            .unwrap_or_else(|| measure.of(self.reads_per_second, self.writes_per_second))
    }

    /// What the planner ranks the slot by: its load over the independent
    /// earlier window where there is one, else its load.
    pub fn rank(&self, measure: Measure) -> f64 {
        (self.earlier.and_then(|e| e.of(measure))).unwrap_or_else(|| self.load(measure))
    }

    /// The least its load may be (its lower bound, or the load itself).
    pub fn least(&self, measure: Measure) -> f64 {
        match self.bounds {
            Some(b) if !measure.is_slot_stats() => b.of(measure).low,
            _ => self.load(measure),
        }
    }
}

/// A node's whole load as its tracker measures it (`INFO`'s node rates):
/// each rate with its bounds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Measured {
    pub reads_per_second: f64,
    pub writes_per_second: f64,
    pub bounds: LoadBounds,
}

/// A primary and the slots it owns. Slots it owns that are left out carry
/// no measured traffic: they never move.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodeSlots {
    /// How the plan names the node (the CLI uses `host:port`).
    pub node: String,
    pub slots: Vec<SlotLoad>,
    /// The node's own measure of its whole load, where given: its bounds
    /// are tighter than its slots' bounds added up.
    pub measured: Option<Measured>,
}

impl NodeSlots {
    pub fn load(&self, measure: Measure) -> f64 {
        self.slots.iter().map(|s| s.load(measure)).sum()
    }

    /// The least its load may be (`None` without bounds): its slots' sum
    /// over the node's own estimate, times that estimate's lower bound
    /// (the two are of the same accesses).
    pub fn least(&self, measure: Measure) -> Option<f64> {
        let m = self.measured.filter(|_| !measure.is_slot_stats())?;
        let rate = measure.of(m.reads_per_second, m.writes_per_second);
        let low = m.bounds.of(measure).low;
        if rate <= 0.0 {
            return Some(0.0);
        }
        Some(self.load(measure) * (low / rate).clamp(0.0, 1.0))
    }
}

/// One of the hottest keys, for the advice on what no move fixes.
#[derive(Clone, Debug, PartialEq)]
pub struct HotKey {
    pub key: Vec<u8>,
    pub slot: Slot,
    pub reads_per_second: f64,
    pub writes_per_second: f64,
}

impl HotKey {
    pub fn load(&self, measure: Measure) -> f64 {
        measure.of(self.reads_per_second, self.writes_per_second)
    }
}

/// Everything the planner reads.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Input {
    pub nodes: Vec<NodeSlots>,
    pub hot_keys: Vec<HotKey>,
}

impl Input {
    pub fn total(&self, measure: Measure) -> f64 {
        self.nodes.iter().map(|n| n.load(measure)).sum()
    }
}
