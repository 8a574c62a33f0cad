//! PNG plots: precision against memory per workload, throughput bars, and
//! `hk-top rebalance --watch` over a shifting load.

use crate::accuracy::Accuracy;
use crate::contenders::{Kind, Throughput};
use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};
use std::path::Path;

pub type PlotResult = Result<(), Box<dyn std::error::Error>>;

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

fn color(kind: Kind) -> RGBColor {
    match kind {
        Kind::Ours => RGBColor(214, 39, 40),
        Kind::CrateTopK => RGBColor(31, 119, 180),
        Kind::CrateCuckoo => RGBColor(44, 160, 44),
        Kind::SpaceSaving => RGBColor(148, 103, 189),
    }
}

/// One panel per workload: precision@k against memory (log scale).
pub fn precision_vs_memory(
    rows: &[Accuracy],
    k: usize,
    workloads: &[String],
    path: &Path,
) -> PlotResult {
    let cols = 3;
    let panels = workloads.len().max(1);
    let rows_n = panels.div_ceil(cols);
    let root = BitMapBackend::new(path, (1500, 420 * rows_n as u32 + 40)).into_drawing_area();
    root.fill(&WHITE)?;
    let (title, body) = root.split_vertically(40);
    title.titled(
        &format!("precision@{k} against memory (bytes, log scale), equal budgets for every sketch"),
        ("sans-serif", 22),
    )?;
    let areas = body.split_evenly((rows_n, cols));
    let (min_mem, max_mem) = rows
        .iter()
        .filter(|r| r.k == k)
        .fold((f64::MAX, 1.0f64), |(lo, hi), r| {
            (lo.min(r.memory as f64), hi.max(r.memory as f64))
        });
    let x_range = (min_mem.min(3000.0) * 0.8)..(max_mem * 1.25);
    for (area, workload) in areas.iter().zip(workloads) {
        let mut chart = ChartBuilder::on(area)
            .caption(workload, ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(35)
            .y_label_area_size(45)
            .build_cartesian_2d(x_range.clone().log_scale(), 0.0f64..1.02)?;
        chart
            .configure_mesh()
            .x_desc("memory (bytes)")
            .y_desc("precision")
            .x_label_formatter(&|x| decimal_bytes(*x))
            .draw()?;
        for kind in Kind::ALL {
            let mut points: Vec<(f64, f64)> = rows
                .iter()
                .filter(|r| r.k == k && &r.workload == workload && r.kind == kind)
                .map(|r| (r.memory as f64, r.precision))
                .collect();
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            let c = color(kind);
            chart
                .draw_series(LineSeries::new(points.clone(), c.stroke_width(2)))?
                .label(kind.short())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(3))
                });
            chart.draw_series(points.into_iter().map(|p| Circle::new(p, 3, c.filled())))?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()?;
    }
    root.present()?;
    Ok(())
}

/// Horizontal bars of million arrivals per second.
pub fn throughput_bars(bars: &[Throughput], title: &str, path: &Path) -> PlotResult {
    let root = BitMapBackend::new(path, (1000, 120 + 60 * bars.len() as u32)).into_drawing_area();
    root.fill(&WHITE)?;
    let max = bars.iter().map(|b| b.mops).fold(1.0, f64::max) * 1.2;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(35)
        .y_label_area_size(10)
        .build_cartesian_2d(0.0..max, 0.0..bars.len() as f64)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .disable_y_axis()
        .x_desc("million arrivals per second (one thread)")
        .draw()?;
    for (i, bar) in bars.iter().enumerate() {
        let y = (bars.len() - 1 - i) as f64;
        let c = color(bar.kind);
        chart.draw_series(std::iter::once(Rectangle::new(
            [(0.0, y + 0.15), (bar.mops, y + 0.85)],
            c.filled(),
        )))?;
        chart.draw_series(std::iter::once(Text::new(
            format!("{}  {:.1} M/s", bar.kind.short(), bar.mops),
            (max * 0.01, y + 0.62),
            ("sans-serif", 18).into_font().color(&WHITE),
        )))?;
    }
    root.present()?;
    Ok(())
}

/// Axis labels: the log-scale ticks fall on powers of ten.
fn decimal_bytes(x: f64) -> String {
    if x >= 1e6 {
        format!("{:.0} MB", x / 1e6)
    } else if x >= 1e3 {
        format!("{:.0} kB", x / 1e3)
    } else {
        format!("{x:.0} B")
    }
}

pub fn human_bytes(x: f64) -> String {
    if x >= 1_048_576.0 {
        format!("{:.0}M", x / 1_048_576.0)
    } else if x >= 1024.0 {
        format!("{:.0}K", x / 1024.0)
    } else {
        format!("{x:.0}")
    }
}

/// The plot of `hk-top rebalance --watch` over a shifting load (the
/// largest node's share of the commands, round by round): the `(seconds,
/// share)` pairs of the line hk-top's watch test prints (`watch figures:
/// ... largest share over time (s:share) 3.0:0.612 6.1:0.598 ...`).
pub fn watch_points(line: &str) -> Vec<(f64, f64)> {
    let Some((_, series)) = line.split_once("(s:share)") else {
        return Vec::new();
    };
    series
        .split_whitespace()
        .filter_map(|pair| {
            let (s, share) = pair.split_once(':')?;
            Some((s.parse().ok()?, share.parse().ok()?))
        })
        .collect()
}

/// Draws the [`watch_points`] of each run (one per server label) into `path`.
pub fn rebalance_watch(runs: &[(String, Vec<(f64, f64)>)], path: &Path) -> PlotResult {
    let end = (runs.iter())
        .flat_map(|(_, p)| p.iter().map(|(s, _)| *s))
        .fold(1.0, f64::max);
    let root = BitMapBackend::new(path, (900, 420)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "hk-top rebalance --watch: the hot set moves once the watch settled",
            ("sans-serif", 18),
        )
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(52)
        .build_cartesian_2d(0.0..end, 0.0..1.0)?;
    chart
        .configure_mesh()
        .x_desc("seconds")
        .y_desc("largest node's share")
        .draw()?;
    const COLORS: [RGBColor; 2] = [RGBColor(214, 39, 40), RGBColor(31, 119, 180)];
    for ((label, points), &color) in runs.iter().zip(COLORS.iter().cycle()) {
        chart
            .draw_series(LineSeries::new(points.iter().copied(), &color))?
            .label(label.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], color));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE)
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_series_is_read_from_the_watch_line() {
        let line = "watch figures: 12 moves over 4 phases ([3, 3, 3, 3] per phase); largest share over time (s:share) 0.0:0.601 3.1:0.550";
        assert_eq!(super::watch_points(line), [(0.0, 0.601), (3.1, 0.55)]);
    }
}
