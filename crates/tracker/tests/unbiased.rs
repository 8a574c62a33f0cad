//! The tracker's sampling is unbiased for traffic of any shape: slots
//! counted by a fresh coin each ([`Coverage`]), their accesses gathered in
//! batches ([`KeyBatch`]), thinned and coalesced ([`Counting`]), give every
//! key an estimated count whose mean over many runs is its true count:
//! steady, bursty, on-off, one client or many, and mixed, at any share of
//! time counted, with slots of uneven length (late timers), read often or
//! rarely.
//!
//! Each case is checked the way a statistician would: the mean of `RUNS`
//! independent estimates must lie within five standard errors of the truth
//! (a test that a biased estimator fails, as the old per-window weighting
//! did on bursts, and that an unbiased one passes but for a 1-in-a-million
//! fluke).

use heavykeeper_sketch::ItemHash;
use heavykeeper_tracker::counting::Sink;
use heavykeeper_tracker::{Access, Counting, Coverage, KeyBatch};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::HashMap;

/// One access: when, and to which key.
type Event = (i64, u32);

/// Traffic over `ms` milliseconds, of one shape.
#[derive(Clone, Debug)]
enum Shape {
    /// `per_ms` accesses every millisecond to key 0.
    Steady { per_ms: u32 },
    /// `size` accesses to key 1 in one millisecond every `every_ms`.
    Bursty { size: u32, every_ms: i64 },
    /// Key 2 at `per_ms` for `on_ms`, silent for `off_ms`, repeated.
    OnOff {
        per_ms: u32,
        on_ms: i64,
        off_ms: i64,
    },
    /// `clients` clients, each with its own key (10 + i), one access each
    /// every `every_ms`, at phases of their own.
    ManyClients { clients: u32, every_ms: i64 },
    /// A long tail: `per_ms` accesses a millisecond over `keys` keys (100+).
    Background { per_ms: u32, keys: u32 },
}

fn traffic(shapes: &[Shape], ms: i64, rng: &mut ChaCha8Rng) -> Vec<Event> {
    let mut events = Vec::new();
    for shape in shapes {
        match *shape {
            Shape::Steady { per_ms } => {
                for t in 0..ms {
                    events.extend((0..per_ms).map(|_| (t, 0)));
                }
            }
            Shape::Bursty { size, every_ms } => {
                let phase = rng.random_range(0..every_ms);
                for t in (phase..ms).step_by(every_ms as usize) {
                    events.extend((0..size).map(|_| (t, 1)));
                }
            }
            Shape::OnOff {
                per_ms,
                on_ms,
                off_ms,
            } => {
                let mut t = rng.random_range(0..on_ms + off_ms);
                while t < ms {
                    for u in t..(t + on_ms).min(ms) {
                        events.extend((0..per_ms).map(|_| (u, 2)));
                    }
                    t += on_ms + off_ms;
                }
            }
            Shape::ManyClients { clients, every_ms } => {
                for c in 0..clients {
                    let phase = rng.random_range(0..every_ms);
                    for t in (phase..ms).step_by(every_ms as usize) {
                        events.push((t, 10 + c));
                    }
                }
            }
            Shape::Background { per_ms, keys } => {
                for t in 0..ms {
                    events.extend((0..per_ms).map(|_| (t, 100 + rng.random_range(0..keys))));
                }
            }
        }
    }
    events.sort_by_key(|&(t, _)| t);
    events
}

/// Exact sums of what reaches the sketches, by key.
#[derive(Default)]
struct Sums(HashMap<u32, u64>);

impl Sink for Sums {
    fn seed(&self) -> u64 {
        1
    }

    fn insert(&mut self, item: &[u8], _: ItemHash, _: Access, weight: u64, _: i64, _: u64) {
        let key = u32::from_be_bytes(item[2..6].try_into().unwrap());
        *self.0.entry(key).or_default() += weight;
    }
}

/// One run of the tracker's sampling over `events`: each key's estimated
/// count. Batches of up to 512 accesses, handed over at each slot's end
/// too; counts read every `read_every_ms`.
fn estimate(
    events: &[Event],
    every: u32,
    threshold: u64,
    read_every_ms: i64,
    seed: u64,
) -> HashMap<u32, f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut coverage = Coverage::new(every, rng.random());
    let mut counting = Counting::new(Sums::default(), 50, rng.random());
    counting.set_threshold(threshold);
    let mut batch = KeyBatch::default();
    let hand_over = |batch: &mut KeyBatch, counting: &mut Counting<Sums>, t: i64| {
        batch.seal(t);
        counting.absorb(batch);
        batch.clear();
    };
    let (mut slot_end, mut next_read) = (0i64, read_every_ms);
    let mut weight = None;
    for &(t, key) in events {
        while t >= slot_end {
            hand_over(&mut batch, &mut counting, slot_end);
            // Slots of 10 ms, some stretched by a late timer.
            let length = 10
                + if rng.random_bool(0.2) {
                    rng.random_range(1..15)
                } else {
                    0
                };
            slot_end += length;
            weight = coverage.next_slot();
        }
        if t >= next_read {
            counting.current();
            next_read += read_every_ms;
        }
        if let Some(w) = weight {
            batch.push(0, &key.to_be_bytes(), Access::Read, w, || t);
            if batch.len() >= 512 {
                hand_over(&mut batch, &mut counting, t);
            }
        }
        while counting.has_work(t) {
            counting.step(t);
        }
    }
    hand_over(&mut batch, &mut counting, slot_end);
    counting
        .current()
        .0
        .iter()
        .map(|(&k, &w)| (k, w as f64))
        .collect()
}

