//! An operator imports `dashboards/heavykeeper.json` into Grafana and loads
//! `dashboards/heavykeeper.rules.yml` into Prometheus, which scrapes
//! `hk-top --prometheus` over a three-primary cluster. One primary serves a
//! hot key (`product:42`) and a hot slot (a hash tag's hundred keys); a hot
//! tenant (`tenant:7:`) is spread over a thousand keys, none of them hot;
//! clients read a key that does not exist (`user:404`).
//!
//! Without Grafana, the test does what Grafana would: it reads every
//! panel's queries from the JSON, puts the variables in (`$node` as "All"
//! and as one node, `$__rate_interval`), runs each against the real
//! Prometheus (a range query, or an instant one where the target says so)
//! and checks that the series the panel needs come back: the hot key's name
//! in the table's query, the tenant's in the prefixes panel's, the hot slot's
//! range brightest in the heat map, the hot node highest in the balance. The
//! alert rules evaluate without error on the real series: the overloaded
//! node's and the hot miss's alerts are pending, the others quiet. Asked
//! for (`HK_DASHBOARD_PNG` names where; the one in the repository is made
//! so), it then draws the dashboard from those answers into a PNG, after 90 s
//! of history.

use crate::picture::{Line, Panel, PanelData};
use crate::promkit::{now, range_values, sample_value, Exporter, Prometheus};
use crate::support::{dashboards, load_keys, owner_map, slot_of, track_misses, Traffic};
use serde_json::Value as Json;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use test_harness::{wait_until, Cluster};

/// GETs and SETs per second, all clients together.
const RATE: f64 = 3000.0;
const HOT_KEY: &str = "product:42";
const MISSING: &str = "user:404";
const HOT_TENANT: &str = "tenant:7:*";
/// Seconds of history the picture shows at least.
const PICTURE_SECONDS: f64 = 90.0;

/// What the traffic makes, for the checks.
struct Scene {
    nodes: BTreeSet<String>,
    hot_node: String,
    hot_slot: u16,
    missing_node: String,
}

fn dashboard() -> Json {
    let text = std::fs::read_to_string(dashboards().join("heavykeeper.json")).unwrap();
    serde_json::from_str(&text).expect("the dashboard is JSON")
}

struct Target {
    expr: String,
    instant: bool,
    format: String,
    legend: String,
}

struct PanelSpec {
    kind: String,
    title: String,
    grid: (i32, i32, i32, i32),
    unit: String,
    targets: Vec<Target>,
}

fn text(v: &Json) -> String {
    v.as_str().unwrap_or_default().to_string()
}

fn panels(dashboard: &Json) -> Vec<PanelSpec> {
    let panels = dashboard["panels"].as_array().expect("panels");
    panels
        .iter()
        .map(|p| {
            let g = &p["gridPos"];
            let grid = |k: &str| g[k].as_i64().expect("gridPos") as i32;
            let targets = p["targets"].as_array().expect("targets");
            PanelSpec {
                kind: text(&p["type"]),
                title: text(&p["title"]),
                grid: (grid("x"), grid("y"), grid("w"), grid("h")),
                unit: text(&p["fieldConfig"]["defaults"]["unit"]),
                targets: targets
                    .iter()
                    .map(|t| Target {
                        expr: text(&t["expr"]),
                        instant: t["instant"].as_bool().unwrap_or(false),
                        format: text(&t["format"]),
                        legend: text(&t["legendFormat"]),
                    })
                    .collect(),
            }
        })
        .collect()
}

/// What Grafana's import needs and the issue asks: documented panel types,
/// a data-source variable every query goes through, a node variable, panels
/// on the grid without overlapping.
fn check_model(dashboard: &Json, specs: &[PanelSpec]) {
    assert!(dashboard["schemaVersion"].as_i64().unwrap() >= 36);
    assert!(dashboard["uid"].is_string() && dashboard["title"].is_string());
    let variables = dashboard["templating"]["list"].as_array().unwrap();
    let variable = |name: &str| {
        (variables.iter())
            .find(|v| v["name"] == name)
            .unwrap_or_else(|| panic!("no {name} variable"))
    };
    let datasource = variable("datasource");
    assert_eq!(datasource["type"], "datasource");
    assert_eq!(datasource["query"], "prometheus");
    let node = variable("node");
    assert_eq!(node["type"], "query");
    assert_eq!(node["query"]["query"], "label_values(heavykeeper_up, node)");
    assert_eq!(node["includeAll"], true);
    assert_eq!(node["allValue"], ".*");
    let mut ids = BTreeSet::new();
    for p in dashboard["panels"].as_array().unwrap() {
        let kind = p["type"].as_str().unwrap();
        assert!(
            ["timeseries", "table", "heatmap", "state-timeline", "stat"].contains(&kind),
            "{kind}"
        );
        assert!(ids.insert(p["id"].as_i64().unwrap()), "id twice");
        assert_eq!(p["datasource"]["uid"], "${datasource}", "{}", p["title"]);
        for t in p["targets"].as_array().unwrap() {
            assert_eq!(t["datasource"]["uid"], "${datasource}", "{}", p["title"]);
            assert!(!text(&t["expr"]).is_empty());
        }
    }
    let mut cells = BTreeSet::new();
    for p in specs {
        let (x, y, w, h) = p.grid;
        assert!(x + w <= 24, "{} is wider than the grid", p.title);
        for cell in (x..x + w).flat_map(|cx| (y..y + h).map(move |cy| (cx, cy))) {
            assert!(cells.insert(cell), "{} overlaps another panel", p.title);
        }
    }
}

