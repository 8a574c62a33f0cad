//! The live view drawn from the [`Console`] alone: a pure function of the
//! state, so that the tests draw it on ratatui's test backend at any size.
//!
//! Two status lines (what is shown, and how it is sorted and filtered), the
//! screen's body, and a line for the keys (or the filter being typed).

mod clients;
mod details;
mod help;
mod key_table;
mod nodes;

use crate::live::console::{Console, Screen};
use crate::live::keymap::BINDINGS;
use crate::reading::sort::SortKey;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

/// Lines above and below the body.
const STATUS_LINES: u16 = 2;
const FOOTER_LINES: u16 = 1;

pub fn draw(frame: &mut Frame, console: &Console) {
    let [status, body, footer] = Layout::vertical([
        Constraint::Length(STATUS_LINES),
        Constraint::Min(0),
        Constraint::Length(FOOTER_LINES),
    ])
    .areas(frame.area());
    frame.render_widget(Paragraph::new(status_lines(console)), status);
    match console.screen() {
        Screen::Keys => key_table::draw(frame, body, console),
        Screen::Details(id) => details::draw(frame, body, console, id),
        Screen::Nodes => nodes::draw(frame, body, console),
        Screen::Clients => clients::draw(frame, body, console),
        Screen::Help => help::draw(frame, body),
    }
    frame.render_widget(Paragraph::new(footer_line(console)), footer);
}

/// The key rows a terminal `height` lines high has room for.
pub fn table_rows(height: u16) -> usize {
    // The table's header takes a line of the body.
    height.saturating_sub(STATUS_LINES + FOOTER_LINES + 1) as usize
}

fn bold() -> Style {
    Style::default().add_modifier(Modifier::BOLD)
}

fn status_lines(console: &Console) -> Vec<Line<'static>> {
    let snapshot = console.snapshot();
    let nodes = snapshot.nodes.len();
    let mut first = vec![
        Span::styled(" hk-top ", bold().add_modifier(Modifier::REVERSED)),
        Span::raw(format!(
            " {nodes} node{}",
            if nodes == 1 { "" } else { "s" }
        )),
    ];
    if !snapshot.errors.is_empty() {
        first.push(Span::styled(
            format!(", {} not answering", snapshot.errors.len()),
            Style::default().fg(Color::Red).add_modifier(Modifier::BOLD),
        ));
    }
    first.push(Span::raw(format!(
        "   {} of {} keys   every {}",
        console.rows().len(),
        snapshot.keys.len(),
        interval_text(console.interval_ms())
    )));
    if let Some(balance) = balance_text(snapshot) {
        first.push(Span::raw(balance));
    }
    if console.is_paused() {
        first.push(Span::styled(
            "   PAUSED (Space resumes)",
            Style::default()
                .fg(Color::Yellow)
                .add_modifier(Modifier::BOLD),
        ));
    }
    vec![Line::from(first), order_and_filter_line(console)]
}

/// The primaries' shares of the traffic, at a glance (the nodes view, `n`,
/// has the figures): `   shares 127.0.0.1:7000 60% · ...`, for a cluster.
fn balance_text(snapshot: &crate::reading::hot_keys::Snapshot) -> Option<String> {
    let loads = crate::reading::balance::node_loads(snapshot);
    let primaries: Vec<String> = (loads.iter())
        .filter(|l| l.node.primary && l.node.cluster)
        .filter_map(|l| Some(format!("{} {:.0}%", l.node.address, l.share? * 100.0)))
        .collect();
    (primaries.len() > 1).then(|| format!("   shares {}", primaries.join(" · ")))
}

fn order_and_filter_line(console: &Console) -> Line<'static> {
    let order = console.order();
    let filter = console.filter();
    let key_pattern = filter
        .key_pattern()
        .map_or("*".to_string(), crate::export::snapshot::printable_key);
    let mark = sort_mark(order.key, order.reversed);
    let sort = format!("{} {mark}", order.key.name());
    let db = filter.db().map_or("all".to_string(), |db| db.to_string());
    let mut parts = vec![
        Span::raw(" sort: "),
        Span::styled(sort, bold()),
        Span::raw("   match: "),
        Span::styled(key_pattern, bold()),
        Span::raw("   node: "),
        Span::styled(filter.node().unwrap_or("all").to_string(), bold()),
        Span::raw("   db: "),
        Span::styled(db, bold()),
    ];
    if let Some(limit) = console.limit() {
        parts.push(Span::raw(format!("   top {limit}")));
    }
    Line::from(parts)
}

/// ▼ when the top row is the highest (rates) or ▲ when it is the first
/// (names), flipped when reversed.
pub fn sort_mark(key: SortKey, reversed: bool) -> char {
    let descending = matches!(key, SortKey::Total | SortKey::Rate(_));
    if descending != reversed {
        '▼'
    } else {
        '▲'
    }
}

fn interval_text(ms: u64) -> String {
    if ms % 1000 == 0 {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}

fn footer_line(console: &Console) -> Line<'static> {
    if let Some(prompt) = console.prompt() {
        return Line::from(vec![
            Span::styled(format!(" {}: ", prompt.field.label()), bold()),
            Span::raw(prompt.text.clone()),
            Span::styled("▏", Style::default().add_modifier(Modifier::SLOW_BLINK)),
            Span::styled(
                "   Enter keeps it, Esc puts it back",
                Style::default().fg(Color::DarkGray),
            ),
        ]);
    }
    if let Some(message) = console.message() {
        return Line::styled(format!(" {message}"), Style::default().fg(Color::Yellow));
    }
    let mut spans = vec![Span::raw(" ")];
    for binding in BINDINGS {
        if let Some(word) = binding.footer {
            let label = binding.label();
            let key = label.split(' ').next().unwrap_or_default().to_string();
            spans.push(Span::styled(key, bold()));
            spans.push(Span::raw(format!(" {word}  ")));
        }
    }
    Line::from(spans)
}

/// A row of the body that says there is nothing to show, and why.
fn notice(frame: &mut Frame, area: Rect, text: String) {
    frame.render_widget(
        Paragraph::new(Line::styled(text, Style::default().fg(Color::DarkGray))),
        area,
    );
}

#[cfg(test)]
mod tests;
