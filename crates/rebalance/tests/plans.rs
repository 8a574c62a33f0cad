//! The planner on the clusters an operator meets: the 60/20/20,
//! a balanced one, a key with half the traffic, a hot hash tag, slots too
//! coarse to share out.

// A test: a panic is how it fails (clippy.toml allows these in test
// functions; this file's helpers are test code too).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use heavykeeper_rebalance::{
    plan, Advice, Bounds, HotKey, Input, LoadBounds, Measure, Measured, NodeSlots, Options, Remedy,
    SlotLoad,
};

fn slot(slot: u16, reads: f64, keys: u64) -> SlotLoad {
    SlotLoad {
        slot,
        reads_per_second: reads,
        writes_per_second: 0.0,
        keys,
        ..SlotLoad::default()
    }
}

/// Primaries with no hot key named.
fn cluster(nodes: Vec<NodeSlots>) -> Input {
    Input {
        nodes,
        hot_keys: Vec::new(),
    }
}

fn node(name: &str, slots: Vec<SlotLoad>) -> NodeSlots {
    NodeSlots {
        node: name.into(),
        slots,
        ..NodeSlots::default()
    }
}

/// 1,000 keys on distinct slots, 60% of 9,000 GET/s on the first node's.
fn sixty_twenty_twenty() -> Input {
    let spread = |first: u16, n: u16, rate: f64| -> Vec<SlotLoad> {
        (0..n)
            .map(|i| slot(first + i, rate / n as f64, 1))
            .collect()
    };
    cluster(vec![
        node("a:1", spread(0, 334, 5400.0)),
        node("a:2", spread(5461, 333, 1800.0)),
        node("a:3", spread(10923, 333, 1800.0)),
    ])
}

#[test]
fn the_hot_node_sheds_just_enough_to_the_cool_ones() {
    let input = sixty_twenty_twenty();
    let plan = plan(&input, &Options::default());
    assert!(plan.reaches_target(), "{plan:?}");
    assert!((plan.target - 3600.0).abs() < 1e-6, "40% of 9,000");
    assert!(
        plan.moves.iter().all(|m| m.from == "a:1"),
        "{:?}",
        plan.moves
    );
    // 5,400 - 3,600 = 1,800 to shed at ~16.2 per slot: 112 slots, no more.
    let per_slot: f64 = 5400.0 / 334.0;
    let needed = (1800.0 / per_slot).ceil() as usize;
    assert_eq!(plan.moves.len(), needed);
    for outcome in &plan.nodes {
        assert!(plan.share(outcome.after) <= 0.45, "{outcome:?}");
    }
    let to: std::collections::HashSet<&str> = plan.moves.iter().map(|m| m.to.as_str()).collect();
    assert_eq!(to.len(), 2, "both cool nodes take a part");
    assert!(plan.advice.is_empty(), "{:?}", plan.advice);
}

#[test]
fn a_balanced_cluster_moves_nothing() {
    let even = |first: u16| (0..10).map(|i| slot(first + i, 10.0, 3)).collect();
    let input = cluster(vec![
        node("a:1", even(0)),
        node("a:2", even(100)),
        node("a:3", even(200)),
    ]);
    let plan = plan(&input, &Options::default());
    assert!(plan.moves.is_empty());
    assert!(plan.reaches_target());
    let idle = cluster(vec![node("a:1", vec![]), node("a:2", vec![])]);
    assert!(heavykeeper_rebalance::plan(&idle, &Options::default())
        .moves
        .is_empty());
}

/// About one read a second, 60/20/20: "unbalanced" by chance, under the
/// floor (`rebalance`'s 100 commands/s), and nothing moves.
#[test]
fn a_cluster_serving_almost_nothing_is_not_balanced() {
    let mut input = sixty_twenty_twenty();
    for s in input.nodes.iter_mut().flat_map(|n| n.slots.iter_mut()) {
        s.reads_per_second /= 9000.0;
    }
    let options = Options {
        tolerance: 0.05,
        min_total: 100.0,
        ..Options::default()
    };
    let plan = plan(&input, &options);
    assert!(plan.too_light && plan.moves.is_empty() && plan.advice.is_empty());
}

