//! The live view: a table refreshed every interval, with a sparkline of
//! each key's total rate over the last minute. `q`, Esc or Ctrl-C quits.

use crate::hot_keys::{snapshot, KeyId};
use crate::nodes::Node;
use crate::render::{node_width, printable_key, sparkline};
use crate::Options;
use crossterm::event::{self, Event, KeyCode, KeyModifiers};
use ratatui::layout::Constraint;
use ratatui::style::{Modifier, Style};
use ratatui::widgets::{Block, Borders, Row, Table};
use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

/// A minute of samples at one per refresh.
const HISTORY: usize = 60;

pub fn run(o: &Options, nodes: &[Node]) -> std::io::Result<()> {
    let mut terminal = ratatui::init();
    let result = view(&mut terminal, o, nodes);
    ratatui::restore();
    result
}

fn view(
    terminal: &mut ratatui::DefaultTerminal,
    o: &Options,
    nodes: &[Node],
) -> std::io::Result<()> {
    let mut history: HashMap<KeyId, VecDeque<f64>> = HashMap::new();
    let interval = Duration::from_millis(o.interval_ms);
    let node_column = node_width(nodes.iter().map(|n| n.address.as_str())) as u16;
    loop {
        let started = Instant::now();
        let snap = snapshot(&o.access, nodes, o.count);
        let now: HashMap<&KeyId, f64> = snap.keys.iter().map(|(id, r)| (id, r.total())).collect();
        for (id, _) in &snap.keys {
            history.entry(id.clone()).or_default();
        }
        for (id, samples) in history.iter_mut() {
            samples.push_back(now.get(id).copied().unwrap_or(0.0));
            if samples.len() > HISTORY {
                samples.pop_front();
            }
        }
        history.retain(|_, samples| samples.iter().any(|&v| v > 0.0));
        let rows: Vec<Row> = snap
            .keys
            .iter()
            .map(|(id, rates)| {
                let line = history
                    .get(id)
                    .map(|s| sparkline(s.iter().copied()))
                    .unwrap_or_default();
                Row::new(vec![
                    printable_key(&id.key),
                    id.db.to_string(),
                    id.node.clone(),
                    format!("{:.1}", rates.reads_per_second),
                    format!("{:.1}", rates.writes_per_second),
                    line,
                ])
            })
            .collect();
        let title = format!(
            " hk-top: {} node(s), hottest {} keys; {} ",
            nodes.len(),
            o.count,
            snap.errors
                .first()
                .map_or("q quits".to_string(), |(n, e)| format!("{n}: {e}"))
        );
        terminal.draw(|frame| {
            let table = Table::new(
                rows,
                [
                    Constraint::Min(20),
                    Constraint::Length(3),
                    Constraint::Length(node_column),
                    Constraint::Length(10),
                    Constraint::Length(10),
                    Constraint::Length(HISTORY as u16),
                ],
            )
            .header(
                Row::new(["KEY", "DB", "NODE", "READS/S", "WRITES/S", "LAST MINUTE"])
                    .style(Style::default().add_modifier(Modifier::BOLD)),
            )
            .block(Block::default().borders(Borders::ALL).title(title));
            frame.render_widget(table, frame.area());
        })?;
        while let Some(left) = interval.checked_sub(started.elapsed()) {
            if event::poll(left)? {
                if let Event::Key(key) = event::read()? {
                    let ctrl_c = key.modifiers.contains(KeyModifiers::CONTROL)
                        && key.code == KeyCode::Char('c');
                    if ctrl_c || matches!(key.code, KeyCode::Char('q') | KeyCode::Esc) {
                        return Ok(());
                    }
                }
            }
        }
    }
}
