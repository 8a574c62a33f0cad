//! Counts an operator can act on, at the default settings: a bursty key, a
//! steady key and background reads, each from its own client and paced on
//! the clock, against what `HK.HOTKEYS` says. Where counting every command
//! fits the tracker's CPU budget it counts every command (exact); past
//! that it samples, without bias, and each count's error bar
//! (`WITHBOUNDS`) says how far it may be off: the truth is held to it.

use test_harness as common;

use common::{config_set, info_field, info_number, query, value, CountBounds, Server};
use redis::Connection;
use std::collections::HashMap;
use std::time::Duration;
use traffic::Shape;

/// The defaults, with a half-life long enough that counts are totals.
const DEFAULTS: &[&str] = &["track", "yes", "track-halflife", "86400"];
/// The same, counting every command (`track-sample 1`).
const EVERY_COMMAND: &[&str] = &[
    "track",
    "yes",
    "track-halflife",
    "86400",
    "track-sample",
    "1",
];

/// `GET`s at saturation (`redis-benchmark -P 16 -c 8` over 100,000 keys)
/// until killed.
pub fn flood(server: &Server) -> std::process::Child {
    std::process::Command::new("redis-benchmark")
        .args(["-p", &server.port.to_string(), "-q", "-t", "get"])
        .args(["-n", "100000000", "-P", "16", "-c", "8", "-r", "100000"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("redis-benchmark")
}

/// `HK.HOTKEYS COUNT 1000 WITHBOUNDS`, by key: the rates' bounds turned
/// into the counts'.
fn listed(con: &mut Connection) -> HashMap<String, CountBounds> {
    common::hotkeys_with_bounds(con, 1000).into_iter().collect()
}

/// The truth `sent` of `key` is where its count says: exact where every
/// access counted (3%, the sent count's own edges), else within twice its
/// 95% bar (about four standard errors: a true bar fails this once in ten
/// thousand readings). Every access counted at the end of the run says
/// nothing of a moment within it: a count with a sampled part (its lower
/// end below it) is held to its bar. (At ~10,000 commands a second the
/// budget once thinned accesses for a moment of a fresh clone's `make
/// test`, no slot of time sampled: `x` read 23,255 of 22,485, +3.4%, its
/// bar 22,436-24,219.)
fn assert_count_holds(
    counts: &HashMap<String, CountBounds>,
    sent: &traffic::Sent,
    key: &str,
    exact: bool,
    state: &str,
) {
    let truth = sent.of(key) as f64;
    let Some(l) = counts.get(key) else {
        panic!("{key}: not listed ({truth} sent; {state})");
    };
    let exact = exact && l.low >= l.count;
    // Held to its bar, give or take half an access: a count with a part
    // inserted at a weight (the worker thinned its inserts for a moment) is
    // no whole number, and a bar a fraction of an access wide cannot say
    // more (a fresh clone's `make test` once read `steady` 2,500 of 2,500
    // with its bar 2,500-2,528: printed whole, the count could only have
    // missed the truth by less than half an access).
    let held = if exact {
        (0.97 * truth..=1.03 * truth).contains(&l.count)
    } else {
        l.holds(truth)
    };
    assert!(
        held,
        "{key}: counted {:.2} [{:.2}, {:.2}] of {truth} sent (every access counted: {exact}; {state})",
        l.count, l.low, l.high
    );
}

/// The issue's mix at ~10,000 commands a second times `scale`.
fn mix(scale: usize) -> Vec<Shape> {
    vec![
        Shape::Bursty {
            key: "x".into(),
            min: 300 * scale,
            max: 600 * scale,
            every: Duration::from_millis(100),
        },
        Shape::Steady {
            key: "steady".into(),
            per: 5 * scale,
            every: Duration::from_millis(10),
        },
        Shape::Background {
            prefix: "bg:".into(),
            keys: 10_000,
            per: 45 * scale,
            every: Duration::from_millis(10),
        },
    ]
}

fn ratio(counts: &HashMap<String, CountBounds>, sent: &traffic::Sent, key: &str) -> f64 {
    counts.get(key).map_or(0.0, |l| l.count) / sent.of(key).max(1) as f64
}

fn share_counted(con: &mut Connection) -> f64 {
    info_number(con, "heavykeeper", "heavykeeper_tracker_share_counted")
}

/// Did every access count as it came: no slot of time left uncounted, and
/// the worker never thinned? (On a machine short of CPU the tracker keeps
/// to its budget by sampling, without bias but with a spread.)
fn counted_all(con: &mut Connection) -> bool {
    let mut figure = |field: &str| -> f64 {
        info_field(con, "heavykeeper", &format!("heavykeeper_tracker_{field}"))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("tracker_{field}"))
    };
    figure("slots") == figure("slots_counted")
        && figure("accesses_kept_share") == 1.0
        && figure("worker_thinned_seconds") == 0.0
        && figure("accesses_dropped") == 0.0
}

/// Where counting every command fits the tracker's budget (the release
/// module at ~5,000 commands a second does on a 2-core VM; at 10,000 it may
/// keep one access in two) the counts are exact; a machine short of CPU
/// samples instead, and the counts stay within the sampled spread.
/// What the tracker says of its sampling, for a failure's message.
fn tracker_state(con: &mut Connection) -> String {
    [
        "share_counted",
        "slots",
        "slots_counted",
        "accesses_kept_share",
        "worker_thinned_seconds",
        "accesses_dropped",
        "cpu_percent",
        "counted_correction",
    ]
    .iter()
    .map(|f| {
        let v = info_field(con, "heavykeeper", &format!("heavykeeper_tracker_{f}"));
        format!("{f}={}", v.unwrap_or_default())
    })
    .collect::<Vec<_>>()
    .join(" ")
}

#[test]
fn at_ten_thousand_commands_a_second_counts_are_exact_when_every_command_fits() {
    the_mix_counts_hold(1, Duration::from_secs(5));
}

#[test]
fn at_twenty_thousand_commands_a_second_every_count_holds_to_its_error_bar() {
    the_mix_counts_hold(2, Duration::from_secs(6));
}

/// The mix at `scale` for `duration` at the defaults: `x` and `steady`
/// exact where every command was counted, else within their bars.
fn the_mix_counts_hold(scale: usize, duration: Duration) {
    let server = Server::start_configured(DEFAULTS, &[]);
    let sent = traffic::send(&server.url(), &mix(scale), duration).expect("traffic");
    let mut con = server.client();
    let counts = listed(&mut con);
    let exact = counted_all(&mut con);
    let state = format!("{:.0}/s; {}", sent.rate(), tracker_state(&mut con));
    for key in ["x", "steady"] {
        assert_count_holds(&counts, &sent, key, exact, &state);
    }
}

#[test]
fn reading_twenty_times_a_second_and_resetting_change_no_count() {
    let server = Server::start_configured(DEFAULTS, &[]);
    let url = server.url();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let poller = {
        let (url, stop) = (url.clone(), std::sync::Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut con = redis::Client::open(url).unwrap().get_connection().unwrap();
            let mut reads = 0u32;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let _: redis::Value = query(&mut con, &["HK.HOTKEYS", "COUNT", "20"]);
                reads += 1;
                std::thread::sleep(Duration::from_millis(50));
            }
            reads
        })
    };
    let before = traffic::send(&url, &mix(1), Duration::from_secs(2)).expect("traffic");
    let mut con = server.client();
    assert!(ratio(&listed(&mut con), &before, "steady") > 0.9);
    value(&mut con, &["HK.HOTKEYS", "RESET"]);
    let after = traffic::send(&url, &mix(1), Duration::from_secs(4)).expect("traffic");
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let reads = poller.join().unwrap();
    assert!(reads > 50, "the poller read {reads} times");
    let counts = listed(&mut con);
    // Reading and resetting once skewed counts 2 to 6 times: now what is
    // counted after the reset holds to its bars (exact where everything
    // counted).
    let exact = counted_all(&mut con);
    let state = tracker_state(&mut con);
    for key in ["x", "steady"] {
        assert_count_holds(&counts, &after, key, exact, &state);
    }
}

