//! The nodes view: each node's hot traffic and its share of all nodes'
//! (the cluster's balance at a glance); a node that does not answer is a
//! row that says so, in red, and its reason is written whole below the
//! table (a table cell would cut it on a narrow terminal).

use super::bold;
use crate::live::columns::{rate_text, RATE_WIDTH};
use crate::live::console::Console;
use crate::live::elide::{elide_middle, width};
use crate::reading::balance::{node_loads, NodeLoad};
use crate::reading::metric::Metric;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Cell, Paragraph, Row, Table, TableState, Wrap};
use ratatui::Frame;

const ROLE_WIDTH: usize = 7;
const KEYS_WIDTH: usize = 5;

pub fn draw(frame: &mut Frame, area: Rect, console: &Console) {
    let loads = node_loads(console.snapshot());
    let widths = loads.iter().map(|l| width(&l.node.address));
    let node_width = widths.fold("NODE".len(), usize::max);
    let rate_width = RATE_WIDTH + 2;
    let metrics = console.metrics();
    let rates = metrics.len() + 1;
    let used = node_width + ROLE_WIDTH + KEYS_WIDTH + rates * rate_width + rates + 3;
    let share_width = (area.width as usize).saturating_sub(used).max(8);
    let mut titles = vec!["NODE", "ROLE", "KEYS"];
    titles.extend(metrics.iter().map(|m| m.title()));
    titles.extend(["TOTAL/S", "SHARE"]);
    let rows: Vec<Row> = loads
        .iter()
        .map(|load| node_row(load, console, &metrics, (rate_width, share_width)))
        .collect();
    let mut widths = vec![node_width, ROLE_WIDTH, KEYS_WIDTH];
    widths.extend(std::iter::repeat_n(rate_width, rates));
    widths.push(share_width);
    let table = Table::new(
        rows,
        widths.into_iter().map(|w| Constraint::Length(w as u16)),
    )
    .header(Row::new(titles).style(bold()))
    .column_spacing(1)
    .row_highlight_style(Style::default().add_modifier(Modifier::REVERSED));
    let [table_area, reasons_area] = Layout::vertical([
        Constraint::Length(loads.len() as u16 + 2),
        Constraint::Min(0),
    ])
    .areas(area);
    let mut state = TableState::default().with_selected(Some(console.node_row()));
    frame.render_stateful_widget(table, table_area, &mut state);
    let reasons: Vec<Line> = loads
        .iter()
        .filter_map(|l| {
            let error = l.error.as_ref()?;
            Some(Line::styled(
                format!("{}: {error}", l.node.address),
                Style::default().fg(Color::Red),
            ))
        })
        .collect();
    frame.render_widget(
        Paragraph::new(reasons).wrap(Wrap { trim: false }),
        reasons_area,
    );
}

/// `widths`: a rate's column, the share's.
fn node_row(
    load: &NodeLoad,
    console: &Console,
    metrics: &[Metric],
    (rate_width, share): (usize, usize),
) -> Row<'static> {
    let role = if load.node.primary {
        "primary"
    } else {
        "replica"
    };
    let mut cells = vec![
        Cell::from(load.node.address.clone()),
        Cell::from(role),
        Cell::from(format!("{:>w$}", load.keys, w = KEYS_WIDTH)),
    ];
    // A node that did not answer, or does not count this metric (misses
    // with `track-misses` off): unknown, so not a 0.
    let snapshot = console.snapshot();
    let figures = metrics
        .iter()
        .map(|&m| {
            snapshot
                .counts(&load.node.address, m)
                .then(|| load.rates.get(m))
        })
        .chain([Some(load.rates.total())]);
    for figure in figures {
        let text = match figure {
            Some(figure) if load.error.is_none() => rate_text(figure),
            _ => "-".to_string(),
        };
        cells.push(Cell::from(format!("{text:>w$}", w = rate_width)));
    }
    cells.push(share_cell(load, share));
    let row = Row::new(cells);
    if console.filter().selects_node(&load.node.address) {
        row
    } else {
        row.style(Style::default().fg(Color::DarkGray))
    }
}

/// A bar and a percentage, or why the node did not answer.
fn share_cell(load: &NodeLoad, columns: usize) -> Cell<'static> {
    if load.error.is_some() {
        let text = elide_middle("NOT ANSWERING", columns);
        return Cell::from(text)
            .style(Style::default().fg(Color::Red).add_modifier(Modifier::BOLD));
    }
    let Some(share) = load.share else {
        return Cell::from("no traffic");
    };
    let percent = format!(" {:5.1}%", share * 100.0);
    let bar_room = columns.saturating_sub(percent.len());
    let filled = (share * bar_room as f64).round() as usize;
    let bar = "█".repeat(filled) + &"░".repeat(bar_room - filled);
    Cell::from(bar + &percent)
}
