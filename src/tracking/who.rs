//! Who drives a row: the clients whose commands made a listed row's count
//! (a key's reads, writes or both, a missing key, a prefix), or the node's
//! key accesses as a whole, grouped by host, connection, name, library or
//! user, each group with its rate, count and 95% bounds.
//!
//! The counting side keeps each member's senders by connection and by
//! host; names are looked up here, when the reply is built: the live
//! clients' by `CLIENT LIST ID` (outside the tracker's state: the call
//! passes the module's own command filter), the gone clients' as they
//! were when they disconnected.

use super::state::Tracking;
use super::with_state;
use crate::host::client_info;
use heavykeeper_tracker::bounds::sender_rows::{SenderRow, Senders};
use heavykeeper_tracker::counting::key_tracker::item_of;
use heavykeeper_tracker::server::client_names::{ClientInfo, GroupBy};
use heavykeeper_tracker::{KeyTracker, Ranking, Tally};
use redis_module::Context;

/// Whose accesses are asked about.
#[derive(Clone, Debug)]
pub enum Whose {
    /// The row `ranking` lists for `key` (a prefix for
    /// [`Ranking::Prefixes`]) in database `db`.
    Row {
        ranking: Ranking,
        db: u16,
        key: Vec<u8>,
    },
    /// A cluster node's hash slot (one of its hottest).
    HashSlot(u16),
    /// The node's key accesses, whatever the keys.
    Node,
}

/// One group of clients and what it sent.
#[derive(Clone, Debug, PartialEq)]
pub struct WhoRow {
    pub label: Vec<u8>,
    pub per_second: f64,
    pub count: f64,
    pub low: f64,
    pub high: f64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unanswered {
    /// Key tracking is off.
    Off,
    /// The server does not say which client sent a command (Redis 7.0).
    NoClientIds,
    /// Hash slots asked of a node outside a cluster.
    NotCluster,
}

/// What was read of the tracker: the senders, and how to make rows of
/// their shares.
struct Read {
    senders: Senders,
    scale: Scale,
    /// What is known of the senders that disconnected (and, by host, each
    /// host's address).
    known: Vec<(u64, ClientInfo)>,
}

/// From a share of the senders to a row's figures.
enum Scale {
    /// A share of a listed row (its rate, count and bounds), and the part
    /// of its count whose senders were counted (the rest came before the
    /// row's senders were, from anyone).
    Row(Tally, f64),
    /// A share of the node's senders' accesses (`whole`), as rates.
    Node { whole: f64, per_count: f64 },
}

/// The groups that sent `asked`'s accesses, most first, at most `count`.
pub fn who_drives(
    ctx: &Context,
    asked: &Whose,
    by: GroupBy,
    count: usize,
) -> Result<Vec<WhoRow>, Unanswered> {
    let read = with_state(|state| {
        let tracking = state.as_mut().ok_or(Unanswered::Off)?;
        read(tracking, asked, by)
    })
    .unwrap_or(Err(Unanswered::Off))?;
    let Some(mut read) = read else {
        return Ok(Vec::new());
    };
    if by != GroupBy::Host {
        let ids: Vec<u64> = read.senders.parts.iter().map(|p| p.client).collect();
        read.known.extend(client_info::list(ctx, &ids));
    }
    let label = |id: u64| {
        let info = read.known.iter().rev().find(|(known, _)| *known == id);
        match (by, info) {
            // Known by its number: the address as the server gave it.
            (GroupBy::Host, Some((_, host))) => host.addr.clone(),
            _ => by.label(id, info.map(|(_, info)| info)),
        }
    };
    let rows = read.senders.grouped(label).into_iter().take(count);
    Ok(rows.map(|row| read.scale.row(row)).collect())
}

/// The senders of `asked` from the tracker (`None`: not a member).
fn read(tracking: &mut Tracking, asked: &Whose, by: GroupBy) -> Result<Option<Read>, Unanswered> {
    if !tracking.senders().names_clients() {
        return Err(Unanswered::NoClientIds);
    }
    let missed = tracking.missed();
    let tracking_in_cluster = tracking.routing().is_some();
    let by_host = by == GroupBy::Host;
    let now = crate::host::clock::now_ms();
    let counting = tracking.current();
    let tracker: &KeyTracker = counting.tracker();
    let (senders, scale) = match asked {
        Whose::Row { ranking, db, key } => {
            let item = item_of(*db, key);
            let Some(senders) = tracker.senders(*ranking, &item, by_host, now) else {
                return Ok(None);
            };
            let tally = tracker.key(*db, key, now).ranked(*ranking);
            let attributed = senders.parts.iter().map(|p| p.count).sum();
            (senders, Scale::Row(tally.allowing_for(missed), attributed))
        }
        Whose::HashSlot(slot) => {
            if !tracking_in_cluster {
                return Err(Unanswered::NotCluster);
            }
            let Some((senders, rate)) = tracker.hash_slot_senders(*slot, by_host, now) else {
                return Ok(None);
            };
            let tally = rate.reads.plus(rate.writes).allowing_for(missed);
            let attributed = senders.parts.iter().map(|p| p.count).sum();
            (senders, Scale::Row(tally, attributed))
        }
        Whose::Node => {
            let Some(senders) = tracker.node_senders(by_host, now) else {
                return Ok(None);
            };
            let whole = senders.parts.iter().map(|p| p.count).sum();
            let per_count = tracker.per_second(1.0, now);
            (senders, Scale::Node { whole, per_count })
        }
    };
    drop(counting);
    let (hosts, gone) = tracking.senders().names();
    let known = (senders.parts.iter())
        .filter_map(|p| match by_host {
            true => Some((p.client, host_info(hosts.host(p.client as u32)))),
            false => gone.get(p.client).map(|info| (p.client, info.clone())),
        })
        .collect();
    Ok(Some(Read {
        senders,
        scale,
        known,
    }))
}

/// A host as a client's information (its address without a port).
fn host_info(host: &[u8]) -> ClientInfo {
    ClientInfo {
        addr: host.to_vec(),
        ..ClientInfo::default()
    }
}

impl Scale {
    fn row(&self, row: SenderRow) -> WhoRow {
        match self {
            Scale::Row(tally, attributed) => {
                // The row's accesses from before its senders were counted
                // (as a rate): the group sent none of them, or all.
                let per_count = tally.per_second / tally.count.max(f64::MIN_POSITIVE);
                let unattributed = (tally.count - attributed).max(0.0) * per_count;
                let bounds = tally.bounds();
                WhoRow {
                    label: row.label,
                    per_second: row.share * tally.per_second,
                    count: row.share * tally.count,
                    low: row.low * (bounds.low - unattributed).max(0.0),
                    high: row.high * (bounds.high - unattributed).max(0.0) + unattributed,
                }
            }
            Scale::Node { whole, per_count } => WhoRow {
                label: row.label,
                per_second: row.share * whole * per_count,
                count: row.share * whole,
                low: row.low * whole * per_count,
                high: row.high * whole * per_count,
            },
        }
    }
}