#[test]
fn a_flood_is_sampled_within_the_budget_and_counting_every_command_comes_back() {
    let server = Server::start_configured(DEFAULTS, &[]);
    let mut flood = flood(&server);
    let mut con = server.client();
    common::wait_until(
        "the tracker samples the flood",
        Duration::from_secs(10),
        || share_counted(&mut con) < 0.5,
    );
    let _ = flood.kill();
    let _ = flood.wait();
    common::wait_until(
        "every command counted again",
        Duration::from_secs(20),
        || share_counted(&mut con) == 1.0,
    );
    // And they are: once the last block of slots has passed (no slot
    // begins any more), every command counts (sampling once ended at an
    // edge that left the filter out: every command "counted", none seen).
    let slots = |con: &mut Connection| info_field(con, "heavykeeper", "heavykeeper_tracker_slots");
    let mut last = slots(&mut con);
    common::wait_until("no slot begins", Duration::from_secs(10), || {
        std::thread::sleep(Duration::from_millis(50));
        let now = slots(&mut con);
        std::mem::replace(&mut last, now.clone()) == now
    });
    value(&mut con, &["HK.HOTKEYS", "RESET"]);
    for _ in 0..100 {
        let _: Option<String> = query(&mut con, &["GET", "after"]);
    }
    let after = listed(&mut con).get("after").copied().unwrap_or_default();
    assert!(
        after.count > 0.0 && after.holds(100.0),
        "after the flood: {after:?} for 100 GETs; {}",
        tracker_state(&mut con)
    );
    let cost: f64 = info_number(&mut con, "heavykeeper", "heavykeeper_tracker_cpu_seconds");
    assert!(cost > 0.0, "the tracker says what it spent");
}

