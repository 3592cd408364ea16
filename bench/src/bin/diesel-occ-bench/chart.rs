//! The charts: a figure (throughput) against a count (hot keys, batch size), one line
//! per series, drawn with `plotters` as SVG (labels as SVG text, so no font library is
//! needed), and converted to PNG by `rsvg-convert` when it is installed.

use std::error::Error;
use std::path::{Path, PathBuf};

use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;

/// The family the SVG text asks the viewer for.
const FONT: &str = "sans-serif";

/// One point of a line: its series (the legend), x and y.
#[derive(Debug, Clone)]
pub(crate) struct Point {
    pub(crate) series: String,
    pub(crate) x: i32,
    pub(crate) y: f64,
}

/// The axes of the reservation benchmarks' charts: x, then y.
pub(crate) const HOT_KEYS: (&str, &str) = (
    "hot keys (more keys = less contention)",
    "committed operations per second",
);

/// Writes `<base>.svg` and, when possible, `<base>.png`; returns the PNG's path.
pub(crate) fn draw(
    points: &[Point],
    title: &str,
    axes: (&str, &str),
    base: &Path,
) -> Result<Option<PathBuf>, String> {
    let svg = base.with_extension("svg");
    draw_lines(points, title, axes, &svg).map_err(|e| format!("{}: {e}", svg.display()))?;
    let png = svg.with_extension("png");
    let converted = std::process::Command::new("rsvg-convert")
        .arg("-o")
        .arg(&png)
        .arg(&svg)
        .status();
    Ok(matches!(converted, Ok(status) if status.success()).then_some(png))
}

/// A round axis maximum above `value`: 1, 2 or 5 times a power of ten.
fn nice(value: f64) -> f64 {
    let value = value.max(1e-9);
    let power = 10f64.powf(value.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * power)
        .find(|v| *v >= value)
        .unwrap_or(10.0 * power)
}

/// An axis value: `12k`, `1.5k`, `250`, `0.5`.
fn label(value: f64) -> String {
    if value >= 1000.0 {
        let thousands = value / 1000.0;
        if thousands.fract() == 0.0 {
            format!("{thousands:.0}k")
        } else {
            format!("{thousands:.1}k")
        }
    } else if value >= 1.0 {
        format!("{value:.0}")
    } else {
        format!("{value}")
    }
}

/// The lines, their points and the legend.
fn draw_lines(
    points: &[Point],
    title: &str,
    (x_axis, y_axis): (&str, &str),
    path: &Path,
) -> Result<(), Box<dyn Error>> {
    let mut xs: Vec<i32> = points.iter().map(|p| p.x).collect();
    xs.sort_unstable();
    xs.dedup();
    // The series in the order they first appear, each with its colour.
    let mut series: Vec<&str> = Vec::new();
    for point in points {
        if !series.contains(&point.series.as_str()) {
            series.push(&point.series);
        }
    }
    let root = SVGBackend::new(path, (1000, 600)).into_drawing_area();
    root.fill(&WHITE)?;
    let y_max = nice(points.iter().map(|p| p.y).fold(0.0, f64::max));
    let x_range = (0..xs.len().saturating_sub(1)).into_segmented();
    let mut chart = ChartBuilder::on(&root)
        .caption(title, (FONT, 17))
        .margin(10)
        .margin_right(30)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(x_range, 0.0..y_max)?;
    let x_name = |x: &SegmentValue<usize>| match x {
        SegmentValue::CenterOf(i) | SegmentValue::Exact(i) => {
            xs.get(*i).map(i32::to_string).unwrap_or_default()
        }
        SegmentValue::Last => String::new(),
    };
    chart
        .configure_mesh()
        .disable_x_mesh()
        .light_line_style(TRANSPARENT)
        .x_desc(x_axis)
        .y_desc(y_axis)
        .x_label_formatter(&x_name)
        .y_label_formatter(&|v| label(*v))
        .draw()?;
    for (s, name) in series.iter().enumerate() {
        // The series' points, in x order.
        let line: Vec<_> = (xs.iter().enumerate())
            .filter_map(|(i, x)| {
                let point = points.iter().find(|p| p.series == *name && p.x == *x)?;
                Some((SegmentValue::CenterOf(i), point.y))
            })
            .collect();
        let color = Palette99::pick(s);
        chart
            .draw_series(LineSeries::new(line.clone(), color.stroke_width(2)))?
            .label(*name)
            .legend(move |(x, y)| {
                Rectangle::new([(x, y - 2), (x + 16, y + 2)], Palette99::pick(s).filled())
            });
        chart.draw_series(line.into_iter().map(|p| Circle::new(p, 3, color.filled())))?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .label_font((FONT, 13))
        .draw()?;
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chart_is_written_as_svg() {
        let dir =
            std::env::temp_dir().join(format!("diesel-occ-bench-chart-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let points: Vec<Point> = [
            ("occ", 1, 900.0),
            ("occ", 100, 4000.0),
            ("blind", 1, 1200.0),
        ]
        .into_iter()
        .map(|(series, x, y)| Point {
            series: series.into(),
            x,
            y,
        })
        .collect();
        draw(&points, "t <&>", HOT_KEYS, &dir.join("lines")).unwrap();
        let svg = std::fs::read_to_string(dir.join("lines.svg")).unwrap();
        assert!(svg.contains("blind") && svg.contains("hot keys"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
