//! Who sends the most: each node's hottest clients (by host), their key
//! accesses per second and the rate's 95% bounds, whatever keys they use;
//! a node that cannot say (Redis 7.0) is a line that says so.

use super::bold;
use crate::export::snapshot::printable_key;
use crate::live::columns::rate_text;
use crate::live::console::Console;
use ratatui::layout::{Constraint, Rect};
use ratatui::widgets::{Row, Table};
use ratatui::Frame;

pub fn draw(frame: &mut Frame, area: Rect, console: &Console) {
    let snapshot = console.snapshot();
    let mut rows = Vec::new();
    for node in &snapshot.nodes {
        let clients = snapshot
            .hot_clients
            .iter()
            .find(|(n, _)| *n == node.address);
        let Some((_, clients)) = clients else {
            rows.push(Row::new(vec![
                node.address.clone(),
                "(cannot say: Redis 7.2+ or Valkey names clients)".to_string(),
            ]));
            continue;
        };
        for sender in clients {
            rows.push(Row::new(vec![
                node.address.clone(),
                printable_key(&sender.who),
                rate_text(sender.rate),
                format!("{} .. {}", rate_text(sender.low), rate_text(sender.high)),
            ]));
        }
    }
    let widths = [
        Constraint::Length(22),
        Constraint::Min(16),
        Constraint::Length(12),
        Constraint::Length(26),
    ];
    let header = Row::new(["NODE", "CLIENT (HOST)", "KEYS/S", "95% BOUNDS"]).style(bold());
    frame.render_widget(Table::new(rows, widths).header(header), area);
}
