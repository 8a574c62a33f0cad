//! The help screen: every key, from the one table the keys are read from,
//! in two columns (so that all of it fits 80×24), then what the filters and
//! the shortened names mean.

use super::bold;
use crate::live::keymap::{Binding, BINDINGS};
use crate::reading::sort::SortKey;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Cell, Paragraph, Row, Table, Wrap};
use ratatui::Frame;

const LABEL_WIDTH: u16 = 8;

pub fn draw(frame: &mut Frame, area: Rect) {
    let half = BINDINGS.len().div_ceil(2);
    let [keys, notes] =
        Layout::vertical([Constraint::Length(half as u16 + 1), Constraint::Min(0)]).areas(area);
    let rows = BINDINGS.iter().take(half).enumerate().map(|(i, left)| {
        let mut cells: Vec<Cell> = cells_of(left).into();
        if let Some(right) = BINDINGS.get(half + i) {
            cells.extend(cells_of(right));
        }
        Row::new(cells)
    });
    let does = area.width.saturating_sub(2 * LABEL_WIDTH + 4) / 2;
    let widths = [LABEL_WIDTH, does, LABEL_WIDTH, does].map(Constraint::Length);
    frame.render_widget(Table::new(rows, widths).column_spacing(1), keys);
    frame.render_widget(
        Paragraph::new(notes_text()).wrap(Wrap { trim: false }),
        notes,
    );
}

fn cells_of(binding: &Binding) -> [Cell<'static>; 2] {
    [
        Cell::from(format!(" {}", binding.label())).style(bold()),
        Cell::from(binding.does),
    ]
}

fn notes_text() -> Vec<Line<'static>> {
    let sort_keys: Vec<&str> = SortKey::all().into_iter().map(SortKey::name).collect();
    vec![
        Line::raw(format!(
            " Sort keys (--sort, < >): {} (misses: a column once a node counts them, track-misses yes). Patterns (/, --match) are SCAN MATCH's, on the key's bytes: * ? [abc] [^a] [a-z] \\x; braces are literal.",
            sort_keys.join(", ")
        )),
        Line::raw(" A name too long for its column loses its middle (user:ses…:000042): Enter shows it whole. Esc or ? closes this help."),
    ]
}
