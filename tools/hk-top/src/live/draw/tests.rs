//! The view drawn on ratatui's test backend, at 80×24 and 200×50, with six
//! nodes on one host, keys that share a 53-byte prefix and a key that
//! is not UTF-8: what an operator would read on those screens.

use super::*;
use crate::fixtures::{
    busy_console, busy_snapshot, console, id, key, long_key, misses_console, node_address, press,
    rates, type_text, BINARY_KEY, MISSING_KEY, NODES,
};
use crossterm::event::KeyCode;
use heavykeeper_tracker::hash_slot::hash_slot;
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use std::collections::HashSet;
use unicode_width::UnicodeWidthStr;

/// The screen's lines as text (a wide character's second cell skipped).
fn screen(console: &Console, width: u16, height: u16) -> Vec<String> {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|frame| draw(frame, console)).unwrap();
    let buffer = terminal.backend().buffer();
    (0..height)
        .map(|y| {
            let mut line = String::new();
            let mut skip = 0;
            for x in 0..width {
                if skip > 0 {
                    skip -= 1;
                    continue;
                }
                let symbol = buffer[(x, y)].symbol();
                skip = symbol.width().saturating_sub(1);
                line.push_str(symbol);
            }
            line
        })
        .collect()
}

/// The table's rows: the lines after the header, up to the footer.
fn table_rows(lines: &[String]) -> Vec<&String> {
    let header = lines
        .iter()
        .position(|l| l.starts_with("KEY"))
        .expect("a header");
    lines[header + 1..lines.len() - 1]
        .iter()
        .filter(|l| !l.trim().is_empty())
        .collect()
}

/// The node address that a key's row must show whole.
fn node_of(row: &str) -> String {
    (0..NODES)
        .map(node_address)
        .find(|a| row.contains(&format!(" {a} ")))
        .unwrap_or_else(|| panic!("no whole node address in {row:?}"))
}

#[test]
fn at_80_columns_every_row_is_distinct_with_its_whole_address() {
    let c = busy_console();
    let lines = screen(&c, 80, 24);
    let all = lines.join("\n");
    let header = lines.iter().find(|l| l.starts_with("KEY")).unwrap();
    assert!(
        !header.contains("MISSES"),
        "nothing counts misses: {header}"
    );
    let rows = table_rows(&lines);
    assert_eq!(rows.len(), 14, "{all}");
    let keys: HashSet<&str> = rows.iter().map(|r| r.split(' ').next().unwrap()).collect();
    assert_eq!(keys.len(), rows.len(), "key cells alike:\n{all}");
    // Sorted by total: the writes counter first, then the long keys by reads.
    assert!(rows[0].starts_with("counter:hot "), "{all}");
    assert!(rows[1].starts_with("tenant:42…"), "{}", rows[1]);
    for (i, row) in rows.iter().filter(|r| r.starts_with("tenant")).enumerate() {
        // The start says which scheme, the end which key.
        let key = row.split(' ').next().unwrap();
        assert!(key.contains('…'), "{row}");
        assert!(key.ends_with(&format!("{i:06}")), "{row}");
        assert_eq!(node_of(row), node_address(i % NODES), "{row}");
    }
    let binary = rows
        .iter()
        .find(|r| r.starts_with("bin:"))
        .expect("the binary key");
    assert!(binary.starts_with(r"bin:\xff\xfe:raw "), "{binary}");
    assert_eq!(node_of(binary), node_address(2));
    assert!(lines.iter().all(|l| l.width() <= 80));
}

#[test]
fn at_200_columns_names_are_whole_and_the_sparkline_takes_the_rest() {
    let mut c = busy_console();
    // A second refresh, so that the sparklines have something to draw.
    c.apply(busy_snapshot());
    let lines = screen(&c, 200, 50);
    let header = lines.iter().find(|l| l.starts_with("KEY")).unwrap();
    assert!(header.contains("TREND"), "{header}");
    let rows = table_rows(&lines);
    assert_eq!(rows.len(), 14);
    for i in 0..12 {
        let row = rows
            .iter()
            .find(|r| r.starts_with(&format!("{} ", long_key(i))))
            .unwrap_or_else(|| panic!("{} not whole:\n{}", long_key(i), lines.join("\n")));
        assert_eq!(node_of(row), node_address(i % NODES));
        assert!(row.contains('█'), "a sparkline: {row}");
    }
}

