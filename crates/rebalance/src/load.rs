//! What the planner is given: each primary's slots with their measured
//! rates and key counts, and the hottest keys.

/// A cluster hash slot, 0 to 16,383.
pub type Slot = u16;

/// Which rate counts as load.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Measure {
    /// Reads plus writes per second.
    #[default]
    Total,
    Reads,
    Writes,
}

impl Measure {
    pub fn of(self, reads: f64, writes: f64) -> f64 {
        match self {
            Measure::Total => reads + writes,
            Measure::Reads => reads,
            Measure::Writes => writes,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Measure::Total => "total",
            Measure::Reads => "reads",
            Measure::Writes => "writes",
        }
    }
}

/// One slot as its primary serves it now.
#[derive(Clone, Debug, PartialEq)]
pub struct SlotLoad {
    pub slot: Slot,
    pub reads_per_second: f64,
    pub writes_per_second: f64,
    /// Keys in the slot (`CLUSTER COUNTKEYSINSLOT`): what moving it copies.
    pub keys: u64,
}

impl SlotLoad {
    pub fn load(&self, measure: Measure) -> f64 {
        measure.of(self.reads_per_second, self.writes_per_second)
    }
}

/// A primary and the slots it owns. Slots it owns that are left out carry
/// no measured traffic: they never move.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeSlots {
    /// How the plan names the node (the CLI uses `host:port`).
    pub node: String,
    pub slots: Vec<SlotLoad>,
}

impl NodeSlots {
    pub fn load(&self, measure: Measure) -> f64 {
        self.slots.iter().map(|s| s.load(measure)).sum()
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