/// A query as Grafana sends it: `$node` as the variable's value (All:
/// `.*`; one node: its address as an escaped regular expression),
/// `$__rate_interval` as Grafana's floor for a 1 s scrape.
fn substitute(expr: &str, node: &str) -> String {
    expr.replace("$__rate_interval", "30s")
        .replace("${node}", node)
        .replace("$node", node)
}

/// One node selected: Grafana escapes the regular expression's specials
/// (the dots) of a multi-value variable, and PromQL strings escape the
/// backslash.
fn node_regex(address: &str) -> String {
    address.replace('.', "\\\\.")
}

/// Each target's answer: an instant vector, or a range matrix from
/// `start` to now.
fn run(prometheus: &Prometheus, panel: &PanelSpec, node: &str, start: f64) -> Vec<Vec<Json>> {
    panel
        .targets
        .iter()
        .map(|t| {
            let expr = substitute(&t.expr, node);
            if t.instant {
                prometheus.query(&expr)
            } else {
                prometheus.query_range(&expr, start, 2.0)
            }
        })
        .collect()
}

fn label<'a>(series: &'a Json, name: &str) -> &'a str {
    series["metric"][name].as_str().unwrap_or_default()
}

/// A series' value now: an instant sample's, or a range's last.
fn last(series: &Json) -> f64 {
    if series.get("value").is_some() {
        sample_value(series)
    } else {
        range_values(series).last().map_or(f64::NAN, |p| p.1)
    }
}

/// The series with the highest value now.
fn top(answer: &[Json]) -> Option<&Json> {
    answer.iter().max_by(|a, b| last(a).total_cmp(&last(b)))
}

type Check = Result<(), String>;

fn expect(ok: bool, what: impl FnOnce() -> String) -> Check {
    if ok {
        Ok(())
    } else {
        Err(what())
    }
}

/// One series per node in each answer.
fn per_node(answers: &[Vec<Json>], scene: &Scene) -> Check {
    for answer in answers {
        let nodes: BTreeSet<String> = answer.iter().map(|s| label(s, "node").into()).collect();
        expect(nodes == scene.nodes, || format!("nodes {nodes:?}"))?;
    }
    Ok(())
}

/// Does each panel's answer hold what the panel is for?
fn check(panel: &PanelSpec, answers: &[Vec<Json>], scene: &Scene) -> Check {
    let a = &answers[0];
    match panel.title.as_str() {
        "Nodes up" => {
            per_node(answers, scene)?;
            expect(a.iter().all(|s| last(s) == 1.0), || format!("{a:?}"))
        }
        "Cluster balance: each node's share of the load" => balance(answers, scene),
        "Hottest keys now" => hottest_keys(answers, scene),
        "Hot keys over time" => expect(a.iter().any(|s| label(s, "key") == HOT_KEY), || {
            format!("no {HOT_KEY}: {a:?}")
        }),
        "Hot prefixes (tenants)" => {
            let hottest = top(a).map(|s| label(s, "prefix"));
            expect(hottest == Some(HOT_TENANT), || format!("{hottest:?}"))
        }
        "Load over the slot range" => slot_range(a, scene),
        "Hottest slots" => {
            let hottest = top(a).map(|s| (label(s, "slot"), label(s, "node")));
            let wanted = (scene.hot_slot.to_string(), scene.hot_node.as_str());
            expect(hottest == Some((&wanted.0, wanted.1)), || {
                format!("{hottest:?}")
            })
        }
        "Hot misses" => missed_on_its_node(a, scene),
        "Reads and writes per node"
        | "Tracker: share counted"
        | "Tracker: CPU"
        | "Tracker: accesses dropped"
        | "Tracker: time thinned" => per_node(answers, scene),
        other => panic!("no check for the panel {other:?}: every panel is tested"),
    }
}