/// `track-sample 1` counts every command: a burst of ~105,000 `GET`s over
/// 400 keys (Zipf), sent as fast as one client can, is counted whole, every
/// key exactly, although taking it in costs the worker more than its share
/// for a moment (its share is a bound over seconds: a burst is taken whole).
#[test]
fn counting_every_command_takes_a_burst_whole() {
    let (_server, mut con) = Server::start_configured(EVERY_COMMAND, &[]).with_client();
    let sent: Vec<(String, usize)> = (0..400)
        .map(|i| (format!("burst:{i}"), 16_000 / (i + 1)))
        .collect();
    // Interleaved, as a Zipf stream comes: round r reads every key sent
    // more than r times.
    let mut order = Vec::new();
    for round in 0..16_000 {
        order.extend(sent.iter().filter(|(_, n)| *n > round).map(|(k, _)| k));
    }
    for chunk in order.chunks(1000) {
        let mut pipe = redis::pipe();
        for key in chunk {
            pipe.cmd("GET").arg(key.as_str()).ignore();
        }
        let _: () = pipe.query(&mut con).expect("GETs");
    }
    assert!(counted_all(&mut con), "{}", tracker_state(&mut con));
    let counts = listed(&mut con);
    for (key, n) in sent.iter().take(100) {
        let listed = counts.get(key).map_or(0.0, |l| l.count);
        assert_eq!(
            listed.round() as usize,
            *n,
            "{key}: {}",
            tracker_state(&mut con)
        );
    }
}

/// A lasting flood at `track-sample 1` is thinned to the worker's share
/// (accesses kept one in `n`, each standing for `n`), and once it is gone
/// every access is kept again.
#[test]
fn a_lasting_flood_is_thinned_to_the_workers_share_and_thinning_ends_with_it() {
    let server = Server::start_configured(EVERY_COMMAND, &[]);
    let mut flood = flood(&server);
    let mut con = server.client();
    let kept = |con: &mut Connection| -> f64 {
        info_number(
            con,
            "heavykeeper",
            "heavykeeper_tracker_accesses_kept_share",
        )
    };
    common::wait_until(
        "the worker thins the flood",
        Duration::from_secs(20),
        || kept(&mut con) < 1.0,
    );
    let _ = flood.kill();
    let _ = flood.wait();
    common::wait_until("every access kept again", Duration::from_secs(30), || {
        kept(&mut con) == 1.0
    });
    // Every slot of time was counted throughout: the share is fixed.
    assert_eq!(share_counted(&mut con), 1.0);
}

/// `HK.HOTKEYS`'s rate of `key` (0 where not listed).
fn rate_of(con: &mut Connection, key: &str) -> f64 {
    let rows: Vec<(String, i64, f64, i64)> = query(con, &["HK.HOTKEYS", "COUNT", "100"]);
    rows.into_iter()
        .find(|row| row.0 == key)
        .map_or(0.0, |row| row.2)
}

/// What an operator may do before the first counted access.
#[derive(Clone, Copy, Debug)]
enum EarlyRead {
    Nothing,
    Info,
    HotKeys,
    ConfigSet,
    Password,
}

