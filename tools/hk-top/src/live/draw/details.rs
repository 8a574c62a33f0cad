//! One key's details: its whole name (wrapped, never shortened), where it
//! lives (database, node, cluster slot), its rates now and a chart of its
//! reads and writes (and misses, where its node counts them) over the
//! history kept (ten minutes at one refresh a second).

use super::{bold, sort_mark};
use crate::export::snapshot::printable_key;
use crate::live::columns::rate_text;
use crate::live::console::{Console, HISTORY_SPAN};
use crate::reading::hot_keys::KeyId;
use crate::reading::metric::{error_bar, Bounds, Metric, Rates};
use crate::reading::senders::summary;
use heavykeeper_tracker::hash_slot::{hash_slot, hash_tag};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Style};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Block, Borders, Chart, Dataset, GraphType, Paragraph, Wrap};
use ratatui::Frame;

/// One colour per metric, in [`Metric::ALL`]'s order: a metric keeps its
/// colour whichever others are drawn beside it.
const COLOURS: [Color; 4] = [Color::Cyan, Color::Magenta, Color::Yellow, Color::Green];

fn colour(metric: Metric) -> Color {
    // Cycled, as a metric past the colours would start them again.
    (Metric::ALL.into_iter().zip(COLOURS.into_iter().cycle()))
        .find(|&(m, _)| m == metric)
        .map_or(COLOURS[0], |(_, colour)| colour)
}

pub fn draw(frame: &mut Frame, area: Rect, console: &Console, id: &KeyId) {
    let facts = facts(console, id);
    // The facts wrap: let them take what they need, the chart the rest.
    let needed = wrapped_height(&facts, area.width);
    let [top, chart] =
        Layout::vertical([Constraint::Length(needed), Constraint::Min(0)]).areas(area);
    frame.render_widget(Paragraph::new(facts).wrap(Wrap { trim: false }), top);
    draw_chart(frame, chart, console, id);
}

fn field(name: &str, value: String) -> Line<'static> {
    Line::from(vec![
        Span::styled(format!(" {name:<9}"), bold()),
        Span::raw(value),
    ])
}

fn facts(console: &Console, id: &KeyId) -> Vec<Line<'static>> {
    let text = printable_key(&id.key);
    let encoding = if std::str::from_utf8(&id.key).is_ok() && text.as_bytes() == id.key {
        format!("{} bytes", id.key.len())
    } else {
        format!(
            "{} bytes, not printable text: \\xNN is a byte",
            id.key.len()
        )
    };
    let node = (console.snapshot().nodes.iter()).find(|n| n.address == id.node);
    let role = match node {
        Some(n) if n.primary => " (primary)",
        Some(_) => " (replica)",
        None => "",
    };
    let mut lines = vec![
        field("KEY", text),
        field("", encoding),
        field("DB", id.db.to_string()),
        field("NODE", format!("{}{role}", id.node)),
    ];
    if node.is_some_and(|n| n.cluster) {
        let tag = hash_tag(&id.key).map_or(String::new(), |t| {
            format!(" (hash tag {{{}}})", printable_key(t))
        });
        lines.push(field("SLOT", format!("{}{tag}", hash_slot(&id.key))));
    }
    lines.push(rates_line(console, id));
    if let Some(senders) = console.snapshot().senders.get(id) {
        let of = console.rates_of(id).map_or(0.0, |(_, rates)| rates.total());
        lines.push(field("CLIENTS", summary(senders, of)));
    }
    lines.push(Line::raw(""));
    lines
}

