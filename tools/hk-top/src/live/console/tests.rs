//! The console's rules without a terminal: keys pressed, snapshots applied,
//! what it then lists and selects.

use super::*;
use crate::fixtures::{
    busy_console, busy_snapshot, console, id, key, long_key, misses_console, node_address, press,
    rates, type_text, MISSING_BINARY_KEY, MISSING_KEY,
};
use crate::reading::metric::Metric;
use crate::reading::sort::SortKey;
use crossterm::event::KeyCode;

fn listed(console: &Console) -> Vec<String> {
    let keys = console.rows().iter().map(|(id, _)| &id.key);
    keys.map(|key| String::from_utf8_lossy(key).into_owned())
        .collect()
}

fn selected_key(console: &Console) -> String {
    let row = console.selected_row().expect("a selection");
    String::from_utf8_lossy(&console.rows()[row].0.key).into_owned()
}

#[test]
fn sorted_by_total_until_told_otherwise() {
    let mut c = console();
    assert_eq!(c.refreshes(), 0);
    c.apply(busy_snapshot());
    assert_eq!(listed(&c)[0], "counter:hot");
    assert_eq!(listed(&c)[1], long_key(0));
    assert_eq!(c.rows().len(), 14);
    // `<` from total: writes, then reads.
    c.press(&key(KeyCode::Char('<')));
    assert_eq!(c.order().key, SortKey::Rate(Metric::Writes));
    assert_eq!(listed(&c)[..2], ["counter:hot".to_string(), long_key(11)]);
    c.press(&key(KeyCode::Char('<')));
    assert_eq!(c.order().key, SortKey::Rate(Metric::Reads));
    assert_eq!(listed(&c)[0], long_key(0));
    assert_eq!(listed(&c).last().unwrap(), "counter:hot");
    c.press(&key(KeyCode::Char('r')));
    assert_eq!(listed(&c)[0], "counter:hot", "reversed");
}

#[test]
fn the_sort_keys_take_in_misses_while_a_node_counts_them() {
    let mut c = misses_console();
    assert_eq!(c.metrics(), Metric::ALL);
    // A miss is a read already counted: the total does not add it again.
    let missing = c.rows().iter().find(|(id, _)| id.key == MISSING_KEY);
    assert_eq!(missing.map(|(_, rates)| rates.total()), Some(600.0));
    c.press(&key(KeyCode::Char('<')));
    assert_eq!(c.order().key, SortKey::Rate(Metric::Misses));
    let by_misses = listed(&c);
    let expected =
        [MISSING_KEY, MISSING_BINARY_KEY].map(|k| String::from_utf8_lossy(k).into_owned());
    assert_eq!(by_misses[..2], expected);
    c.press(&key(KeyCode::Char('<')));
    assert_eq!(c.order().key, SortKey::Rate(Metric::Writes));
    // Misses turned off: no misses column, so `>` from writes is the total.
    c.apply(busy_snapshot());
    assert_eq!(c.metrics(), [Metric::Reads, Metric::Writes]);
    c.press(&key(KeyCode::Char('>')));
    assert_eq!(c.order().key, SortKey::Total);
}

#[test]
fn the_selection_follows_its_key_through_refreshes_and_sorts() {
    let mut c = busy_console();
    press(&mut c, &[KeyCode::Down, KeyCode::Down]);
    let chosen = selected_key(&c);
    assert_eq!(chosen, long_key(1));
    c.press(&key(KeyCode::Char('>'))); // total -> key: by name
    assert_eq!(selected_key(&c), chosen);
    // The key leaves the list: the selection stays on its row.
    let mut later = busy_snapshot();
    later.keys.retain(|(id, _)| id.key != chosen.as_bytes());
    let row = c.selected_row();
    c.apply(later);
    assert_eq!(c.selected_row(), row);
    assert_ne!(selected_key(&c), chosen);
    c.press(&key(KeyCode::End));
    assert_eq!(c.selected_row(), Some(c.rows().len() - 1));
    c.press(&key(KeyCode::Home));
    assert_eq!(c.selected_row(), Some(0));
}

#[test]
fn paging_scrolls_so_that_the_selection_stays_in_view() {
    let mut c = busy_console();
    c.set_page_rows(5);
    c.press(&key(KeyCode::PageDown));
    assert_eq!(c.selected_row(), Some(5));
    assert_eq!(c.first_row(), 1);
    c.press(&key(KeyCode::End));
    assert_eq!(c.first_row(), c.rows().len() - 5);
    press(&mut c, &[KeyCode::PageUp, KeyCode::PageUp, KeyCode::PageUp]);
    assert_eq!((c.selected_row(), c.first_row()), (Some(0), 0));
}