fn balance(answers: &[Vec<Json>], scene: &Scene) -> Check {
    per_node(&answers[..1], scene)?;
    let shares = &answers[0];
    let hottest = top(shares).map(|s| label(s, "node"));
    expect(hottest == Some(scene.hot_node.as_str()), || {
        format!("{hottest:?} highest")
    })?;
    let sum: f64 = shares.iter().map(last).sum();
    expect((sum - 1.0).abs() < 0.01, || {
        format!("shares add up to {sum}")
    })?;
    let even = answers[1].first().map(last);
    expect(even.is_some_and(|e| (e - 1.0 / 3.0).abs() < 0.01), || {
        format!("even share {even:?}")
    })
}

/// The table's queries: A total, B low, C high, D reads, E writes, F misses.
fn hottest_keys(answers: &[Vec<Json>], scene: &Scene) -> Check {
    let hottest = top(&answers[0]).ok_or("no keys")?;
    let slot = slot_of(HOT_KEY).to_string();
    expect(
        label(hottest, "key") == HOT_KEY
            && label(hottest, "node") == scene.hot_node
            && label(hottest, "slot") == slot,
        || format!("hottest {hottest}"),
    )?;
    let of_key = |i: usize, key: &str| {
        (answers[i].iter())
            .find(|s| label(s, "key") == key)
            .map(last)
    };
    let (total, low, high) = (last(hottest), of_key(1, HOT_KEY), of_key(2, HOT_KEY));
    expect(
        low.is_some_and(|l| l <= total) && high.is_some_and(|h| h >= total),
        || format!("{low:?} <= {total} <= {high:?}"),
    )?;
    expect(of_key(3, HOT_KEY).is_some(), || "no reads".into())?;
    expect(of_key(4, HOT_KEY).is_some(), || "no writes".into())?;
    missed_on_its_node(&answers[5], scene)
}

/// The missing key listed, on the node that serves it.
fn missed_on_its_node(answer: &[Json], scene: &Scene) -> Check {
    let missed = answer.iter().find(|s| label(s, "key") == MISSING);
    expect(
        missed.is_some_and(|s| label(s, "node") == scene.missing_node),
        || format!("no misses of {MISSING}: {answer:?}"),
    )
}

/// Each bucket's own load over time (the difference from the bucket
/// below), lowest slots first, as Grafana's heatmap format takes it.
fn buckets(answer: &[Json]) -> Vec<(u32, Vec<(f64, f64)>)> {
    let mut series: Vec<(u32, Vec<(f64, f64)>)> = answer
        .iter()
        .filter_map(|s| Some((label(s, "le").parse().ok()?, range_values(s))))
        .collect();
    series.sort_by_key(|s| s.0);
    let mut below: BTreeMap<u64, f64> = BTreeMap::new();
    let mut own = |(t, v): &(f64, f64)| (*t, v - below.insert(*t as u64, *v).unwrap_or(0.0));
    (series.into_iter())
        .map(|(le, points)| (le, points.iter().map(&mut own).collect()))
        .collect()
}

fn slot_range(answer: &[Json], scene: &Scene) -> Check {
    let buckets = buckets(answer);
    expect(buckets.len() == 64, || format!("{} buckets", buckets.len()))?;
    let now = |b: &(u32, Vec<(f64, f64)>)| b.1.last().map_or(f64::NAN, |p| p.1);
    let brightest = (buckets.iter()).max_by(|a, b| now(a).total_cmp(&now(b)));
    let brightest = brightest.map(|b| b.0);
    let wanted = (u32::from(scene.hot_slot) / 256 + 1) * 256 - 1;
    expect(brightest == Some(wanted), || {
        format!("brightest {brightest:?}, hot slot {}", scene.hot_slot)
    })
}

/// With one node chosen, every series that names a node names that one.
fn check_one_node(panel: &PanelSpec, answers: &[Vec<Json>], node: &str) -> Check {
    for series in answers.iter().flatten() {
        let named = label(series, "node");
        expect(named.is_empty() || named == node, || {
            format!("{}: {named} with {node} chosen", panel.title)
        })?;
    }
    if panel.title == "Hottest keys now" {
        let hottest = top(&answers[0]).map(|s| label(s, "key"));
        expect(hottest == Some(HOT_KEY), || format!("{hottest:?}"))?;
    }
    Ok(())
}