#[test]
fn the_sort_column_is_marked_and_the_rows_follow_it() {
    let mut c = busy_console();
    c.press(&key(KeyCode::Char('<'))); // total -> writes
    let lines = screen(&c, 80, 24);
    let header = lines.iter().find(|l| l.starts_with("KEY")).unwrap();
    assert!(header.contains("WRITES/S▼"), "{header}");
    assert!(lines[1].contains("sort: writes ▼"), "{}", lines[1]);
    let rows = table_rows(&lines);
    assert!(rows[0].starts_with("counter:hot"));
    let second = rows[1];
    assert!(
        second.ends_with("000011") || second.contains("000011 "),
        "{second}"
    );
    press(&mut c, &[KeyCode::Char('>'), KeyCode::Char('>')]); // writes -> total -> key
    let lines = screen(&c, 80, 24);
    let rows = table_rows(&lines);
    assert!(rows[0].starts_with(r"bin:\xff"), "{}", rows[0]);
    assert!(rows[1].starts_with("counter:hot"), "{}", rows[1]);
}

#[test]
fn a_filter_shows_in_the_status_and_the_prompt_in_the_footer() {
    let mut c = busy_console();
    type_text(&mut c, "/tenant:*0000[01]"); // `/`, then the pattern
    let lines = screen(&c, 80, 24);
    assert!(lines[0].contains("2 of 14 keys"), "{}", lines[0]);
    assert!(lines[1].contains("match: tenant:*0000[01]"), "{}", lines[1]);
    let footer = &lines[23];
    assert!(footer.starts_with(" match: tenant:*0000[01]"), "{footer}");
    assert_eq!(table_rows(&lines).len(), 2);
}

#[test]
fn details_show_the_whole_name_its_node_slot_and_rates() {
    let mut c = console();
    let mut snapshot = busy_snapshot();
    let very_long = format!("{{tenant42}}:{}", "x".repeat(150));
    let hottest = (id(3, very_long.as_bytes()), rates(2e6, 0.0));
    snapshot.keys.push(hottest);
    c.apply(snapshot);
    c.press(&key(KeyCode::Enter)); // the hottest: the very long key
    let lines = screen(&c, 80, 24);
    let (all, text) = (
        lines.join("\n"),
        lines.iter().map(|l| l.trim_end()).collect::<String>(),
    );
    assert!(text.contains("KEY{tenant42}:xxx"), "{all}");
    assert_eq!(text.matches('x').count(), 150, "every byte:\n{all}");
    assert!(
        all.contains(&format!("NODE     {} (primary)", node_address(3))),
        "{all}"
    );
    let slot = hash_slot(very_long.as_bytes());
    assert!(
        all.contains(&format!("SLOT     {slot} (hash tag {{tenant42}})")),
        "{all}"
    );
    assert!(all.contains("READS/S 2.0M"), "{all}");
    assert!(all.contains("#1 of 15 by total"), "{all}");
    assert!(all.contains("peak 2.0M/s"), "a chart of the history: {all}");
    // A key that is not UTF-8: escaped, and said so.
    press(&mut c, &[KeyCode::Esc, KeyCode::Char('>')]); // by name: the binary key first
    press(&mut c, &[KeyCode::Home, KeyCode::Enter]);
    let all = screen(&c, 80, 24).join("\n");
    assert!(all.contains(r"KEY      bin:\xff\xfe:raw"), "{all}");
    assert!(
        all.contains(&format!("{} bytes, not printable text", BINARY_KEY.len())),
        "{all}"
    );
}

#[test]
fn the_nodes_view_shows_every_share_and_the_node_that_does_not_answer() {
    let mut c = console();
    let mut snapshot = busy_snapshot();
    let silent = node_address(4);
    snapshot.keys.retain(|(id, _)| id.node != silent);
    snapshot
        .errors
        .push((silent.clone(), "Connection refused (os error 111)".into()));
    c.apply(snapshot);
    c.press(&key(KeyCode::Tab));
    for (width, height) in [(80, 24), (200, 50)] {
        let lines = screen(&c, width, height);
        let all = lines.join("\n");
        let status = &lines[0];
        assert!(status.contains("6 nodes, 1 not answering"), "{status}");
        let mut shares = 0.0;
        for n in 0..NODES {
            let address = node_address(n);
            let row = lines
                .iter()
                .find(|l| l.starts_with(&address))
                .unwrap_or_else(|| panic!("{address} missing:\n{all}"));
            if address == silent {
                assert!(row.contains("NOT ANSWERING"), "{row}");
                let reason = format!("{silent}: Connection refused (os error 111)");
                assert!(all.contains(&reason), "why, whole:\n{all}");
                continue;
            }
            let percent = row.trim_end().rsplit(' ').next().unwrap();
            shares += percent.trim_end_matches('%').parse::<f64>().unwrap();
            assert!(row.contains('█'), "a bar: {row}");
        }
        assert!(
            (shares - 100.0).abs() < 0.5,
            "shares add up to {shares}:\n{all}"
        );
    }
}