#[test]
fn a_pattern_typed_filters_as_it_is_typed_and_esc_puts_it_back() {
    let mut c = busy_console();
    c.press(&key(KeyCode::Char('/')));
    assert!(c.prompt().is_some());
    type_text(&mut c, "tenant:*00000[13]");
    assert_eq!(listed(&c), [long_key(1), long_key(3)]);
    // Keys typed into a prompt are text, not commands: q did not quit.
    type_text(&mut c, "q");
    assert!(!c.wants_to_quit());
    assert!(c.rows().is_empty());
    press(&mut c, &[KeyCode::Backspace, KeyCode::Enter]);
    assert!(c.prompt().is_none());
    assert_eq!(c.rows().len(), 2);
    // Esc while editing: the filter as it was before the prompt opened.
    type_text(&mut c, "/zzz");
    assert!(c.rows().is_empty());
    c.press(&key(KeyCode::Esc));
    assert_eq!(c.filter().key_pattern(), Some(&b"tenant:*00000[13]"[..]));
    assert_eq!(c.rows().len(), 2);
    c.press(&key(KeyCode::Char('c')));
    assert_eq!(c.rows().len(), 14);
}

#[test]
fn node_and_database_filters() {
    let mut c = console();
    let mut snapshot = busy_snapshot();
    let mut in_db3 = id(1, b"db3:key");
    in_db3.db = 3;
    snapshot.keys.push((in_db3, rates(1.0, 0.0)));
    c.apply(snapshot);
    type_text(&mut c, "n*:30006"); // `n`, then the address
    c.press(&key(KeyCode::Enter));
    assert!(c.rows().iter().all(|(id, _)| id.node == node_address(5)));
    assert_eq!(c.rows().len(), 3, "{:?}", listed(&c));
    type_text(&mut c, "cdx"); // clear, `d`, then not a number
    assert_eq!(c.message(), Some("not a database number: x"));
    c.press(&key(KeyCode::Backspace));
    type_text(&mut c, "3");
    c.press(&key(KeyCode::Enter));
    assert_eq!(listed(&c), ["db3:key"]);
}

#[test]
fn paused_it_keeps_what_it_shows() {
    let mut c = busy_console();
    c.press(&key(KeyCode::Char(' ')));
    assert!(c.is_paused());
    let mut newer = busy_snapshot();
    newer.keys.push((id(0, b"new:key"), rates(1e6, 0.0)));
    c.apply(newer.clone());
    assert_eq!(c.refreshes(), 1);
    assert!(!listed(&c).contains(&"new:key".to_string()));
    c.press(&key(KeyCode::Char('p')));
    c.apply(newer);
    assert_eq!(listed(&c)[0], "new:key");
    assert_eq!(c.refreshes(), 2);
}

#[test]
fn details_stay_on_their_key_and_follow_the_arrows() {
    let mut c = busy_console();
    press(&mut c, &[KeyCode::Down, KeyCode::Enter]);
    let Screen::Details(shown) = c.screen().clone() else {
        panic!("no details: {:?}", c.screen());
    };
    assert_eq!(shown.key, long_key(0).as_bytes());
    c.press(&key(KeyCode::Down));
    let Screen::Details(next) = c.screen().clone() else {
        panic!("details closed");
    };
    assert_eq!(next.key, long_key(1).as_bytes());
    // The key leaves the list: the details still show it.
    let mut later = busy_snapshot();
    later.keys.retain(|(id, _)| *id != next);
    c.apply(later);
    assert_eq!(c.screen(), &Screen::Details(next.clone()));
    assert!(c.rates_of(&next).is_none());
    c.press(&key(KeyCode::Esc));
    assert_eq!(c.screen(), &Screen::Keys);
}

#[test]
fn the_nodes_view_picks_a_node_to_filter_by() {
    let mut c = busy_console();
    c.press(&key(KeyCode::Tab));
    assert_eq!(c.screen(), &Screen::Nodes);
    press(&mut c, &[KeyCode::Down, KeyCode::Down, KeyCode::Enter]);
    assert_eq!(c.screen(), &Screen::Keys);
    assert_eq!(c.filter().node(), Some(node_address(2).as_str()));
    assert!(c.rows().iter().all(|(id, _)| id.node == node_address(2)));
    c.press(&key(KeyCode::Char('?')));
    assert_eq!(c.screen(), &Screen::Help);
    c.press(&key(KeyCode::Char('?')));
    assert_eq!(c.screen(), &Screen::Keys);
    c.press(&key(KeyCode::Char('q')));
    assert!(c.wants_to_quit());
}

#[test]
fn a_count_limits_the_rows_after_filtering() {
    let mut c = crate::fixtures::console_of(Some(3));
    c.apply(busy_snapshot());
    assert_eq!(c.rows().len(), 3);
    type_text(&mut c, "/tenant:*1?");
    assert_eq!(listed(&c), [long_key(10), long_key(11)]);
}
