//! An operator points Prometheus at `hk-top --prometheus --count 5` over a
//! three-primary cluster whose traffic wanders: 40,000 distinct keys over
//! time, in waves of 2,000 under 20 prefixes each, read, written and missed,
//! none hotter than the others for long. Whatever the traffic, every scrape
//! holds at most 5 series per node of each list (keys of each kind,
//! prefixes, slots, each rate and bound), 64 of the slot range, one of
//! every other figure; Prometheus never counts more at any moment; and the
//! keys of the first waves, once they left the lists, left Prometheus too
//! (no stale series left behind).

use crate::promkit::{range_values, sample_value, samples, Exporter, Prometheus, Sample};
use crate::support::{owner_map, slot_of, track_misses};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, Instant};
use test_harness::{wait_until, Cluster};

const COUNT: usize = 5;
const WAVES: usize = 20;
const PER_WAVE: usize = 2_000;
/// Each wave lasts this long at least, so that Prometheus scrapes it.
const WAVE: Duration = Duration::from_millis(1_200);

/// The families whose series are rows of a node's lists, cut to `--count`.
fn is_list(name: &str) -> bool {
    [
        "heavykeeper_hotkey_",
        "heavykeeper_hotprefix_",
        "heavykeeper_hotslot_",
    ]
    .iter()
    .any(|p| name.starts_with(p))
}

const RANGES: &str = "heavykeeper_slot_range_requests_per_second";

/// Each family within its bound per node in one scrape; the samples of
/// figures that are not lists, per node (the same at every scrape).
fn check_bounds(scrape: &[Sample]) -> BTreeMap<String, usize> {
    let mut per_node_family: BTreeMap<(String, String), usize> = BTreeMap::new();
    for s in scrape {
        let node = s.labels.get("node").cloned().unwrap_or_default();
        *per_node_family.entry((node, s.name.clone())).or_default() += 1;
    }
    let mut fixed: BTreeMap<String, usize> = BTreeMap::new();
    for ((node, name), n) in per_node_family {
        if is_list(&name) {
            assert!(n <= COUNT, "{n} series of {name} on {node}");
        } else if name == RANGES {
            assert_eq!(n, 64, "{name} on {node}");
        } else {
            assert_eq!(n, 1, "{name} on {node}");
            *fixed.entry(node).or_default() += 1;
        }
    }
    fixed
}

/// One wave: each key set, read twice; every fourth also read under a
/// name that does not exist (a miss). Pipelined to the node serving it.
fn send_wave(wave: usize, owners: &[String], cons: &mut HashMap<String, redis::Connection>) {
    let mut pipes: HashMap<&str, redis::Pipeline> = HashMap::new();
    let owner = |key: &str| owners[slot_of(key) as usize].as_str();
    for i in 0..PER_WAVE {
        let key = format!("w{wave}:t{}:k{i}", i % 20);
        let pipe = pipes.entry(owner(&key)).or_insert_with(redis::pipe);
        pipe.cmd("SET").arg(&key).arg(i).ignore();
        pipe.cmd("GET").arg(&key).ignore();
        pipe.cmd("GET").arg(&key).ignore();
        if i % 4 == 0 {
            let missing = format!("w{wave}:t{}:gone{i}", i % 20);
            let pipe = pipes.entry(owner(&missing)).or_insert_with(redis::pipe);
            pipe.cmd("GET").arg(&missing).ignore();
        }
    }
    for (address, pipe) in pipes {
        let con = cons.get_mut(address).expect("a primary");
        let _: () = pipe.query(con).expect("the wave");
    }
}

