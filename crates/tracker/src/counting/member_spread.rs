//! What a sketch's members' counts are made of, beside the sketch: how much
//! of each listed key's count was sampled and that part's variance (its
//! sampling error, see [`crate::bounds::error_bar`]), and what one of its accesses
//! last stood for. Kept for members only (at most `k`), so it follows the
//! top-k as arrivals change it: a key that enters starts with the sampled
//! part and variance of the count it enters with, a key pushed out is
//! forgotten.
//!
//! A key enters with a count that its inserts built while it was part of
//! the background, of a grain nobody kept: taken alike to the insert it
//! enters on, a count made of a worker's coin read as one made of accesses
//! kept one in two where the sampling changed within a reading, and the
//! rows a list picks out of 10,000 cool keys are such keys (at ~20,000
//! commands a second, keys read 14-22 times were listed at 47-58 with
//! lower bounds of 24-31). So beside that, the count it entered with is
//! also kept as of the background's grain (what one of its events stands
//! for on average): its bar allows for it, while the noise floor reads the
//! grain as before (taken at the background's coarsest events, every row
//! of a saturated node would look told apart).

use crate::bounds::error_bar::positive;
use crate::bounds::noise_floor::event_class;
use hashbrown::HashMap;
use heavykeeper_sketch::Arrived;

#[derive(Clone, Copy, Debug)]
struct Spread {
    /// The variance as of `at_ms` (it fades at twice the counts' rate).
    variance: f64,
    /// The sampled part of the count as of `at_ms` (it fades as counts do).
    sampled: f64,
    at_ms: i64,
    /// What one access of its last insert stood for.
    scale: f64,
    /// The variance of the count it entered with, at the background's grain
    /// (fades like `variance`).
    entered: f64,
    /// The size class of the events of the insert it entered on: the one
    /// insert of it the background holds.
    entered_class: Option<u8>,
}

#[derive(Clone, Debug)]
pub struct MemberSpread {
    half_life_ms: f64,
    by_hash: HashMap<u64, Spread>,
}

/// One insert as the spread sees it.
#[derive(Clone, Copy, Debug)]
pub struct Inserted {
    /// What its sampled accesses stand for.
    pub sampled: f64,
    pub variance: f64,
    pub scale: f64,
    pub time_ms: i64,
}

/// A member's spread now.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MemberSpreadNow {
    /// The variance of its sampled part.
    pub variance: f64,
    /// Of its count, what was sampled.
    pub sampled: f64,
    /// What an access of it stands for.
    pub scale: f64,
    /// The variance of the count it entered with, taken at the background's
    /// grain: for its bar only.
    pub entered: f64,
    /// The size class of the insert it entered on ([`crate::bounds::noise_floor`]).
    pub entered_class: Option<u8>,
}

impl MemberSpread {
    pub fn new(half_life_ms: f64) -> Self {
        Self {
            half_life_ms: half_life_ms.max(1.0),
            by_hash: HashMap::new(),
        }
    }

    /// What an insert did to the top-k; `background_unit`, asked only of a
    /// key entering, says what one event of the background (the keys not
    /// listed) stands for on average (0: nothing of it was sampled).
    pub fn arrived(
        &mut self,
        arrived: &Arrived,
        insert: Inserted,
        background_unit: impl FnOnce() -> f64,
    ) {
        if let Some((_, hash, _)) = &arrived.expelled {
            self.by_hash.remove(hash);
        }
        let Some((before, after)) = arrived.member else {
            return;
        };
        let mass = arrived.mass;
        if !positive(mass) {
            return;
        }
        // The share of the insert the member's count took (a member whose
        // bucket was lower than its count takes less); a key entering takes
        // its whole count, which earlier inserts built alike.
        let share = ((after - before) / mass).max(0.0);
        let added = insert.variance * share;
        let faded = self.fade_factor();
        let entering = before <= 0.0;
        let entry = self.by_hash.entry(arrived.hash).or_insert(Spread {
            variance: 0.0,
            sampled: 0.0,
            at_ms: insert.time_ms,
            scale: insert.scale,
            entered: 0.0,
            entered_class: None,
        });
        let elapsed = insert.time_ms.saturating_sub(entry.at_ms).max(0) as f64;
        let fading = (-elapsed * faded).exp2();
        entry.entered *= fading;
        if entering {
            entry.entered_class = event_class(insert.sampled, insert.variance);
            let unit = background_unit();
            if positive(unit) {
                entry.entered += (after - mass).max(0.0) * unit;
            }
        }
        entry.variance = entry.variance * fading + added;
        entry.sampled = entry.sampled * (-elapsed * faded / 2.0).exp2() + insert.sampled * share;
        entry.at_ms = entry.at_ms.max(insert.time_ms);
        entry.scale = insert.scale;
    }

    /// Exponent per ms of the variance's fading (twice the counts').
    fn fade_factor(&self) -> f64 {
        2.0 / self.half_life_ms
    }

    /// Member `hash`'s spread at `now_ms` (`None`: not a member).
    pub fn of(&self, hash: u64, now_ms: i64) -> Option<MemberSpreadNow> {
        let s = self.by_hash.get(&hash)?;
        let fades = now_ms.saturating_sub(s.at_ms).max(0) as f64 * self.fade_factor();
        Some(MemberSpreadNow {
            variance: s.variance * (-fades).exp2(),
            sampled: s.sampled * (-fades / 2.0).exp2(),
            scale: s.scale,
            entered: s.entered * (-fades).exp2(),
            entered_class: s.entered_class,
        })
    }

    pub fn heap_bytes(&self) -> usize {
        self.by_hash.allocation_size()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn insert(variance: f64, time_ms: i64) -> Inserted {
        Inserted {
            sampled: 10.0,
            variance,
            scale: 4.0,
            time_ms,
        }
    }

    #[test]
    fn a_members_variance_adds_up_fades_and_goes_with_it() {
        let mut s = MemberSpread::new(1_000.0);
        let entered = Arrived {
            hash: 7,
            expelled: None,
            member: Some((0.0, 40.0)),
            mass: 20.0,
        };
        // It enters with a count of 40 on an insert of 20: its whole count
        // is taken to be sampled alike.
        s.arrived(&entered, insert(100.0, 0), || 8.0);
        let now = |s: &MemberSpread, t| s.of(7, t).map(|v| (v.variance, v.sampled, v.scale));
        assert_eq!(now(&s, 0), Some((200.0, 20.0, 4.0)));
        // Beside that, the 20 it brought beyond the insert, at the
        // background's grain (8 an event), for its bar.
        assert_eq!(s.of(7, 0).map(|v| v.entered), Some(160.0));
        let raised = Arrived {
            hash: 7,
            expelled: None,
            member: Some((40.0, 60.0)),
            mass: 20.0,
        };
        s.arrived(&raised, insert(50.0, 0), || unreachable!("a member"));
        assert_eq!(now(&s, 0), Some((250.0, 30.0, 4.0)));
        // One half-life on, a quarter of the variance and half the part
        // sampled (it fades as the count does).
        assert_eq!(now(&s, 1_000), Some((62.5, 15.0, 4.0)));
        let pushed_out = Arrived {
            hash: 8,
            expelled: Some((b"k".to_vec().into_boxed_slice(), 7, 60.0)),
            member: Some((0.0, 61.0)),
            mass: 61.0,
        };
        s.arrived(&pushed_out, insert(0.0, 1_000), || 8.0);
        assert_eq!(s.of(7, 1_000), None);
        assert_eq!(
            s.of(8, 1_000).map(|v| (v.variance, v.scale)),
            Some((0.0, 4.0))
        );
    }
}