#[test]
fn among_slots_that_would_do_the_one_with_fewest_keys_goes() {
    // a:1 is 140 over 120 (target of 300 over 3 at 20%): 20 to shed.
    let input = cluster(vec![
        node(
            "a:1",
            vec![slot(1, 100.0, 1), slot(2, 20.0, 900), slot(3, 20.0, 2)],
        ),
        node("a:2", vec![slot(10, 80.0, 1)]),
        node("a:3", vec![slot(20, 80.0, 1)]),
    ]);
    let plan = plan(&input, &Options::default());
    assert_eq!(plan.moves.len(), 1, "{:?}", plan.moves);
    assert_eq!(plan.moves[0].slot, 3, "20/s in 2 keys rather than in 900");
    assert_eq!(plan.keys_moved(), 2);
}

#[test]
fn a_key_with_half_the_traffic_is_advice_not_a_move() {
    let mut input = sixty_twenty_twenty();
    // Slot 7 holds one key serving half of all reads.
    input.nodes[0].slots[7].reads_per_second += 9000.0;
    let mut write_hot = HotKey {
        key: b"counter:views".to_vec(),
        slot: 7,
        reads_per_second: 9000.0,
        writes_per_second: 0.0,
    };
    input.hot_keys = vec![write_hot.clone()];
    let plan = plan(&input, &Options::default());
    assert!(plan.moves.iter().all(|m| m.slot != 7), "the hot slot stays");
    let [Advice::HotKey {
        key,
        node,
        share,
        remedies,
        ..
    }] = &plan.advice[..]
    else {
        panic!("{:?}", plan.advice);
    };
    assert_eq!(key, b"counter:views");
    assert_eq!(node.as_deref(), Some("a:1"));
    assert!((share - 0.5).abs() < 0.01, "{share}");
    assert_eq!(remedies[0], Remedy::NearCache, "read-hot: cache it first");
    assert!(remedies.contains(&Remedy::ReadReplicas));
    // Its node keeps the key, and gives away all else it can.
    let first = &plan.nodes[0];
    assert!(first.after < first.before);
    assert!(!plan.reaches_target());
    // Written as much as read: only splitting helps.
    write_hot.writes_per_second = 4000.0;
    write_hot.reads_per_second = 5000.0;
    input.hot_keys = vec![write_hot];
    let plan = heavykeeper_rebalance::plan(&input, &Options::default());
    let [Advice::HotKey { remedies, .. }] = &plan.advice[..] else {
        panic!("{:?}", plan.advice);
    };
    assert_eq!(remedies, &[Remedy::SplitKey]);
}

#[test]
fn a_hot_hash_tag_is_a_hot_slot_without_a_hot_key() {
    let input = Input {
        nodes: vec![
            node("a:1", vec![slot(42, 500.0, 5000), slot(43, 10.0, 1)]),
            node("a:2", vec![slot(100, 100.0, 1)]),
            node("a:3", vec![slot(200, 100.0, 1)]),
        ],
        hot_keys: vec![HotKey {
            key: b"{tenant:7}:cart:1".to_vec(),
            slot: 42,
            reads_per_second: 30.0,
            writes_per_second: 0.0,
        }],
    };
    let plan = plan(&input, &Options::default());
    let hot_slot = plan.advice.iter().find_map(|a| match a {
        Advice::HotSlot {
            slot,
            keys,
            remedies,
            ..
        } => Some((*slot, *keys, remedies.clone())),
        _ => None,
    });
    assert_eq!(hot_slot, Some((42, 5000, vec![Remedy::SpreadHashTag])));
    assert_eq!(plan.moves.len(), 1, "slot 43 still goes");
}