const RUNS: u64 = 300;

/// Every key of interest (all but the background's) is estimated without
/// bias; and so is the background's total.
fn assert_unbiased(shapes: &[Shape], every: u32, threshold: u64, read_every_ms: i64, seed: u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let events = traffic(shapes, 4_000, &mut rng);
    let mut truth: HashMap<u32, f64> = HashMap::new();
    for &(_, key) in &events {
        *truth.entry(group(key)).or_default() += 1.0;
    }
    let mut runs: HashMap<u32, Vec<f64>> = HashMap::new();
    for run in 0..RUNS {
        let run_seed = seed ^ (run + 1).wrapping_mul(0x9e37);
        let totals = estimate(&events, every, threshold, read_every_ms, run_seed);
        let mut grouped: HashMap<u32, f64> = HashMap::new();
        for (key, w) in totals {
            *grouped.entry(group(key)).or_default() += w;
        }
        for &key in truth.keys() {
            runs.entry(key)
                .or_default()
                .push(grouped.get(&key).copied().unwrap_or(0.0));
        }
    }
    for (key, true_count) in &truth {
        let xs = &runs[key];
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (xs.len() - 1) as f64;
        let se = (var / xs.len() as f64).sqrt();
        assert!(
            (mean - true_count).abs() <= 5.0 * se + 1e-9 * true_count,
            "key group {key}: mean {mean:.1} vs true {true_count} (se {se:.1}), every {every}, threshold {threshold}, {shapes:?}"
        );
    }
}

/// The background's keys are judged together (each alone is seen a handful
/// of times), the clients' too.
fn group(key: u32) -> u32 {
    match key {
        0..=9 => key,
        10..=99 => 10,
        _ => 100,
    }
}

fn shape() -> impl Strategy<Value = Shape> {
    prop_oneof![
        (1u32..4).prop_map(|per_ms| Shape::Steady { per_ms }),
        (50u32..1_000, 20i64..300).prop_map(|(size, every_ms)| Shape::Bursty { size, every_ms }),
        (1u32..5, 1i64..200, 1i64..400).prop_map(|(per_ms, on_ms, off_ms)| Shape::OnOff {
            per_ms,
            on_ms,
            off_ms
        }),
        (2u32..50, 5i64..100)
            .prop_map(|(clients, every_ms)| Shape::ManyClients { clients, every_ms }),
        (1u32..6, 100u32..20_000).prop_map(|(per_ms, keys)| Shape::Background { per_ms, keys }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, .. ProptestConfig::default() })]

    #[test]
    fn any_traffic_is_estimated_without_bias(
        shapes in proptest::collection::vec(shape(), 1..4),
        every in prop_oneof![Just(1u32), 2u32..40],
        threshold in prop_oneof![Just(1u64), 2u64..64],
        read_every_ms in prop_oneof![Just(50i64), Just(100_000i64)],
        seed in any::<u64>(),
    ) {
        assert_unbiased(&shapes, every, threshold, read_every_ms, seed);
    }
}

#[test]
fn the_issues_mix_bursty_steady_and_background_is_unbiased_at_one_in_sixteen() {
    let shapes = [
        Shape::Bursty {
            size: 1_000,
            every_ms: 100,
        },
        Shape::Steady { per_ms: 1 },
        Shape::Background {
            per_ms: 9,
            keys: 10_000,
        },
    ];
    assert_unbiased(&shapes, 16, 1, 100_000, 42);
    assert_unbiased(&shapes, 1, 16, 100_000, 43);
    // Read twenty times a second, as dashboards do: nothing changes.
    assert_unbiased(&shapes, 16, 1, 50, 44);
}

#[test]
fn a_short_burst_is_counted_as_often_as_its_share_says() {
    // One burst of 5,000 accesses in one millisecond, nothing else.
    assert_unbiased(
        &[Shape::Bursty {
            size: 5_000,
            every_ms: 10_000,
        }],
        16,
        1,
        100_000,
        7,
    );
}
