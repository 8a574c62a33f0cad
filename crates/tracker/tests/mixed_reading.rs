//! A reading that counted every command for most of its time, then sampled
//! one slot of time in two for a short spell (a load that crossed the
//! budget for a moment): each hot key's error bar still holds its truth as
//! often as a 95% bar should.
//!
//! A bursty key falls in only a few counted slots of such a spell, so its
//! sampled part rests on one or two bursts while most of its count is
//! exact. Taken whole as one sample, the estimate's exact part made the
//! bar narrow and symmetric, and a key with one burst seen of five read
//! low with the truth past its upper end (in CI: 5.3% under, a bar of
//! ±1.1%). The bar is now the exact part plus the sampled part's own.

// A test: a panic is how it fails (clippy.toml allows these in test
// functions; this file's helpers are test code too).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use heavykeeper_tracker::bounds::error_bar::bounds;
use heavykeeper_tracker::sampling::{coverage::Coverage, time_slot::TimeSlot};
use heavykeeper_tracker::worker::{counting::Counting, key_batch::KeyBatch};
use heavykeeper_tracker::{Access, KeyTracker, Ranking, TrackerShape};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The reading: every command counted until `SPELL_MS`, then one slot in
/// `EVERY` until `END_MS`.
const SPELL_MS: i64 = 4_500;
const END_MS: i64 = 5_000;
const EVERY: u32 = 2;
const RUNS: u64 = 400;

const BURSTY: u32 = 1;
const STEADY: u32 = 0;

/// The test's mix: key 1 in bursts of 300-600 every 100 ms (at a phase of
/// its own), key 0 five times a millisecond, and a tail of 1,000 keys at 45
/// a millisecond.
fn traffic(rng: &mut ChaCha8Rng) -> Vec<(i64, u32)> {
    let mut events = Vec::new();
    let phase = rng.random_range(0..100);
    for t in 0..END_MS {
        if t % 100 == phase {
            let size = rng.random_range(300..=600);
            events.extend((0..size).map(|_| (t, BURSTY)));
        }
        events.extend((0..5).map(|_| (t, STEADY)));
        events.extend((0..45).map(|_| (t, 100 + rng.random_range(0..1_000))));
    }
    events
}

/// The counted slots of the reading: (from, to, slot) in µs, every command
/// until the spell, then from a fresh coverage as the tracker lays them out.
fn counted_slots(seed: u64) -> Vec<(i64, i64, TimeSlot)> {
    let mut coverage = Coverage::new(EVERY, seed);
    let spell = SPELL_MS * 1_000;
    let (mut t, mut slots) = (spell, vec![(0, spell, TimeSlot::WHOLE)]);
    while t < END_MS * 1_000 {
        let next = coverage.next_counted();
        t += next.wait_us as i64;
        let slot = TimeSlot::new(slots.len() as u32, next.weight);
        slots.push((t, t + next.length_us as i64, slot));
        t += next.length_us as i64;
    }
    slots
}

/// One run: the key tracker's bounds of each of the two keys, and the truth.
fn one_run(seed: u64) -> [(f64, f64, f64, f64); 2] {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let events = traffic(&mut rng);
    let slots = counted_slots(rng.random());
    let shape = TrackerShape {
        k: 100,
        half_life_ms: 1e12,
    };
    let tracker = KeyTracker::new(shape, rng.random(), 0);
    let mut counting = Counting::new(tracker, 50, rng.random());
    let mut batch = KeyBatch::default();
    let mut current: Option<TimeSlot> = None;
    let slot_at = |t: i64| {
        slots
            .iter()
            .find(|s| (s.0..s.1).contains(&(t * 1_000)))
            .map(|s| s.2)
    };
    for &(t, key) in &events {
        let slot = slot_at(t);
        if slot != current || batch.len() >= 512 {
            batch.seal(t);
            counting.absorb(&batch);
            batch.clear();
            current = slot;
        }
        if let Some(slot) = slot {
            batch.push(0, &key.to_be_bytes(), Access::Read, slot, || t);
        }
        while counting.has_work(t) {
            counting.step(t);
        }
    }
    batch.seal(END_MS);
    counting.absorb(&batch);
    let tracker = counting.current();
    let listed = tracker.hottest(Ranking::Reads, 100, END_MS);
    [STEADY, BURSTY].map(|key| {
        let truth = events.iter().filter(|e| e.1 == key).count() as f64;
        let row = listed
            .iter()
            .find(|h| h.key == key.to_be_bytes())
            .unwrap_or_else(|| panic!("key {key} not listed"));
        let r = row.reads;
        let b = bounds(r.count, r.sampled, r.variance, r.undercount);
        (r.count, b.low, b.high, truth)
    })
}

#[test]
fn a_short_sampled_spell_leaves_every_bar_holding_its_truth() {
    let mut held = [0u64; 2];
    let mut ratio = [0.0f64; 2];
    for run in 0..RUNS {
        for (i, (count, low, high, truth)) in one_run(run * 7 + 1).into_iter().enumerate() {
            held[i] += u64::from((low..=high).contains(&truth));
            ratio[i] += count / truth;
        }
    }
    for (i, name) in ["steady", "bursty"].into_iter().enumerate() {
        let share = held[i] as f64 / RUNS as f64;
        let mean = ratio[i] / RUNS as f64;
        println!("{name}: bounds held {share:.3} of runs, count/truth {mean:.4} on average");
        // A 95% bar: at least 0.91 of 400 readings (four standard errors
        // under 0.95). Taken whole, the bursty key's bar held 0.855 (0.950 now).
        assert!(share >= 0.91, "{name}: bounds held the truth in {share}");
        assert!((mean - 1.0).abs() < 0.02, "{name}: {mean}");
    }
}
