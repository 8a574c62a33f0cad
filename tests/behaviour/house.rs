//! The house rules a reader relies on, checked on the sources: the server's
//! API is reached only through `src/host/` (and the data type's own
//! callbacks, which the server calls with its pointers), the features and
//! the commands hold no `unsafe` of their own, and no panic marker stands
//! in for a rule the lints enforce.

use crate::root;

/// Every `.rs` file under `dir`, with its path relative to the repository.
fn sources(dir: &str) -> Vec<(String, String)> {
    let files = crate::files_under(&root().join(dir));
    let rust = files
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "rs"));
    rust.map(|path| {
        let name = path.strip_prefix(root()).unwrap().to_string_lossy();
        (name.into_owned(), std::fs::read_to_string(&path).unwrap())
    })
    .collect()
}

/// Where the server's API may be called: the host, the data type's
/// callbacks (the server calls them with its IO and key pointers), and the
/// entry point the server looks up by name.
fn may_reach_the_server(path: &str) -> bool {
    path.starts_with("src/host/") || path == "src/data_type/callbacks.rs" || path == "src/lib.rs"
}

/// What a file outside the host may not hold, found in its syntax tree
/// however it is spelled: a path into `redis_module::raw` (through `use`,
/// a group, a rename of the crate or of `raw`), a `RedisModule_*` name, a
/// C ABI, `server_api!`, a host macro that expands to `unsafe` code, or
/// `unsafe` re-allowed.
struct ServerReach<'m> {
    /// The names `redis_module` goes by in the file.
    crate_names: Vec<String>,
    /// The host's macros whose expansion holds `unsafe` or a C ABI.
    unsafe_macros: &'m [String],
    found: Vec<String>,
}

impl<'m> ServerReach<'m> {
    fn check(text: &str, unsafe_macros: &'m [String]) -> Vec<String> {
        let file = syn::parse_file(text).unwrap();
        let mut reach = ServerReach {
            crate_names: vec!["redis_module".into()],
            unsafe_macros,
            found: Vec::new(),
        };
        // Renames of the crate first: a path may use one before its `use`.
        for item in &file.items {
            if let syn::Item::Use(u) = item {
                reach.note_renames(&u.tree);
            }
        }
        syn::visit::visit_file(&mut reach, &file);
        reach.found
    }

    fn note_renames(&mut self, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Rename(r) if r.ident == "redis_module" => {
                self.crate_names.push(r.rename.to_string())
            }
            syn::UseTree::Group(g) => g.items.iter().for_each(|t| self.note_renames(t)),
            _ => {}
        }
    }

    /// A path (its segments' names) that reaches the server's API.
    fn reaches(&self, segments: &[String]) -> bool {
        let into_raw = segments
            .windows(2)
            .any(|w| self.crate_names.contains(&w[0]) && w[1] == "raw");
        into_raw || segments.iter().any(|s| s.starts_with("RedisModule_"))
    }

    fn use_paths(&mut self, tree: &syn::UseTree, prefix: &mut Vec<String>) {
        let mut leaf = |this: &mut Self, name: String| {
            prefix.push(name);
            if this.reaches(prefix) {
                this.found.push(format!("use {}", prefix.join("::")));
            }
            prefix.pop();
        };
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_paths(&p.tree, prefix);
                prefix.pop();
            }
            syn::UseTree::Name(n) => leaf(self, n.ident.to_string()),
            syn::UseTree::Rename(r) => leaf(self, r.ident.to_string()),
            syn::UseTree::Glob(_) => leaf(self, "*".into()),
            syn::UseTree::Group(g) => g.items.iter().for_each(|t| self.use_paths(t, prefix)),
        }
    }
}