#[test]
fn series_stay_within_count_and_keys_that_left_the_lists_leave_prometheus() {
    // Forgets in seconds: the lists follow the waves.
    let cluster = Cluster::start(&track_misses("2"));
    let exporter = Exporter::start(cluster.nodes[0].port, &["--count", &COUNT.to_string()]);
    let prometheus = Prometheus::start(&[exporter.port], None);
    let owners = owner_map(&cluster);
    let mut cons: HashMap<String, redis::Connection> = (cluster.nodes.iter())
        .map(|n| (n.address(), n.client()))
        .collect();
    // Prometheus has scraped the exporter once before the first wave.
    let up = format!("up{{instance=\"127.0.0.1:{}\"}} == 1", exporter.port);
    wait_until("the first scrape", Duration::from_secs(60), || {
        !prometheus.query(&up).is_empty()
    });
    let started = crate::promkit::now();
    let mut fixed = None;
    let mut keys_seen = BTreeSet::new();
    for wave in 0..WAVES {
        let began = Instant::now();
        send_wave(wave, &owners, &mut cons);
        let scrape = samples(&exporter.metrics());
        let this = check_bounds(&scrape);
        assert_eq!(this.len(), 3, "three nodes: {this:?}");
        assert_eq!(*fixed.get_or_insert_with(|| this.clone()), this);
        keys_seen.extend(scrape.iter().filter_map(|s| s.labels.get("key").cloned()));
        if let Some(rest) = WAVE.checked_sub(began.elapsed()) {
            std::thread::sleep(rest);
        }
    }
    // The lists turned over: far more keys came and went than any
    // scrape holds (three nodes, three kinds of keys, COUNT each).
    assert!(
        keys_seen.len() > 4 * 3 * 3 * COUNT,
        "{} keys",
        keys_seen.len()
    );

    // Prometheus's own view, at every second of the run: no family ever
    // above --count per node, no scrape above the bound in all.
    let per_family = prometheus.query_range(
        r#"count by (__name__, node) ({__name__=~"heavykeeper_(hotkey|hotprefix|hotslot)_.+"})"#,
        started,
        1.0,
    );
    assert!(per_family.len() >= 3 * 9, "{per_family:?}");
    for series in &per_family {
        let most = range_values(series).iter().map(|v| v.1).fold(0.0, f64::max);
        assert!(most <= COUNT as f64, "{} at {most}", series["metric"]);
    }
    let fixed_per_node: usize = fixed.unwrap().values().sum::<usize>() / 3;
    // Per node: the figures that are not lists, keys (3 kinds) and slots
    // (reads, writes) and prefixes, each with its two bounds, and 64 ranges.
    let bound = 3 * (fixed_per_node + 3 * COUNT * (3 + 2 + 1) + 64);
    let scraped = prometheus.query(&format!(
        "max_over_time(scrape_samples_scraped{{instance=\"127.0.0.1:{}\"}}[10m])",
        exporter.port
    ));
    let most = sample_value(&scraped[0]);
    assert!(
        most > 0.0 && most <= bound as f64,
        "{most} samples > {bound}"
    );
    println!(
        "exporter series: at most {most} samples per scrape (bound {bound}), {} keys came and went",
        keys_seen.len()
    );

    // The first waves' keys were in Prometheus, and are no longer: the
    // exporter dropped them and Prometheus marked them stale.
    let first = r#"{__name__=~"heavykeeper_hotkey_.+", key=~"w[0-4]:.+"}"#;
    let then = prometheus.query(&format!("count(last_over_time({first}[10m]))"));
    assert!(!then.is_empty(), "the first waves were never scraped");
    assert!(sample_value(&then[0]) > 0.0, "{then:?}");
    let left = prometheus.query(first);
    assert!(left.is_empty(), "{left:?}");
    let now = exporter.metrics();
    assert!(
        (0..5).all(|w| !now.contains(&format!("key=\"w{w}:"))),
        "{now}"
    );
    // Every hot key series now belongs to the last waves.
    for series in prometheus.query(r#"{__name__=~"heavykeeper_hotkey_.+"}"#) {
        let key = series["metric"]["key"].as_str().unwrap_or_default();
        let wave = key.trim_start_matches('w').split(':').next();
        let wave: usize = wave.and_then(|w| w.parse().ok()).unwrap_or(0);
        assert!(wave + 5 >= WAVES, "{key} still listed");
    }
    // Hot slots came and went too.
    let slots = prometheus.query(
        "count(count by (node, slot) (last_over_time(heavykeeper_hotslot_reads_per_second[10m])))",
    );
    assert!(sample_value(&slots[0]) > 3.0 * COUNT as f64, "{slots:?}");
}
