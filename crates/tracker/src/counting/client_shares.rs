//! Which clients made a count: a few bins, each a client and the (fading)
//! accesses it stands for, kept by *unbiased space saving* (Ting, "Data
//! Sketches for Disaggregated Subset Sum and Frequent Item Estimation",
//! SIGMOD 2018), weighted.
//!
//! While no more clients than bins send, every client has a bin and its
//! count is exactly what was counted of it. A newcomer to full bins adds
//! its weight `w` to the smallest bin (count `c`) and takes the bin's label
//! with probability `w / (c + w)`: the bin's count is then the right total
//! for whichever label it holds in expectation, so the sum over any group
//! of clients (a host's connections, a user's) is unbiased. Its spread is
//! that of a sample with probability proportional to size at the smallest
//! bin's count `α` (priority sampling's threshold): taken as `α (g + α)`
//! for a group estimated at `g` ([`ClientShares::threshold`]; conservative:
//! the bounds held 99% of groups in the test of many connections below).
//!
//! Counts fade with the tracker's half-life by forward decay (as
//! [`super::fading_counters`]): an access at `t` is stored as
//! `w · 2^((t − L) / H)`, its variance as `v · 4^((t − L) / H)`.

use crate::sampling::time_slot::Counted;

/// Move the landmark once the exponent passes this (`4^200` is far from
/// overflow).
const MAX_EXPONENT: f64 = 200.0;

/// One client's part of a count, faded to the time it was read.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClientPart {
    pub client: u64,
    pub count: f64,
    pub variance: f64,
}

#[derive(Clone, Copy, Debug)]
struct Bin {
    client: u64,
    stored: f64,
    variance: f64,
}

#[derive(Clone, Debug)]
pub struct ClientShares {
    bins: Vec<Bin>,
    capacity: usize,
    half_life_ms: f64,
    landmark_ms: i64,
    /// The bin the last access went to: a pipeline's accesses come from one
    /// client.
    last: usize,
    coin: u64,
    /// Has a newcomer found the bins full?
    overflowed: bool,
    /// The most one kept access stood for, stored as the counts are: what
    /// a sender never seen may have sent unseen.
    grain: f64,
}

impl ClientShares {
    /// At most `capacity` clients named, fading with `half_life_ms`.
    pub fn new(capacity: usize, half_life_ms: f64, now_ms: i64) -> Self {
        Self {
            bins: Vec::new(),
            capacity: capacity.max(1),
            half_life_ms: half_life_ms.max(1.0),
            landmark_ms: now_ms,
            last: 0,
            coin: 0x9e37_79b9_7f4a_7c15 ^ now_ms as u64,
            overflowed: false,
            grain: 0.0,
        }
    }

    /// `counted` accesses of `client` at `time_ms`: their weight, its
    /// sampling variance (0 where every access was counted) and what one
    /// access kept stood for (1 where every access was counted).
    #[inline]
    pub fn add(&mut self, client: u64, counted: Counted, time_ms: i64) {
        let Counted {
            weight,
            variance,
            grain,
        } = counted;
        let unit = self.unit_at(time_ms);
        let (stored, variance) = (weight * unit, variance * unit * unit);
        self.grain = self.grain.max(grain * unit);
        if let Some(bin) = self.bins.get_mut(self.last).filter(|b| b.client == client) {
            bin.stored += stored;
            bin.variance += variance;
            return;
        }
        self.add_elsewhere(client, stored, variance);
    }

    #[cold]
    fn add_elsewhere(&mut self, client: u64, stored: f64, variance: f64) {
        let found = self
            .bins
            .iter_mut()
            .enumerate()
            .find(|(_, b)| b.client == client);
        if let Some((i, bin)) = found {
            self.last = i;
            bin.stored += stored;
            bin.variance += variance;
        } else if self.bins.len() < self.capacity {
            self.last = self.bins.len();
            self.bins.push(Bin {
                client,
                stored,
                variance,
            });
        } else {
            self.replace_smallest(client, stored, variance);
        }
    }