/// The keys the clients use: each with its part of the traffic, each with
/// the node (its index) serving it; and the hot slot.
type Workload = (Vec<(String, f64)>, Vec<(String, usize)>, u16);

fn workload(cluster: &Cluster) -> Workload {
    let owners = owner_map(cluster);
    let index = |key: &str| {
        let owner = &owners[slot_of(key) as usize];
        let at = cluster.nodes.iter().position(|n| &n.address() == owner);
        at.unwrap()
    };
    let hot_node = index(HOT_KEY);
    // A hash tag of the hot key's node, in another range of the heat map:
    // a hundred keys, none hot, on one hot slot.
    let tag = (0..)
        .map(|i| format!("{{slot{i}}}"))
        .find(|t| index(t) == hot_node && slot_of(t) / 256 != slot_of(HOT_KEY) / 256)
        .unwrap();
    let mut weighted = vec![(HOT_KEY.to_string(), 0.2)];
    weighted.extend((0..100).map(|i| (format!("{tag}:{i}"), 0.3 / 100.0)));
    weighted.extend((0..1000).map(|i| (format!("tenant:7:user:{i}"), 0.2 / 1000.0)));
    for t in (0..20).filter(|&t| t != 7) {
        weighted.extend((0..100).map(|i| (format!("tenant:{t}:user:{i}"), 0.3 / 1900.0)));
    }
    let keys = weighted
        .iter()
        .map(|(k, _)| (k.clone(), index(k)))
        .collect();
    (weighted, keys, slot_of(&tag))
}

#[test]
fn every_panel_s_queries_bring_back_what_it_shows_and_the_rules_evaluate() {
    let dashboard = dashboard();
    let specs = panels(&dashboard);
    check_model(&dashboard, &specs);

    let cluster = Cluster::start(&track_misses("10"));
    let (weighted, keys, hot_slot) = workload(&cluster);
    load_keys(&cluster, &keys);
    let traffic = Traffic::start_weighted(&cluster, weighted, RATE, 0.05);
    // Reads of a key that is not there, from every client.
    traffic.set_hot(vec![MISSING.to_string()], 0.1);
    let scene = Scene {
        nodes: cluster.nodes.iter().map(|n| n.address()).collect(),
        hot_node: cluster.owner_of(HOT_KEY).address(),
        hot_slot,
        missing_node: cluster.owner_of(MISSING).address(),
    };
    let exporter = Exporter::start(cluster.nodes[0].port, &["--count", "10"]);
    let rules = dashboards().join("heavykeeper.rules.yml");
    let prometheus = Prometheus::start(&[exporter.port], Some(&rules));
    let start = prometheus.started;

    // The node variable's query.
    wait_until("the node variable", Duration::from_secs(120), || {
        let nodes: BTreeSet<String> = (prometheus.label_values("node", "heavykeeper_up"))
            .into_iter()
            .collect();
        nodes == scene.nodes
    });
    // Every panel, with All nodes, until each holds what it shows.
    let deadline = Instant::now() + Duration::from_secs(240);
    loop {
        let failing: Vec<String> = (specs.iter())
            .filter_map(|p| {
                let answers = run(&prometheus, p, ".*", start);
                check(p, &answers, &scene)
                    .err()
                    .map(|e| format!("{}: {e}", p.title))
            })
            .collect();
        if failing.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "panels still wrong: {failing:#?}"
        );
        std::thread::sleep(Duration::from_secs(2));
    }
    // One node chosen.
    let one = node_regex(&scene.hot_node);
    for p in &specs {
        let answers = run(&prometheus, p, &one, start);
        check_one_node(p, &answers, &scene.hot_node).unwrap();
    }
    alerts_as_expected(&prometheus, &scene);

    // The picture, when one is asked for (`HK_DASHBOARD_PNG`): after
    // enough history to read.
    let picture = std::env::var_os("HK_DASHBOARD_PNG").map(PathBuf::from);
    while picture.is_some() && now() - start < PICTURE_SECONDS {
        std::thread::sleep(Duration::from_secs(1));
    }
    let (seen, _) = traffic.stop();
    if let Some(path) = picture {
        let drawn: Vec<Panel> = (specs.iter())
            .map(|p| picture_of(p, &run(&prometheus, p, ".*", start), start))
            .collect();
        draw(&drawn, &path);
    }
    println!(
        "dashboard figures: {} GET, {} SET sent; {} panels checked",
        seen.gets,
        seen.sets,
        specs.len()
    );
}

