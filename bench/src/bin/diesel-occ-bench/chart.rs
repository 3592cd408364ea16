//! The charts: throughput and p99 latency against a count (hot keys, batch size), one
//! line per series, in two panels, drawn with `plotters` as SVG (labels as SVG text, so
//! no font library is needed), and converted to PNG by `rsvg-convert` when it is
//! installed.

use std::error::Error;
use std::path::{Path, PathBuf};

use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// The family the SVG text asks the viewer for.
const FONT: &str = "sans-serif";

/// One point of a line: its series (the legend), x, throughput and p99.
#[derive(Debug, Clone)]
pub(crate) struct Point {
    pub(crate) series: String,
    pub(crate) x: i32,
    pub(crate) throughput: f64,
    pub(crate) p99_ms: f64,
}

/// The texts of the two panels and of the x axis.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Labels {
    pub(crate) throughput: &'static str,
    pub(crate) latency: &'static str,
    pub(crate) x: &'static str,
}

/// The main benchmark's labels.
pub(crate) const HOT_KEYS: Labels = Labels {
    throughput: "committed operations per second",
    latency: "p99 latency, ms (log scale)",
    x: "hot keys (more keys = less contention)",
};

/// Writes `<base>.svg` and, when possible, `<base>.png`; returns the PNG's path.
pub(crate) fn draw(
    points: &[Point],
    title: &str,
    labels: &Labels,
    base: &Path,
) -> Result<Option<PathBuf>, String> {
    let svg = base.with_extension("svg");
    draw_lines(points, title, labels, &svg).map_err(|e| format!("{}: {e}", svg.display()))?;
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

/// The two panels and the legend.
fn draw_lines(
    points: &[Point],
    title: &str,
    labels: &Labels,
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
    let root = SVGBackend::new(path, (1200, 580)).into_drawing_area();
    root.fill(&WHITE)?;
    let (panels, legend) = root.titled(title, (FONT, 17))?.split_vertically(460);
    let (left, right) = panels.split_horizontally(600);
    let max = |value: fn(&Point) -> f64| points.iter().map(value).fold(0.0, f64::max);
    let p99_min = points.iter().map(|p| p.p99_ms).filter(|v| *v > 0.0);
    let p99_min = 10f64.powf(
        p99_min
            .fold(f64::INFINITY, f64::min)
            .max(1e-3)
            .log10()
            .floor(),
    );
    let p99_max = nice(max(|p| p.p99_ms)).max(p99_min * 10.0);
    for (area, caption, log) in [
        (left, labels.throughput, false),
        (right, labels.latency, true),
    ] {
        let value = if log {
            |p: &Point| p.p99_ms
        } else {
            |p: &Point| p.throughput
        };
        let mut builder = ChartBuilder::on(&area);
        builder
            .caption(caption, (FONT, 15))
            .margin(10)
            .margin_right(30)
            .x_label_area_size(45)
            .y_label_area_size(70);
        let x_name = |x: &SegmentValue<usize>| match x {
            SegmentValue::CenterOf(i) | SegmentValue::Exact(i) => {
                xs.get(*i).map(i32::to_string).unwrap_or_default()
            }
            SegmentValue::Last => String::new(),
        };
        // The same panel on either axis type (their chart types differ).
        macro_rules! panel {
            ($range:expr) => {{
                let x_range = (0..xs.len().saturating_sub(1)).into_segmented();
                let mut chart = builder.build_cartesian_2d(x_range, $range)?;
                chart
                    .configure_mesh()
                    .disable_x_mesh()
                    .light_line_style(TRANSPARENT)
                    .x_desc(labels.x)
                    .x_label_formatter(&x_name)
                    .y_label_formatter(&|v| label(*v))
                    .draw()?;
                for (s, name) in series.iter().enumerate() {
                    let color = Palette99::pick(s);
                    // The series' points, in x order.
                    let line: Vec<_> = (xs.iter().enumerate())
                        .filter_map(|(i, x)| {
                            let point = points.iter().find(|p| p.series == *name && p.x == *x)?;
                            Some((SegmentValue::CenterOf(i), value(point)))
                        })
                        .collect();
                    chart.draw_series(LineSeries::new(line.clone(), color.stroke_width(2)))?;
                    chart
                        .draw_series(line.into_iter().map(|p| Circle::new(p, 3, color.filled())))?;
                }
            }};
        }
        if log {
            panel!((p99_min..p99_max).log_scale());
        } else {
            panel!(0.0..nice(max(|p| p.throughput)));
        }
    }
    for (s, name) in series.iter().enumerate() {
        // Six entries a row.
        let (x, y) = (90 + (s % 6) as i32 * 180, 30 + (s / 6) as i32 * 22);
        let color = Palette99::pick(s).filled();
        legend.draw(&Rectangle::new([(x, y - 2), (x + 16, y + 2)], color))?;
        let style = (FONT, 13).into_font().into_text_style(&legend);
        let style = style.pos(Pos::new(HPos::Left, VPos::Center));
        legend.draw(&Text::new(name.to_string(), (x + 22, y), style))?;
    }
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
            ("occ", 1, 900.0, 2.0),
            ("occ", 100, 4000.0, 0.8),
            ("blind", 1, 1200.0, 1.1),
        ]
        .into_iter()
        .map(|(series, x, throughput, p99_ms)| Point {
            series: series.into(),
            x,
            throughput,
            p99_ms,
        })
        .collect();
        draw(&points, "t <&>", &HOT_KEYS, &dir.join("lines")).unwrap();
        let svg = std::fs::read_to_string(dir.join("lines.svg")).unwrap();
        assert!(svg.contains("blind") && svg.contains("hot keys"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