    /// Unbiased space saving's step for a newcomer to full bins.
    fn replace_smallest(&mut self, client: u64, stored: f64, variance: f64) {
        self.overflowed = true;
        let toss = self.toss();
        let smallest = (self.bins.iter_mut().enumerate())
            .min_by(|(_, a), (_, b)| a.stored.total_cmp(&b.stored));
        let Some((i, bin)) = smallest else {
            return;
        };
        bin.stored += stored;
        bin.variance += variance;
        if toss * bin.stored < stored {
            bin.client = client;
        }
        self.last = i;
    }

    /// A uniform number in [0, 1) (SplitMix64).
    fn toss(&mut self) -> f64 {
        self.coin = self.coin.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.coin;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) as f64 / 2f64.powi(64)
    }

    fn exponent(&self, time_ms: i64) -> f64 {
        time_ms.saturating_sub(self.landmark_ms) as f64 / self.half_life_ms
    }

    fn unit_at(&mut self, time_ms: i64) -> f64 {
        let exponent = self.exponent(time_ms);
        if exponent > MAX_EXPONENT {
            let shrink = exponent.exp2().recip();
            for bin in &mut self.bins {
                bin.stored *= shrink;
                bin.variance *= shrink * shrink;
            }
            self.grain *= shrink;
            self.landmark_ms = time_ms;
            return 1.0;
        }
        exponent.exp2()
    }

    /// Every client named, faded to `now_ms`, most first.
    pub fn parts(&self, now_ms: i64) -> Vec<ClientPart> {
        let unit = self.fade_to(now_ms);
        let mut parts: Vec<ClientPart> = (self.bins.iter())
            .map(|b| ClientPart {
                client: b.client,
                count: b.stored * unit,
                variance: b.variance * unit * unit,
            })
            .collect();
        parts.sort_by(|a, b| b.count.total_cmp(&a.count));
        parts
    }

    /// The smallest bin's count at `now_ms` once newcomers have found the
    /// bins full (0 before: every count is exact): a group's estimate `g`
    /// spreads by about `threshold · (g + threshold)` of variance for the
    /// bins' coins.
    pub fn threshold(&self, now_ms: i64) -> f64 {
        if !self.overflowed {
            return 0.0;
        }
        let unit = self.fade_to(now_ms);
        let smallest = self
            .bins
            .iter()
            .map(|b| b.stored)
            .fold(f64::INFINITY, f64::min);
        smallest * unit
    }

    /// The most one kept access stood for, faded to `now_ms` (0: nothing
    /// counted yet).
    pub fn grain(&self, now_ms: i64) -> f64 {
        self.grain * self.fade_to(now_ms)
    }

    /// What a stored count is multiplied by to read it faded to `now_ms`.
    fn fade_to(&self, now_ms: i64) -> f64 {
        self.exponent(now_ms).exp2().recip()
    }

    /// Bytes this takes besides itself.
    pub fn heap_bytes(&self) -> usize {
        self.bins.capacity() * std::mem::size_of::<Bin>()
    }
}

