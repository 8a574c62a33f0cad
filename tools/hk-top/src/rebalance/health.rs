//! Whether the cluster is fit to move slots in: every node answers and
//! says `cluster_state:ok`, none sees a node failing, the primaries agree
//! on who serves each slot, and the slots half-migrated are listed (the
//! caller decides which of them are its own to finish).

use super::topology::Views;

/// A slot one primary is handing to another, by node ids: as the cluster
/// shows it (`MIGRATING` on the source, `IMPORTING` on the target, or
/// either alone when a move was cut between the two), or as the journal
/// lists a move begun.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Open {
    pub slot: u16,
    pub source: String,
    pub target: String,
}

#[derive(Clone, Debug, Default)]
pub struct Health {
    pub problems: Vec<String>,
    pub open: Vec<Open>,
}

pub fn check(views: &Views) -> Health {
    let open = open_slots(views);
    let mut problems = Vec::new();
    for (address, view) in views.all() {
        let view = match view {
            Ok(view) => view,
            Err(e) => {
                problems.push(format!("{address} does not answer: {e}"));
                continue;
            }
        };
        if !view.state_ok {
            problems.push(format!("{address}: cluster_state is not ok"));
        }
        for node in &view.nodes {
            if let Some(trouble) = node.trouble() {
                problems.push(format!("{address} sees {} {trouble}", node.address));
            }
        }
    }
    let moving: Vec<u16> = open.iter().map(|o| o.slot).collect();
    if let Err(e) = views.agreed_map(&moving) {
        problems.push(e);
    }
    Health { problems, open }
}

fn open_slots(views: &Views) -> Vec<Open> {
    let mut open: Vec<Open> = Vec::new();
    for node in views.primaries() {
        let pairs = (node.migrating.iter())
            .map(|(slot, target)| (*slot, node.id.clone(), target.clone()))
            .chain(
                (node.importing.iter())
                    .map(|(slot, source)| (*slot, source.clone(), node.id.clone())),
            );
        for (slot, source, target) in pairs {
            let found = Open {
                slot,
                source,
                target,
            };
            if !open.contains(&found) {
                open.push(found);
            }
        }
    }
    open.sort_by_key(|o| o.slot);
    open
}
