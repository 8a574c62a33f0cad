//! The house rules a reader relies on, checked on the sources: the server's
//! API is reached only through `src/host/` (and the data type's own
//! callbacks, which the server calls with its pointers), the features and
//! the commands hold no `unsafe` of their own, and no panic marker stands
//! in for a rule the lints enforce.

// A test: a panic is how it fails (clippy.toml allows these in test
// functions; this file's helpers are test code too).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file under `dir`, with its path relative to the repository.
fn sources(dir: &str) -> Vec<(String, String)> {
    fn walk(base: &Path, path: &Path, out: &mut Vec<(String, String)>) {
        for entry in std::fs::read_dir(path).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(base, &path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let name = path
                    .strip_prefix(base)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                out.push((name, std::fs::read_to_string(&path).unwrap()));
            }
        }
    }
    let mut out = Vec::new();
    walk(&root(), &root().join(dir), &mut out);
    out.sort();
    out
}

/// Lines of code (comments left out) of `text` that contain `needle`.
fn code_lines_with<'t>(text: &'t str, needle: &str) -> Vec<(usize, &'t str)> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim_start().starts_with("//"))
        .filter(|(_, line)| line.contains(needle))
        .map(|(i, line)| (i + 1, line))
        .collect()
}

/// Where the server's API may be called: the host, the data type's
/// callbacks (the server calls them with its IO and key pointers), and the
/// entry point the server looks up by name.
fn may_reach_the_server(path: &str) -> bool {
    path.starts_with("src/host/") || path == "src/data_type/callbacks.rs" || path == "src/lib.rs"
}

#[test]
fn the_server_api_is_reached_only_through_the_host() {
    let mut found = Vec::new();
    for (path, text) in sources("src") {
        if may_reach_the_server(&path) {
            continue;
        }
        for needle in ["raw::RedisModule_", "extern \"C\"", "server_api!"] {
            for (line, code) in code_lines_with(&text, needle) {
                found.push(format!("{path}:{line}: {}", code.trim()));
            }
        }
    }
    assert!(found.is_empty(), "outside src/host/:\n{}", found.join("\n"));
}

#[test]
fn the_features_and_the_commands_deny_unsafe_code() {
    for module in ["commands", "tracking", "watching"] {
        let text = std::fs::read_to_string(root().join(format!("src/{module}/mod.rs"))).unwrap();
        assert!(
            text.contains("#![deny(unsafe_code)]"),
            "src/{module}/mod.rs must deny unsafe code"
        );
    }
}

