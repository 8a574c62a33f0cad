//! A primary whose map of the cluster lags behind what the owners say of
//! themselves, and stays so.
//!
//! Redis 7.0 can leave one primary naming the old owner of a slot moved
//! back and forth between two others: a heartbeat the old owner sent
//! before its `SETSLOT NODE` arrives after it, with a config epoch the
//! third primary takes as no older, and nothing in the gossip corrects it
//! later (redis/redis#3776; fixed in 7.2 by redis/redis#12344). Seen here
//! once in some 200 moves back and forth: the primaries disagreed for good,
//! and every run after that refused the cluster. Where exactly one primary
//! says it serves the slot (its own line) and none is moving it, a primary
//! that names another is told the owner, as the last step of a move does
//! (`CLUSTER SETSLOT <slot> NODE <owner>`).

use super::topology::{Views, SLOTS};

/// A primary that names the wrong owner of a slot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StaleView {
    /// The primary's address.
    pub address: String,
    pub slot: u16,
    /// Whom it names (`None`: nobody).
    pub named: Option<String>,
    /// The one primary that says it serves the slot, by id.
    pub owner: String,
}

/// Who says of itself that it serves a slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Claim<'a> {
    Nobody,
    One(&'a str),
    Several,
}

/// The primaries whose map names another owner than the one that says it
/// serves the slot, for slots not in `moving`. Nothing while a node does
/// not answer or is in trouble: then the claims are not all known.
pub fn stale_views(views: &Views, moving: &[u16]) -> Vec<StaleView> {
    let all_well = views.all().all(|(_, view)| {
        view.as_ref()
            .is_ok_and(|v| v.nodes.iter().all(|n| n.trouble().is_none()))
    });
    if !all_well {
        return Vec::new();
    }
    let claims = claims(views);
    let mut stale = Vec::new();
    for (address, view) in views.all() {
        let Ok(view) = view else { continue };
        if !view.myself().is_some_and(|n| n.is_primary()) {
            continue;
        }
        let map = view.slot_map();
        for (slot, (named, claim)) in map.iter().zip(&claims).enumerate() {
            let Claim::One(owner) = *claim else { continue };
            let slot = slot as u16;
            if *named != Some(owner) && !moving.contains(&slot) {
                stale.push(StaleView {
                    address: address.to_string(),
                    slot,
                    named: named.map(str::to_string),
                    owner: owner.to_string(),
                });
            }
        }
    }
    stale
}

/// Per slot, which primaries list it on their own line.
fn claims(views: &Views) -> Vec<Claim<'_>> {
    let mut claims = vec![Claim::Nobody; SLOTS];
    for primary in views.primaries() {
        for &(lo, hi) in primary.slot_ranges() {
            let Some(range) = claims.get_mut(usize::from(lo)..=usize::from(hi)) else {
                continue;
            };
            for claim in range {
                *claim = match *claim {
                    Claim::Nobody => Claim::One(primary.id()),
                    _ => Claim::Several,
                };
            }
        }
    }
    claims
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three primaries: `a` serves 0-99, `b` 100-199, `c` 200-299, each as
    /// it says itself; `c`'s map still names `a` for slot 150.
    fn listings(c_names_a_for_150: bool) -> Views {
        let peers = |me: &str| {
            let line = |id: &str, port: u16, slots: &str| {
                let myself = if id == me { "myself," } else { "" };
                format!("{id} 127.0.0.1:{port}@1{port} {myself}master - 0 0 1 connected {slots}\n")
            };
            let (a_slots, b_slots) = if me == "c" && c_names_a_for_150 {
                ("0-99 150", "100-149 151-199")
            } else {
                ("0-99", "100-199")
            };
            line("a", 30001, a_slots) + &line("b", 30002, b_slots) + &line("c", 30003, "200-299")
        };
        Views::from_listings(&[
            ("127.0.0.1:30001", &peers("a")),
            ("127.0.0.1:30002", &peers("b")),
            ("127.0.0.1:30003", &peers("c")),
        ])
    }

    #[test]
    fn a_primary_naming_an_owner_that_does_not_say_so_is_found() {
        let stale = stale_views(&listings(true), &[]);
        assert_eq!(
            stale,
            [StaleView {
                address: "127.0.0.1:30003".into(),
                slot: 150,
                named: Some("a".into()),
                owner: "b".into(),
            }]
        );
        assert!(stale_views(&listings(false), &[]).is_empty());
    }

    #[test]
    fn a_slot_being_moved_is_left_alone() {
        assert!(stale_views(&listings(true), &[150]).is_empty());
    }
}
