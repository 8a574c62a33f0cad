//! The keys table: one row per key listed, columns as wide as the terminal
//! allows (see `columns`), names too long for theirs shortened in the
//! middle (see `elide`).

use super::{bold, notice, sort_mark};
use crate::export::snapshot::{printable_key, sparkline};
use crate::live::columns::{rate_text, share_width, Column, Wants, Widths};
use crate::live::console::Console;
use crate::live::elide::{elide_middle, width};
use crate::reading::hot_keys::KeyId;
use crate::reading::metric::{error_bar, Rates};
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::Text;
use ratatui::widgets::{Cell, Row, Table, TableState};
use ratatui::Frame;

pub fn draw(frame: &mut Frame, area: Rect, console: &Console) {
    let rows = console.rows();
    if rows.is_empty() {
        notice(frame, area, empty_reason(console));
        return;
    }
    let widths = share_width(area.width as usize, &wants(console));
    let columns: Vec<Column> = Column::shown(&console.metrics())
        .into_iter()
        .filter(|&c| widths.of(c) > 0)
        .collect();
    let header = Row::new(columns.iter().map(|&c| header_cell(c, &widths, console)));
    let row = |(id, rates): &(KeyId, Rates)| {
        Row::new(
            columns
                .iter()
                .map(|&c| cell(c, id, rates, &widths, console)),
        )
    };
    let body: Vec<Row> = rows.iter().skip(console.first_row()).map(row).collect();
    let constraints = columns
        .iter()
        .map(|&c| Constraint::Length(widths.of(c) as u16));
    let table = Table::new(body, constraints)
        .header(header)
        .column_spacing(1)
        .row_highlight_style(Style::default().add_modifier(Modifier::REVERSED));
    let selected = console
        .selected_row()
        .map(|row| row.saturating_sub(console.first_row()));
    let mut state = TableState::default().with_selected(selected);
    frame.render_stateful_widget(table, area, &mut state);
}

/// What the columns would like: every listed key, every node (so that the
/// NODE column does not change width as keys come and go).
fn wants(console: &Console) -> Wants {
    let (rows, nodes) = (console.rows(), &console.snapshot().nodes);
    let widest = |widths: &mut dyn Iterator<Item = usize>| widths.max().unwrap_or(0);
    Wants {
        key: widest(&mut rows.iter().map(|(id, _)| width(&printable_key(&id.key)))),
        node: widest(&mut nodes.iter().map(|n| width(&n.address))),
        db: widest(&mut rows.iter().map(|(id, _)| id.db.to_string().len())).max(1),
        metrics: console.metrics().len(),
    }
}

/// The title, with the sort mark after it if the rows are sorted by this
/// column; numbers' titles right-aligned over them.
fn header_cell(column: Column, widths: &Widths, console: &Console) -> Cell<'static> {
    let order = console.order();
    let sorted = column.sort_key() == Some(order.key);
    let mark = if sorted {
        sort_mark(order.key, order.reversed)
    } else {
        ' '
    };
    let title = match column {
        Column::Rate(_) | Column::Total | Column::Bound => {
            format!("{:>w$}{mark}", column.title(), w = widths.of(column) - 1)
        }
        _ => format!("{}{mark}", column.title()),
    };
    let style = if sorted {
        bold().add_modifier(Modifier::UNDERLINED)
    } else {
        bold()
    };
    Cell::from(title).style(style)
}

fn cell(
    column: Column,
    id: &KeyId,
    rates: &Rates,
    widths: &Widths,
    console: &Console,
) -> Cell<'static> {
    let text = match column {
        Column::Key => elide_middle(&printable_key(&id.key), widths.key),
        Column::Db => id.db.to_string(),
        Column::Node => elide_middle(&id.node, widths.node),
        // A figure the key's node does not count (misses where
        // `track-misses` is off, beside a node where it is on): unknown,
        // so not a 0.
        Column::Rate(metric) if !console.snapshot().counts(&id.node, metric) => {
            return right_aligned("-", widths.rate)
        }
        Column::Rate(metric) => return number(rates.get(metric), widths.rate),
        Column::Total => return number(rates.total(), widths.rate),
        Column::Bound => {
            let bar = error_bar(rates.total(), rates.total_bounds());
            return right_aligned(bar.as_deref().unwrap_or("-"), widths.bound);
        }
        Column::Trend => {
            let totals = console.history().last(id, widths.trend);
            sparkline(totals.iter().map(Rates::total))
        }
    };
    Cell::from(text)
}

/// Numbers right-aligned under their titles.
fn number(per_second: f64, column: usize) -> Cell<'static> {
    right_aligned(&rate_text(per_second), column)
}

/// Right-aligned, one space kept on the right for the title's sort mark.
fn right_aligned(text: &str, column: usize) -> Cell<'static> {
    Cell::from(Text::raw(format!("{text:>w$} ", w = column - 1)))
}

fn empty_reason(console: &Console) -> String {
    let snapshot = console.snapshot();
    if console.refreshes() == 0 {
        format!(
            " waiting for the first answer from {} node(s)…",
            snapshot.nodes.len()
        )
    } else if !snapshot.keys.is_empty() {
        " no key matches the filters (c clears them)".to_string()
    } else if let Some((node, error)) = snapshot.errors.first() {
        format!(" no hot keys: {node}: {error} (Tab: every node)")
    } else {
        " no hot keys yet: is tracking on? (CONFIG SET heavykeeper.track yes)".to_string()
    }
}