/// A steady key at ~1,000 GET/s reads its rate from the first seconds,
/// whatever was read or changed before its first access: the warm-up
/// correction starts with the first counted access, never with a read
/// (one early `INFO` once switched it off: 1,000/s read ~185/s after 3 s).
#[test]
fn rates_are_true_from_the_first_seconds_whatever_was_read_before() {
    // Each case on its own server, all at once (1,000 GET/s each is light).
    let cases = [
        EarlyRead::Nothing,
        EarlyRead::Info,
        EarlyRead::HotKeys,
        EarlyRead::ConfigSet,
        EarlyRead::Password,
    ];
    std::thread::scope(|scope| {
        for early in cases {
            scope.spawn(move || rate_after_an_early_read(early));
        }
    });
}

fn rate_after_an_early_read(early: EarlyRead) {
    let password = matches!(early, EarlyRead::Password);
    let server_args: &[&str] = if password {
        &["--requirepass", "sesame"]
    } else {
        &[]
    };
    let server = Server::start_configured(DEFAULTS, server_args);
    let (mut con, url) = if password {
        let url = format!("redis://:sesame@127.0.0.1:{}/", server.port);
        (server.client_with_password("sesame"), url)
    } else {
        (server.client(), server.url())
    };
    match early {
        EarlyRead::Nothing | EarlyRead::Password => {}
        EarlyRead::Info => {
            let _: String = query(&mut con, &["INFO", "heavykeeper"]);
        }
        EarlyRead::HotKeys => {
            let _: redis::Value = query(&mut con, &["HK.HOTKEYS"]);
        }
        EarlyRead::ConfigSet => {
            config_set(&mut con, "slowlog-log-slower-than", "20000");
        }
    }
    // Time passes before the first access: a warm-up counted from the
    // early read, not from the first access, would read the rate low.
    std::thread::sleep(Duration::from_millis(1500));
    let steady = Shape::Steady {
        key: "steady".into(),
        per: 10,
        every: Duration::from_millis(10),
    };
    let sent = traffic::send(&url, &[steady], Duration::from_secs(3)).expect("traffic");
    let truth = sent.of("steady") as f64 / sent.elapsed.as_secs_f64();
    let read = rate_of(&mut con, "steady");
    assert!(
        (0.75..=1.25).contains(&(read / truth)),
        "after {early:?}: read {read:.0}/s of {truth:.0}/s sent ({})",
        tracker_state(&mut con)
    );
}

/// `HK.HOTKEYS READS COUNT 20 WITHBOUNDS WITHNOISE`: each row's key, count,
/// count bounds, and whether the noise of the node's traffic could have
/// made it.
fn rows_with_noise(con: &mut Connection) -> Vec<(String, CountBounds, bool)> {
    let command = [
        "HK.HOTKEYS",
        "READS",
        "COUNT",
        "20",
        "WITHBOUNDS",
        "WITHNOISE",
    ];
    let rows: Vec<(String, redis::Value, f64, f64, f64, f64, i64)> = query(con, &command);
    rows.into_iter()
        .map(|(key, _, rate, count, low, high, noise)| {
            (
                key,
                CountBounds::from_rates(rate, count, low, high),
                noise == 1,
            )
        })
        .collect()
}

/// `GET`s the server ran so far.
fn gets(con: &mut Connection) -> f64 {
    let stat = info_field(con, "commandstats", "cmdstat_get").unwrap_or_default();
    stat.split(',')
        .find_map(|part| part.strip_prefix("calls="))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0.0)
}