#[test]
fn the_help_lists_every_key() {
    let mut c = busy_console();
    c.press(&key(KeyCode::Char('?')));
    for (width, height) in [(80, 24), (200, 50)] {
        let lines = screen(&c, width, height);
        let (all, joined) = (lines.join("\n"), lines.join(""));
        for binding in BINDINGS {
            let label = format!(" {:<8}{}", binding.label(), binding.does);
            let shown = lines.iter().any(|l| l.contains(&label));
            assert!(shown, "{label:?} missing:\n{all}");
        }
        let sort_keys = "Sort keys (--sort, < >): key, node, reads, writes, misses, total";
        assert!(joined.contains(sort_keys), "{all}");
        assert!(joined.contains("Esc or ? closes this help."), "{all}");
    }
}

#[test]
fn before_the_first_answer_the_table_says_what_it_waits_for() {
    let c = console();
    let lines = screen(&c, 80, 24);
    assert!(
        lines[2].contains("waiting for the first answer from 6 node(s)"),
        "{lines:#?}"
    );
    assert!(lines[23].contains("q quit"), "{}", lines[23]);
}

/// The figure under `title` in a table row (every cell is one word).
fn cell<'a>(lines: &[String], row: &'a str, title: &str) -> &'a str {
    let header = lines.iter().find(|l| l.starts_with("KEY")).unwrap();
    let at = header
        .split_whitespace()
        .position(|t| t.trim_end_matches(['▼', '▲']) == title)
        .unwrap_or_else(|| panic!("no {title} in {header}"));
    row.split_whitespace().nth(at).unwrap()
}

#[test]
fn misses_get_a_column_where_a_node_counts_them_and_sort_by_it() {
    let mut c = misses_console();
    for (width, height) in [(80, 24), (200, 50)] {
        let lines = screen(&c, width, height);
        let all = lines.join("\n");
        assert!(lines[0].contains("16 of 16 keys"), "{all}");
        let rows = table_rows(&lines);
        let keys: HashSet<&str> = rows.iter().map(|r| r.split(' ').next().unwrap()).collect();
        assert_eq!(keys.len(), 16, "rows alike:\n{all}");
        for row in &rows {
            let node = node_of(row);
            let misses = cell(&lines, row, "MISSES/S");
            // Nodes 4 to 6 (ports 30004-30006) do not count misses: unknown.
            if node.ends_with(":30004") || node.ends_with(":30005") || node.ends_with(":30006") {
                assert_eq!(misses, "-", "{row}");
            } else if row.starts_with("absent:") {
                assert_eq!(misses, "600.0", "{row}");
            } else if !row.starts_with(r"gone:\xff") {
                assert_eq!(misses, "0", "{row}");
            }
        }
        assert!(lines.iter().all(|l| l.width() <= width as usize));
    }
    // `<` from the total: the misses column, hottest miss first.
    c.press(&key(KeyCode::Char('<')));
    let lines = screen(&c, 80, 24);
    let header = lines.iter().find(|l| l.starts_with("KEY")).unwrap();
    assert!(header.contains("MISSES/S▼"), "{header}");
    assert!(lines[1].contains("sort: misses ▼"), "{}", lines[1]);
    let rows = table_rows(&lines);
    let missing = format!("{} ", String::from_utf8_lossy(MISSING_KEY));
    assert!(rows[0].starts_with(&missing), "{}", lines.join("\n"));
    assert!(rows[1].starts_with(r"gone:\xff "), "escaped: {}", rows[1]);
    assert_eq!(cell(&lines, rows[1], "MISSES/S"), "30.0");
}