#[test]
fn slots_too_coarse_to_share_out_are_said_so() {
    // Two slots of 35% each on a:1 (target 40% with three primaries):
    // either alone fits elsewhere, but moving one puts its receiver at
    // 35% + 30% = 65%.
    let input = cluster(vec![
        node("a:1", vec![slot(1, 35.0, 1), slot(2, 35.0, 1)]),
        node("a:2", vec![slot(10, 15.0, 1), slot(11, 15.0, 1)]),
        node("a:3", vec![slot(20, 0.0, 0)]),
    ]);
    let plan = plan(&input, &Options::default());
    assert_eq!(plan.moves.len(), 1);
    assert_eq!(plan.moves[0].to, "a:3");
    assert!(plan.reaches_target(), "{plan:?}");
    let coarse = cluster(vec![
        node("a:1", vec![slot(1, 39.0, 1), slot(2, 39.0, 1)]),
        node("a:2", vec![slot(10, 22.0, 1)]),
    ]);
    let plan = heavykeeper_rebalance::plan(&coarse, &Options::default());
    assert!(plan.moves.is_empty(), "{:?}", plan.moves);
    assert!(matches!(&plan.advice[..], [Advice::OverTarget { node, .. }] if node == "a:1"));
}

#[test]
fn reads_alone_can_be_the_measure_and_plans_can_be_cut_short() {
    let mut input = sixty_twenty_twenty();
    // Writes on a:2 that a reads-only plan does not see.
    input.nodes[1].slots[0].writes_per_second = 100_000.0;
    let options = Options {
        measure: Measure::Reads,
        max_moves: Some(5),
        ..Options::default()
    };
    let plan = plan(&input, &options);
    assert_eq!(plan.moves.len(), 5);
    assert!(plan.cut_short);
    assert!(plan.moves.iter().all(|m| m.from == "a:1"));
}

/// A measurement `±spread` (a share of each rate) on every slot and node.
fn measured(mut input: Input, spread: f64) -> Input {
    let bounds = |rate: f64| Bounds {
        low: rate * (1.0 - spread),
        high: rate * (1.0 + spread),
    };
    for node in &mut input.nodes {
        for s in &mut node.slots {
            s.bounds = Some(LoadBounds {
                reads: bounds(s.reads_per_second),
                writes: bounds(s.writes_per_second),
            });
        }
        let (reads, writes) = (node.load(Measure::Reads), node.load(Measure::Writes));
        node.measured = Some(Measured {
            reads_per_second: reads,
            writes_per_second: writes,
            bounds: LoadBounds {
                reads: bounds(reads),
                writes: bounds(writes),
            },
        });
    }
    input
}

/// 44/28/28: over the 40% target by a tenth of its load.
fn forty_four() -> Input {
    cluster(vec![
        node("a:1", (0..100).map(|i| slot(i, 44.0, 1)).collect()),
        node("a:2", (5461..5561).map(|i| slot(i, 28.0, 1)).collect()),
        node("a:3", (10923..11023).map(|i| slot(i, 28.0, 1)).collect()),
    ])
}

#[test]
fn a_primary_over_the_target_by_less_than_its_error_bar_keeps_its_slots() {
    // ±15%: the first node's lower bound (37.4%) is under the 40% target.
    let noisy = plan(&measured(forty_four(), 0.15), &Options::default());
    assert!(noisy.moves.is_empty(), "{:?}", noisy.moves);
    // ±5%: its lower bound (41.8%) is over: it sheds down to the target.
    let sure = plan(&measured(forty_four(), 0.05), &Options::default());
    assert!(!sure.moves.is_empty() && sure.reaches_target(), "{sure:?}");
    // Counted exactly (no bounds), the same as sure.
    assert_eq!(plan(&forty_four(), &Options::default()).moves, sure.moves);
}

#[test]
fn a_slot_whose_traffic_may_be_nothing_never_moves() {
    // The hot node's slots: half measurably loaded, half within noise of 0.
    let mut input = measured(sixty_twenty_twenty(), 0.1);
    for s in input.nodes[0].slots.iter_mut().filter(|s| s.slot % 2 == 1) {
        s.bounds = Some(LoadBounds {
            reads: Bounds {
                low: 0.0,
                high: 3.0 * s.reads_per_second,
            },
            writes: Bounds::default(),
        });
    }
    let plan = plan(&input, &Options::default());
    assert!(!plan.moves.is_empty());
    assert!(
        plan.moves.iter().all(|m| m.slot % 2 == 0),
        "{:?}",
        plan.moves
    );
}