impl<'ast> syn::visit::Visit<'ast> for ServerReach<'_> {
    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        if self.reaches(&segments) {
            self.found.push(segments.join("::"));
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        self.use_paths(&item.tree, &mut Vec::new());
    }

    fn visit_abi(&mut self, abi: &'ast syn::Abi) {
        let name = abi.name.as_ref().map_or("C".into(), syn::LitStr::value);
        self.found.push(format!("extern \"{name}\""));
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        let name = mac.path.segments.last().map(|s| s.ident.to_string());
        let name = name.unwrap_or_default();
        if name == "server_api" || self.unsafe_macros.contains(&name) {
            self.found.push(format!("{name}!"));
        }
        // A macro's arguments are tokens, not syntax: read them as text.
        let tokens = mac.tokens.to_string().replace(' ', "");
        let into_raw = (self.crate_names.iter()).any(|c| tokens.contains(&format!("{c}::raw")));
        if into_raw || tokens.contains("RedisModule_") {
            self.found.push(format!("{name}!({tokens})"));
        }
        syn::visit::visit_macro(self, mac);
    }

    fn visit_attribute(&mut self, attr: &'ast syn::Attribute) {
        let text = attribute_text(attr);
        if text.contains("unsafe_code") && !text.starts_with("deny") && !text.starts_with("forbid")
        {
            self.found.push(format!("#[{text}]"));
        }
    }
}

/// An attribute as text (`allow(unsafe_code)`), without spaces.
fn attribute_text(attr: &syn::Attribute) -> String {
    let path = attr.path().segments.iter().map(|s| s.ident.to_string());
    let args = match &attr.meta {
        syn::Meta::List(list) => format!("({})", list.tokens),
        _ => String::new(),
    };
    format!("{}{args}", path.collect::<Vec<_>>().join("::")).replace(' ', "")
}

/// The host's `macro_rules!` whose bodies hold `unsafe` or a C ABI: used
/// elsewhere, they put the host's `unsafe` where it is denied.
fn unsafe_host_macros() -> Vec<String> {
    let mut names = Vec::new();
    for (_, text) in sources("src/host") {
        for item in syn::parse_file(&text).unwrap().items {
            let syn::Item::Macro(m) = item else { continue };
            let body = m.mac.tokens.to_string();
            let holds = ["unsafe", "extern"]
                .iter()
                .any(|w| body.split_whitespace().any(|t| t == *w));
            if let (Some(name), true) = (m.ident, holds) {
                names.push(name.to_string());
            }
        }
    }
    names
}

#[test]
fn the_server_api_is_reached_only_through_the_host() {
    let unsafe_macros = unsafe_host_macros();
    let mut found = Vec::new();
    for (path, text) in sources("src") {
        if !may_reach_the_server(&path) {
            let reach = ServerReach::check(&text, &unsafe_macros);
            found.extend(reach.into_iter().map(|what| format!("{path}: {what}")));
        }
    }
    assert!(found.is_empty(), "outside src/host/:\n{}", found.join("\n"));
}

#[test]
fn the_house_check_finds_the_server_api_however_it_is_spelled() {
    let macros = vec!["entry_point".to_string()];
    let spellings = [
        "fn f(c: C) { redis_module::raw::reply_with_null(c.ctx); }",
        "use redis_module::raw; fn f(c: C) { raw::reply_with_null(c.ctx); }",
        "use redis_module::{Context, raw as r}; fn f() {}",
        "use redis_module::raw::*; fn f() {}",
        "use redis_module as rm; fn f(c: C) { rm::raw::reply_with_null(c.ctx); }",
        "fn f(c: C) { unsafe { (x.unwrap())(RedisModule_ReplyWithNull) } }",
        "fn f() { let _ = vec![redis_module::raw::reply_with_null]; }",
        "fn f() { let _ = server_api!(RedisModule_ReplyWithNull); }",
        "extern \"C\" fn f() {}",
        "fn f() { #[allow(unsafe_code)] let _ = 1; }",
        "const C: u8 = entry_point!(f);",
    ];
    for text in spellings {
        assert!(
            !ServerReach::check(text, &macros).is_empty(),
            "not caught: {text}"
        );
    }
    let clean = "#![deny(unsafe_code)] use redis_module::{Context, RedisValue}; fn raw() {}";
    assert!(ServerReach::check(clean, &macros).is_empty());
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
