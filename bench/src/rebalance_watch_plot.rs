//! The plot of `hk-top rebalance --watch` over a shifting load: the
//! largest node's share of the commands, round by round, from the line
//! hk-top's watch test prints (`watch figures: ... largest share over
//! time (s:share) 3.0:0.612 6.1:0.598 ...`).

use plotters::prelude::*;
use std::path::Path;

/// `(seconds, share)` pairs of a `watch figures` line.
pub fn points(line: &str) -> Vec<(f64, f64)> {
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

/// Draws `points` (one run per server label) into `path`.
pub fn draw(runs: &[(String, Vec<(f64, f64)>)], path: &Path) -> Result<(), String> {
    let end = (runs.iter())
        .flat_map(|(_, p)| p.iter().map(|(s, _)| *s))
        .fold(1.0, f64::max);
    let root = BitMapBackend::new(path, (900, 420)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "hk-top rebalance --watch: the hot set moves once the watch settled",
            ("sans-serif", 18),
        )
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(52)
        .build_cartesian_2d(0.0..end, 0.0..1.0)
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .x_desc("seconds")
        .y_desc("largest node's share")
        .draw()
        .map_err(|e| e.to_string())?;
    const COLORS: [RGBColor; 2] = [RGBColor(214, 39, 40), RGBColor(31, 119, 180)];
    for ((label, points), &color) in runs.iter().zip(COLORS.iter().cycle()) {
        chart
            .draw_series(LineSeries::new(points.iter().copied(), &color))
            .map_err(|e| e.to_string())?
            .label(label.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], color));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE)
        .border_style(BLACK)
        .draw()
        .map_err(|e| e.to_string())?;
    root.present().map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_series_is_read_from_the_watch_line() {
        let line = "watch figures: 12 moves over 4 phases ([3, 3, 3, 3] per phase); largest share over time (s:share) 0.0:0.601 3.1:0.550";
        assert_eq!(super::points(line), [(0.0, 0.601), (3.1, 0.55)]);
    }
}