/// The parts of several counts (a row's reads and writes) as one, each
/// client's summed.
pub fn summed(parts: impl IntoIterator<Item = ClientPart>) -> Vec<ClientPart> {
    let mut all: Vec<ClientPart> = Vec::new();
    for part in parts {
        match all.iter_mut().find(|p| p.client == part.client) {
            Some(p) => {
                p.count += part.count;
                p.variance += part.variance;
            }
            None => all.push(part),
        }
    }
    all.sort_by(|a, b| b.count.total_cmp(&a.count));
    all
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bounds::sender_rows::share_bounds;
    use crate::sampling::coverage::uniform;
    use crate::sampling::time_slot::TimeSlot;

    #[test]
    fn few_clients_are_counted_exactly() {
        let mut s = ClientShares::new(4, 1e12, 0);
        let one = TimeSlot::WHOLE.counted(1);
        for (client, n) in [(1, 60), (2, 25), (3, 10), (4, 5)] {
            for t in 0..n {
                s.add(client, one, t);
            }
        }
        let parts = s.parts(100);
        let counts: Vec<(u64, f64)> = parts.iter().map(|p| (p.client, p.count.round())).collect();
        assert_eq!(counts, vec![(1, 60.0), (2, 25.0), (3, 10.0), (4, 5.0)]);
        assert!(parts
            .iter()
            .all(|p| (p.count - p.count.round()).abs() < 1e-6));
        assert!(parts.iter().all(|p| p.variance == 0.0));
        assert_eq!(s.threshold(100), 0.0);
        assert_eq!(
            share_bounds((60.0, 0.0), (100.0, 0.0), 0.0, 1.0),
            (0.6, 0.6, 0.6)
        );
    }

    #[test]
    fn counts_fade_with_the_half_life() {
        let mut s = ClientShares::new(2, 1_000.0, 0);
        s.add(1, TimeSlot::WHOLE.counted(8), 0);
        assert!((s.parts(2_000)[0].count - 2.0).abs() < 1e-9);
        // Far past the landmark: moved, nothing lost.
        s.add(1, TimeSlot::WHOLE.counted(1), 300_000);
        assert!((s.parts(300_000)[0].count - 1.0).abs() < 1e-9);
    }

    /// Many more clients than bins, in groups (hosts of 20 connections):
    /// each group's sum is right on average over many runs, and its bounds
    /// hold what the group sent about as often as they say.
    #[test]
    fn group_sums_stay_unbiased_past_the_capacity() {
        let hosts = [0.6, 0.25, 0.1, 0.05]; // shares of what is sent
        let runs = 400;
        let (mut covered, mut checked) = (0, 0);
        let mut sq = [0.0; 4];
        let mut error = [0.0; 4];
        for run in 0..runs {
            let mut s = ClientShares::new(16, 1e12, run);
            let mut sent = [0.0; 4];
            let mut rng = run as u64 * 7 + 1;
            for t in 0..4_000 {
                let host = match uniform(&mut rng) {
                    u if u < 0.6 => 0,
                    u if u < 0.85 => 1,
                    u if u < 0.95 => 2,
                    _ => 3,
                };
                sent[host] += 1.0 / 4_000.0;
                let connection = (uniform(&mut rng) * 20.0) as u64;
                s.add(
                    host as u64 * 100 + connection,
                    TimeSlot::WHOLE.counted(1),
                    t,
                );
            }
            let parts = s.parts(4_000);
            let whole = parts
                .iter()
                .fold((0.0, 0.0), |a, p| (a.0 + p.count, a.1 + p.variance));
            for (h, truth) in sent.iter().enumerate() {
                let mine = parts.iter().filter(|p| p.client / 100 == h as u64);
                let g = mine.fold((0.0, 0.0), |a, p| (a.0 + p.count, a.1 + p.variance));
                let (share, low, high) = share_bounds(g, whole, s.threshold(4_000), s.grain(4_000));
                error[h] += (share - truth) / runs as f64;
                sq[h] += (share - truth).powi(2) / runs as f64;
                checked += 1;
                covered += usize::from((low..=high).contains(truth));
            }
        }
        // Each mean error within four of its standard errors of zero.
        for h in 0..hosts.len() {
            let standard_error = (sq[h] / runs as f64).sqrt();
            assert!(
                error[h].abs() < 4.0 * standard_error,
                "host {h}: {error:?} {sq:?}"
            );
        }
        assert!(covered * 10 >= checked * 9, "{covered} of {checked}");
    }

    #[test]
    fn reads_and_writes_sum_per_client() {
        let part = |client, count, variance| ClientPart {
            client,
            count,
            variance,
        };
        let b = part(2, 5.0, 0.0);
        let all = summed([part(1, 2.0, 1.0), b, part(1, 4.0, 1.0)]);
        assert_eq!(all, [part(1, 6.0, 2.0), b]);
    }
}
