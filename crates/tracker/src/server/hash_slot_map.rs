//! Which commands a cluster node will run, as far as its hash slots say:
//! a command filter sees a command before the server checks where its keys
//! live, so a key of another node's slot (answered `MOVED`), of two slots at
//! once (`CROSSSLOT`), of a slot being migrated away and not here (`ASK`,
//! `TRYAGAIN`), of a slot being imported without `ASKING`, or of a cluster
//! that is down (`CLUSTERDOWN`) would otherwise be counted where nothing was
//! served. The map is read from `CLUSTER NODES` (the only reply that shows
//! slots being migrated) and `CLUSTER INFO`, and the rules are the server's
//! own (`getNodeByQuery`), in the order it applies them.

use crate::server::hash_slot::SLOTS;

/// A set of hash slots.
#[derive(Clone, Debug, PartialEq, Eq)]
struct SlotSet(Vec<u64>);

impl SlotSet {
    fn empty() -> Self {
        Self(vec![0; SLOTS / 64])
    }

    fn insert(&mut self, slot: usize) {
        if let Some(word) = self.0.get_mut(slot / 64) {
            *word |= 1 << (slot % 64);
        }
    }

    #[inline]
    fn contains(&self, slot: u16) -> bool {
        let slot = usize::from(slot);
        self.0
            .get(slot / 64)
            .is_some_and(|word| word & (1 << (slot % 64)) != 0)
    }

    fn len(&self) -> usize {
        self.0.iter().map(|w| w.count_ones() as usize).sum()
    }
}

/// Whether a command's keys are served here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// Served here: counted.
    Here,
    /// Refused or redirected (`MOVED`, `CROSSSLOT`, `CLUSTERDOWN`, `ASK`
    /// and `TRYAGAIN` for lack of `ASKING`): not counted.
    Elsewhere,
    /// In a slot being migrated away: served here only if every key is
    /// still here (else `ASK` or `TRYAGAIN`). The caller looks them up.
    IfKeysExist,
}

/// A command as the routing rules see it.
#[derive(Clone, Copy, Debug, Default)]
pub struct Request {
    /// It writes.
    pub write: bool,
    /// Its client sent `ASKING` just before it.
    pub asking: bool,
    /// It has more than one distinct key.
    pub multiple_keys: bool,
}

/// What a node serves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HashSlotMap {
    /// Slots owned here (a primary), or by this node's primary (a replica:
    /// what it serves to `READONLY` clients, and what its primary's stream
    /// writes).
    served: SlotSet,
    /// Of those, slots being migrated to another node.
    migrating: SlotSet,
    /// Slots being imported from another node (owned there).
    importing: SlotSet,
    replica: bool,
    /// `cluster_state:ok`, and whether reads are served while it is not.
    cluster_ok: bool,
    reads_when_down: bool,
}

impl HashSlotMap {
    /// From `CLUSTER NODES` and `cluster_state` (`CLUSTER INFO`); `None` if
    /// the reply has no `myself` line.
    pub fn from_nodes(nodes: &str, cluster_ok: bool, reads_when_down: bool) -> Option<Self> {
        let lines: Vec<Vec<&str>> = nodes
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .filter(|fields| fields.len() >= 8)
            .collect();
        fn field<'a>(fields: &[&'a str], i: usize) -> &'a str {
            fields.get(i).copied().unwrap_or_default()
        }
        let has_flag = |fields: &[&str], wanted: &[&str]| {
            field(fields, 2)
                .split(',')
                .any(|flag| wanted.contains(&flag))
        };
        let myself = lines.iter().find(|f| has_flag(f, &["myself"]))?;
        let replica = has_flag(myself, &["slave", "replica"]);
        let mut map = HashSlotMap {
            served: SlotSet::empty(),
            migrating: SlotSet::empty(),
            importing: SlotSet::empty(),
            replica,
            cluster_ok,
            reads_when_down,
        };
        // A replica serves its primary's slots; the markers of slots being
        // moved are on the `myself` line (replicas show them on Valkey).
        let owner = if replica {
            let primary = field(myself, 3);
            lines
                .iter()
                .find(|f| field(f, 0) == primary)
                .unwrap_or(myself)
        } else {
            myself
        };
        for field in owner.iter().skip(8) {
            if let Some((start, end)) = parse_range(field) {
                (start..=end).for_each(|slot| map.served.insert(slot));
            }
        }
        for field in myself.iter().skip(8) {
            let Some(marker) = field.strip_prefix('[').and_then(|f| f.strip_suffix(']')) else {
                continue;
            };
            if let Some((slot, _)) = marker.split_once("->-") {
                if let Ok(slot) = slot.parse::<usize>() {
                    map.migrating.insert(slot);
                }
            } else if let Some((slot, _)) = marker.split_once("-<-") {
                if let Ok(slot) = slot.parse::<usize>() {
                    map.importing.insert(slot);
                }
            }
        }
        Some(map)
    }

    /// The cluster's state now (`CLUSTER INFO` is cheaper to read often
    /// than the whole map).
    pub fn set_cluster_ok(&mut self, ok: bool) {
        self.cluster_ok = ok;
    }

    /// Was the cluster's state `ok` when last read?
    pub fn cluster_ok(&self) -> bool {
        self.cluster_ok
    }

    /// Slots served here.
    pub fn served(&self) -> usize {
        self.served.len()
    }

    /// Where a command whose keys are all in `slot` is served (the caller
    /// has found them in one slot: keys of two slots are `CROSSSLOT`).
    pub fn route(&self, slot: u16, request: Request) -> Route {
        if !self.served.contains(slot) && !self.importing.contains(slot) {
            // Another node's, or nobody's (MOVED, or CLUSTERDOWN unbound).
            return Route::Elsewhere;
        }
        if !self.cluster_ok && (!self.reads_when_down || request.write) {
            return Route::Elsewhere;
        }
        if self.replica {
            // A replica runs its primary's writes (never redirected) and
            // the reads of READONLY clients in its primary's slots.
            return if self.served.contains(slot) {
                Route::Here
            } else {
                Route::Elsewhere
            };
        }
        if self.migrating.contains(slot) {
            return Route::IfKeysExist;
        }
        if self.importing.contains(slot) {
            // Served only after ASKING, and a command of several keys
            // only once all of them are here: the caller cannot know
            // which are (TRYAGAIN otherwise), so only single keys count.
            return if request.asking && !request.multiple_keys {
                Route::Here
            } else {
                Route::Elsewhere
            };
        }
        Route::Here
    }
}

