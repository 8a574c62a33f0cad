//! A picture of the dashboard drawn from what Prometheus answered to each
//! panel's queries, laid out on the dashboard's own grid (24 columns), with
//! the `plotters` crate: not Grafana's rendering, but Grafana's data.

use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};
use std::path::Path;

pub type Drawing = Result<(), Box<dyn std::error::Error>>;

/// Pixels per grid column and per grid row.
const COLUMN: i32 = 75;
const ROW: i32 = 32;
const HEADER: i32 = 44;

/// One series over time: its legend and (seconds, value) points.
pub struct Line {
    pub legend: String,
    pub points: Vec<(f64, f64)>,
}

pub enum PanelData {
    /// A time series panel; `percent`: values are ratios.
    Lines { lines: Vec<Line>, percent: bool },
    /// A table: its columns and rows of text.
    Table {
        columns: Vec<String>,
        rows: Vec<Vec<String>>,
    },
    /// A heat map: each row's label (bottom first) and its values over
    /// the same times.
    Heatmap {
        rows: Vec<(String, Vec<(f64, f64)>)>,
    },
    /// A state timeline: one row per series, 1 up and 0 down.
    States { lines: Vec<Line> },
}

pub struct Panel {
    pub title: String,
    /// x, y, w, h in grid units.
    pub grid: (i32, i32, i32, i32),
    pub data: PanelData,
}

const FONTS: [&str; 2] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
];

/// Plotters draws no text without a font; Debian's fonts-dejavu-core has one.
pub fn load_font() -> bool {
    FONTS.iter().any(|path| {
        std::fs::read(path)
            .ok()
            .map(|bytes| &*Box::leak(bytes.into_boxed_slice()))
            .is_some_and(|bytes| register_font("sans-serif", FontStyle::Normal, bytes).is_ok())
    })
}

const PALETTE: [RGBColor; 8] = [
    RGBColor(115, 191, 105),
    RGBColor(242, 204, 12),
    RGBColor(87, 148, 242),
    RGBColor(255, 120, 10),
    RGBColor(242, 73, 92),
    RGBColor(184, 119, 217),
    RGBColor(31, 120, 193),
    RGBColor(112, 219, 237),
];
const BACKGROUND: RGBColor = RGBColor(17, 18, 23);
const PANEL: RGBColor = RGBColor(24, 27, 31);
const TEXT: RGBColor = RGBColor(204, 204, 220);
const GRID: RGBColor = RGBColor(60, 63, 70);

pub fn draw(path: &Path, title: &str, panels: &[Panel]) -> Drawing {
    let bottoms = panels.iter().map(|p| p.grid.1 + p.grid.3);
    let rows = bottoms.max().unwrap_or(1);
    let size = ((24 * COLUMN) as u32, (HEADER + rows * ROW) as u32);
    let root = BitMapBackend::new(path, size).into_drawing_area();
    root.fill(&BACKGROUND)?;
    root.draw_text(title, &text_style(22), (12, 12))?;
    for panel in panels {
        let (x, y, w, h) = panel.grid;
        let area = root.clone().shrink(
            (x * COLUMN + 3, HEADER + y * ROW + 3),
            ((w * COLUMN - 6) as u32, (h * ROW - 6) as u32),
        );
        area.fill(&PANEL)?;
        area.draw_text(&panel.title, &text_style(15), (8, 6))?;
        let body = area.margin(26, 6, 6, 6);
        match &panel.data {
            PanelData::Lines { lines, percent } => lines_panel(&body, lines, *percent)?,
            PanelData::Table { columns, rows } => table_panel(&body, columns, rows)?,
            PanelData::Heatmap { rows } => heatmap_panel(&body, rows)?,
            PanelData::States { lines } => states_panel(&body, lines)?,
        }
    }
    root.present()?;
    Ok(())
}

fn text_style(size: u32) -> TextStyle<'static> {
    ("sans-serif", size).into_font().color(&TEXT)
}

type Area<'a> = DrawingArea<BitMapBackend<'a>, plotters::coord::Shift>;

/// The first and last time of `series`' points.
fn time_range<'a>(series: impl Iterator<Item = &'a Vec<(f64, f64)>>) -> (f64, f64) {
    let times = series.flat_map(|points| points.iter().map(|p| p.0));
    let (lo, hi) = times.fold((f64::MAX, f64::MIN), |(lo, hi), t| (lo.min(t), hi.max(t)));
    if lo < hi {
        (lo, hi)
    } else {
        (0.0, 1.0)
    }
}

fn lines_panel(area: &Area, lines: &[Line], percent: bool) -> Drawing {
    // Hottest first: the legend has room for the first few.
    let peak = |l: &Line| l.points.iter().map(|p| p.1).fold(0.0, f64::max);
    let mut lines: Vec<&Line> = lines.iter().collect();
    lines.sort_by(|a, b| peak(b).total_cmp(&peak(a)));
    let (start, end) = time_range(lines.iter().map(|l| &l.points));
    let values = lines.iter().flat_map(|l| l.points.iter().map(|p| p.1));
    let top = values.fold(0.0, f64::max);
    let top = if percent { top.max(0.01) } else { top.max(1.0) } * 1.1;
    let (plot, legend) = area.split_vertically(area.dim_in_pixel().1 as i32 - 18);
    let mut chart = ChartBuilder::on(&plot)
        .x_label_area_size(16)
        .y_label_area_size(48)
        .build_cartesian_2d(0.0..(end - start), 0.0..top)?;
    chart
        .configure_mesh()
        .axis_style(GRID)
        .light_line_style(BACKGROUND)
        .bold_line_style(GRID)
        .label_style(text_style(11))
        .x_labels(4)
        .y_labels(4)
        .x_label_formatter(&|s| format!("{s:.0} s"))
        .y_label_formatter(&|v| value(*v, percent))
        .draw()?;
    for (i, line) in lines.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let points = line.points.iter().map(|&(t, v)| (t - start, v));
        chart.draw_series(LineSeries::new(points, color.stroke_width(2)))?;
    }
    legend_row(&legend, lines.iter().map(|l| l.legend.as_str()))
}

