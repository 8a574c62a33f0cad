//! A batch's accesses of each watched member by each client, summed before
//! they are attributed. A batch holds one slot of time, and a client's
//! accesses of a key in one counted slot were counted together or not at
//! all: their variance is the slot's, `(1 − 1/N) · sum²` plus each kept
//! access's coin ([`TimeSlot::variance_of`], [`TimeSlot::thinning_variance`]),
//! as a key's own count has it, not each access's as if it had been
//! sampled alone. Taken one by one, a host that sends twelve `GET`s of a
//! key in one pipeline every 10 ms had bars too narrow for its spread:
//! beside a flood, with slots shorter than the spacing of the hosts'
//! sends, `tests/statistics/tracking_clients.rs` failed 4 runs in 89, each
//! time a host's rows all read high together (1.26-1.59 of their truth).

use crate::access::Access;
use crate::sampling::time_slot::{Counted, TimeSlot};
use crate::worker::key_batch::Client;

/// At most this many sums a batch holds; past it, those so far are handed
/// on (a sum split in two only narrows its variance a little).
pub const MOST_RUNS: usize = 64;

/// One client's kept accesses of one member in a batch.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MemberRun {
    pub access: Access,
    pub hash: u64,
    pub client: Client,
    /// The first access's time.
    pub time_ms: i64,
    /// The accesses kept.
    pub kept: u32,
}

impl MemberRun {
    /// What they stand for, its variance and grain, in `slot`.
    pub fn weighed(&self, slot: TimeSlot) -> Counted {
        slot.counted(self.kept)
    }
}

/// The sums of one batch.
#[derive(Clone, Debug, Default)]
pub struct MemberRuns {
    runs: Vec<MemberRun>,
}

impl MemberRuns {
    /// One kept access of member `hash` by `client`; whether the sums are
    /// full (to be handed on with [`Self::drain`]).
    pub fn add(&mut self, access: Access, hash: u64, client: Client, time_ms: i64) -> bool {
        let same = |r: &&mut MemberRun| r.hash == hash && r.access == access && r.client == client;
        match self.runs.iter_mut().find(same) {
            Some(run) => run.kept = run.kept.saturating_add(1),
            None => self.runs.push(MemberRun {
                access,
                hash,
                client,
                time_ms,
                kept: 1,
            }),
        }
        self.runs.len() >= MOST_RUNS
    }

    /// Hands every sum on, emptied.
    pub fn drain(&mut self, mut each: impl FnMut(&MemberRun)) {
        self.runs.iter().for_each(&mut each);
        self.runs.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clients_accesses_of_a_member_in_a_slot_weigh_as_one_cluster() {
        let mut runs = MemberRuns::default();
        let (a, b) = (Client { id: 1, host: 1 }, Client { id: 2, host: 2 });
        for _ in 0..12 {
            assert!(!runs.add(Access::Read, 7, a, 5));
        }
        runs.add(Access::Read, 7, b, 6);
        runs.add(Access::Write, 7, a, 6);
        let slot = TimeSlot::new(1, 20).keeping_one_in(2);
        let mut seen = Vec::new();
        runs.drain(|r| seen.push((r.client.id, r.access, r.weighed(slot))));
        assert_eq!(seen.len(), 3);
        // Twelve kept, each standing for 40: one cluster of 480 in a slot
        // counted one in 20, and twelve coins of one in two.
        let Counted {
            weight,
            variance,
            grain,
        } = seen[0].2;
        assert_eq!((weight, grain), (480.0, 40.0));
        let cluster = (1.0 - 1.0 / 20.0) * 480.0 * 480.0;
        let coins = 12.0 * 40.0 * (40.0 - 20.0);
        assert!((variance - cluster - coins).abs() < 1e-6, "{variance}");
        // Taken one by one, the same twelve had a tenth of it.
        let alone = 12.0 * 40.0 * 39.0;
        assert!(variance > 10.0 * alone);
        // One access alone is a cluster of one: 40, and its coin.
        let Counted {
            weight, variance, ..
        } = seen[1].2;
        assert_eq!(weight, 40.0);
        let one = (1.0 - 1.0 / 20.0) * 40.0 * 40.0 + 40.0 * 20.0;
        assert!((variance - one).abs() < 1e-6, "{variance}");
        // Every command counted and kept: exact.
        let mut whole = MemberRuns::default();
        whole.add(Access::Read, 7, a, 5);
        whole.drain(|r| {
            let exact = Counted {
                weight: 1.0,
                variance: 0.0,
                grain: 1.0,
            };
            assert_eq!(r.weighed(TimeSlot::WHOLE), exact);
        });
        let mut drained = 0;
        whole.drain(|_| drained += 1);
        assert_eq!(drained, 0);
    }

    #[test]
    fn the_sums_say_when_they_are_full() {
        let mut runs = MemberRuns::default();
        let full: Vec<bool> = (0..MOST_RUNS as u64)
            .map(|i| runs.add(Access::Read, i, Client::default(), 0))
            .collect();
        assert!(full[..MOST_RUNS - 1].iter().all(|f| !f));
        assert!(full[MOST_RUNS - 1]);
    }
}