/// `"5"` or `"0-5460"`, not a `[...]` marker.
fn parse_range(field: &str) -> Option<(usize, usize)> {
    if field.starts_with('[') {
        return None;
    }
    let (start, end) = field.split_once('-').unwrap_or((field, field));
    let (start, end) = (start.parse::<usize>().ok()?, end.parse::<usize>().ok()?);
    (start <= end && end < SLOTS).then_some((start, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "a0000000000000000000000000000000000000a0";
    const B: &str = "b0000000000000000000000000000000000000b0";

    fn nodes(myself_extra: &str, me_replica: bool) -> String {
        let (my_flags, my_primary) = if me_replica {
            ("myself,slave", A)
        } else {
            ("myself,master", "-")
        };
        format!(
            "{A} 127.0.0.1:7000@17000 master - 0 0 1 connected 0-5460\n\
             c0000000000000000000000000000000000000c0 127.0.0.1:7002@17002 {my_flags} {my_primary} 0 0 3 connected {}\n\
             {B} 127.0.0.1:7001@17001 master - 0 0 2 connected 5461-10922 16000\n",
            if me_replica {
                String::new()
            } else {
                format!("10923-15999 16001-16383 {myself_extra}")
            }
        )
    }

    #[test]
    fn a_primary_serves_its_own_slots_only_and_a_replica_its_primarys() {
        let map = HashSlotMap::from_nodes(&nodes("", false), true, false).unwrap();
        assert_eq!(map.served(), 16384 - 10923 - 1);
        let read = Request::default();
        assert_eq!(map.route(12_000, read), Route::Here);
        assert_eq!(map.route(16_000, read), Route::Elsewhere, "B's: MOVED");
        assert_eq!(map.route(0, read), Route::Elsewhere);
        let replica = HashSlotMap::from_nodes(&nodes("", true), true, false).unwrap();
        assert_eq!(replica.route(100, read), Route::Here);
        assert_eq!(replica.route(12_000, read), Route::Elsewhere);
    }

    #[test]
    fn slots_being_moved_follow_the_servers_rules() {
        let extra = format!("[12000->-{B}] [16000-<-{B}]");
        let map = HashSlotMap::from_nodes(&nodes(&extra, false), true, false).unwrap();
        let read = Request::default();
        assert_eq!(map.route(12_000, read), Route::IfKeysExist);
        assert_eq!(
            map.route(16_000, read),
            Route::Elsewhere,
            "no ASKING: MOVED"
        );
        let asking = Request {
            asking: true,
            ..read
        };
        assert_eq!(map.route(16_000, asking), Route::Here);
        let several = Request {
            multiple_keys: true,
            ..asking
        };
        assert_eq!(map.route(16_000, several), Route::Elsewhere);
    }

    #[test]
    fn a_cluster_that_is_down_serves_reads_only_if_configured() {
        let mut down = HashSlotMap::from_nodes(&nodes("", false), false, false).unwrap();
        assert_eq!(down.route(12_000, Request::default()), Route::Elsewhere);
        down.set_cluster_ok(true);
        assert_eq!(down.route(12_000, Request::default()), Route::Here);
        let reads = HashSlotMap::from_nodes(&nodes("", false), false, true).unwrap();
        assert_eq!(reads.route(12_000, Request::default()), Route::Here);
        let write = Request {
            write: true,
            ..Request::default()
        };
        assert_eq!(reads.route(12_000, write), Route::Elsewhere);
    }

    #[test]
    fn a_reply_without_myself_gives_no_map() {
        assert_eq!(HashSlotMap::from_nodes("garbage\n", true, false), None);
        assert_eq!(parse_range("16384"), None);
        assert_eq!(parse_range("[5->-x]"), None);
        assert_eq!(parse_range("7-3"), None);
    }
}