/// The phantom rows, reproduced and then gone. Beside a flood of `GET`s
/// over 100,000 keys, with a budget small enough that one kept access
/// stands for hundreds, the sketch holds the flood's luckiest keys at tens
/// of times what they were read: `WITHNOISE` shows them, each marked as
/// noise. Every row not marked holds its truth within its bounds, and a
/// steady key with about 1% of the node's reads is listed within its own.
#[test]
fn beside_a_flood_the_rows_its_noise_made_are_marked_and_the_rest_hold_their_truth() {
    let args = [
        "track",
        "yes",
        "track-halflife",
        "86400",
        "track-cpu-millicores",
        "3",
    ];
    let server = Server::start_configured(&args, &[]);
    let mut flood = flood(&server);
    let mut con = server.client();
    let flood_rate = flood_rate(&mut con);
    value(&mut con, &["HK.HOTKEYS", "RESET"]);
    let before = gets(&mut con);
    // 1% of the reads, a few every millisecond: at this budget (one slot
    // in ~500 counted, ~70 slots in the run) a pipeline every 10 ms was
    // caught in a counted slot about once a run and was unlisted in 5 of 8
    // runs on Valkey 9.1 (2026-12-06): steady is what a key counted in
    // ~70 slots can be; a key of a few pipelines is `--only bursts`' case.
    let shapes = [Shape::Steady {
        key: "steady".into(),
        per: (flood_rate / 100_000.0).ceil() as usize,
        every: Duration::from_millis(1),
    }];
    let sent = traffic::send(&server.url(), &shapes, Duration::from_secs(6)).expect("traffic");
    let rows = rows_with_noise(&mut con);
    let background = (gets(&mut con) - before - sent.total() as f64) / 100_000.0;
    let _ = flood.kill();
    let _ = flood.wait();
    let truth = |key: &str| match sent.of(key) {
        0 => background,
        n => n as f64,
    };
    let state = format!(
        "{background:.0} reads a flood key, {sent:?}; {}; {rows:?}",
        tracker_state(&mut con)
    );
    let phantoms = rows
        .iter()
        .filter(|(key, b, noise)| *noise && b.count > 3.0 * truth(key))
        .count();
    assert!(phantoms > 0, "no phantom row to tell apart: {state}");
    // The steady key is listed within its bounds. (Marked or not: on a
    // starved machine a few counted slots that each stood for a long
    // stretch can make its grain too coarse to tell apart; a mark errs on
    // the side of doubt, a row unmarked must be true.)
    let steady = rows.iter().find(|(k, ..)| k == "steady");
    let Some((_, b, _)) = steady else {
        panic!("steady not listed: {state}");
    };
    assert!(
        b.holds(truth("steady")),
        "steady outside its bounds: {state}"
    );
    let listed: Vec<_> = rows.iter().filter(|(_, _, noise)| !noise).collect();
    // Every row not marked holds its truth within its bounds (at this
    // budget one kept access stands for a hundred: the bars are wide, and
    // a count alone may be off by more than 3x).
    for (key, b, _) in listed {
        assert!(b.holds(truth(key)), "{key} outside its bounds: {state}");
    }
}

/// On a saturated node a counted slot serves less than its share (the
/// filter's cost pushes commands past its end: uncorrected, the node's
/// read rate read 0.82-0.87 of the server's own count on Redis 7.0 and
/// 0.80-0.83 on Valkey 9.1). The tracker measures that shortfall against
/// the server's count and each counted slot stands for it: the node's rate
/// is the server's. Once the node has time to spare, nothing is corrected.
#[test]
fn on_a_saturated_node_what_counted_slots_lack_is_made_up() {
    made_up_on_a_saturated_node(0);
}

/// ... and on a node sharing its cores with a process that spins (a test
/// suite's other servers, a noisy neighbour): on a CPU under half the
/// time, it has no time to spare all the same (the time it waits for a CPU
/// counts as wanted), and its counted slots lack more than alone
/// (uncorrected, beside two such processes its node read 0.85 and 0.88 of
/// the server's count on Redis 7.0). The correction is in force there;
/// idle beside the spinning, nothing is corrected. (The decision is
/// `served_shortfall`'s unit tests'; this is its wiring: with the waiting
/// left out of what the node wanted, the correction stayed off in 4 runs
/// of 4. What the corrected rate reads so placed moves with the
/// scheduling, and the factor's size too (shrunk by the estimate's
/// error): beside two spinning processes the factor read 1.03 or less all
/// through one run in five, and 1 all through one in six (its clients,
/// starved too, left the node wanting a CPU less than half the time), the
/// node's rate 0.92-1.01 of the server's in five runs: docs/tracker.md.
/// Neither is held to a size here.)
#[test]
fn on_a_saturated_node_sharing_its_cores_the_shortfall_is_corrected_and_left_once_idle() {
    made_up_on_a_saturated_node(1);
}

/// Processes that spin on the CPU until dropped.
struct Spinning(Vec<std::process::Child>);

impl Spinning {
    fn start(count: usize) -> Spinning {
        let spin = || {
            std::process::Command::new("sh")
                .args(["-c", "while :; do :; done"])
                .spawn()
                .expect("sh")
        };
        Spinning((0..count).map(|_| spin()).collect())
    }
}