#[test]
fn the_nodes_view_and_the_details_show_misses_where_counted() {
    let mut c = misses_console();
    c.press(&key(KeyCode::Tab));
    let lines = screen(&c, 80, 24);
    let all = lines.join("\n");
    let header = lines.iter().find(|l| l.starts_with("NODE")).expect(&all);
    let at = header
        .split_whitespace()
        .position(|t| t == "MISSES/S")
        .expect(header);
    for n in 0..NODES {
        let row = lines
            .iter()
            .find(|l| l.starts_with(&node_address(n)))
            .unwrap_or_else(|| panic!("node {n}:\n{all}"));
        let misses = row.split_whitespace().nth(at).unwrap();
        assert_eq!(misses, ["30.0", "600.0", "0", "-", "-", "-"][n], "{row}");
    }
    press(&mut c, &[KeyCode::Tab, KeyCode::Char('<')]); // by misses: the missing key first
    press(&mut c, &[KeyCode::Home, KeyCode::Enter]);
    let all = screen(&c, 80, 24).join("\n");
    assert!(all.contains("KEY      absent:user:404"), "{all}");
    assert!(all.contains("MISSES/S 600.0"), "{all}");
    assert!(all.contains("#1 of 16"), "{all}");
    assert!(all.contains("by misses ▼"), "{all}");
    // A key of a node that does not count misses: unknown, not 0.
    let uncounted = id(3, long_key(3).as_bytes());
    while !matches!(c.screen(), Screen::Details(shown) if *shown == uncounted) {
        c.press(&key(KeyCode::Down));
    }
    let all = screen(&c, 80, 24).join("\n");
    assert!(all.contains("MISSES/S -"), "{all}");
}

#[test]
fn without_misses_any_more_the_column_goes() {
    let mut c = misses_console();
    c.press(&key(KeyCode::Char('<')));
    assert_eq!(c.order().key.name(), "misses");
    // track-misses turned off everywhere: the next refresh has none.
    c.apply(busy_snapshot());
    let lines = screen(&c, 80, 24);
    let header = lines.iter().find(|l| l.starts_with("KEY")).unwrap();
    assert!(!header.contains("MISSES"), "{header}");
    assert!(lines[1].contains("sort: misses"), "{}", lines[1]);
}

#[test]
fn the_status_line_shows_the_primaries_shares_as_their_trackers_count() {
    let mut c = console();
    let mut snapshot = busy_snapshot();
    // Node 0 serves three fifths of all, as its tracker counts it.
    snapshot.totals = (0..NODES)
        .map(|n| {
            (
                node_address(n),
                rates(if n == 0 { 750.0 } else { 100.0 }, 0.0),
            )
        })
        .collect();
    c.apply(snapshot);
    let lines = screen(&c, 200, 50);
    let first = format!("shares {} 60% · {} 8%", node_address(0), node_address(1));
    assert!(lines[0].contains(&first), "{}", lines[0]);
}

/// Where the nodes name clients: the selected key's details say who drives
/// it, and `w` shows each node's hottest clients (a node that cannot say,
/// a line that says so).
#[test]
fn the_details_name_who_drives_the_key_and_w_shows_the_hottest_clients() {
    use crate::reading::senders::Sender;
    let sender = |who: &str, rate: f64| Sender {
        who: who.as_bytes().to_vec(),
        rate,
        low: rate * 0.9,
        high: rate * 1.1,
    };
    let mut snapshot = busy_snapshot();
    // The first row: counter:hot, 5,000 writes a second.
    let hottest = id(5, b"counter:hot");
    assert!(snapshot.keys.iter().any(|(id, _)| *id == hottest));
    let senders = vec![sender("10.0.0.12", 3_000.0), sender("10.0.0.31", 1_250.0)];
    snapshot.senders.insert(hottest.clone(), senders);
    let node = snapshot.nodes[0].address.clone();
    snapshot
        .hot_clients
        .push((node, vec![sender("10.0.0.99", 9_000.0)]));
    let mut c = console();
    c.apply(snapshot);
    c.press(&key(KeyCode::Enter));
    let details = screen(&c, 200, 50).join("\n");
    assert!(
        details.contains("CLIENTS  10.0.0.12 3000/s (60%), 10.0.0.31 1250/s (25%)"),
        "{details}"
    );
    press(&mut c, &[KeyCode::Esc, KeyCode::Char('w')]);
    let view = screen(&c, 200, 50).join("\n");
    assert!(view.contains("CLIENT (HOST)"), "{view}");
    assert!(view.contains("10.0.0.99"), "{view}");
    assert!(
        view.contains("(cannot say: Redis 7.2+ or Valkey names clients)"),
        "{view}"
    );
}