fn rates_line(console: &Console, id: &KeyId) -> Line<'static> {
    let Some((rank, rates)) = console.rates_of(id) else {
        return field(
            "NOW",
            "not listed now: it left the tracker's list, or the filters hide it".to_string(),
        );
    };
    let mut spans = vec![Span::styled(format!(" {:<9}", "NOW"), bold())];
    for metric in console.metrics() {
        let figure = if console.snapshot().counts(&id.node, metric) {
            with_bar(rates.get(metric), rates.bounds(metric))
        } else {
            "-".to_string()
        };
        spans.push(Span::raw(format!("{} {figure}   ", metric.title())));
    }
    let order = console.order();
    spans.push(Span::raw(format!(
        "TOTAL/S {}   #{} of {} by {} {}",
        with_bar(rates.total(), rates.total_bounds()),
        rank + 1,
        console.rows().len(),
        order.key.name(),
        sort_mark(order.key, order.reversed)
    )));
    Line::from(spans)
}

/// A rate with its 95% bounds and error bar: `1.2k (1.1k–1.3k, ±9%)`.
fn with_bar(per_second: f64, bounds: Option<Bounds>) -> String {
    match (bounds, error_bar(per_second, bounds)) {
        (Some(b), Some(bar)) => format!(
            "{} ({}–{}, {bar})",
            rate_text(per_second),
            rate_text(b.low),
            rate_text(b.high)
        ),
        _ => rate_text(per_second),
    }
}

/// Lines `lines` take once wrapped at `width` (a close upper bound).
fn wrapped_height(lines: &[Line], width: u16) -> u16 {
    let width = (width as usize).max(1);
    lines
        .iter()
        .map(|l| l.width().div_ceil(width).max(1) as u16)
        .sum()
}

fn draw_chart(frame: &mut Frame, area: Rect, console: &Console, id: &KeyId) {
    // The time hk-top has been watching, up to the history's span.
    let samples = (console.refreshes() as usize).clamp(2, HISTORY_SPAN);
    let history = console.history().last(id, samples);
    let seconds = console.interval_ms() as f64 / 1000.0;
    // Only what the key's node counts: a line at 0 would say "no misses".
    let metrics: Vec<Metric> = Metric::ALL
        .into_iter()
        .filter(|&m| console.snapshot().counts(&id.node, m))
        .collect();
    let series: Vec<Vec<(f64, f64)>> = metrics
        .iter()
        .map(|&m| points(&history, m, seconds))
        .collect();
    let rates = history
        .iter()
        .flat_map(|r| metrics.iter().map(|&m| r.get(m)));
    let peak = rates.fold(0.0, f64::max);
    let datasets = metrics
        .iter()
        .zip(&series)
        .map(|(&metric, data)| {
            Dataset::default()
                .name(metric.title())
                .marker(Marker::Braille)
                .graph_type(GraphType::Line)
                .style(Style::default().fg(colour(metric)))
                .data(data)
        })
        .collect();
    let span = (samples - 1) as f64 * seconds;
    let title = format!(
        " the last {}: peak {}/s ",
        duration_text(span),
        rate_text(peak)
    );
    let top = if peak > 0.0 { peak * 1.1 } else { 1.0 };
    let chart = Chart::new(datasets)
        // The legend (which colour is which) on any chart of a few lines.
        .hidden_legend_constraints((Constraint::Ratio(1, 2), Constraint::Ratio(1, 2)))
        .block(Block::default().borders(Borders::TOP).title(title))
        .x_axis(
            Axis::default()
                .bounds([-span, 0.0])
                .labels([format!("-{}", duration_text(span)), "now".to_string()]),
        )
        .y_axis(
            Axis::default()
                .bounds([0.0, top])
                .labels(["0".to_string(), rate_text(top)]),
        );
    frame.render_widget(chart, area);
}

/// (seconds before now, rate) for one metric.
fn points(history: &[Rates], metric: Metric, seconds: f64) -> Vec<(f64, f64)> {
    let ago = |i: usize| -((history.len() - 1 - i) as f64) * seconds;
    let points = history.iter().enumerate();
    points.map(|(i, r)| (ago(i), r.get(metric))).collect()
}

fn duration_text(seconds: f64) -> String {
    if seconds >= 120.0 {
        format!("{:.0} min", seconds / 60.0)
    } else {
        format!("{seconds:.0} s")
    }
}