impl Drop for Spinning {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn made_up_on_a_saturated_node(spinning: usize) {
    let _spinning = Spinning::start(spinning);
    let args = [
        "track",
        "yes",
        "track-halflife",
        "86400",
        "track-sample",
        "16",
    ];
    let server = Server::start_configured(&args, &[]);
    let mut flood = flood(&server);
    let mut con = server.client();
    let correction = |con: &mut Connection| -> f64 {
        info_number(con, "heavykeeper", "heavykeeper_tracker_counted_correction")
    };
    if spinning == 0 {
        common::wait_until("the shortfall measured", Duration::from_secs(30), || {
            correction(&mut con) > 1.03
        });
        corrected_rate_is_the_servers(&mut con);
    } else {
        // In force (the node has no time to spare): a factor of its own,
        // whatever its size. Beside spinning the estimate is noisy and
        // shrunk by its error (beside two spinning processes, five runs by
        // hand, 2026-12-06: factors 1.01-1.10, the node's rate 0.92-1.01
        // of the server's).
        common::wait_until("the shortfall in force", Duration::from_secs(30), || {
            correction(&mut con) != 1.0
        });
    }
    let _ = flood.kill();
    let _ = flood.wait();
    common::wait_until(
        "nothing corrected with time to spare",
        Duration::from_secs(40),
        || correction(&mut con) == 1.0,
    );
}

/// Three million reads (a few seconds): the tracker's rate of them is the
/// server's, within 8%.
fn corrected_rate_is_the_servers(con: &mut Connection) {
    value(con, &["HK.HOTKEYS", "RESET"]);
    let (before, started) = (gets(con), std::time::Instant::now());
    common::wait_until("three million reads", Duration::from_secs(60), || {
        gets(con) - before >= 3e6
    });
    let reads: f64 = info_number(con, "heavykeeper", "heavykeeper_tracker_reads_per_second");
    let truth = (gets(con) - before) / started.elapsed().as_secs_f64();
    let state = format!(
        "{reads:.0}/s read, {truth:.0}/s true; {}",
        tracker_state(con)
    );
    assert!((reads / truth - 1.0).abs() < 0.08, "{state}");
}

/// Once the flood is sampled: how many `GET`s a second it brings.
fn flood_rate(con: &mut Connection) -> f64 {
    common::wait_until(
        "the tracker samples the flood",
        Duration::from_secs(10),
        || share_counted(con) < 0.5,
    );
    let before = gets(con);
    std::thread::sleep(Duration::from_millis(500));
    (gets(con) - before) / 0.5
}

/// A key read in three large bursts (each a pipeline of about 1.25%
/// of the node's reads in 8 s, beside a flood) is listed, within its
/// bounds, at the default settings: a block of slots lasts 10 to 20 ms or
/// so, and a counted slot counts the first pass at or after its opening,
/// so a burst that lasts longer, read in long passes, is counted by the
/// time its passes take; and such first passes are weighed apart (the
/// wiring of `sampling/pass_weight.rs`). (A burst shorter than a block is
/// seen only with the chance that a counted slot falls in it:
/// docs/tracker.md; `make bench --only bursts` reads twenty readings a
/// server.)
#[test]
fn a_key_read_in_three_large_bursts_beside_a_flood_is_listed() {
    let server = Server::start_configured(DEFAULTS, &[]);
    let mut flood = flood(&server);
    let mut con = server.client();
    let flood_rate = flood_rate(&mut con);
    value(&mut con, &["HK.HOTKEYS", "RESET"]);
    let first_passes = |con: &mut Connection| {
        info_number::<u64>(con, "heavykeeper", "heavykeeper_tracker_slots_first_passes")
    };
    let first_before = first_passes(&mut con);
    let burst = (flood_rate * 0.1).ceil() as usize;
    let shapes = [Shape::Bursty {
        key: "bursts".into(),
        min: burst,
        max: burst,
        every: Duration::from_millis(2_500),
    }];
    let sent = traffic::send(&server.url(), &shapes, Duration::from_secs(8)).expect("traffic");
    let rows = rows_with_noise(&mut con);
    let first_after = first_passes(&mut con);
    let _ = flood.kill();
    let _ = flood.wait();
    let state = format!("{sent:?}; {}; {rows:?}", tracker_state(&mut con));
    let listed = rows.iter().find(|(k, _, noise)| k == "bursts" && !noise);
    let Some((_, bounds, _)) = listed else {
        panic!("the bursty key is not listed: {state}");
    };
    assert!(bounds.holds(sent.of("bursts") as f64), "{state}");
    assert!(
        first_after > first_before,
        "no first pass weighed apart ({first_before} before, {first_after} after): {state}"
    );
}