/// The rules as the real Prometheus evaluates them on the real series:
/// none in error; the node serving the hot key and slot is pending as
/// overloaded, the missing key as a hot miss; no key is above 5,000/s and
/// no node down.
fn alerts_as_expected(prometheus: &Prometheus, scene: &Scene) {
    wait_until("the alerts", Duration::from_secs(120), || {
        let rules = prometheus.rules();
        let healthy = rules.len() == 6
            && rules
                .iter()
                .all(|r| r["health"] == "ok" && r["lastError"].as_str().unwrap_or("").is_empty());
        let alert = |name: &str, label_name: &str, value: &str| {
            (rules.iter())
                .filter(|r| r["name"] == name)
                .flat_map(|r| r["alerts"].as_array().cloned().unwrap_or_default())
                .any(|a| a["labels"][label_name] == value && a["state"] == "pending")
        };
        let quiet =
            |name: &str| (rules.iter()).any(|r| r["name"] == name && r["state"] == "inactive");
        healthy
            && alert("HeavyKeeperNodeOverloaded", "node", &scene.hot_node)
            && alert("HeavyKeeperHotMiss", "key", MISSING)
            && quiet("HeavyKeeperHotKey")
            && quiet("HeavyKeeperNodeDown")
    });
}

/// `{{label}}` in a legend format, from the series' labels (none where
/// the series has no such label).
fn legend(format: &str, series: &Json) -> String {
    let mut parts = format.split("{{");
    let mut out = parts.next().unwrap_or_default().to_string();
    for part in parts {
        let (name, rest) = part.split_once("}}").unwrap_or((part, ""));
        out += label(series, name.trim());
        out += rest;
    }
    out
}

fn picture_of(panel: &PanelSpec, answers: &[Vec<Json>], start: f64) -> Panel {
    let lines = || -> Vec<Line> {
        (panel.targets.iter().zip(answers))
            .flat_map(|(t, answer)| {
                answer.iter().map(|s| Line {
                    legend: legend(&t.legend, s),
                    points: range_values(s)
                        .into_iter()
                        .filter(|p| p.0 >= start)
                        .collect(),
                })
            })
            .collect()
    };
    let data = match panel.kind.as_str() {
        "table" => table_of(answers),
        "heatmap" => PanelData::Heatmap {
            rows: (buckets(&answers[0]).into_iter())
                .map(|(le, own)| (le.to_string(), own))
                .collect(),
        },
        "state-timeline" => PanelData::States { lines: lines() },
        _ => PanelData::Lines {
            lines: lines(),
            percent: panel.unit == "percentunit",
        },
    };
    assert!(panel.targets.iter().all(|t| !t.format.is_empty()));
    Panel {
        title: panel.title.clone(),
        grid: panel.grid,
        data,
    }
}

/// The table's six queries merged by labels (Grafana's merge
/// transformation), hottest first.
fn table_of(answers: &[Vec<Json>]) -> PanelData {
    let mut rows: BTreeMap<Vec<String>, [Option<f64>; 6]> = BTreeMap::new();
    for (i, answer) in answers.iter().enumerate() {
        for s in answer {
            let id: Vec<String> = ["key", "key_base64", "node", "db", "slot"]
                .iter()
                .map(|l| label(s, l).to_string())
                .collect();
            rows.entry(id).or_default()[i] = Some(sample_value(s));
        }
    }
    let mut rows: Vec<_> = rows.into_iter().filter(|r| r.1[0].is_some()).collect();
    rows.sort_by(|a, b| b.1[0].unwrap_or(0.0).total_cmp(&a.1[0].unwrap_or(0.0)));
    let cell = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1}"));
    let rows = rows
        .into_iter()
        .map(|(id, v)| {
            let mut row = vec![format!("{}{}", id[0], id[1])];
            row.extend(v.iter().map(|&x| cell(x)));
            row.extend([id[2].clone(), id[4].clone()]);
            row
        })
        .collect();
    let columns = [
        "key", "total/s", "low", "high", "reads/s", "writes/s", "misses/s", "node", "slot",
    ];
    PanelData::Table {
        columns: columns.iter().map(|c| c.to_string()).collect(),
        rows,
    }
}

fn draw(panels: &[Panel], path: &Path) {
    assert!(
        crate::picture::load_font(),
        "no font for the picture: apt-get install fonts-dejavu-core (make testdeps)"
    );
    crate::picture::draw(
        path,
        "heavykeeper: hot keys (drawn by tools/hk-top/tests/stories/dashboard.rs from Prometheus's answers to each panel's queries, not by Grafana)",
        panels,
    )
    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    println!("dashboard picture: {}", path.display());
}