#[test]
fn no_panic_markers_stand_in_for_the_lints() {
    let mut found = Vec::new();
    for dir in ["src", "crates", "tools", "bench"] {
        for (path, text) in sources(dir) {
            // A marker is a comment after code: `// panic-` `ok`.
            let marker = concat!("// panic", "-ok");
            for (i, l) in text.lines().enumerate() {
                if l.contains(marker) {
                    found.push(format!("{path}:{}: {}", i + 1, l.trim()));
                }
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// A file of `src/` as a module path (`src/tracking/state.rs` is
/// `tracking::state`, a `mod.rs` its folder's module, `lib.rs` the root).
fn module_of(path: &str) -> String {
    let inner = path.trim_start_matches("src/").trim_end_matches(".rs");
    let inner = inner.trim_end_matches("/mod").trim_end_matches("mod");
    if inner == "lib" {
        String::new()
    } else {
        inner.trim_end_matches('/').replace('/', "::")
    }
}

/// The modules a file names: `crate::a::b` paths (in `use` groups too) and
/// `super::x` ones, resolved to the longest module that exists.
fn imports(module: &str, is_folder: bool, text: &str, modules: &[String]) -> Vec<String> {
    let mut found = Vec::new();
    let code: String = (text.lines())
        .filter(|l| !l.trim_start().starts_with("//"))
        .take_while(|l| !l.contains("#[cfg(test)]"))
        .collect::<Vec<_>>()
        .join("\n");
    let parent = if is_folder {
        module.to_string()
    } else {
        module
            .rsplit_once("::")
            .map_or(String::new(), |(p, _)| p.to_string())
    };
    let mut paths: Vec<String> = Vec::new();
    for (prefix, base) in [("crate::", String::new()), ("super::", parent.clone())] {
        let mut rest = code.as_str();
        while let Some(at) = rest.find(prefix) {
            let tail = &rest[at + prefix.len()..];
            let end = tail
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .unwrap_or(tail.len());
            let path = tail[..end].trim_end_matches(':');
            let full = if base.is_empty() {
                path.to_string()
            } else {
                format!("{base}::{path}")
            };
            paths.push(full.clone());
            // `use crate::a::{b, c::d}`: each member of the group.
            if tail[end..].starts_with('{') {
                let group = &tail[end + 1..tail[end..].find('}').map_or(end, |g| end + g)];
                for member in group.split(',') {
                    let member = member.trim().split(" as ").next().unwrap_or("");
                    paths.push(format!("{full}::{member}").replace("::::", "::"));
                }
            }
            rest = &tail[end..];
        }
    }
    for path in paths {
        let mut parts: Vec<&str> = path.split("::").filter(|p| !p.is_empty()).collect();
        while !parts.is_empty() {
            let candidate = parts.join("::");
            if modules.contains(&candidate) {
                if candidate != module {
                    found.push(candidate);
                }
                break;
            }
            parts.pop();
        }
    }
    found.sort();
    found.dedup();
    found
}

/// The layer a module belongs to: its first component.
fn layer(module: &str) -> &str {
    module.split("::").next().unwrap_or("")
}

/// Which layers each layer may name: the host nothing above it; the data
/// type the host; the features the host and the data type, never each
/// other; the commands everything below them; the wiring (`lib.rs`,
/// `on_load.rs`, `config.rs`) everything.
fn may_name(from: &str, to: &str) -> bool {
    match from {
        "host" => to == "host",
        "data_type" => matches!(to, "host" | "data_type"),
        "tracking" => matches!(to, "host" | "data_type" | "tracking"),
        "watching" => matches!(to, "host" | "data_type" | "watching"),
        "commands" => to != "on_load",
        _ => true,
    }
}

#[test]
fn the_layers_import_downwards_and_no_files_import_each_other() {
    let files = sources("src");
    let modules: Vec<String> = files.iter().map(|(p, _)| module_of(p)).collect();
    let mut graph: Vec<(String, Vec<String>)> = Vec::new();
    let mut wrong = Vec::new();
    for (path, text) in &files {
        let module = module_of(path);
        let folder = path.ends_with("mod.rs") || path == "src/lib.rs";
        let named = imports(&module, folder, text, &modules);
        for to in &named {
            let (a, b) = (layer(&module), layer(to));
            // A folder's own children are its business.
            if a != b && !may_name(a, b) {
                wrong.push(format!("{path} names {to} ({a} may not name {b})"));
            }
        }
        graph.push((module, named));
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    // No circle: a depth-first walk never meets a module on its own path
    // (a module naming its own children, or a child its parent's items, is
    // the module itself: `mod.rs` and its files are one unit).
    let edges = |m: &str| -> Vec<String> {
        graph
            .iter()
            .find(|(n, _)| n == m)
            .map(|(_, e)| e.clone())
            .unwrap_or_default()
    };
    fn walk(
        m: &str,
        path: &mut Vec<String>,
        done: &mut Vec<String>,
        edges: &dyn Fn(&str) -> Vec<String>,
        circles: &mut Vec<String>,
    ) {
        if done.iter().any(|d| d == m) {
            return;
        }
        if let Some(at) = path.iter().position(|p| p == m) {
            circles.push(format!("{} -> {m}", path[at..].join(" -> ")));
            return;
        }
        path.push(m.to_string());
        for next in edges(m) {
            let within = next.starts_with(&format!("{m}::")) || m.starts_with(&format!("{next}::"));
            if !within && !next.is_empty() {
                walk(&next, path, done, edges, circles);
            }
        }
        path.pop();
        done.push(m.to_string());
    }
    let mut circles = Vec::new();
    let mut done = Vec::new();
    for (m, _) in &graph {
        walk(m, &mut Vec::new(), &mut done, &edges, &mut circles);
    }
    assert!(
        circles.is_empty(),
        "import circles:\n{}",
        circles.join("\n")
    );
}
