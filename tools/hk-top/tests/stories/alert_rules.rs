//! An operator loads `dashboards/heavykeeper.rules.yml` into Prometheus:
//! `promtool check rules` takes it, and `promtool test rules` fires every
//! alert on series written down in `dashboards/tests.yml`, and keeps each
//! quiet on others just short of it. The unit tests bite: with one
//! threshold moved they fail.

use crate::support::{assert_ended, dashboards, text};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

fn promtool(args: &[&str], dir: &Path) -> Output {
    Command::new("promtool")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("promtool (Debian's prometheus package; make testdeps installs it)")
}

/// The alerts the rules file defines.
fn alerts(rules: &str) -> Vec<String> {
    let names = rules
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- alert: "));
    names.map(|name| name.trim().to_string()).collect()
}

/// For each alert the tests name: (evaluations expecting it quiet,
/// evaluations expecting it to fire).
fn tested(tests: &str) -> BTreeMap<String, (usize, usize)> {
    let mut seen: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut current = None;
    for line in tests.lines().map(str::trim) {
        if let Some(name) = line.strip_prefix("alertname: ") {
            current = Some(name.trim().to_string());
        } else if let (Some(rest), Some(name)) = (line.strip_prefix("exp_alerts:"), &current) {
            let entry = seen.entry(name.clone()).or_default();
            if rest.trim() == "[]" {
                entry.0 += 1;
            } else {
                entry.1 += 1;
            }
        }
    }
    seen
}

#[test]
fn the_rules_load_and_every_alert_fires_and_keeps_quiet_in_promtool() {
    let dir = dashboards();
    let check = promtool(&["check", "rules", "heavykeeper.rules.yml"], &dir);
    assert_ended(&check, 0, "SUCCESS: 6 rules found");
    let test = promtool(&["test", "rules", "tests.yml"], &dir);
    assert!(test.status.success(), "{}", text(&test));

    let rules = std::fs::read_to_string(dir.join("heavykeeper.rules.yml")).unwrap();
    let tests = std::fs::read_to_string(dir.join("tests.yml")).unwrap();
    let names = alerts(&rules);
    assert_eq!(
        names,
        [
            "HeavyKeeperHotKey",
            "HeavyKeeperNodeOverloaded",
            "HeavyKeeperHotMiss",
            "HeavyKeeperNodeDown",
            "HeavyKeeperTrackerDropping",
            "HeavyKeeperTrackerThinning"
        ]
    );
    let tested = tested(&tests);
    for name in &names {
        let (quiet, fired) = tested.get(name).copied().unwrap_or_default();
        assert!(
            quiet > 0 && fired > 0,
            "{name}: {quiet} quiet, {fired} firing"
        );
    }
    assert!(rules.contains("hk-top -h {{"), "the rebalance command");
}

#[test]
fn the_unit_tests_fail_when_a_threshold_moves() {
    let dir = tempfile::tempdir().unwrap();
    let rules = std::fs::read_to_string(dashboards().join("heavykeeper.rules.yml")).unwrap();
    std::fs::copy(dashboards().join("tests.yml"), dir.path().join("tests.yml")).unwrap();
    for (from, to, alert) in [
        ("> 5000 ", "> 7000 ", "HeavyKeeperHotKey"),
        ("> 5000 ", "> 3000 ", "HeavyKeeperHotKey"),
        ("(1.5 /", "(2.0 /", "HeavyKeeperNodeOverloaded"),
        ("(1.5 /", "(1.2 /", "HeavyKeeperNodeOverloaded"),
        ("> 100  #", "> 40  #", "HeavyKeeperHotMiss"),
        ("for: 1m", "for: 5m", "HeavyKeeperNodeDown"),
        (
            "_total[5m]) > 0\n",
            "_total[5m]) > 20\n",
            "HeavyKeeperTrackerDropping",
        ),
        ("[5m]) > 0.5", "[5m]) > 0.2", "HeavyKeeperTrackerThinning"),
    ] {
        assert!(rules.contains(from), "{from}");
        std::fs::write(
            dir.path().join("heavykeeper.rules.yml"),
            rules.replacen(from, to, 1),
        )
        .unwrap();
        let out = promtool(&["test", "rules", "tests.yml"], dir.path());
        assert!(!out.status.success(), "{from} -> {to} passed");
        assert!(text(&out).contains(alert), "{alert}: {}", text(&out));
    }
}