/// The series' names in their colours, as many as fit on one line.
fn legend_row<'a>(area: &Area, names: impl Iterator<Item = &'a str>) -> Drawing {
    let width = area.dim_in_pixel().0 as i32;
    let mut x = 4;
    for (i, name) in names.enumerate() {
        let room = 14 + 7 * name.chars().count() as i32;
        if x + room > width {
            break;
        }
        let color = PALETTE[i % PALETTE.len()];
        area.draw(&Rectangle::new([(x, 6), (x + 10, 10)], color.filled()))?;
        area.draw_text(name, &text_style(11), (x + 13, 2))?;
        x += room + 8;
    }
    Ok(())
}

/// A rate or a ratio as a person reads it.
pub fn value(v: f64, percent: bool) -> String {
    match (percent, v.abs()) {
        (true, a) if a < 0.1 => format!("{:.1}%", 100.0 * v),
        (true, _) => format!("{:.0}%", 100.0 * v),
        (false, a) if a >= 1000.0 => format!("{:.1}k", v / 1000.0),
        (false, a) if a < 10.0 => format!("{v:.1}"),
        (false, _) => format!("{v:.0}"),
    }
}

fn table_panel(area: &Area, columns: &[String], rows: &[Vec<String>]) -> Drawing {
    let width = area.dim_in_pixel().0 as i32;
    // The first column (the key) takes a third, the rest share the others.
    let first = width / 3;
    let other = (width - first) / (columns.len() as i32 - 1).max(1);
    let x_of = |i: usize| {
        if i == 0 {
            4
        } else {
            first + (i as i32 - 1) * other
        }
    };
    for (i, column) in columns.iter().enumerate() {
        area.draw_text(column, &text_style(13).color(&PALETTE[2]), (x_of(i), 2))?;
    }
    let height = area.dim_in_pixel().1 as i32;
    for (r, row) in rows.iter().enumerate() {
        let y = 22 + r as i32 * 19;
        if y + 19 > height {
            break;
        }
        if r % 2 == 0 {
            area.draw(&Rectangle::new(
                [(0, y - 2), (width, y + 16)],
                BACKGROUND.filled(),
            ))?;
        }
        for (i, cell) in row.iter().enumerate() {
            area.draw_text(cell, &text_style(12), (x_of(i), y))?;
        }
    }
    Ok(())
}

fn heatmap_panel(area: &Area, rows: &[(String, Vec<(f64, f64)>)]) -> Drawing {
    let (width, height) = area.dim_in_pixel();
    let (label, cells) = (56, width as i32 - 56);
    let values = rows.iter().flat_map(|r| r.1.iter().map(|p| p.1));
    let most = values.fold(0.0, f64::max).max(f64::MIN_POSITIVE);
    let (start, end) = time_range(rows.iter().map(|r| &r.1));
    let row_height = (height as f64 - 14.0) / rows.len().max(1) as f64;
    for (r, (name, points)) in rows.iter().enumerate() {
        // Bottom row first, as Grafana draws the lowest bucket lowest.
        let y1 = height as f64 - 14.0 - r as f64 * row_height;
        let y0 = y1 - row_height;
        for pair in points.windows(2) {
            let x = |t: f64| label + ((t - start) / (end - start) * cells as f64) as i32;
            // Square root, as the dashboard's exponential colour scale.
            let heat = (pair[1].1 / most).max(0.0).sqrt();
            let color = RGBColor(
                (40.0 + 215.0 * heat) as u8,
                (30.0 + 110.0 * heat) as u8,
                (30.0 - 20.0 * heat) as u8,
            );
            area.draw(&Rectangle::new(
                [(x(pair[0].0), y0 as i32), (x(pair[1].0) + 1, y1 as i32 + 1)],
                color.filled(),
            ))?;
        }
        if r % 8 == 7 {
            area.draw_text(name, &text_style(10), (2, y0 as i32))?;
        }
    }
    area.draw_text("slot (le)", &text_style(10), (2, height as i32 - 12))?;
    Ok(())
}

fn states_panel(area: &Area, lines: &[Line]) -> Drawing {
    let (width, height) = area.dim_in_pixel();
    let label = 130;
    let (start, end) = time_range(lines.iter().map(|l| &l.points));
    let row_height = (height as i32 - 4) / lines.len().max(1) as i32;
    for (r, line) in lines.iter().enumerate() {
        let y = r as i32 * row_height;
        area.draw_text(&line.legend, &text_style(11), (2, y + row_height / 2 - 6))?;
        let span = (width as i32 - label) as f64;
        let x = |t: f64| label + ((t - start) / (end - start) * span) as i32;
        for pair in line.points.windows(2) {
            let color = if pair[0].1 >= 1.0 {
                PALETTE[0]
            } else {
                PALETTE[4]
            };
            area.draw(&Rectangle::new(
                [
                    (x(pair[0].0), y + 2),
                    (x(pair[1].0) + 1, y + row_height - 2),
                ],
                color.filled(),
            ))?;
        }
        let state = match line.points.last() {
            Some(p) if p.1 >= 1.0 => "UP",
            _ => "DOWN",
        };
        area.draw_text(
            state,
            &text_style(13).color(&BACKGROUND),
            (label + 6, y + row_height / 2 - 7),
        )?;
    }
    Ok(())
}
