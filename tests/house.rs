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
