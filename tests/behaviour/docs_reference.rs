//! The user documentation keeps up with the module.
//!
//! - Every command the module registers (`COMMAND LIST FILTERBY MODULE
//!   heavykeeper`, with `topk-compat yes` so that `TOPK.*` are there too)
//!   has exactly one heading in docs/commands.md, and every config the
//!   server lists (`CONFIG GET heavykeeper.*`) exactly one in
//!   docs/configuration.md; no other page has a heading for either, and no
//!   heading there names a command or config that does not exist.
//! - The table atop docs/configuration.md has a row for every config, with
//!   the default the server gives it.
//! - Every relative link of README.md and docs/*.md resolves, anchors
//!   included (GitHub's heading anchors).
//! - docs/design.md names every source file of `src/` and
//!   `crates/sketch/src/` and `crates/tracker/src/` in its directory's
//!   table, and no file that is gone.
//! - README.md stays a page a newcomer reads: at most 350 lines.

use test_harness as common;

use crate::root;
use common::{query, words, Server};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The pages a user reads: README.md and every docs/*.md.
fn pages() -> Vec<PathBuf> {
    let dir = root().join("docs");
    let docs = crate::files_under(&dir).into_iter().filter(|path| {
        path.parent() == Some(dir.as_path()) && path.extension().is_some_and(|e| e == "md")
    });
    std::iter::once(root().join("README.md"))
        .chain(docs)
        .collect()
}

/// The lines of a Markdown page outside fenced code blocks, with their
/// numbers (a `#` inside a fence is a comment, not a heading).
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut in_fence = false;
    let mut lines = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if !in_fence {
            lines.push((i + 1, line));
        }
    }
    lines
}

/// The text of each heading of a page (`## HK.ADD` gives `HK.ADD`).
fn headings(text: &str) -> Vec<String> {
    prose_lines(text)
        .into_iter()
        .filter_map(|(_, line)| {
            let rest = line.trim_start_matches('#');
            let level = line.len() - rest.len();
            ((1..=6).contains(&level) && rest.starts_with(' ')).then(|| rest.trim().to_string())
        })
        .collect()
}

/// The first word of a heading, backticks removed: what it documents.
fn subject(heading: &str) -> String {
    heading
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .trim_matches('`')
        .to_string()
}

/// How many headings of `text` document each subject, as `normalize` spells it.
fn subjects(text: &str, normalize: impl Fn(&str) -> String) -> BTreeMap<String, usize> {
    let mut count = BTreeMap::new();
    for heading in headings(text) {
        *count.entry(normalize(&subject(&heading))).or_insert(0) += 1;
    }
    count
}

fn looks_like_command(subject: &str) -> bool {
    let Some((family, name)) = subject.split_once('.') else {
        return false;
    };
    matches!(family, "HK" | "TOPK")
        && !name.is_empty()
        && name.chars().all(|c| c.is_ascii_uppercase())
}

fn looks_like_config(subject: &str) -> bool {
    subject.strip_prefix("heavykeeper.").is_some_and(|name| {
        !name.is_empty() && name.chars().all(|c| c.is_ascii_lowercase() || c == '-')
    })
}

/// What a page must say about one kind of name: each registered name has
/// exactly one heading on `page`, none elsewhere, and `page` has no heading
/// for a name that is not registered.
fn check_reference(
    kind: &str,
    registered: &BTreeSet<String>,
    page: &str,
    looks_like: fn(&str) -> bool,
    normalize: fn(&str) -> String,
    problems: &mut Vec<String>,
) {
    let reference = root().join("docs").join(page);
    let documented = subjects(&read(&reference), normalize);
    for name in registered {
        match documented.get(name).copied().unwrap_or(0) {
            0 => problems.push(format!("{kind} {name} has no heading in docs/{page}")),
            1 => {}
            n => problems.push(format!(
                "{kind} {name} has {n} headings in docs/{page}, not one"
            )),
        }
    }
    for name in documented.keys() {
        if looks_like(name) && !registered.contains(name) {
            problems.push(format!(
                "docs/{page} has a heading for {kind} {name}, which the server does not list"
            ));
        }
    }
    for other in pages() {
        if other == reference {
            continue;
        }
        for name in subjects(&read(&other), normalize).keys() {
            if registered.contains(name) {
                problems.push(format!(
                    "{} has a heading for {kind} {name}: it is documented in docs/{page} only (link there)",
                    other.strip_prefix(root()).unwrap_or(&other).display()
                ));
            }
        }
    }
}

#[test]
fn every_registered_command_and_config_has_its_heading_in_the_reference() {
    let (_server, mut con) = Server::start_configured(&["topk-compat", "yes"], &[]).with_client();
    let commands: Vec<String> = query(&mut con, &words("COMMAND LIST FILTERBY MODULE heavykeeper"));
    let configs: Vec<String> = query(&mut con, &["CONFIG", "GET", "heavykeeper.*"]);
    // Name/value pairs: the names.
    let configs: BTreeSet<String> = configs.into_iter().step_by(2).collect();
    let commands: BTreeSet<String> = commands.iter().map(|c| c.to_ascii_uppercase()).collect();
    // A wrong module name or pattern would list nothing, and check nothing.
    assert!(
        commands.contains("HK.ADD") && commands.contains("TOPK.ADD"),
        "the server listed {commands:?}"
    );
    assert!(
        configs.contains("heavykeeper.track"),
        "the server listed {configs:?}"
    );

    let mut problems = Vec::new();
    check_reference(
        "command",
        &commands,
        "commands.md",
        looks_like_command,
        |s| s.to_ascii_uppercase(),
        &mut problems,
    );
    check_reference(
        "config",
        &configs,
        "configuration.md",
        looks_like_config,
        |s| s.to_ascii_lowercase(),
        &mut problems,
    );
    assert!(problems.is_empty(), "\n{}\n", problems.join("\n"));
}

/// GitHub's anchor for a heading: lower case, spaces to hyphens, every
/// other character but letters, digits, `-` and `_` dropped.
fn anchor(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// Every anchor of a page, repeated headings numbered as GitHub numbers
/// them (`name`, `name-1`, ...).
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut all = BTreeSet::new();
    for heading in headings(text) {
        let base = anchor(&heading);
        let n = seen.entry(base.clone()).or_insert(0);
        all.insert(if *n == 0 {
            base.clone()
        } else {
            format!("{base}-{n}")
        });
        *n += 1;
    }
    all
}

/// A line with its inline code spans removed (a link inside backticks is
/// an example, not a link).
fn without_code_spans(line: &str) -> String {
    let mut out = String::new();
    let mut in_code = false;
    for c in line.chars() {
        if c == '`' {
            in_code = !in_code;
        } else if !in_code {
            out.push(c);
        }
    }
    out
}

/// The targets of the inline links and images of a line: `[text](target)`.
fn link_targets(line: &str) -> Vec<String> {
    let mut targets = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        let Some(end) = after.find(')') else { break };
        targets.push(after[..end].trim().to_string());
        rest = &after[end..];
    }
    targets
}

/// Files another branch adds (linked from here already): a link to one is
/// checked once the file exists.
const PENDING: &[&str] = &["tools/hk-top/README.md"];

#[test]
fn every_link_between_the_pages_resolves() {
    let mut broken = Vec::new();
    for page in pages() {
        let text = read(&page);
        let dir = page.parent().expect("a page's directory").to_path_buf();
        let name = page
            .strip_prefix(root())
            .unwrap_or(&page)
            .display()
            .to_string();
        for (number, line) in prose_lines(&text) {
            for target in link_targets(&without_code_spans(line)) {
                if target.starts_with("http://")
                    || target.starts_with("https://")
                    || target.starts_with("mailto:")
                {
                    continue;
                }
                let (path, fragment) = target.split_once('#').unwrap_or((&target, ""));
                let file = if path.is_empty() {
                    page.clone()
                } else {
                    dir.join(path)
                };
                let Ok(file) = file.canonicalize() else {
                    let from_root = dir.join(path);
                    let pending = PENDING.iter().any(|p| from_root.ends_with(p));
                    if !pending {
                        broken.push(format!("{name}:{number}: {target}: no such file"));
                    }
                    continue;
                };
                if fragment.is_empty() {
                    continue;
                }
                if file.extension().is_none_or(|e| e != "md") {
                    broken.push(format!(
                        "{name}:{number}: {target}: an anchor into a file that is not Markdown"
                    ));
                    continue;
                }
                if !anchors(&read(&file)).contains(fragment) {
                    broken.push(format!(
                        "{name}:{number}: {target}: no heading has the anchor #{fragment}"
                    ));
                }
            }
        }
    }
    assert!(broken.is_empty(), "\n{}\n", broken.join("\n"));
}

/// The `.rs` files of `dir` and its subdirectories, by directory (paths
/// relative to the repository, ending in `/`).
fn source_files(dir: &str, out: &mut BTreeMap<String, BTreeSet<String>>) {
    for path in crate::files_under(&root().join(dir)) {
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        if name.ends_with(".rs") {
            let parent = path.parent().and_then(|p| p.strip_prefix(root()).ok());
            let parent = parent.expect("a file under the repository").display();
            out.entry(format!("{parent}/"))
                .or_default()
                .insert(name.into());
        }
    }
}

/// design.md's file tables (the module, the pure crates, hk-top, the
/// planner and the bench): a line that starts with a directory in
/// backticks (`` `src/tracking/`: ... `` or ``### `src/`: ...``) opens that
/// directory's section, any other heading closes it, and the first cell of
/// each table row in it (`` | `mod.rs` | ... ``) names a file.
fn design_map(text: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut map: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut section: Option<String> = None;
    for (_, line) in prose_lines(text) {
        let opener = line.trim_start_matches('#').trim_start();
        let directory = opener
            .strip_prefix('`')
            .and_then(|rest| rest.split_once('`'))
            .map(|(path, _)| path)
            .filter(|path| path.ends_with('/'));
        if let Some(directory) = directory {
            section = Some(directory.to_string());
            continue;
        }
        if line.starts_with('#') {
            section = None;
            continue;
        }
        let (Some(dir), Some(row)) = (&section, line.strip_prefix("| `")) else {
            continue;
        };
        if let Some((file, _)) = row.split_once('`') {
            if file.ends_with(".rs") {
                map.entry(dir.clone()).or_default().insert(file.to_string());
            }
        }
    }
    map
}

#[test]
fn the_design_map_names_every_source_file() {
    let mut files = BTreeMap::new();
    source_files("src/", &mut files);
    source_files("crates/sketch/src/", &mut files);
    source_files("crates/tracker/src/", &mut files);
    source_files("crates/rebalance/src/", &mut files);
    source_files("tools/hk-top/src/", &mut files);
    source_files("bench/src/", &mut files);
    source_files("bench/filter-floor/src/", &mut files);
    let named = design_map(&read(&root().join("docs/design.md")));
    let mut problems = Vec::new();
    for (dir, names) in &files {
        for name in names {
            if !named.get(dir).is_some_and(|n| n.contains(name)) {
                problems.push(format!(
                    "{dir}{name} is not in docs/design.md's table for `{dir}`"
                ));
            }
        }
    }
    for (dir, names) in &named {
        for name in names {
            if !files.get(dir).is_some_and(|f| f.contains(name)) {
                problems.push(format!(
                    "docs/design.md names {dir}{name}, which does not exist"
                ));
            }
        }
    }
    assert!(problems.is_empty(), "\n{}\n", problems.join("\n"));
}

#[test]
fn the_readme_stays_short() {
    let lines = read(&root().join("README.md")).lines().count();
    assert!(
        lines <= 350,
        "README.md has {lines} lines: keep it to the two commands, a tour and links (at most 350), and move the detail into docs/"
    );
}

/// The table atop docs/configuration.md: each config's name and default
/// as written (`64mb`, `no`, `0`: the first backticked word of its third
/// cell).
fn table_defaults(text: &str) -> BTreeMap<String, String> {
    let mut rows = BTreeMap::new();
    for line in text.lines().filter(|l| l.starts_with("| [`heavykeeper.")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let name = cells[1].split('`').nth(1).unwrap_or_default();
        let default = cells[3].split('`').nth(1).unwrap_or_default();
        rows.insert(name.to_string(), default.to_string());
    }
    rows
}

/// A default as the server gives it: memory in bytes.
fn as_the_server_says(default: &str) -> String {
    match default.strip_suffix("mb") {
        Some(mb) => mb
            .parse::<u64>()
            .map_or(default.to_string(), |n| (n << 20).to_string()),
        None => default.to_string(),
    }
}

#[test]
fn the_configuration_table_gives_every_config_with_the_servers_default() {
    let (_server, mut con) = Server::start_configured(&[], &[]).with_client();
    let pairs: Vec<String> = query(&mut con, &["CONFIG", "GET", "heavykeeper.*"]);
    let table = table_defaults(&read(&root().join("docs/configuration.md")));
    let mut problems = Vec::new();
    for pair in pairs.chunks(2) {
        let (name, value) = (&pair[0], &pair[1]);
        match table.get(name) {
            None => problems.push(format!("{name}: no row in the table")),
            Some(written) if as_the_server_says(written) != *value => problems.push(format!(
                "{name}: the table says `{written}`, the server's default is `{value}`"
            )),
            Some(_) => {}
        }
    }
    assert!(pairs.len() >= 2, "the server listed {pairs:?}");
    assert!(problems.is_empty(), "\n{}\n", problems.join("\n"));
}
